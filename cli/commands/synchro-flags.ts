// The member-cluster flags that `panoptes synchro` and `panoptes all-in-one` share, parsed
// into the options of startSynchro.
import { existsSync, readFileSync } from 'node:fs';
import { defaultCompaction } from '../../synchro/commit/compactor.ts';
import { defaultDispatcherOptions } from '../../synchro/mcs/dispatcher.ts';
import { defaultInitialSyncConcurrency } from '../../synchro/cluster/initial-sync-slots.ts';
import type { ClusterConnection } from '../../member/client.ts';
import type { SynchroOptions } from '../../synchro/synchro.ts';
import { parseProviderFile } from '../../synchro/import/exec-credentials.ts';
import { durationFlag, intFlag, UsageError } from '../command.ts';
import { memberHttp2Flag, memberHttp2FlagSpec } from './member-http2-flag.ts';
import { memberNetworksFlag, memberNetworksFlagSpec } from './member-networks-flag.ts';

export const synchroFlagSpec = {
  clusters: { type: 'string' },
  kubeconfig: { type: 'string' },
  contexts: { type: 'string' },
  resources: { type: 'string' },
  'probe-interval': { type: 'string' },
  'discovery-interval': { type: 'string' },
  'retention-age': { type: 'string' },
  'retention-count': { type: 'string' },
  identity: { type: 'string' },
  'lease-ttl': { type: 'string' },
  'initial-sync-concurrency': { type: 'string' },
  'mcs-resync-interval': { type: 'string' },
  'mcs-away-consumer-grace': { type: 'string' },
  'mcs-allow-system-services': { type: 'string' },
  'host-kubeconfig': { type: 'string' },
  'credentials-namespace': { type: 'string' },
  'clusterprofile-provider-file': { type: 'string' },
  'publish-cluster-profiles': { type: 'string' },
  ...memberNetworksFlagSpec,
  ...memberHttp2FlagSpec,
} as const;

export const synchroFlagHelp = `  --clusters FILE               clusters.yaml: member clusters and what to sync (env PANOPTES_CLUSTERS);
                                reloaded when it changes (format: synchro/README.md). Clusters registered
                                through the API (kubectl apply -f cluster.yaml) are synced with or without it
  --host-kubeconfig FILE        the host cluster, to read the Secrets API-registered Clusters name as their
                                credentials (env PANOPTES_HOST_KUBECONFIG; default: in-cluster configuration)
  --credentials-namespace NS    the namespace of those Secrets (default: the pod's namespace in a cluster,
                                else panoptes)
  --clusterprofile-provider-file FILE
                                ClusterProfile access (KEP-5339): the exec credential plugins ClusterSources
                                of type clusterProfiles may use, as upstream's pkg/access reads them
                                ({"providers": [{"name", "servers": [URL, ...], "execConfig": {"command",
                                ...}}]}; servers: where its credentials may go, https://*.example.com for a
                                domain); the only commands synchro runs for them
  --publish-cluster-profiles NS a ClusterProfile per Cluster in namespace NS of the host cluster, as a
                                cluster manager (x-k8s.io/cluster-manager=panoptes); off by default
  --kubeconfig FILE             instead of --clusters: one member cluster per kubeconfig context
  --contexts a,b|all            with --kubeconfig: which contexts (default all)
  --resources LIST              with --kubeconfig: resource patterns, comma-separated (default: the default set)
  --probe-interval DURATION     readiness probe period per member cluster (default 10s)
  --discovery-interval DURATION rediscovery period, to pick up CRDs (default 30s)
  --retention-age DURATION      keep every change younger than this in the change log (default 15m)
  --retention-count N           and at least the N newest (default 100000); older ones are compacted,
                                and watches or continue tokens from before them get 410 Expired
  --identity NAME               this process among several synchro processes sharing the member clusters
                                (env PANOPTES_IDENTITY, e.g. the pod name; default host name and a random id);
                                a process whose name another live process holds does not start
  --lease-ttl DURATION          how long a cluster lease lasts unrenewed (default 15s): after a crash,
                                another synchro process takes the clusters over within it
  --initial-sync-concurrency N  how many of this process's clusters run their initial sync at once (default
                                32); the others wait their turn, so a process that takes hundreds of clusters
                                (at start, or from a member that left) keeps its heartbeat and memory in hand
  --mcs-resync-interval DURATION multi-cluster Services: the dispatcher's full pass, which plans every exported
                                Service again and repairs drift in the consumers (default 60s; changes are
                                dispatched as they come, without waiting for it)
  --mcs-away-consumer-grace DURATION
                                how long a deleted MultiClusterService waits for a consumer that is not Ready,
                                or whose cleanup keeps failing (default 5m): then it goes, and what that
                                consumer holds is removed when it can be
  --mcs-allow-system-services NS[/NAME],...
                                multi-cluster Services of kube's own namespaces (kube-*) and default/kubernetes
                                are never dispatched unless named here (a Service of that name in a consumer
                                carries its API and DNS traffic)`;

type SynchroFlagValues = { [K in keyof typeof synchroFlagSpec]?: string };

const serviceAccountDir = '/var/run/secrets/kubernetes.io/serviceaccount';

/** The host cluster: --host-kubeconfig, else the in-cluster configuration when running in a pod, else none. */
export function hostClusterConnection(kubeconfig: string | undefined, env: NodeJS.ProcessEnv = process.env, saDir = serviceAccountDir): ClusterConnection | undefined {
  if (kubeconfig) return { kubeconfig };
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port || !existsSync(`${saDir}/token`)) return undefined;
  return { server: `https://${host.includes(':') ? `[${host}]` : host}:${port}`, certificateAuthority: `${saDir}/ca.crt`, tokenFile: `${saDir}/token` };
}

/** The namespace of the credentials Secrets: the flag, else the pod's own namespace, else panoptes. */
export function credentialsNamespace(flag: string | undefined, saDir = serviceAccountDir): string {
  if (flag) return flag;
  try {
    return readFileSync(`${saDir}/namespace`, 'utf8').trim() || 'panoptes';
  } catch {
    return 'panoptes';
  }
}

/** Where the member clusters come from, timings and retention; bad combinations are UsageErrors. */
export function parseSynchroFlags(
  values: SynchroFlagValues,
): Pick<SynchroOptions, 'clustersFile' | 'kubeconfig' | 'contexts' | 'resources' | 'timings' | 'compaction' | 'shards' | 'hostCluster' | 'credentialsNamespace' | 'memberNetworks' | 'memberHttp2' | 'mcs' | 'initialSyncConcurrency' | 'clusterProfileProviders' | 'publishClusterProfiles'> {
  const clustersFile = values.clusters ?? (values.kubeconfig ? undefined : process.env.PANOPTES_CLUSTERS);
  if (clustersFile && values.kubeconfig) throw new UsageError('give --clusters or --kubeconfig, not both');
  const ns = values['credentials-namespace'];
  if (ns !== undefined && !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(ns)) throw new UsageError(`--credentials-namespace ${JSON.stringify(ns)} is not a namespace name`);
  const hostKubeconfig = values['host-kubeconfig'] ?? process.env.PANOPTES_HOST_KUBECONFIG;
  if (hostKubeconfig && !existsSync(hostKubeconfig)) throw new UsageError(`--host-kubeconfig ${hostKubeconfig}: no such file`);
  if (!values.kubeconfig && (values.contexts || values.resources)) throw new UsageError('--contexts and --resources go with --kubeconfig');
  const contexts = values.contexts === undefined || values.contexts === 'all' ? 'all' : values.contexts.split(',').map((s) => s.trim()).filter(Boolean);
  if (contexts !== 'all' && contexts.length === 0) throw new UsageError('--contexts is empty');
  const identity = values.identity ?? process.env.PANOPTES_IDENTITY;
  if (identity !== undefined && !/^[A-Za-z0-9][-A-Za-z0-9_.:@]{0,252}$/.test(identity)) throw new UsageError(`--identity ${JSON.stringify(identity)}: use letters, digits and - _ . : @ (at most 253)`);
  const leaseTtlMs = durationFlag('lease-ttl', values['lease-ttl'], 15_000);
  if (leaseTtlMs < 1000) throw new UsageError('--lease-ttl must be at least 1s');
  const initialSyncConcurrency = intFlag('initial-sync-concurrency', values['initial-sync-concurrency'], defaultInitialSyncConcurrency);
  if (initialSyncConcurrency < 1) throw new UsageError('--initial-sync-concurrency must be at least 1');
  const resyncIntervalMs = durationFlag('mcs-resync-interval', values['mcs-resync-interval'], defaultDispatcherOptions.resyncIntervalMs);
  if (resyncIntervalMs < 1000) throw new UsageError('--mcs-resync-interval must be at least 1s');
  const awayConsumerGraceMs = durationFlag('mcs-away-consumer-grace', values['mcs-away-consumer-grace'], defaultDispatcherOptions.awayConsumerGraceMs);
  const allowedSystemServices = (values['mcs-allow-system-services'] ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  for (const a of allowedSystemServices) {
    if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\/[a-z]([-a-z0-9]*[a-z0-9])?)?$/.test(a)) throw new UsageError(`--mcs-allow-system-services: ${JSON.stringify(a)} is not a namespace or namespace/name`);
  }
  const hostCluster = hostClusterConnection(hostKubeconfig);
  const publish = values['publish-cluster-profiles'];
  if (publish !== undefined && !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(publish)) throw new UsageError(`--publish-cluster-profiles ${JSON.stringify(publish)} is not a namespace name`);
  if (publish !== undefined && !hostCluster) throw new UsageError('--publish-cluster-profiles needs the host cluster: --host-kubeconfig, or run in the host cluster');
  const providerFile = values['clusterprofile-provider-file'];
  let clusterProfileProviders: SynchroOptions['clusterProfileProviders'];
  if (providerFile !== undefined) {
    try {
      clusterProfileProviders = parseProviderFile(readFileSync(providerFile, 'utf8'), `--clusterprofile-provider-file ${providerFile}`);
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
  }
  return {
    clustersFile,
    kubeconfig: values.kubeconfig,
    hostCluster,
    ...(clusterProfileProviders ? { clusterProfileProviders } : {}),
    ...(publish ? { publishClusterProfiles: { namespace: publish } } : {}),
    credentialsNamespace: credentialsNamespace(ns),
    memberNetworks: memberNetworksFlag(values),
    memberHttp2: memberHttp2Flag(values),
    contexts,
    resources: values.resources?.split(',').map((s) => s.trim()).filter(Boolean),
    timings: {
      probeIntervalMs: durationFlag('probe-interval', values['probe-interval'], 10_000),
      discoveryIntervalMs: durationFlag('discovery-interval', values['discovery-interval'], 30_000),
    },
    compaction: {
      minAgeMs: durationFlag('retention-age', values['retention-age'], defaultCompaction.minAgeMs),
      minCount: intFlag('retention-count', values['retention-count'], defaultCompaction.minCount),
    },
    shards: { identity, leaseTtlMs },
    initialSyncConcurrency,
    mcs: { resyncIntervalMs, awayConsumerGraceMs, ...(allowedSystemServices.length ? { allowedSystemServices } : {}) },
  };
}
