// synchro: keeps storage a copy of every configured resource of every member cluster.
// `startSynchro` is what `panoptes synchro` runs and what all-in-one embeds; it wires:
//   ConfigSource (config-source.ts)   clusters.yaml or kubeconfig contexts, read again when the files change
//   Membership (membership.ts)        this process among the synchro members and the leases it holds;
//                                     it joins only once its configuration is loaded
//   desiredClusters (cluster-work.ts) the file's clusters merged with those registered through the API
//                                     (credentials inline or from Secrets of the host cluster)
//   ClusterWork (cluster-work.ts)     a ClusterSync per cluster it holds, Invalid entries, removals
//   NotSyncedMarker (not-synced.ts)   clusters of other members that nobody syncs, marked not Ready
//   Importer (import/importer.ts)     the source objects of every ClusterSource, listed and watched on the
//                                     host cluster: imported Clusters' connections; the holder of the
//                                     importer lease writes the imported Cluster objects (import/apply.ts)
//   McsDispatcher (mcs/dispatcher.ts) multi-cluster Services: the consumer clusters it holds get the
//                                     providers' EndpointSlices, written under their leases
//   the compactor (under its own lease) and the metrics endpoint.
// One pass (reconcile) runs at a time: after a configuration change, a change of the host's
// Secrets, and every assignIntervalMs, as members come and go.
import { logger, type Logger } from '../lib/log.ts';
import type { MemberNetworks } from '../member/networks.ts';
import type { Store } from '../storage/store.ts';
import { defaultBatcherOptions, type BatcherOptions, type CommitHook } from './commit/batcher.ts';
import { ClusterObjectCommitter } from './commit/cluster-object-committer.ts';
import { ClusterStatusCommitter } from './commit/cluster-status-committer.ts';
import { Committer } from './commit/committer.ts';
import { defaultInitialSyncConcurrency, InitialSyncSlots } from './cluster/initial-sync-slots.ts';
import { clusterLease, compactorLease, FencedError, importerLease } from '../storage/leases.ts';
import { Importer } from './import/importer.ts';
import { applyImports } from './import/apply.ts';
import type { ExecProvider } from './import/exec-credentials.ts';
import { ProfilePublisher } from './import/publish-profiles.ts';
import { clusterSourceResource } from '../api/cluster-source.ts';
import { defaultTimings, type ClusterStatus, type ClusterTimings } from './cluster/cluster.ts';
import type { ClusterConnection } from '../member/client.ts';
import { publicSpec } from '../member/cluster-config.ts';
import { ConfigSource } from './config/config-source.ts';
import { ClusterWork, desiredClusters, type Desired } from './cluster/cluster-work.ts';
import { connectCluster } from '../member/client.ts';
import { HostSecrets } from '../member/host-secrets.ts';
import { SynchroMetrics, serveMetrics } from './metrics/metrics.ts';
import { defaultCompaction, startCompactor, type CompactionOptions } from './commit/compactor.ts';
import { defaultShardSettings, Membership, type MembershipState, type ShardSettings } from './membership/membership.ts';
import { NotSyncedMarker } from './membership/not-synced.ts';
import { readiness, readyzAnswer, type CheckResult } from './metrics/readiness.ts';
import { McsDispatcher, type DispatcherOptions } from './mcs/dispatcher.ts';

export interface SynchroOptions {
  /** Opened storage; the caller owns it (and closes it after stop()). */
  store: Store;
  /** clusters.yaml. At most one of this and kubeconfig; with neither, only Clusters registered through the API are synced. */
  clustersFile?: string;
  /** all-in-one: one cluster per context of this kubeconfig... */
  kubeconfig?: string;
  /** The host cluster (where Panoptes is installed), to read the Secrets that API-registered Clusters name. */
  hostCluster?: ClusterConnection;
  /** The namespace of those Secrets (default `panoptes`). */
  credentialsNamespace?: string;
  /** --allow-member-networks: networks API-registered clusters may reach although refused by default (loopback, link-local, unspecified). */
  memberNetworks?: MemberNetworks;
  /** --member-http2: HTTP/2 to https:// members that offer it (default: memberHttp2Default in member/client.ts). */
  memberHttp2?: boolean;
  /** ...all of them, or these (default: all). */
  contexts?: 'all' | string[];
  /** How often every ClusterSource's source objects are listed again, even when their watches are quiet (default 10 minutes). */
  importResyncMs?: number;
  /** --clusterprofile-provider-file: the exec providers of ClusterProfile access (synchro/import/exec-credentials.ts). */
  clusterProfileProviders?: ExecProvider[];
  /** --publish-cluster-profiles: a ClusterProfile per Cluster in this namespace of the host cluster (synchro/import/publish-profiles.ts); off by default. */
  publishClusterProfiles?: { namespace: string; intervalMs?: number };
  /** Resource patterns for kubeconfig clusters (default: the default set). */
  resources?: string[];
  /** HOST:PORT for GET /metrics; unset: no metrics server (the registry is still filled). */
  metricsListen?: string;
  /** Metrics to fill (all-in-one may share one registry); a new set by default. */
  metrics?: SynchroMetrics;
  /** How often the configuration files are checked for changes (default 1000 ms). */
  reloadIntervalMs?: number;
  timings?: Partial<ClusterTimings>;
  batch?: Partial<BatcherOptions>;
  /** Identity, lease TTL and timings of this process among the synchro members. */
  shards?: Partial<ShardSettings>;
  /** Called after every commit (benchmarks). */
  onCommit?: CommitHook;
  /** Change-log retention and how often to compact (default: 15 minutes and 100,000 changes, every minute); false: never. */
  compaction?: Partial<CompactionOptions> | false;
  /** The multi-cluster Service dispatcher's timings (synchro/mcs/dispatcher.ts); false: no dispatch from this process. */
  mcs?: Partial<DispatcherOptions> | false;
  /** How many clusters run their initial sync at once (default defaultInitialSyncConcurrency; initial-sync-slots.ts). */
  initialSyncConcurrency?: number;
  log?: Logger;
}

export interface SynchroHandle {
  /** Stops syncing (committing what was received), releases its leases, closes the metrics server. Storage stays open. */
  stop(): Promise<void>;
  /** Reads the configuration now (also happens by itself when the files change). */
  reload(): Promise<void>;
  /** Resolves true once every cluster this process runs finished its initial sync (or has unusable settings), false after timeoutMs. */
  waitForInitialSync(timeoutMs?: number): Promise<boolean>;
  /** Status of every cluster this process runs, by name. */
  clusters(): Record<string, ClusterStatus>;
  /** The configuration file's current problem, if it is broken. */
  configError(): string | undefined;
  /** This process's name among the synchro members. */
  readonly identity: string;
  /** Whether it can do its work (its /readyz): configuration loaded, storage answering, a member; each check and why it fails. */
  readiness(): Promise<CheckResult[]>;
  /** Whether it is a member (and why not), the live members, the leases it holds. */
  membership(): MembershipState;
  readonly metrics: SynchroMetrics;
  /** The URL of /metrics when metricsListen was given. */
  readonly metricsUrl?: string;
}

export async function startSynchro(opts: SynchroOptions): Promise<SynchroHandle> {
  if (opts.clustersFile && opts.kubeconfig) throw new Error('startSynchro: give at most one of clustersFile and kubeconfig');
  const { store } = opts;
  const log = opts.log ?? logger('synchro');
  const metrics = opts.metrics ?? new SynchroMetrics();
  const batch = { ...defaultBatcherOptions(store.dialect), ...opts.batch };
  const timings = { ...defaultTimings, ...opts.timings };
  const shards = defaultShardSettings(opts.shards);
  let stopped = false;
  let chain: Promise<void> = Promise.resolve();
  const enqueue = (fn: () => Promise<void>, what: string): Promise<void> => {
    const run = chain.then(fn);
    chain = run.catch((err: Error) => log.error(`${what} failed`, { err }));
    return run;
  };

  const committer = new Committer(store, batch, metrics, log.child({ part: 'committer' }));
  const clusterObjects = new ClusterObjectCommitter(store, log.child({ part: 'committer' }), { onRound: (n) => metrics.clusterObjectRounds.observe(n) });
  const clusterStatuses = new ClusterStatusCommitter(store, log.child({ part: 'committer' }), { onRound: (n) => metrics.clusterStatusRounds.observe(n) });
  const config = new ConfigSource({ ...opts, metrics, log, onFileChange: () => void reload().catch(() => undefined) });
  // The installation's id (one per database), in every Cluster's status: what it dispatches into members carries it.
  const installation = await store.installationId();
  const initialSyncs = new InitialSyncSlots(opts.initialSyncConcurrency ?? defaultInitialSyncConcurrency, (running, waiting) => {
    metrics.initialSyncs.set({ state: 'running' }, running);
    metrics.initialSyncs.set({ state: 'waiting' }, waiting);
  });
  const deps = { store, metrics, log, batch, committer, clusterObjects, clusterStatuses, initialSyncs, timings, onCommit: opts.onCommit, configError: () => config.error, installation, ...(opts.memberHttp2 !== undefined ? { http2: opts.memberHttp2 } : {}) };
  // A lost cluster lease stops that cluster's work (and its dispatch) at once.
  // Heartbeats and lease renewals on connections of their own (PostgreSQL): they never wait
  // for a connection behind this process's writes, whatever their number.
  const leases = store.separatePool(2);
  const membership = new Membership(leases.store, shards, metrics, log, (lease, epoch) => {
    if (!lease.startsWith(clusterLease(''))) return;
    dispatcher?.lost(lease.slice(clusterLease('').length), epoch);
    work.lost(lease.slice(clusterLease('').length), epoch);
  });
  membership.configError = () => config.error;
  // A cluster leaving this member is no longer written to before its lease is released.
  const work: ClusterWork = new ClusterWork(deps, membership, async (name: string): Promise<void> => dispatcher?.release(name));
  const dispatcher: McsDispatcher | undefined = opts.mcs === false ? undefined : new McsDispatcher({ store, membership, source: work, metrics, log, options: opts.mcs });
  const notSynced = new NotSyncedMarker(store, membership, shards.notSyncedAfterMs, log);

  // The host cluster's Secrets, listed and watched once some API cluster names one.
  let hostSecrets: HostSecrets | undefined;
  if (opts.hostCluster) {
    const client = await connectCluster(opts.hostCluster);
    hostSecrets = new HostSecrets({
      client,
      namespace: opts.credentialsNamespace ?? 'panoptes',
      log: log.child({ part: 'host-secrets' }),
      onChange: () => void enqueue(reconcile, 'following a change of the host cluster secrets').catch(() => undefined),
    });
  }

  // The ClusterSources' source objects on the host cluster; a burst of changes is one pass.
  let importer: Importer | undefined;
  if (opts.hostCluster) {
    let timer: NodeJS.Timeout | undefined;
    importer = new Importer({
      client: await connectCluster(opts.hostCluster),
      log: log.child({ part: 'importer' }),
      resyncMs: opts.importResyncMs,
      ...(opts.clusterProfileProviders ? { execProviders: opts.clusterProfileProviders } : {}),
      installation,
      onChange: () => {
        timer ??= setTimeout(() => {
          timer = undefined;
          void enqueue(reconcile, 'following a change of the cluster sources').catch(() => undefined);
        }, 50);
      },
    });
  }

  // The fleet as ClusterProfiles on the host cluster, written by the holder of the importer lease.
  let publisher: ProfilePublisher | undefined;
  if (opts.hostCluster && opts.publishClusterProfiles) {
    publisher = new ProfilePublisher({
      client: await connectCluster(opts.hostCluster),
      namespace: opts.publishClusterProfiles.namespace,
      installation,
      clusters: () => store.listClusterRegistrations(),
      lease: {
        held: () => {
          const fence = membership.fence(importerLease);
          return fence ? { epoch: fence.epoch, remainingMs: membership.remainingMs(importerLease) } : undefined;
        },
      },
      log: log.child({ part: 'publisher' }),
      ...(opts.publishClusterProfiles.intervalMs ? { intervalMs: opts.publishClusterProfiles.intervalMs } : {}),
    });
  }

  /** The holder of the importer lease (any member takes it when free) writes the imported Clusters and the sources' status. */
  async function importClusters(sources: Awaited<ReturnType<Store['listOwnObjects']>>, registrations: Desired['api']['objects']): Promise<void> {
    if (!importer || !config.current) return;
    if (membership.epoch(importerLease) === undefined && (await membership.acquire(importerLease)) === undefined) return;
    const fence = membership.fence(importerLease)!;
    const fileNames = new Set([...config.current.clusters.map((c) => c.name), ...config.current.invalid.flatMap((i) => (i.name ? [i.name] : []))]);
    try {
      await applyImports({ store, fence, importer, sources, registrations: [...registrations.values()], fileNames, log: log.child({ part: 'importer' }) });
    } catch (err) {
      if (!(err instanceof FencedError)) throw err;
      membership.fenced(fence.lease, fence.epoch);
    }
  }

  /**
   * Makes this process run exactly its share: the clusters of the configuration (and those
   * still in storage, to remove them) that bounded-load rendezvous hashing gives to this
   * member among the live ones (none while it is out of the membership); then marks the clusters of other
   * members that nobody syncs, and takes the compactor lease when it is free.
   */
  async function reconcile(): Promise<void> {
    if (stopped || !config.current) return;
    const sources = importer ? await store.listOwnObjects(clusterSourceResource) : [];
    importer?.follow(sources);
    const desired = await desiredClusters(store, config.current, hostSecrets, opts.memberNetworks, importer);
    const removals = new Set([...desired.universe].filter((n) => !desired.configured.has(n) && !desired.invalid.has(n) && !desired.api.objects.has(n)));
    const { mine, others, now } = await membership.share(desired.universe, (name) => work.stop(name), removals);
    for (const name of mine) {
      if (stopped) return;
      if (membership.epoch(clusterLease(name)) !== undefined) await work.apply(name, desired);
    }
    if (!membership.isMember) return;
    await importClusters(sources, desired.api.objects);
    await notSynced.check(others, now);
    if (opts.compaction !== false && membership.epoch(compactorLease) === undefined) await membership.acquire(compactorLease);
  }

  /** Reads the configuration; the first good one makes this process a member. */
  const reload = (): Promise<void> =>
    enqueue(async () => {
      if (stopped) return;
      const changed = config.read();
      if (config.current) await membership.join();
      if (changed) await reconcile();
    }, 'applying the cluster configuration');

  let metricsServer: Awaited<ReturnType<typeof serveMetrics>> | undefined;
  let compactor: ReturnType<typeof startCompactor> | undefined;
  const cleanup = async () => {
    config.close();
    await hostSecrets?.stop();
    await importer?.stop();
    await publisher?.stop();
    await dispatcher?.stop();
    await work.stopAll();
    await committer.close();
    await clusterObjects.close();
    await clusterStatuses.close();
    await compactor?.stop();
    await membership.stop();
    await leases.close();
    await metricsServer?.close();
  };
  const ready = () => readiness({ loaded: () => config.current !== undefined, configError: () => config.error, ping: () => store.ping(), membership: () => membership.state(), metrics });
  if (opts.metricsListen) {
    metricsServer = await serveMetrics(metrics.registry, opts.metricsListen, async (verbose) => readyzAnswer(await ready(), verbose));
    log.info('metrics listening', { url: metricsServer.url });
  }
  log.info('synchro starting', {
    identity: membership.identity,
    instance: membership.instance,
    leaseTtlMs: shards.leaseTtlMs,
    source: opts.clustersFile ? { clusters: opts.clustersFile } : opts.kubeconfig ? { kubeconfig: opts.kubeconfig, contexts: opts.contexts ?? 'all' } : 'API-registered clusters only',
    hostCluster: opts.hostCluster ? (opts.hostCluster.kubeconfig ?? opts.hostCluster.server) : undefined,
    storage: store.conn.display,
  });
  membership.start();
  dispatcher?.start();
  publisher?.start();
  let loaded = false;
  try {
    loaded = config.read();
  } catch (err) {
    log.error('initial configuration failed', { err: err as Error });
  }
  // At start, an identity another live process holds is an error: this one does not start.
  if (loaded) {
    try {
      await membership.join(true);
    } catch (err) {
      // Nothing queued meanwhile (a reload of the file) may start work in a process that did not start.
      stopped = true;
      await chain;
      await cleanup();
      throw err;
    }
  }
  await enqueue(reconcile, 'applying the cluster configuration').catch(() => undefined);
  compactor =
    opts.compaction === false
      ? undefined
      : startCompactor(store, { ...defaultCompaction, ...opts.compaction }, log, { fence: () => membership.fence(compactorLease), onFenced: (f) => membership.fenced(f.lease, f.epoch) });
  // Members come and go: check the share on an interval (a pass only queries when nothing changed).
  const assignTimer = setInterval(() => {
    if (stopped) return;
    void enqueue(reconcile, 'assigning clusters to synchro members');
    void ready().catch(() => undefined);
  }, shards.assignIntervalMs);
  void ready().catch(() => undefined);

  return {
    identity: membership.identity,
    metrics,
    metricsUrl: metricsServer?.url,
    reload,
    configError: () => config.error,
    membership: () => membership.state(),
    readiness: ready,
    clusters: () => work.statuses(),
    async waitForInitialSync(timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      await chain;
      while (Date.now() < deadline) {
        if (work.settled()) return true;
        await new Promise((r) => setTimeout(r, 50));
      }
      return false;
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(assignTimer);
      config.close();
      await chain;
      await cleanup();
      log.info('synchro stopped');
    },
  };
}

export { publicSpec };
