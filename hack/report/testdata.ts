// Small figures of every benchmark, for the report's tests: made up, shaped as the benchmarks record them.
import type { BenchRun, Machine } from './figures.ts';

const machine: Machine = { cores: 2, cpu: 'Test CPU', memoryGiB: 8, node: 'v20.0.0', platform: 'linux/x64' };
const at = '2026-01-02T03:04:05Z';
/** n samples spread around `center` ms, deterministic. */
const spread = (n: number, center: number) => Array.from({ length: n }, (_, i) => Math.round((center * (0.6 + ((i * 37) % 100) / 100) + (i % 17 === 0 ? center : 0)) * 100) / 100);

export const sampleRuns: Array<{ file: string; run: BenchRun }> = [
  {
    file: 'storage',
    run: {
      bench: 'storage',
      schema: 1,
      at,
      machine,
      args: { objects: 1000, clusters: 2 },
      figures: {
        objects: 1000,
        clusters: 2,
        backends: [
          { backend: 'sqlite', label: 'SQLite (better-sqlite3)', ingestEventsPerSec: 10500, pollRowsPerSec: 175000, firstPageMs: spread(50, 7), pagingObjectsPerSec: 138000 },
          { backend: 'postgres', label: 'PostgreSQL 15', ingestEventsPerSec: 6400, pollRowsPerSec: 141000, firstPageMs: spread(50, 13), pagingObjectsPerSec: 107000 },
        ],
        targets: { ingestEventsPerSec: { sqlite: 15000, postgres: 10000 }, pollRowsPerSec: 100000, firstPageP50MsSqlite: 20, pagingObjectsPerSec: 50000 },
      },
    },
  },
  {
    file: 'list',
    run: {
      bench: 'list',
      schema: 1,
      at,
      machine,
      args: { pods: 1000, clusters: 2 },
      figures: {
        pods: 1000,
        clusters: 2,
        backends: [
          { backend: 'sqlite', setupSeconds: 3, firstPageMs: { json: spread(20, 11), table: spread(20, 22) }, firstPageBytes: { json: 500000, table: 300000 }, allPages: { json: { pages: 2, seconds: 0.03 }, table: { pages: 2, seconds: 0.05 } } },
          { backend: 'postgres', setupSeconds: 5, firstPageMs: { json: spread(20, 14), table: spread(20, 27) }, firstPageBytes: { json: 500000, table: 300000 }, allPages: { json: { pages: 2, seconds: 0.035 }, table: { pages: 2, seconds: 0.06 } } },
        ],
        kubectl: { pods: 1000, clusters: 2, panoptesSeconds: 4.3, directSeconds: 2.4, chunked: { chunkSize: 5000, panoptesSeconds: 1.1, directSeconds: 2 } },
        targets: { firstPageJsonP50Ms: 25, postgresOverSqlite: 1.5 },
      },
    },
  },
  {
    file: 'synchro-sqlite',
    run: {
      bench: 'synchro',
      schema: 1,
      at,
      machine,
      args: { objects: 1000, duration: 20, storage: 'sqlite' },
      figures: {
        backend: 'sqlite',
        initial: { objects: 1000, stored: 1000, seconds: 0.9, complete: true, batches: 2, storageSeconds: 0.6, rssBeforeMiB: 200, rssAfterMiB: 230 },
        churn: { clusters: 3, upstreamWrites: 4000, seconds: 20, matched: 3900, lag: [[0, 10], [5, 2000], [18, 1500], [60, 380], [230, 10]], batches: 300, eventsPerBatch: 13, storageMsPerBatch: 5.3, rssMiB: [400, 420, 410, 415], rssEverySeconds: 5 },
        targets: { initialSyncSeconds: 10, lagP99Ms: 100, rssFlatWithin: 1.15 },
      },
    },
  },
  {
    file: 'synchro-ha',
    run: {
      bench: 'synchro-ha',
      schema: 1,
      at,
      machine,
      args: { clusters: 6, duration: 5 },
      figures: {
        clusters: 6,
        throughput: [
          { members: 1, askedPerSec: 1000, upstreamPerSec: 1000, committedPerSec: 990, matched: 0.99, p50Ms: 12, p99Ms: 60, lockWaitMsPerBatch: 0, batches: 400, sustained: true },
          { members: 1, askedPerSec: 2000, upstreamPerSec: 2000, committedPerSec: 1500, matched: 0.75, p50Ms: 900, p99Ms: 3000, lockWaitMsPerBatch: 0, batches: 400, sustained: false },
          { members: 3, askedPerSec: 2000, upstreamPerSec: 2000, committedPerSec: 1990, matched: 0.99, p50Ms: 15, p99Ms: 80, lockWaitMsPerBatch: 1.2, batches: 900, sustained: true },
        ],
        sustainedPerSec: { one: 990, three: 1990 },
        failover: { leaseTtlSeconds: 15, scenarios: [{ how: 'kill -9', member: 'm1', firstWriteSeconds: [1.2, 1.4] }, { how: 'SIGSTOP', member: 'm2', firstWriteSeconds: [16.1, null] }], differences: 0 },
        targets: { lagP99Ms: 100, threeOverOne: 2, failoverSeconds: 20 },
      },
    },
  },
  {
    file: 'watch',
    run: {
      bench: 'watch',
      schema: 1,
      at,
      machine,
      args: { writes: 30, rate: 20 },
      figures: {
        latency: [
          { setup: 'sqlite', title: 'SQLite, panoptes all-in-one', writes: 30, ratePerSec: 20, directMs: spread(30, 1), panoptesMs: spread(30, 9), missing: { direct: 0, panoptes: 0 }, toCommitMs: spread(30, 5), toClientMs: spread(30, 4) },
          { setup: 'postgres', title: 'PostgreSQL, synchro + apiserver', writes: 30, ratePerSec: 20, directMs: spread(30, 0.7), panoptesMs: spread(30, 13), missing: { direct: 0, panoptes: 1 }, toCommitMs: spread(30, 7), toClientMs: spread(30, 6) },
        ],
        scale: [
          { replicas: 1, watchers: 1, pollQueriesPerSecPerReplica: [20], delivered: 160, expected: 160, p50Ms: 10, p99Ms: 20 },
          { replicas: 1, watchers: 20, pollQueriesPerSecPerReplica: [20], delivered: 3200, expected: 3200, p50Ms: 11, p99Ms: 25 },
          { replicas: 3, watchers: 1, pollQueriesPerSecPerReplica: [20, 20, 19.9], delivered: 160, expected: 160, p50Ms: 10, p99Ms: 20 },
          { replicas: 3, watchers: 20, pollQueriesPerSecPerReplica: [20, 20, 20], delivered: 3200, expected: 3200, p50Ms: 12, p99Ms: 30 },
        ],
        targets: { p99Ms: 150 },
      },
    },
  },
  {
    file: 'watch-fanout-sqlite',
    run: {
      bench: 'watch-fanout',
      schema: 1,
      at,
      machine,
      args: { watchers: 100, namespaces: 10 },
      figures: {
        backend: 'sqlite',
        replicas: 1,
        pods: 50,
        namespaces: 10,
        rssBeforeMiB: 150,
        phases: [
          { watchers: 1, seconds: 10, writtenPerSec: 500, deliveredPerSec: 500, p50Ms: 5.1, p99Ms: 25, maxMs: 40, pollQueriesPerSec: 38.6, sqlPerSec: 40, rssMaxMiB: 190, heapMaxMiB: 60 },
          { watchers: 100, seconds: 30, writtenPerSec: 500, deliveredPerSec: 55000, p50Ms: 4.9, p99Ms: 26, maxMs: 60, pollQueriesPerSec: 39.9, sqlPerSec: 41, rssMaxMiB: 418, heapMaxMiB: 200 },
        ],
        visitsPerChange: 11,
        targets: { p99Ms: 500, rssMB: 600 },
      },
    },
  },
  {
    file: 'watch-connections',
    run: {
      bench: 'watch-connections',
      schema: 1,
      at,
      machine,
      args: { over: 'http,h2,https', watchers: 1000, namespaces: 100, all: 10, rate: 100, seconds: 10, 'baseline-seconds': 5, 'client-processes': 2 },
      figures: {
        watchers: 1000,
        all: 10,
        namespaces: 100,
        ratePerSec: 100,
        clientProcesses: 2,
        nodeOptions: '--max-semi-space-size=8',
        modes: [
          {
            mode: 'http',
            connections: 1000,
            openSeconds: 2.1,
            rssBeforeMiB: 80,
            phases: [
              { watchers: 1, seconds: 5, writtenPerSec: 100, deliveredPerSec: 100, p50Ms: 6.2, p99Ms: 21, maxMs: 30, pollQueriesPerSec: 19.5, rssMiB: 95, rssMaxMiB: 97, heapUsedMiB: 30, heapTotalMiB: 40, externalMiB: 5, cpuCores: 0.08, clientsCpuCores: 0.01 },
              { watchers: 1000, seconds: 10, writtenPerSec: 100, deliveredPerSec: 1990, p50Ms: 7.5, p99Ms: 40, maxMs: 90, pollQueriesPerSec: 19.8, rssMiB: 120, rssMaxMiB: 124, heapUsedMiB: 45, heapTotalMiB: 60, externalMiB: 8, cpuCores: 0.2, clientsCpuCores: 0.15 },
            ],
            perConnectionKiB: 25.6,
            closedSlow: 0,
            ended: {},
          },
          {
            mode: 'h2',
            connections: 1000,
            tlsConnections: 10,
            openSeconds: 3.4,
            rssBeforeMiB: 85,
            phases: [
              { watchers: 1, seconds: 5, writtenPerSec: 100, deliveredPerSec: 100, p50Ms: 6.8, p99Ms: 24, maxMs: 33, pollQueriesPerSec: 19.6, rssMiB: 100, rssMaxMiB: 101, heapUsedMiB: 32, heapTotalMiB: 42, externalMiB: 6, cpuCores: 0.09, clientsCpuCores: 0.01 },
              { watchers: 1000, seconds: 10, writtenPerSec: 100, deliveredPerSec: 1985, p50Ms: 9.1, p99Ms: 55, maxMs: 120, pollQueriesPerSec: 19.9, rssMiB: 131, rssMaxMiB: 135, heapUsedMiB: 55, heapTotalMiB: 70, externalMiB: 9, cpuCores: 0.3, clientsCpuCores: 0.2 },
            ],
            perConnectionKiB: 31.8,
            closedSlow: 0,
            ended: {},
          },
          {
            mode: 'https',
            connections: 998,
            openSeconds: 6,
            rssBeforeMiB: 86,
            phases: [
              { watchers: 1, seconds: 5, writtenPerSec: 100, deliveredPerSec: 100, p50Ms: 7, p99Ms: 25, maxMs: 35, pollQueriesPerSec: 19.4, rssMiB: 101, rssMaxMiB: 102, heapUsedMiB: 33, heapTotalMiB: 43, externalMiB: 6, cpuCores: 0.09, clientsCpuCores: 0.01 },
              { watchers: 998, seconds: 10, writtenPerSec: 100, deliveredPerSec: 1970, p50Ms: 11, p99Ms: 80, maxMs: 200, pollQueriesPerSec: 20.1, rssMiB: 160, rssMaxMiB: 166, heapUsedMiB: 60, heapTotalMiB: 80, externalMiB: 20, cpuCores: 0.4, clientsCpuCores: 0.3 },
            ],
            perConnectionKiB: 60.6,
            closedSlow: 0,
            ended: { 'ended by the server': 2 },
          },
        ],
        targets: { rssMB: 600, p99Ms: 500, pollWithin: 0.25 },
      },
    },
  },
  {
    file: 'metrics',
    run: {
      bench: 'metrics',
      schema: 1,
      at,
      machine,
      args: { objects: 1000, clusters: 2 },
      figures: {
        objects: 1000,
        clusters: 2,
        backends: [
          { backend: 'sqlite', loaded: 1000, loadSeconds: 1, count: { matching: 10, samplesMs: spread(40, 1.7) }, sum: { matching: 100, samplesMs: spread(40, 32) }, targets: { countP50Ms: 5, sumP50Ms: 50 } },
          { backend: 'postgres', loaded: 1000, loadSeconds: 2, count: { matching: 10, samplesMs: spread(40, 5.6) }, sum: { matching: 100, samplesMs: spread(40, 196) }, targets: { countP50Ms: 10, sumP50Ms: 50 } },
        ],
      },
    },
  },
  {
    file: 'memory',
    run: {
      bench: 'memory',
      schema: 1,
      at,
      machine,
      args: { clusters: 2, configmaps: 200, bytes: 1024, 'idle-seconds': 5, baseline: 'panoptes-before', openapi: false },
      figures: {
        clusters: 2,
        configMaps: 200,
        bytes: 1024,
        idleSeconds: 5,
        built: true,
        runs: [
          {
            backend: 'postgres',
            setup: 'baseline panoptes-before',
            nodeOptions: '',
            syncSeconds: 3.2,
            configMapBytes: 1180,
            processes: [
              { process: 'synchro', rssMiB: 150, anonMiB: 100, fileMiB: 50, idleRssMiB: { min: 148, max: 152 }, cpuSeconds: 4.1, heapUsedMiB: 40, heapTotalMiB: 60, externalMiB: 4 },
              { process: 'apiserver', rssMiB: 135, anonMiB: 90, fileMiB: 45, idleRssMiB: { min: 133, max: 136 }, cpuSeconds: 2.5, heapUsedMiB: 35, heapTotalMiB: 52, externalMiB: 3 },
            ],
          },
          {
            backend: 'postgres',
            setup: 'this checkout',
            nodeOptions: '--max-semi-space-size=8',
            syncSeconds: 3,
            configMapBytes: 1180,
            processes: [
              { process: 'synchro', rssMiB: 110, anonMiB: 70, fileMiB: 40, idleRssMiB: { min: 108, max: 111 }, cpuSeconds: 3.6, heapUsedMiB: 30, heapTotalMiB: 41, externalMiB: 3 },
              { process: 'apiserver', rssMiB: 98, anonMiB: 60, fileMiB: 38, idleRssMiB: { min: 97, max: 99 }, cpuSeconds: 2.1, heapUsedMiB: 27, heapTotalMiB: 36, externalMiB: 3 },
            ],
          },
          {
            backend: 'sqlite',
            setup: 'baseline panoptes-before',
            nodeOptions: '',
            syncSeconds: 2.5,
            configMapBytes: 1180,
            processes: [{ process: 'all-in-one', rssMiB: 210, anonMiB: 120, fileMiB: 90, idleRssMiB: { min: 205, max: 212 }, cpuSeconds: 5.2, heapUsedMiB: 55, heapTotalMiB: 80, externalMiB: 5 }],
          },
          {
            backend: 'sqlite',
            setup: 'this checkout',
            nodeOptions: '--max-semi-space-size=8',
            syncSeconds: 2.4,
            configMapBytes: 1180,
            processes: [{ process: 'all-in-one', rssMiB: 170, anonMiB: 95, fileMiB: 75, idleRssMiB: { min: 168, max: 171 }, cpuSeconds: 4.6, heapUsedMiB: 45, heapTotalMiB: 60, externalMiB: 4 }],
          },
        ],
        targets: { rssMB: { apiserver: 120, synchro: 130 } },
      },
    },
  },
  {
    file: 'mcs',
    run: {
      bench: 'mcs',
      schema: 1,
      at,
      machine,
      args: { clusters: 4, services: 5, changes: 40 },
      figures: {
        backend: 'sqlite',
        clusters: 4,
        services: 5,
        endpointsPerSlice: 3,
        initial: { seconds: 1.2, complete: true, slices: 60, writes: { total: 60, create: 60, update: 0, delete: 0 } },
        changes: {
          count: 40,
          ratePerSec: 10,
          allConsumersMs: spread(40, 60),
          perConsumer: [[20, 30], [35, 50], [60, 30], [140, 10]],
          incomplete: 0,
          writesPerChange: { exact: 39, fewer: 0, more: 1, min: 3, max: 4 },
          providerWrites: 0,
          otherWrites: 0,
          dispatchLatencyMeanMs: 25,
          statusWritesPerSec: 4,
        },
        resync: { passes: 2, seconds: 21, writes: 0 },
        targets: { p50Ms: 300, p99Ms: 1000, resyncWrites: 0 },
      },
    },
  },
  {
    file: 'size',
    run: {
      bench: 'size',
      schema: 1,
      at,
      machine,
      args: { configmaps: 100, pods: 100, clusters: 2, modified: '0.1', storage: 'sqlite,postgres' },
      figures: {
        configMaps: 100,
        pods: 100,
        clusters: 2,
        modified: 20,
        memberJsonBytes: { configMap: 1100, pod: 1400 },
        retentionCount: 100_000,
        backends: (['sqlite', 'postgres'] as const).map((backend) => ({
          backend,
          loadSeconds: 0.4,
          phases: (['created', 'modified', 'retained', 'compacted'] as const).map((phase, i) => ({
            phase,
            objects: 200,
            labelRows: 600,
            changes: { added: i < 3 ? 200 : 0, modified: i === 1 || i === 2 ? 20 : 0, deleted: 0 },
            reclaimed: i >= 2,
            databaseBytes: 2_000_000,
            relations: [
              { table: 'objects', name: 'objects', kind: 'table' as const, bytes: 300_000 },
              { table: 'objects', name: 'objects_list_order', kind: 'index' as const, bytes: 40_000 },
              { table: 'object_labels', name: 'object_labels', kind: 'table' as const, bytes: 30_000 },
              { table: 'object_labels', name: 'object_labels_by_value', kind: 'index' as const, bytes: 20_000 },
              { table: 'changes', name: 'changes', kind: 'table' as const, bytes: i < 3 ? 300_000 + i * 30_000 : 0 },
              { table: 'changes', name: 'changes_by_resource', kind: 'index' as const, bytes: i < 3 ? 10_000 : 0 },
              { table: 'object_counts', name: 'object_counts', kind: 'table' as const, bytes: 4_096 },
            ],
            columns: { object: 1300, objectBinary: 1500, fields: 60, jsonDoc: 0, changeObject: 1300, changePrevObject: 1300 },
          })),
        })),
      },
    },
  },
  {
    file: 'compression',
    run: {
      bench: 'compression',
      schema: 1,
      at,
      machine,
      args: { objects: 1000, sizes: '500', samples: 20 },
      figures: {
        objectBytes: 1200,
        thresholdBytes: 131072,
        gzipLevel: 1,
        sizes: [
          {
            objects: 500,
            jsonBytes: 600_000,
            arms: [
              { label: 'direct, identity', path: 'direct', client: 'identity', clientBytes: 600_000, samplesMs: spread(20, 12) },
              { label: 'direct, gzip', path: 'direct', client: 'gzip', clientBytes: 250_000, samplesMs: spread(20, 18) },
              { label: 'aggregator, hop identity (before)', path: 'aggregator', client: 'identity', hop: 'identity', clientBytes: 600_000, hopBytes: 600_000, samplesMs: spread(20, 20) },
              { label: 'aggregator, gzip end to end', path: 'aggregator', client: 'gzip', hop: 'gzip', clientBytes: 250_000, hopBytes: 250_000, samplesMs: spread(20, 22) },
            ],
          },
        ],
      },
    },
  },
  {
    file: 'standby',
    run: {
      bench: 'standby',
      schema: 1,
      at,
      machine,
      args: { objects: 2000, lists: 300, rate: 2000 },
      figures: {
        objects: 2000,
        listIdleMs: { primary: { p50: 5, p99: 20, n: 300 }, standby: { p50: 5.5, p99: 22, n: 300 } },
        listUnderWritesMs: { primary: { p50: 12, p99: 60, n: 300 }, standby: { p50: 14, p99: 70, n: 300 }, eventsPerSec: 1980 },
        writeToWatchMs: { primary: { p50: 1.2, p99: 8, n: 200 }, standby: { p50: 3, p99: 20, n: 200 } },
        primaryCpuSecondsPer1000Lists: { readsOnPrimary: 1.5, readsOnStandby: 0.3 },
        rvLock: [{ eventsPerBatch: 20, writers: 1, hold: { p50: 8, p99: 30, n: 200 }, capEventsPerSec: 2500 }],
      },
    },
  },
];
