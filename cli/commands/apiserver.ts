// `panoptes apiserver`: serves discovery, list and get (watch: apiserver/watch-route.ts)
// from storage. Stateless: run any number of replicas on one PostgreSQL.
import { createApiserver } from '../../apiserver/server.ts';
import { secureFlagHelp, secureFlagSpec, secureServingFromFlags, type SecureFlagValues } from '../../apiserver/auth/config.ts';
import { ApiserverMetrics } from '../../apiserver/metrics.ts';
import { logger, type Logger } from '../../lib/log.ts';
import type { Store } from '../../storage/store.ts';
import { durationFlag, intFlag, parseFlags, UsageError, waitForSignal, type Command } from '../command.ts';
import { collectionsFlag, collectionsFlagHelp, collectionsFlagSpec } from './collections-flag.ts';
import { memoryFlagHelp, memoryFlags, memoryFlagSpec, type MemoryFlagValues } from './memory-flags.ts';
import { memberNetworksFlag, memberNetworksFlagHelp, memberNetworksFlagSpec } from './member-networks-flag.ts';
import { commonFlags, openStorage } from './serve.ts';
import { summaries } from './summaries.ts';

export const serveFlagSpec = {
  'insecure-listen': { type: 'string' },
  'max-limit': { type: 'string' },
  'request-timeout': { type: 'string' },
  'external-metrics-file': { type: 'string' },
  ...memberNetworksFlagSpec,
  ...collectionsFlagSpec,
  ...memoryFlagSpec,
  ...secureFlagSpec,
} as const;

export const serveFlagHelp = `  --insecure-listen HOST:PORT   plain HTTP, NO TLS AND NO AUTHENTICATION: anyone who can reach it reads
                                every synced object. Loopback hosts only (127.0.0.1, ::1, localhost). Default 127.0.0.1:8080
  --max-limit N                 list limit values above N are served as pages of N (default 10000)
  --request-timeout DURATION    list and get end with 504 after this long (default 60s)
  --external-metrics-file FILE  declared metrics of external.metrics.k8s.io (env PANOPTES_EXTERNAL_METRICS_FILE);
                                reloaded when it changes. Counts of synced resources need no file
${collectionsFlagHelp}
${memoryFlagHelp}
${secureFlagHelp}`;

type ServeFlagValues = { 'insecure-listen'?: string; 'max-limit'?: string; 'request-timeout'?: string; 'external-metrics-file'?: string; 'allow-member-networks'?: string; 'collections-file'?: string } & MemoryFlagValues &
  SecureFlagValues;

/** --external-metrics-file, or PANOPTES_EXTERNAL_METRICS_FILE. */
export function externalMetricsFlag(values: { 'external-metrics-file'?: string }): { file?: string } {
  const file = values['external-metrics-file'] ?? process.env.PANOPTES_EXTERNAL_METRICS_FILE;
  if (file === '') throw new UsageError('--external-metrics-file needs a file path');
  return file ? { file } : {};
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
): Promise<{ url: string; close: () => Promise<void> }> {
  const secureMode = (Object.keys(secureFlagSpec) as (keyof SecureFlagValues)[]).some((k) => values[k] !== undefined);
  if (secureMode) return startSecureServing(store, values, log, metrics);
  const { host, port } = parseInsecureListen(values['insecure-listen']);
  const maxLimit = intFlag('max-limit', values['max-limit'], 10_000);
  if (maxLimit < 1) throw new UsageError('--max-limit must be at least 1');
  const requestTimeoutMs = durationFlag('request-timeout', values['request-timeout'], 60_000);
  const api = await createApiserver({ store, limits: { maxLimit, requestTimeoutMs }, metrics, log, externalMetrics: externalMetricsFlag(values), collections: collectionsFlag(values), memberNetworks: memberNetworksFlag(values), ...memoryFlags(values) });
  let url: string;
  try {
    url = await api.listen(host, port);
  } catch (err) {
    await api.close();
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') throw new UsageError(`--insecure-listen ${host}:${port}: the port is in use`);
    throw err;
  }
  log.warn('INSECURE: serving plain HTTP without authentication or authorization (development mode, loopback only)', { url });
  log.info('apiserver listening', { url, allClusters: `${url}/apis/panoptes.io/v1alpha1/resources`, oneCluster: `${url}/apis/panoptes.io/v1alpha1/resources/clusters/<cluster>` });
  return { url, close: () => api.close() };
}

/** HTTPS with authentication (front proxy, client certificates, TokenReview) and SubjectAccessReview authorization. */
async function startSecureServing(
  store: Store,
  values: ServeFlagValues,
  log: Logger,
  metrics?: ApiserverMetrics,
): Promise<{ url: string; close: () => Promise<void> }> {
  if (values['insecure-listen'] !== undefined) throw new UsageError('--insecure-listen (development: no TLS, no authentication) and the secure serving flags exclude each other');
  const maxLimit = intFlag('max-limit', values['max-limit'], 10_000);
  if (maxLimit < 1) throw new UsageError('--max-limit must be at least 1');
  const requestTimeoutMs = durationFlag('request-timeout', values['request-timeout'], 60_000);
  const memory = memoryFlags(values);
  const secure = await secureServingFromFlags(values, log);
  const api = await createApiserver({ store, limits: { maxLimit, requestTimeoutMs }, metrics, log, secure, externalMetrics: externalMetricsFlag(values), collections: collectionsFlag(values), memberNetworks: memberNetworksFlag(values), ...memory });
  let url: string;
  try {
    url = await api.listen(secure.host, secure.port);
  } catch (err) {
    await api.close();
    secure.stop();
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') throw new UsageError(`--secure-port ${secure.port}: the port is in use`);
    throw err;
  }
  log.info('apiserver listening (TLS; authentication and authorization delegated to the host cluster)', { url, allClusters: `${url}/apis/panoptes.io/v1alpha1/resources` });
  return {
    url,
    close: async () => {
      await api.close();
      secure.stop();
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
${serveFlagHelp}
${memberNetworksFlagHelp}
  --log-level LEVEL             debug, info (default), warn or error`,
  async run(argv) {
    const { values: parsed } = parseFlags(argv, { storage: { type: 'string' }, 'log-level': { type: 'string' }, ...serveFlagSpec });
    // Secure serving unless plain HTTP is asked for explicitly.
    const values = parsed['insecure-listen'] === undefined && parsed['secure-port'] === undefined ? { ...parsed, 'secure-port': '8443' } : parsed;
    const { storage } = commonFlags(values);
    parseInsecureListen(values['insecure-listen']);
    memberNetworksFlag(values);
    const log = logger('apiserver');
    const store = await openStorage(storage, 'apiserver');
    let server: Awaited<ReturnType<typeof startServing>>;
    try {
      server = await startServing(store, values, log);
    } catch (err) {
      await store.close();
      throw err;
    }
    const sig = await waitForSignal();
    log.info('stopping', { signal: sig });
    await server.close();
    await store.close();
    return 0;
  },
};
