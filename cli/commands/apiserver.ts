// `panoptes apiserver`: serves discovery, list and get (watch: apiserver/read/watch.ts)
// from storage. Stateless: run any number of replicas on one PostgreSQL.
import type { HealthCheck } from '../../apiserver/endpoints/health.ts';
import { createApiserver } from '../../apiserver/server.ts';
import { secureFlagHelp, secureFlagSpec, secureServingFromFlags, type SecureFlagValues } from '../../apiserver/auth/config.ts';
import { ApiserverMetrics } from '../../apiserver/endpoints/metrics.ts';
import type { ApiserverLimits } from '../../apiserver/endpoints/deps.ts';
import { defaultProxyWriteWaitMs } from '../../apiserver/proxy/write-consistency.ts';
import { logger, type Logger } from '../../lib/log.ts';
import type { Store } from '../../storage/store.ts';
import { durationFlag, intFlag, parseFlags, UsageError, waitForSignal, type Command } from '../command.ts';
import { collectionsFlag, collectionsFlagHelp, collectionsFlagSpec } from './collections-flag.ts';
import { memoryFlagHelp, memoryFlags, memoryFlagSpec, type MemoryFlagValues } from './memory-flags.ts';
import { queryBudgetFlagHelp, queryBudgetFlags, queryBudgetFlagSpec, type QueryBudgetFlagValues } from './query-budget-flags.ts';
import { memberHttp2Flag, memberHttp2FlagHelp, memberHttp2FlagSpec } from './member-http2-flag.ts';
import { memberNetworksFlag, memberNetworksFlagHelp, memberNetworksFlagSpec } from './member-networks-flag.ts';
import { commonFlags, openStorage, storageWaitFlagHelp } from './serve.ts';
import { storageReadFlagHelp, storageReadFlags, storageReadFlagSpec } from './storage-read-flags.ts';
import { ReadPool } from '../../storage/read-pool.ts';
import { summaries } from './summaries.ts';
import { parseProxyUser, proxyCredentials, type ProxyCredentialsOptions } from './proxy-credentials.ts';
import type { ApiserverOptions } from '../../apiserver/server.ts';
import { existsSync } from 'node:fs';
import { connectCluster, type ClusterConnection } from '../../member/client.ts';
import { HostSecrets } from '../../member/host-secrets.ts';
import { credentialsNamespace, hostClusterConnection } from './synchro-flags.ts';

export const serveFlagSpec = {
  'insecure-listen': { type: 'string' },
  'max-limit': { type: 'string' },
  'request-timeout': { type: 'string' },
  'proxy-write-wait': { type: 'string' },
  'external-metrics-file': { type: 'string' },
  'insecure-proxy-user': { type: 'string' },
  ...memberNetworksFlagSpec,
  ...collectionsFlagSpec,
  ...memberHttp2FlagSpec,
  ...memoryFlagSpec,
  ...queryBudgetFlagSpec,
  ...secureFlagSpec,
} as const;

export const serveFlagHelp = `  --insecure-listen HOST:PORT   plain HTTP, NO TLS AND NO AUTHENTICATION: anyone who can reach it reads
                                every synced object. Loopback hosts only (127.0.0.1, ::1, localhost). Default 127.0.0.1:8080
  --max-limit N                 list limit values above N are served as pages of N (default 10000)
  --request-timeout DURATION    requests other than watches and streams end with 504 after this long, and a
                                write's body that has not come by then is a 504 (default 60s)
  --proxy-write-wait DURATION   a write proxied to a member cluster waits this long for synchro to store it,
                                then answers the member's object with a Warning (default 5s; 0s: no wait)
  --external-metrics-file FILE  declared metrics of external.metrics.k8s.io (env PANOPTES_EXTERNAL_METRICS_FILE);
                                reloaded when it changes. Counts of synced resources need no file
  --insecure-proxy-user NAME[:GROUP,...]  with --insecure-listen only: the user (and groups) the proxy to
                                member clusters impersonates for every request, since nobody is authenticated;
                                without it the proxy refuses every request (403). Members' RBAC applies to that user
${collectionsFlagHelp}
${memoryFlagHelp}
${queryBudgetFlagHelp}
${secureFlagHelp}`;

type ServeFlagValues = {
  'insecure-listen'?: string;
  'max-limit'?: string;
  'request-timeout'?: string;
  'proxy-write-wait'?: string;
  'external-metrics-file'?: string;
  'allow-member-networks'?: string;
  'member-http2'?: string;
  'insecure-proxy-user'?: string;
  'collections-file'?: string;
} & MemoryFlagValues &
  QueryBudgetFlagValues &
  SecureFlagValues;

/** Where the proxy's member credentials come from (cli/commands/proxy-credentials.ts): the clusters file or kubeconfig synchro reads. */
export type MemberSources = Pick<ProxyCredentialsOptions, 'clustersFile' | 'kubeconfig' | 'contexts'> & {
  /** The host cluster, to read the credentials Secrets API-registered Clusters name. */
  hostCluster?: ClusterConnection;
  credentialsNamespace?: string;
};

/** The apiserver's own flags for member credentials (all-in-one has synchro's). */
export const memberSourceFlagSpec = {
  clusters: { type: 'string' },
  kubeconfig: { type: 'string' },
  contexts: { type: 'string' },
  'host-kubeconfig': { type: 'string' },
  'credentials-namespace': { type: 'string' },
} as const;

export const memberSourceFlagHelp = `  --clusters FILE               clusters.yaml, as synchro's (env PANOPTES_CLUSTERS): the credentials the proxy to
                                member clusters uses (their identity needs impersonate there:
                                manifests/member-cluster/proxy/). Clusters registered through the API use their
                                inline credentials from storage without it
  --kubeconfig FILE             instead of --clusters: one member cluster per kubeconfig context
  --contexts a,b|all            with --kubeconfig: which contexts (default all)
  --host-kubeconfig FILE        read the Secrets API-registered Clusters name as their credentials, as synchro,
                                from this host cluster (env PANOPTES_HOST_KUBECONFIG). Off by default: give it,
                                or --credentials-namespace in a pod (in-cluster), and the Role that lets it read them
  --credentials-namespace NS    the namespace of those Secrets (default: the pod's namespace, else panoptes)`;

/** --clusters / --kubeconfig / --contexts of the apiserver. */
export function memberSourceFlags(values: { clusters?: string; kubeconfig?: string; contexts?: string; 'host-kubeconfig'?: string; 'credentials-namespace'?: string }): MemberSources {
  const clustersFile = values.clusters ?? (values.kubeconfig ? undefined : process.env.PANOPTES_CLUSTERS);
  if (clustersFile && values.kubeconfig) throw new UsageError('give --clusters or --kubeconfig, not both');
  if (values.contexts !== undefined && !values.kubeconfig) throw new UsageError('--contexts goes with --kubeconfig');
  const contexts = values.contexts === undefined || values.contexts === 'all' ? 'all' : values.contexts.split(',').map((s) => s.trim()).filter(Boolean);
  // Opt-in: the apiserver reads the host's credentials Secrets only when asked to (its manifests give it no Secret access).
  const hostKubeconfig = values['host-kubeconfig'] ?? process.env.PANOPTES_HOST_KUBECONFIG;
  if (hostKubeconfig && !existsSync(hostKubeconfig)) throw new UsageError(`--host-kubeconfig ${hostKubeconfig}: no such file`);
  const readSecrets = hostKubeconfig !== undefined || values['credentials-namespace'] !== undefined;
  const hostCluster = readSecrets ? hostClusterConnection(hostKubeconfig) : undefined;
  if (readSecrets && !hostCluster) throw new UsageError('--credentials-namespace needs the host cluster: --host-kubeconfig, or run in the host cluster');
  return {
    ...(clustersFile ? { clustersFile } : {}),
    ...(values.kubeconfig ? { kubeconfig: values.kubeconfig, contexts } : {}),
    ...(hostCluster ? { hostCluster, credentialsNamespace: credentialsNamespace(values['credentials-namespace']) } : {}),
  };
}

/**
 * The apiserver's proxy options (member credentials, and in the development mode the user
 * named to impersonate), the /readyz check that waits for the credentials (read at once:
 * the Secrets Clusters name are listed at start), and how to stop what they read.
 */
async function proxyOptions(
  store: Store,
  values: ServeFlagValues,
  members: MemberSources,
  log: Logger,
  secure: boolean,
): Promise<{ proxy: NonNullable<ApiserverOptions['proxy']>; readyChecks: HealthCheck[]; stop: () => Promise<void> }> {
  const user = parseProxyUser(values['insecure-proxy-user']);
  if (user && secure) throw new UsageError('--insecure-proxy-user goes with --insecure-listen only: with authentication, the proxy impersonates the authenticated user');
  const { hostCluster, credentialsNamespace: namespace, ...files } = members;
  const secrets = hostCluster
    ? new HostSecrets({ client: await connectCluster(hostCluster), namespace: namespace ?? 'panoptes', log: log.child({ part: 'host-secrets' }), onChange: () => undefined })
    : undefined;
  const credentials = proxyCredentials({ store, ...files, networks: memberNetworksFlag(values), log: log.child({ part: 'proxy' }), ...(secrets ? { secrets } : {}) });
  credentials.start();
  return { proxy: { credentials, connect: { http2: memberHttp2Flag(values) }, ...(user ? { unauthenticatedUser: user } : {}) }, readyChecks: [credentials.readyCheck], stop: async () => secrets?.stop() };
}

/** --external-metrics-file, or PANOPTES_EXTERNAL_METRICS_FILE. */
export function externalMetricsFlag(values: { 'external-metrics-file'?: string }): { file?: string } {
  const file = values['external-metrics-file'] ?? process.env.PANOPTES_EXTERNAL_METRICS_FILE;
  if (file === '') throw new UsageError('--external-metrics-file needs a file path');
  return file ? { file } : {};
}

/** --max-limit, --request-timeout, --proxy-write-wait. */
export function servingLimits(values: ServeFlagValues): Pick<ApiserverLimits, 'maxLimit' | 'requestTimeoutMs' | 'proxyWriteWaitMs' | 'queryBudget'> {
  const maxLimit = intFlag('max-limit', values['max-limit'], 10_000);
  if (maxLimit < 1) throw new UsageError('--max-limit must be at least 1');
  const requestTimeoutMs = durationFlag('request-timeout', values['request-timeout'], 60_000);
  const proxyWriteWaitMs = durationFlag('proxy-write-wait', values['proxy-write-wait'], defaultProxyWriteWaitMs);
  return { maxLimit, requestTimeoutMs, proxyWriteWaitMs, ...queryBudgetFlags(values) };
}

const loopback = new Set(['127.0.0.1', '::1', 'localhost']);

/** HOST:PORT on a loopback host. */
export function parseInsecureListen(value: string | undefined): { host: string; port: number } {
  const v = value ?? '127.0.0.1:8080';
  const m = /^\[?([^\]]*)\]?:(\d{1,5})$/.exec(v);
  if (!m || Number(m[2]) > 65535) throw new UsageError(`--insecure-listen must be HOST:PORT, got ${JSON.stringify(v)}`);
  if (!loopback.has(m[1])) throw new UsageError(`--insecure-listen serves without TLS or authentication, so only loopback hosts are allowed (127.0.0.1, ::1, localhost), got ${JSON.stringify(m[1])}`);
  return { host: m[1], port: Number(m[2]) };
}

/** Starts the HTTP apiserver on an opened store; returns its URL and a stop function. */
export async function startServing(
  store: Store,
  values: ServeFlagValues,
  log: Logger,
  metrics?: ApiserverMetrics,
  opts: { reads?: ReadPool; members?: MemberSources; readyChecks?: HealthCheck[] } = {},
): Promise<{ url: string; close: () => Promise<void> }> {
  const { reads, members = {}, readyChecks } = opts;
  const secureMode = (Object.keys(secureFlagSpec) as (keyof SecureFlagValues)[]).some((k) => values[k] !== undefined);
  if (secureMode) return startSecureServing(store, values, log, metrics, members, reads, readyChecks);
  const { host, port } = parseInsecureListen(values['insecure-listen']);
  const limits = servingLimits(values);
  const { proxy, readyChecks: proxyChecks, stop: stopProxy } = await proxyOptions(store, values, members, log, false);
  const api = await createApiserver({ store, reads, limits, metrics, log, externalMetrics: externalMetricsFlag(values), collections: collectionsFlag(values), memberNetworks: memberNetworksFlag(values), proxy, readyChecks: [...proxyChecks, ...(readyChecks ?? [])], ...memoryFlags(values) });
  let url: string;
  try {
    url = await api.listen(host, port);
  } catch (err) {
    await api.close();
    await stopProxy();
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') throw new UsageError(`--insecure-listen ${host}:${port}: the port is in use`);
    throw err;
  }
  log.warn('INSECURE: serving plain HTTP without authentication or authorization (development mode, loopback only)', { url });
  if (proxy.unauthenticatedUser) log.warn('INSECURE: every request proxied to a member cluster goes as the user named by --insecure-proxy-user, whoever sends it', { user: proxy.unauthenticatedUser.name, groups: proxy.unauthenticatedUser.groups });
  log.info('apiserver listening', { url, allClusters: `${url}/apis/panoptes.io/v1alpha1/resources`, oneCluster: `${url}/apis/panoptes.io/v1alpha1/resources/clusters/<cluster>` });
  return {
    url,
    close: async () => {
      await api.close();
      await stopProxy();
    },
  };
}

/** HTTPS with authentication (front proxy, client certificates, TokenReview) and SubjectAccessReview authorization. */
async function startSecureServing(
  store: Store,
  values: ServeFlagValues,
  log: Logger,
  metrics: ApiserverMetrics | undefined,
  members: MemberSources,
  reads: ReadPool | undefined,
  readyChecks: HealthCheck[] | undefined,
): Promise<{ url: string; close: () => Promise<void> }> {
  if (values['insecure-listen'] !== undefined) throw new UsageError('--insecure-listen (development: no TLS, no authentication) and the secure serving flags exclude each other');
  const limits = servingLimits(values);
  const memory = memoryFlags(values);
  const secure = await secureServingFromFlags(values, log);
  const { proxy, readyChecks: proxyChecks, stop: stopProxy } = await proxyOptions(store, values, members, log, true).catch((err: unknown) => {
    secure.stop();
    throw err;
  });
  const api = await createApiserver({ store, reads, limits, metrics, log, secure, externalMetrics: externalMetricsFlag(values), collections: collectionsFlag(values), memberNetworks: memberNetworksFlag(values), proxy, readyChecks: [...proxyChecks, ...(readyChecks ?? [])], ...memory });
  let url: string;
  try {
    url = await api.listen(secure.host, secure.port);
  } catch (err) {
    await api.close();
    secure.stop();
    await stopProxy();
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') throw new UsageError(`--secure-port ${secure.port}: the port is in use`);
    throw err;
  }
  log.info('apiserver listening (TLS; authentication and authorization delegated to the host cluster)', { url, allClusters: `${url}/apis/panoptes.io/v1alpha1/resources` });
  return {
    url,
    close: async () => {
      await api.close();
      secure.stop();
      await stopProxy();
    },
  };
}

const summary = summaries.apiserver;

export const apiserver: Command = {
  name: 'apiserver',
  summary,
  usage: `Usage: panoptes apiserver [flags]

${summary}. Runs until SIGINT or SIGTERM.
URLs: /apis/panoptes.io/v1alpha1/resources/<kubernetes path> (all clusters),
      /apis/panoptes.io/v1alpha1/resources/clusters/<cluster>/<kubernetes path> (one cluster),
      /apis/panoptes.io/v1alpha1/clusters, /apis/panoptes.io/v1alpha1/namespaces/<ns>/multiclusterservices,
      /healthz, /livez, /readyz, /metrics, /openapi/v2, /openapi/v3,
      /apis/external.metrics.k8s.io/v1beta1/namespaces/<ns>/<metric> (the HorizontalPodAutoscaler's external metrics).
Serves HTTPS on --secure-port (default 8443) with authentication and authorization delegated to
the host cluster (an aggregated API server: see manifests/README.md). --insecure-listen instead
serves plain HTTP on loopback WITHOUT authentication (development only).

Flags:
  --storage URL                 where state and the change log live (env PANOPTES_STORAGE)
                                sqlite:PATH (default sqlite:./data/panoptes.db) or postgres://user@host:5432/db
${storageWaitFlagHelp}
${storageReadFlagHelp}
${serveFlagHelp}
${memberSourceFlagHelp}
${memberNetworksFlagHelp}
${memberHttp2FlagHelp}
  --log-level LEVEL             debug, info (default), warn or error`,
  async run(argv) {
    const { values: parsed } = parseFlags(argv, { storage: { type: 'string' }, 'storage-wait': { type: 'string' }, 'log-level': { type: 'string' }, ...storageReadFlagSpec, ...serveFlagSpec, ...memberSourceFlagSpec });
    // Secure serving unless plain HTTP is asked for explicitly.
    const values = parsed['insecure-listen'] === undefined && parsed['secure-port'] === undefined ? { ...parsed, 'secure-port': '8443' } : parsed;
    const { storage, storageWaitMs } = commonFlags(values);
    const standbys = storageReadFlags(values, storage);
    parseInsecureListen(values['insecure-listen']);
    memberNetworksFlag(values);
    memberHttp2Flag(values);
    const members = memberSourceFlags(values);
    const log = logger('apiserver');
    const store = await openStorage(storage, 'apiserver', storageWaitMs);
    let reads: ReadPool | undefined;
    let server: Awaited<ReturnType<typeof startServing>>;
    try {
      if (standbys.urls.length > 0) {
        reads = await ReadPool.open(store, standbys.urls, { maxLagMs: standbys.maxLagMs, log: log.child({ part: 'storage-read' }) });
        log.info('reads go to standbys', { databases: reads.status().map((s) => `${s.role} ${s.database}${s.up ? '' : ' (down)'}`) });
      }
      server = await startServing(store, values, log, undefined, { reads, members });
    } catch (err) {
      await reads?.close();
      await store.close();
      throw err;
    }
    const sig = await waitForSignal();
    log.info('stopping', { signal: sig });
    await server.close();
    await reads?.close();
    await store.close();
    return 0;
  },
};
