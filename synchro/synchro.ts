// synchro: keeps storage a copy of every configured resource of every member cluster.
// Wiring only: the configuration source (clusters.yaml or kubeconfig contexts, reloaded
// when the files change), one ClusterSync per valid cluster, removal of clusters that left
// the configuration, and the metrics endpoint. `startSynchro` is what `panoptes synchro`
// runs and what all-in-one embeds.
import { logger, type Logger } from '../lib/log.ts';
import type { Store } from '../storage/store.ts';
import { Batcher, defaultBatcherOptions, type BatcherOptions, type CommitHook } from './batcher.ts';
import { ClusterSync, defaultTimings, dropStored, type ClusterStatus, type ClusterTimings } from './cluster.ts';
import { ConfigError, FileWatcher, loadClustersFile, loadKubeconfigClusters, publicSpec, type ClusterConfig, type ParsedConfig } from './config.ts';
import { SynchroMetrics, serveMetrics } from './metrics.ts';
import { defaultCompaction, startCompactor, type CompactionOptions } from './compactor.ts';

export interface SynchroOptions {
  /** Opened storage; the caller owns it (and closes it after stop()). */
  store: Store;
  /** clusters.yaml. Either this or kubeconfig. */
  clustersFile?: string;
  /** all-in-one: one cluster per context of this kubeconfig... */
  kubeconfig?: string;
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
  /** Called after every commit (benchmarks). */
  onCommit?: CommitHook;
  /** Change-log retention and how often to compact (default: 15 minutes and 100,000 changes, every minute); false: never. */
  compaction?: Partial<CompactionOptions> | false;
  log?: Logger;
}

export interface SynchroHandle {
  /** Stops syncing (committing what was received), closes the metrics server. Storage stays open. */
  stop(): Promise<void>;
  /** Reads the configuration now (also happens by itself when the files change). */
  reload(): Promise<void>;
  /** Resolves true once every running cluster finished its initial sync (or has unusable settings), false after timeoutMs. */
  waitForInitialSync(timeoutMs?: number): Promise<boolean>;
  /** Status of every running cluster, by name. */
  clusters(): Record<string, ClusterStatus>;
  /** The configuration file's current problem, if it is broken. */
  configError(): string | undefined;
  readonly metrics: SynchroMetrics;
  /** The URL of /metrics when metricsListen was given. */
  readonly metricsUrl?: string;
}

export async function startSynchro(opts: SynchroOptions): Promise<SynchroHandle> {
  if (!opts.clustersFile === !opts.kubeconfig) throw new Error('startSynchro: give exactly one of clustersFile and kubeconfig');
  const { store } = opts;
  const log = opts.log ?? logger('synchro');
  const metrics = opts.metrics ?? new SynchroMetrics();
  const batch = { ...defaultBatcherOptions(store.dialect), ...opts.batch };
  const timings = { ...defaultTimings, ...opts.timings };
  const running = new Map<string, ClusterSync>();
  let configError: string | undefined;
  let stopped = false;
  let chain: Promise<void> = Promise.resolve();
  const deps = { store, metrics, log, batch, timings, onCommit: opts.onCommit, configError: () => configError };

  const load = (): ParsedConfig =>
    opts.clustersFile ? loadClustersFile(opts.clustersFile) : loadKubeconfigClusters(opts.kubeconfig!, opts.contexts ?? 'all', opts.resources);

  const startCluster = async (c: ClusterConfig) => {
    const sync = new ClusterSync(c, deps);
    running.set(c.name, sync);
    await sync.start();
  };

  /** DELETED for every object of a cluster, then its row goes. */
  const removeCluster = async (name: string) => {
    const sync = running.get(name);
    running.delete(name);
    await sync?.stop();
    const started = Date.now();
    const batcher = new Batcher(store, name, batch, metrics, log.child({ cluster: name }), opts.onCommit);
    let objects = 0;
    try {
      for (const r of await store.storedResources(name)) objects += await dropStored(store, batcher, name, r.group, r.resource, metrics);
    } finally {
      await batcher.close();
    }
    await store.deleteClusterOpenAPI(name);
    await store.deleteClusterRow(name);
    await metrics.forget(name);
    log.info('cluster removed: its objects were deleted', { cluster: name, objects, ms: Date.now() - started });
  };

  const writeInvalid = async (name: string, spec: Record<string, unknown>, message: string) => {
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
    await store.setClusterStatus(name, status as Record<string, unknown>);
  };

  const apply = async (cfg: ParsedConfig) => {
    const desired = new Map(cfg.clusters.map((c) => [c.name, c]));
    const invalidNames = new Map(cfg.invalid.filter((i) => i.name).map((i) => [i.name!, i]));
    for (const i of cfg.invalid) {
      metrics.errors.inc({ cluster: i.name ?? '', kind: 'config' });
      log.error('invalid cluster entry; the other clusters are not affected', { cluster: i.name, error: i.message });
    }
    // Clusters that went away, changed, or became invalid.
    for (const [name, sync] of [...running]) {
      const want = desired.get(name);
      if (want && want.fingerprint === sync.config.fingerprint) continue;
      if (want || invalidNames.has(name)) {
        // Changed (or now invalid): restart with the new settings; the data stays.
        log.info(want ? 'cluster configuration changed; restarting its sync' : 'cluster entry became invalid; stopping its sync (data kept)', { cluster: name });
        running.delete(name);
        await sync.stop();
      } else {
        await removeCluster(name);
      }
    }
    // Registered in storage (or holding objects) but no longer configured at all.
    const known = new Set([...(await store.listClusters()).map((c) => c.name), ...(await store.storedResources()).map((r) => r.cluster)]);
    for (const name of known) if (!desired.has(name) && !invalidNames.has(name)) await removeCluster(name);
    for (const [name, i] of invalidNames) if (!desired.has(name)) await writeInvalid(name, i.spec, i.message);
    for (const [name, c] of desired) if (!running.has(name)) await startCluster(c);
  };

  const reload = (): Promise<void> => {
    const run = chain.then(async () => {
      if (stopped) return;
      let cfg: ParsedConfig;
      try {
        cfg = load();
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
      watcher.watch(cfg.files);
      if (configError) log.info('cluster configuration is valid again');
      configError = undefined;
      const key = JSON.stringify([cfg.clusters.map((c) => [c.name, c.fingerprint]), cfg.invalid]);
      if (key === lastKey) return;
      lastKey = key;
      await apply(cfg);
    });
    chain = run.catch((err: Error) => log.error('applying the cluster configuration failed', { err }));
    return run;
  };
  let lastKey = '';
  const watcher = new FileWatcher(opts.reloadIntervalMs ?? 1000, () => void reload().catch(() => undefined));
  const source = opts.clustersFile ?? opts.kubeconfig!;
  watcher.watch([source]);

  let metricsServer: Awaited<ReturnType<typeof serveMetrics>> | undefined;
  if (opts.metricsListen) {
    metricsServer = await serveMetrics(metrics.registry, opts.metricsListen);
    log.info('metrics listening', { url: metricsServer.url });
  }
  const compactor = opts.compaction === false ? undefined : startCompactor(store, { ...defaultCompaction, ...opts.compaction }, log);
  log.info('synchro starting', { source: opts.clustersFile ? { clusters: opts.clustersFile } : { kubeconfig: opts.kubeconfig, contexts: opts.contexts ?? 'all' }, storage: store.conn.display });
  await reload().catch((err: Error) => log.error('initial configuration failed', { err }));

  return {
    metrics,
    metricsUrl: metricsServer?.url,
    reload,
    configError: () => configError,
    clusters: () => Object.fromEntries([...running].map(([n, s]) => [n, s.status()])),
    async waitForInitialSync(timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      await chain;
      while (Date.now() < deadline) {
        if ([...running.values()].every((s) => s.settled)) return true;
        await new Promise((r) => setTimeout(r, 50));
      }
      return false;
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      watcher.close();
      await chain;
      await Promise.all([...running.values()].map((s) => s.stop()));
      running.clear();
      await compactor?.stop();
      await metricsServer?.close();
      log.info('synchro stopped');
    },
  };
}

export { publicSpec };
