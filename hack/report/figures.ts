// The figures a benchmark records in docs/bench/<name>.json: one small schema per benchmark,
// with the raw numbers its charts need, the arguments it ran with, when, and on what machine.
// hack/report/ turns each file into SVG charts (docs/bench/<name>-<chart>.svg).

import { fileURLToPath } from 'node:url';

/** docs/bench/ of this repository, where the figures and charts live. */
export const benchDir = fileURLToPath(new URL('../../docs/bench/', import.meta.url));

/** The machine a benchmark ran on: no host names or paths. */
export interface Machine {
  cores: number;
  cpu: string;
  memoryGiB: number;
  node: string;
  platform: string;
}

/** A latency histogram: [milliseconds, count] pairs, in increasing milliseconds, empty bins left out. */
export type Histogram = Array<[number, number]>;

interface Run<B extends string, F> {
  bench: B;
  /** Bumped when the layout of `figures` changes. */
  schema: 1;
  /** When the run ended (ISO 8601, UTC, to the second). */
  at: string;
  machine: Machine;
  /** The benchmark's arguments, defaults included. */
  args: Record<string, string | number | boolean>;
  figures: F;
}

// ---- hack/bench/storage.ts

export interface StorageBackendFigures {
  backend: 'sqlite' | 'sqlite3' | 'postgres';
  label: string;
  ingestEventsPerSec: number;
  pollRowsPerSec: number;
  /** Every request of the filtered first page, in ms. */
  firstPageMs: number[];
  pagingObjectsPerSec: number;
}

export interface StorageFigures {
  objects: number;
  clusters: number;
  backends: StorageBackendFigures[];
  targets: { ingestEventsPerSec: { sqlite: number; postgres: number }; pollRowsPerSec: number; firstPageP50MsSqlite: number; pagingObjectsPerSec: number };
}

// ---- hack/bench/list.ts

export interface ListBackendFigures {
  backend: 'sqlite' | 'postgres';
  setupSeconds: number;
  /** Every sequential request of the first page (limit=500), in ms, as JSON and as Table. */
  firstPageMs: { json: number[]; table: number[] };
  firstPageBytes: { json: number; table: number };
  /** The whole collection page by page (limit=500), as JSON and as Table: pages and wall time. */
  allPages: { json: { pages: number; seconds: number }; table: { pages: number; seconds: number } };
  /** Lists with multi-value search filters (--filter-objects), each paged through several times. */
  filtered?: ListFilteredFigures[];
  /** The apiserver's CPU per page (ms); absent in runs before it was measured. */
  cpuMsPerPage?: ListCpuFigures;
}

/** CPU of a `panoptes apiserver` process per page of 500 objects (ms): first pages as JSON and as Table, and every page as JSON. */
export interface ListCpuFigures {
  json: number;
  table: number;
  allPagesJson: number;
  pages: number;
  /** First-page latency (ms) just before and with a process spinning on each core. */
  neighbour?: ListNeighbourFigures;
}

export interface ListNeighbourFigures {
  spinners: number;
  idle: Record<'json' | 'table', { p50: number; p99: number }>;
  busy: Record<'json' | 'table', { p50: number; p99: number }>;
}

export interface ListFilteredFigures {
  /** What the list selects, and its query string. */
  name: string;
  query: string;
  items: number;
  pages: number;
  /** The first page of every round, and every continue page of every round (ms). */
  firstPageMs: number[];
  continuePageMs: number[];
  /** Wall time of each round through every page (s). */
  allPagesSeconds: number[];
}

export interface ListKubectlFigures {
  pods: number;
  clusters: number;
  /** `kubectl get pods -A` through Panoptes, and against each cluster one after the other (s). */
  panoptesSeconds: number;
  directSeconds: number;
  chunked: { chunkSize: number; panoptesSeconds: number; directSeconds: number };
}

export interface ListFigures {
  pods: number;
  clusters: number;
  backends: ListBackendFigures[];
  kubectl?: ListKubectlFigures;
  targets: { firstPageJsonP50Ms: number; postgresOverSqlite: number; continueOverFirstPage?: number; cpuMsPerPage?: { json: number; table: number } };
}

// ---- hack/bench/synchro.ts

export interface SynchroInitialFigures {
  objects: number;
  stored: number;
  seconds: number;
  complete: boolean;
  batches: number;
  storageSeconds: number;
  rssBeforeMiB: number;
  rssAfterMiB: number;
  /** synchro's CPU per object synced (µs); absent in runs before it was measured. */
  cpuUsPerObject?: number;
}

export interface SynchroChurnFigures {
  clusters: number;
  upstreamWrites: number;
  seconds: number;
  matched: number;
  /** Upstream-event-to-commit lag, 1 ms bins. */
  lag: Histogram;
  batches: number;
  eventsPerBatch: number;
  storageMsPerBatch: number;
  /** synchro's RSS sampled every `rssEverySeconds`. */
  rssMiB: number[];
  /**
   * The same samples split: anonymous memory (the heap, buffers: what a leak grows) and
   * file-backed pages (on SQLite mostly the memory-mapped database file, which grows with it).
   */
  anonMiB?: number[];
  fileMiB?: number[];
  rssEverySeconds: number;
  /** synchro's CPU per event synced (µs); absent in runs before it was measured. */
  cpuUsPerEvent?: number;
}

export interface SynchroFigures {
  backend: 'sqlite' | 'postgres';
  initial?: SynchroInitialFigures;
  churn?: SynchroChurnFigures;
  targets: { initialSyncSeconds: number; lagP99Ms: number; rssFlatWithin: number };
}

// ---- hack/bench/synchro-ha.ts

export interface SynchroHaThroughputFigures {
  members: number;
  askedPerSec: number;
  upstreamPerSec: number;
  committedPerSec: number;
  /** Share of the upstream events matched to their commit (0-1). */
  matched: number;
  p50Ms: number;
  p99Ms: number;
  lockWaitMsPerBatch: number;
  batches: number;
  /**
   * The serialized section of the write path: how long each round's transaction held the rv
   * lock (bucket bounds for the percentiles), and the fleet ceiling it implies: events per
   * round over the mean time held. Absent in runs recorded before it was measured.
   */
  serialized?: { meanMs: number; p50Ms: number; p99Ms: number; rounds: number; eventsPerRound: number; ceilingPerSec: number };
  /** CPU ms per 1,000 events committed: the synchro members together, and the PostgreSQL instance. */
  cpuMsPer1000Events?: { synchro: number; postgres: number };
  sustained: boolean;
}

export interface SynchroHaFailoverFigures {
  how: string;
  member: string;
  /** Per cluster the member held: seconds to the new owner's first write, null if none came. */
  firstWriteSeconds: Array<number | null>;
}

export interface SynchroHaFigures {
  clusters: number;
  throughput?: SynchroHaThroughputFigures[];
  sustainedPerSec?: { one: number; two?: number; three: number };
  failover?: { leaseTtlSeconds: number; scenarios: SynchroHaFailoverFigures[]; differences: number };
  targets: { lagP99Ms: number; threeOverOne: number; failoverSeconds: number };
}

// ---- hack/bench/watch.ts

export interface WatchLatencyFigures {
  setup: 'sqlite' | 'postgres';
  title: string;
  writes: number;
  ratePerSec: number;
  /** Write in the member cluster to the event at the client, per write (ms): a watch on the
   * simulated cluster itself and one through Panoptes. Writes that never arrived are counted. */
  directMs: number[];
  panoptesMs: number[];
  missing: { direct: number; panoptes: number };
  /** Through Panoptes: write to commit in storage, and commit to the client (ms). */
  toCommitMs: number[];
  toClientMs: number[];
  /** Per stage of the path (`from -> to`, lib/trace.ts marks), the latencies of every write (ms, sorted); absent in runs before it was measured. */
  stagesMs?: Record<string, number[]>;
  /** CPU per event of each Panoptes process while the writes went on (ms), by process; absent in runs before it was measured. */
  cpuMsPerEvent?: Record<string, number>;
  /** Write in the member cluster to the first list through Panoptes that shows it, per write (ms); absent in runs before it was measured. */
  visibleMs?: number[];
}

export interface WatchScaleFigures {
  replicas: number;
  watchers: number;
  pollQueriesPerSecPerReplica: number[];
  delivered: number;
  expected: number;
  p50Ms: number;
  p99Ms: number;
}

export interface WatchFigures {
  latency: WatchLatencyFigures[];
  scale?: WatchScaleFigures[];
  targets: { p99Ms: number };
}

// ---- hack/bench/watch-fanout.ts

export interface WatchFanoutPhaseFigures {
  watchers: number;
  seconds: number;
  writtenPerSec: number;
  deliveredPerSec: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  pollQueriesPerSec: number;
  sqlPerSec: number;
  rssMaxMiB: number;
  heapMaxMiB: number;
}

export interface WatchFanoutFigures {
  backend: 'sqlite' | 'postgres';
  replicas: number;
  pods: number;
  namespaces: number;
  rssBeforeMiB: number;
  phases: WatchFanoutPhaseFigures[];
  visitsPerChange: number;
  targets: { p99Ms: number; rssMB: number };
}

// ---- hack/bench/watch-connections.ts

export interface WatchConnectionsPhaseFigures {
  /** Watches open: 1 in phase 1, the connections (or HTTP/2 streams) opened in phase 2. */
  watchers: number;
  seconds: number;
  writtenPerSec: number;
  deliveredPerSec: number;
  /** Write call to line read by the client, over every delivery of the phase. */
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** The apiserver's change-log polls (panoptes_watch_poll_queries_total). */
  pollQueriesPerSec: number;
  /** The apiserver's RSS at the end of the phase and its maximum sampled every second. */
  rssMiB: number;
  rssMaxMiB: number;
  /** The apiserver's own /metrics at the end of the phase. */
  heapUsedMiB: number;
  heapTotalMiB: number;
  externalMiB: number;
  /** CPU of the apiserver, and of all the client processes, in cores (CPU seconds per second). */
  cpuCores: number;
  clientsCpuCores: number;
}

export interface WatchConnectionsModeFigures {
  /** http: HTTP/1.1, a connection per watch; h2: HTTP/2 over TLS, watches as streams; https: HTTP/1.1 over TLS, a connection per watch. */
  mode: 'http' | 'h2' | 'https';
  /** Watches open in phase 2 (asked: the run's `watchers`). */
  connections: number;
  /** h2: the TLS connections the streams went over. */
  tlsConnections?: number;
  openSeconds: number;
  rssBeforeMiB: number;
  /** Phase 1 (one watcher), then phase 2 (`connections` watchers). */
  phases: WatchConnectionsPhaseFigures[];
  /** (RSS at the end of phase 2 − RSS at the end of phase 1) / the watches added. */
  perConnectionKiB: number;
  closedSlow: number;
  /** Watches the clients saw end (by reason), from their start to the end of phase 2. */
  ended: Record<string, number>;
}

export interface WatchConnectionsFigures {
  watchers: number;
  /** Of them, watching every pod (the rest: one namespace each). */
  all: number;
  namespaces: number;
  ratePerSec: number;
  clientProcesses: number;
  nodeOptions: string;
  modes: WatchConnectionsModeFigures[];
  /** RSS max in phase 2 ≤ rssMB (10^6 bytes); p99 ≤ p99Ms; poll queries/s of phase 2 within ±pollWithin of phase 1's. */
  targets: { rssMB: number; p99Ms: number; pollWithin: number };
}

// ---- hack/bench/memory.ts

export interface MemoryProcessFigures {
  process: 'synchro' | 'apiserver' | 'all-in-one';
  /** VmRSS, RssAnon and RssFile of /proc/<pid>/status after the idle time. */
  rssMiB: number;
  anonMiB: number;
  fileMiB: number;
  /** RSS sampled every second while idle, and at the end. */
  idleRssMiB: { min: number; max: number };
  /** CPU time (user + system) from the start to the end of the idle time. */
  cpuSeconds: number;
  /** From the process's /metrics, when it serves them. */
  heapUsedMiB?: number;
  heapTotalMiB?: number;
  externalMiB?: number;
  /** After the burst (--burst creates) was served and the idle time that followed; maxRssMiB: the highest RSS from the burst on. */
  postBurst?: { rssMiB: number; anonMiB: number; fileMiB: number; maxRssMiB: number; heapUsedMiB?: number; heapTotalMiB?: number; externalMiB?: number };
}

export interface MemorySetupFigures {
  backend: 'postgres' | 'sqlite';
  /** "this checkout", or "baseline <directory name>" (--baseline). */
  setup: string;
  nodeOptions: string;
  syncSeconds: number;
  /** Average JSON bytes of the ConfigMaps served. */
  configMapBytes: number;
  /** From the burst's creation to every object served. */
  burstSeconds?: number;
  processes: MemoryProcessFigures[];
}

export interface MemoryFigures {
  clusters: number;
  /** ConfigMaps per cluster, of about `bytes` bytes of JSON each (besides the demo workload). */
  configMaps: number;
  bytes: number;
  idleSeconds: number;
  /** ConfigMaps created at once in the first cluster after the idle figures (0 or absent: none). */
  burst?: number;
  /** Whether this checkout ran compiled (dist/, as the image) or its TypeScript through tsx. */
  built: boolean;
  runs: MemorySetupFigures[];
  /** RSS ≤ the target per process (10^6 bytes); processes without one have none; all-in-one's: post-burst. */
  targets: { rssMB: { apiserver: number; synchro: number; 'all-in-one'?: number } };
}

// ---- hack/bench/metrics.ts

export interface MetricsQueryFigures {
  matching: number;
  /** Every sequential request, in ms. */
  samplesMs: number[];
}

export interface MetricsBackendFigures {
  backend: 'sqlite' | 'postgres';
  loaded: number;
  loadSeconds: number;
  count: MetricsQueryFigures;
  sum: MetricsQueryFigures;
  targets: { countP50Ms: number; sumP50Ms: number };
}

export interface MetricsFigures {
  objects: number;
  clusters: number;
  backends: MetricsBackendFigures[];
}

// ---- hack/bench/mcs.ts

/** Member writes, by verb. */
export interface McsWriteFigures {
  total: number;
  create: number;
  update: number;
  delete: number;
}

export interface McsFigures {
  backend: 'sqlite' | 'postgres';
  /** Simulated clusters, every one a provider and a consumer of every Service. */
  clusters: number;
  services: number;
  endpointsPerSlice: number;
  /** The MultiClusterServices created, to every consumer holding every other cluster's slices: time and member writes. */
  initial: { seconds: number; complete: boolean; slices: number; writes: McsWriteFigures };
  /** Endpoint changes in providers (each of another provider slice), at a rate. */
  changes: {
    count: number;
    ratePerSec: number;
    /** Per change: the provider's write to the last consumer holding it (ms). */
    allConsumersMs: number[];
    /** Per change and consumer (ms), 1 ms bins. */
    perConsumer: Histogram;
    /** Changes not held by every consumer within the timeout. */
    incomplete: number;
    /** Member writes of the changed slice per change: how many changes made exactly one per consumer, fewer, more; and the extremes. */
    writesPerChange: { exact: number; fewer: number; more: number; min: number; max: number };
    /** Writes to the providers of their own changes, and writes of anything else during the phase. */
    providerWrites: number;
    otherWrites: number;
    /** The dispatcher's own measure (panoptes_synchro_mcs_dispatch_latency_seconds): commit to consumer write, mean over the phase. */
    dispatchLatencyMeanMs: number;
    /** Writes of the MultiClusterServices' status (changes of the log) per second during the phase. */
    statusWritesPerSec: number;
  };
  /** Full passes of the unchanged fleet: how many ran, the member writes they made. */
  resync: { passes: number; seconds: number; writes: number };
  /** p50/p99 of "every consumer updated"; writes per change = consumers (clusters − 1); a resync writes 0. */
  targets: { p50Ms: number; p99Ms: number; resyncWrites: number };
}

// ---- hack/bench/size.ts

/** A table, TOAST table or index: its bytes on disk. */
export interface SizeRelationFigures {
  table: string;
  name: string;
  kind: 'table' | 'toast' | 'index';
  bytes: number;
}

export interface SizePhaseFigures {
  /** created: right after the creates; modified: after one update of a share of them; retained: compacted to the default retention; compacted: the change log emptied. */
  phase: 'created' | 'modified' | 'retained' | 'compacted';
  objects: number;
  labelRows: number;
  changes: { added: number; modified: number; deleted: number };
  /** Whether the space of deleted rows was given back first (VACUUM) before measuring. */
  reclaimed: boolean;
  /** The database file (SQLite) or pg_database_size (PostgreSQL, with its catalogs). */
  databaseBytes: number;
  relations: SizeRelationFigures[];
  /** Average bytes per row: objects.object, its binary JSON (jsonb) form, fields, json_doc; changes.object and prev_object. */
  columns: { object: number; objectBinary: number; fields: number; jsonDoc: number; changeObject: number; changePrevObject: number };
}

export interface SizeBackendFigures {
  backend: 'sqlite' | 'postgres';
  loadSeconds: number;
  phases: SizePhaseFigures[];
}

export interface SizeFigures {
  configMaps: number;
  pods: number;
  clusters: number;
  /** Objects updated once (the same share of each kind) between `created` and `modified`. */
  modified: number;
  /** Average bytes of the JSON as the member serves it. */
  memberJsonBytes: { configMap: number; pod: number };
  /** The change-log retention `retained` compacts to (synchro's default). */
  retentionCount: number;
  backends: SizeBackendFigures[];
}

// ---- hack/bench/compression.ts

export interface CompressionArmFigures {
  label: string;
  /** Straight to Panoptes, or through hack/testing/aggregator-proxy.ts. */
  path: 'direct' | 'aggregator';
  /** The client's Accept-Encoding: none, or gzip. */
  client: 'identity' | 'gzip';
  /** Through the proxy: the hop to Panoptes without Accept-Encoding (as before compression), or asking for gzip as Go's transport does. */
  hop?: 'identity' | 'gzip';
  /** Body bytes sent to the client, and over the hop from Panoptes. */
  clientBytes: number;
  hopBytes?: number;
  /** Every request, to the last decoded byte at the client (ms). */
  samplesMs: number[];
}

export interface CompressionSizeFigures {
  /** Objects in the list (limit=N). */
  objects: number;
  /** The list's JSON, uncompressed. */
  jsonBytes: number;
  arms: CompressionArmFigures[];
}

export interface CompressionFigures {
  /** Average JSON bytes per object. */
  objectBytes: number;
  /** Above this many bytes an answer is gzipped (kube's defaultGzipThresholdBytes), at this level. */
  thresholdBytes: number;
  gzipLevel: number;
  sizes: CompressionSizeFigures[];
}

// ---- hack/bench/standby.ts

export interface Percentiles {
  p50: number;
  p99: number;
  n: number;
}

/** Reads through an apiserver replica on the primary and one on a streaming standby. */
export interface StandbyFigures {
  objects: number;
  listIdleMs: { primary: Percentiles; standby: Percentiles };
  listUnderWritesMs: { primary: Percentiles; standby: Percentiles; eventsPerSec: number };
  writeToWatchMs: { primary: Percentiles; standby: Percentiles };
  primaryCpuSecondsPer1000Lists: { readsOnPrimary: number; readsOnStandby: number };
  /** The rv lock's hold per batch (lock to commit) and the write rate it caps (events per batch / hold p50). */
  rvLock: Array<{ eventsPerBatch: number; writers: number; hold: Percentiles; capEventsPerSec: number }>;
}

// ---- hack/bench/fleet.ts

/** A fleet on one machine: many simulated clusters, PostgreSQL, synchro members and apiserver replicas as processes. */
export interface FleetFigures {
  clusters: number;
  objects: number;
  synchros: number;
  apiservers: number;
  /** Until every cluster's initial sync was complete (s), and how many were by then. */
  readySeconds: number;
  ready: number;
  /** RSS of a synchro member with no cluster, of each member when idle, of each apiserver after the pages (MiB). */
  synchroBaselineMiB: number;
  synchroRssMiB: number[];
  /** Each member's RSS again after the pages and the watch, minutes later: V8 returns the initial sync's garbage slowly (absent in older runs). */
  synchroRssLaterMiB?: number[];
  apiserverRssMiB: number[];
  /** The database's size over its objects (every table, index and the change log). */
  bytesPerObject: number;
  /** Per view: the first page's latencies and the continue pages' (ms, sorted), and the first page's items. */
  pages: Array<{ what: string; firstMs: number[]; continueMs: number[]; items: number }>;
  /** Member write to the line at each watcher (ms, sorted), and deliveries that never came. */
  watch: { watchers: number; changes: number; ms: number[]; missing: number };
  targets: { readySeconds: number; synchroMiBPerCluster: number; synchroKiBPerObject: number; firstPageP50Ms: number };
}

// ---- every benchmark

export type BenchRun =
  | Run<'storage', StorageFigures>
  | Run<'list', ListFigures>
  | Run<'synchro', SynchroFigures>
  | Run<'synchro-ha', SynchroHaFigures>
  | Run<'watch', WatchFigures>
  | Run<'watch-fanout', WatchFanoutFigures>
  | Run<'watch-connections', WatchConnectionsFigures>
  | Run<'memory', MemoryFigures>
  | Run<'metrics', MetricsFigures>
  | Run<'mcs', McsFigures>
  | Run<'size', SizeFigures>
  | Run<'compression', CompressionFigures>
  | Run<'standby', StandbyFigures>
  | Run<'fleet', FleetFigures>;

export type BenchName = BenchRun['bench'];
export const benchNames: readonly BenchName[] = ['storage', 'list', 'synchro', 'synchro-ha', 'watch', 'watch-fanout', 'watch-connections', 'metrics', 'memory', 'mcs', 'size', 'compression', 'standby', 'fleet'];

/** The figures of benchmark `B`. */
export type FiguresOf<B extends BenchName> = Extract<BenchRun, { bench: B }>['figures'];

/** A parsed docs/bench/*.json, checked for what every file has; throws naming the file otherwise. */
export function parseRun(text: string, file: string): BenchRun {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw new Error(`${file}: not JSON: ${(err as Error).message}`);
  }
  const o = v as Partial<Record<keyof Run<string, unknown>, unknown>>;
  if (typeof o !== 'object' || o === null) throw new Error(`${file}: not an object`);
  if (!benchNames.includes(o.bench as BenchName)) throw new Error(`${file}: unknown bench ${JSON.stringify(o.bench)} (one of ${benchNames.join(', ')})`);
  if (o.schema !== 1) throw new Error(`${file}: schema ${JSON.stringify(o.schema)}, this version reads 1`);
  if (typeof o.at !== 'string' || typeof o.machine !== 'object' || typeof o.args !== 'object' || typeof o.figures !== 'object' || o.figures === null) {
    throw new Error(`${file}: needs at, machine, args and figures`);
  }
  return v as BenchRun;
}
