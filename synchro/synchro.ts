// synchro: keeps storage a copy of every configured resource of every member cluster.
// Wiring: the configuration sources (clusters.yaml or kubeconfig contexts, reloaded when the
// files change; and the Cluster objects registered through the API, read from storage on
// every pass, with their credentials inline or from Secrets of the host cluster), the share
// of the clusters this process writes for (several synchro
// processes split them by rendezvous hashing over the live members, each cluster under a
// lease whose epoch fences every write), one ClusterSync per cluster it owns, removal of
// clusters that left the configuration, the compactor (under its own lease) and the metrics
// endpoint. `startSynchro` is what `panoptes synchro` runs and what all-in-one embeds.
import { FileWatcher } from '../lib/file-watcher.ts';
import { logger, type Logger } from '../lib/log.ts';
import { redact } from '../lib/redact.ts';
import type { MemberNetworks } from '../member/networks.ts';
import type { Store } from '../storage/store.ts';
import { Batcher, defaultBatcherOptions, type BatcherOptions, type CommitHook } from './batcher.ts';
import { Committer } from './committer.ts';
import { clusterLease, compactorLease, type Fence } from '../storage/leases.ts';
import { ClusterSync, defaultTimings, dropStored, type ClusterStatus, type ClusterTimings } from './cluster.ts';
import type { ClusterConnection } from '../member/client.ts';
import { ConfigError, loadClustersFile, loadKubeconfigClusters, publicSpec, type ClusterConfig, type InvalidEntry, type ParsedConfig } from './config.ts';
import { fileClusterSpec } from '../api/cluster.ts';
import { ClusterObjectWriter, finishRemoval, type ObjectSource } from './cluster-objects.ts';
import { connectCluster } from '../member/client.ts';
import { HostSecrets } from './host-secrets.ts';
import { apiClusters, isFileObject, needsSecrets } from './registrations.ts';
import { SynchroMetrics, serveMetrics } from './metrics.ts';
import { defaultCompaction, startCompactor, type CompactionOptions } from './compactor.ts';
import { defaultShardSettings, LeaseKeeper, type ShardSettings } from './lease-keeper.ts';
import { ownerOf } from './rendezvous.ts';

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
  /** ...all of them, or these (default: all). */
  contexts?: 'all' | string[];
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
  readonly metrics: SynchroMetrics;
  /** The URL of /metrics when metricsListen was given. */
  readonly metricsUrl?: string;
}

/** A cluster whose lease this process holds, and what it does with it. */
interface Owned {
  epoch: number;
  sync?: ClusterSync;
  /** The message written for an invalid entry (written again only when it changes). */
  invalid?: string;
}

export async function startSynchro(opts: SynchroOptions): Promise<SynchroHandle> {
  if (opts.clustersFile && opts.kubeconfig) throw new Error('startSynchro: give at most one of clustersFile and kubeconfig');
  const { store } = opts;
  const log = opts.log ?? logger('synchro');
  const metrics = opts.metrics ?? new SynchroMetrics();
  const batch = { ...defaultBatcherOptions(store.dialect), ...opts.batch };
  const timings = { ...defaultTimings, ...opts.timings };
  const shards = defaultShardSettings(opts.shards);
  const owned = new Map<string, Owned>();
  let cfg: ParsedConfig | undefined;
  let configError: string | undefined;
  let stopped = false;
  let chain: Promise<void> = Promise.resolve();
  const committer = new Committer(store, batch, metrics, log.child({ part: 'committer' }));
  const deps = { store, metrics, log, batch, committer, timings, onCommit: opts.onCommit, configError: () => configError };

  /** A lease is gone (renewal failed or timed out, or a write was fenced): stop its work now. */
  const onLost = (lease: string, epoch: number) => {
    if (!lease.startsWith('cluster/')) return;
    const name = lease.slice('cluster/'.length);
    const o = owned.get(name);
    if (!o || o.epoch !== epoch) return;
    owned.delete(name);
    void o.sync?.stop().catch((err: Error) => log.warn('stopping a cluster after its lease was lost failed', { cluster: name, err }));
  };
  const keeper = new LeaseKeeper(store, shards, metrics, log, onLost);

  const fenceOf = (name: string): Fence => keeper.fence(clusterLease(name))!;

  const load = (): ParsedConfig =>
    opts.clustersFile
      ? loadClustersFile(opts.clustersFile)
      : opts.kubeconfig
        ? loadKubeconfigClusters(opts.kubeconfig, opts.contexts ?? 'all', opts.resources)
        : { clusters: [], invalid: [], files: [] };

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

  const startCluster = async (c: ClusterConfig, o: Owned) => {
    const fence = fenceOf(c.name);
    o.sync = new ClusterSync(c, deps, { fence, acquiredAt: keeper.acquiredAt(fence.lease)!, onFenced: () => keeper.fenced(fence.lease, fence.epoch) });
    await o.sync.start();
  };

  /** DELETED for every object of a cluster (under its lease), then its row goes. */
  const removeCluster = async (name: string) => {
    const started = Date.now();
    const fence = fenceOf(name);
    const batcher = new Batcher(committer, name, batch, metrics, log.child({ cluster: name }), { onCommit: opts.onCommit, fence, onFenced: () => keeper.fenced(fence.lease, fence.epoch) });
    let objects = 0;
    try {
      for (const r of await store.storedResources(name)) objects += await dropStored(store, batcher, name, r.group, r.resource, metrics);
    } finally {
      await batcher.close();
    }
    await store.deleteClusterOpenAPI(name);
    await store.deleteClusterRow(name);
    await metrics.forget(name);
    const outcome = await finishRemoval(store, name, fence);
    log.info('cluster removed: its objects were deleted', { cluster: name, objects, ms: Date.now() - started, clusterObject: outcome });
  };

  const writeInvalid = async (name: string, entry: InvalidEntry, source: ObjectSource) => {
    const { spec } = entry;
    const message = redact(entry.message);
    const now = new Date().toISOString();
    await store.upsertCluster(name, spec);
    const status: Partial<ClusterStatus> = {
      phase: 'Invalid',
      ready: false,
      reason: 'InvalidConfig',
      message,
      lastTransitionTime: now,
      conditions: [{ type: 'Ready', status: 'False', reason: 'InvalidConfig', message, lastTransitionTime: now }],
      resources: [],
      apiResources: [],
    };
    if (await store.setClusterStatus(name, status as Record<string, unknown>, fenceOf(name))) {
      await new ClusterObjectWriter({ store, name, log }).write(status as Record<string, unknown>, source, fenceOf(name), true);
    }
  };

  /**
   * Makes this process run exactly its share: the clusters of the configuration (and those
   * still in storage, to remove them) that rendezvous hashing gives to this member among the
   * live ones. It hands over what is no longer its own (stop, then release the lease, so the
   * new owner starts at once), acquires what is (a lease still held elsewhere is retried on
   * the next pass), and starts, restarts, marks invalid or removes each owned cluster as the
   * configuration says.
   */
  const reconcile = async () => {
    if (stopped || !cfg) return;
    const { live, deadHere } = await keeper.members();
    const registrations = await store.listClusterRegistrations();
    if (needsSecrets(registrations)) hostSecrets?.start();
    const configured = new Map(cfg.clusters.map((c) => [c.name, c]));
    const invalid = new Map(cfg.invalid.filter((i) => i.name).map((i) => [i.name!, i]));
    // The file's names are the file's: an API object of the same name is reported as a conflict, never used.
    const api = apiClusters(registrations, new Set([...configured.keys(), ...invalid.keys()]), hostSecrets, opts.memberNetworks);
    for (const [name, c] of api.configs) configured.set(name, c);
    for (const [name, i] of api.invalid) invalid.set(name, i);
    const universe = new Set([...configured.keys(), ...invalid.keys(), ...api.objects.keys(), ...(await store.knownClusterNames())]);
    const mine = [...universe].filter((name) => ownerOf(name, live) === keeper.identity).sort();

    for (const [name, o] of [...owned]) {
      if (mine.includes(name)) continue;
      owned.delete(name);
      await o.sync?.stop();
      await keeper.release(clusterLease(name), 'rebalance');
      log.info('cluster handed over to another synchro member', { cluster: name, to: ownerOf(name, live), epoch: o.epoch });
    }
    for (const name of mine) {
      if (stopped) return;
      let o = owned.get(name);
      if (!o) {
        const epoch = await keeper.acquire(clusterLease(name), deadHere);
        if (epoch === undefined) continue;
        o = { epoch };
        owned.set(name, o);
      }
      if (api.pending.has(name)) continue; // its Secret is not read yet: leave it as it is
      const want = configured.get(name);
      const bad = invalid.get(name);
      const obj = api.objects.get(name)?.object;
      if (want) {
        // An API object marked for deletion while clusters.yaml syncs that name: released, the file's cluster and its data stay.
        if (obj && !isFileObject(obj) && obj.metadata?.deletionTimestamp && want.source === 'file') await finishRemoval(store, name, fenceOf(name));
        if (o.sync?.config.fingerprint === want.fingerprint) {
          o.sync.observeGeneration(want.generation);
          continue;
        }
        if (o.sync) {
          log.info('cluster configuration changed; restarting its sync', { cluster: name });
          await o.sync.stop();
        }
        o.invalid = undefined;
        await startCluster(want, o);
      } else if (bad) {
        if (o.sync) {
          log.info('cluster entry became invalid; stopping its sync (data kept)', { cluster: name });
          await o.sync.stop();
          o.sync = undefined;
        }
        const fromFile = cfg.invalid.includes(bad);
        const generation = Number(obj?.metadata?.generation ?? 0) || undefined;
        const source: ObjectSource = fromFile ? { source: 'file', fileSpec: fileClusterSpec(bad.spec) } : { source: 'api', generation };
        const key = `${bad.message}@${generation ?? ''}`;
        if (o.invalid !== key) await writeInvalid(name, bad, source);
        o.invalid = key;
      } else {
        await o.sync?.stop();
        await removeCluster(name);
        owned.delete(name);
        await keeper.release(clusterLease(name), 'removed');
      }
    }
    if (opts.compaction !== false && keeper.epoch(compactorLease) === undefined) await keeper.acquire(compactorLease, deadHere);
  };

  const enqueue = (fn: () => Promise<void>, what: string): Promise<void> => {
    const run = chain.then(fn);
    chain = run.catch((err: Error) => log.error(`${what} failed`, { err }));
    return run;
  };

  const reload = (): Promise<void> =>
    enqueue(async () => {
      if (stopped) return;
      let next: ParsedConfig;
      try {
        next = load();
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        const message = `${err.message} (the last good configuration stays in effect)`;
        if (message !== configError) {
          configError = message;
          metrics.errors.inc({ cluster: '', kind: 'config' });
          log.error('cannot use the cluster configuration', { error: message });
        }
        return;
      }
      watcher.watch(next.files);
      if (configError) log.info('cluster configuration is valid again');
      configError = undefined;
      const key = JSON.stringify([next.clusters.map((c) => [c.name, c.fingerprint]), next.invalid]);
      if (key === lastKey) return;
      lastKey = key;
      for (const i of next.invalid) {
        metrics.errors.inc({ cluster: i.name ?? '', kind: 'config' });
        log.error('invalid cluster entry; the other clusters are not affected', { cluster: i.name, error: i.message });
      }
      cfg = next;
      await reconcile();
    }, 'applying the cluster configuration');
  let lastKey = '';
  const watcher = new FileWatcher(opts.reloadIntervalMs ?? 1000, () => void reload().catch(() => undefined));
  const file = opts.clustersFile ?? opts.kubeconfig;
  if (file) watcher.watch([file]);

  let metricsServer: Awaited<ReturnType<typeof serveMetrics>> | undefined;
  if (opts.metricsListen) {
    metricsServer = await serveMetrics(metrics.registry, opts.metricsListen);
    log.info('metrics listening', { url: metricsServer.url });
  }
  await keeper.start();
  const compactor =
    opts.compaction === false ? undefined : startCompactor(store, { ...defaultCompaction, ...opts.compaction }, log, () => keeper.epoch(compactorLease) !== undefined);
  log.info('synchro starting', {
    identity: keeper.identity,
    leaseTtlMs: shards.leaseTtlMs,
    source: opts.clustersFile ? { clusters: opts.clustersFile } : opts.kubeconfig ? { kubeconfig: opts.kubeconfig, contexts: opts.contexts ?? 'all' } : 'API-registered clusters only',
    hostCluster: opts.hostCluster ? (opts.hostCluster.kubeconfig ?? opts.hostCluster.server) : undefined,
    storage: store.conn.display,
  });
  await reload().catch((err: Error) => log.error('initial configuration failed', { err }));
  // Members come and go: check the share on an interval (a pass only queries when nothing changed).
  const assignTimer = setInterval(() => {
    if (!stopped) void enqueue(reconcile, 'assigning clusters to synchro members');
  }, shards.assignIntervalMs);

  return {
    identity: keeper.identity,
    metrics,
    metricsUrl: metricsServer?.url,
    reload,
    configError: () => configError,
    clusters: () => Object.fromEntries([...owned].filter(([, o]) => o.sync).map(([n, o]) => [n, o.sync!.status()])),
    async waitForInitialSync(timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      await chain;
      while (Date.now() < deadline) {
        if ([...owned.values()].every((o) => !o.sync || o.sync.settled)) return true;
        await new Promise((r) => setTimeout(r, 50));
      }
      return false;
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(assignTimer);
      watcher.close();
      await chain;
      await hostSecrets?.stop();
      await Promise.all([...owned.values()].map((o) => o.sync?.stop()));
      owned.clear();
      await committer.close();
      await compactor?.stop();
      await keeper.stop();
      await metricsServer?.close();
      log.info('synchro stopped');
    },
  };
}

export { publicSpec };
