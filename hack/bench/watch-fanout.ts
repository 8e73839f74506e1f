// Benchmark of the watch engine's fan-out, in process, on SQLite:
//
//   node --import tsx hack/bench/watch-fanout.ts [--watchers 10000] [--namespaces 1000]
//        [--all 100] [--rate 500] [--seconds 30] [--baseline-seconds 10]
//        [--storage sqlite|postgres] [--replicas 1]
//
// With --storage postgres (a throwaway server) the writer has a Store of its own and each of
// --replicas hubs another (as separate apiserver processes would): pollers are woken by NOTIFY,
// watchers are spread over the replicas, poll queries are summed over them.
//
// Storage is fed by applyBatch at --rate events/s spread over --namespaces namespaces (pod
// MODIFIED/ADDED/DELETED, ~1.5 KB objects) through the same Store as the hub (all-in-one:
// commits wake the poller in process). Phase 1: one watcher watching everything. Phase 2:
// --watchers watchers, --all of them watching everything and the rest one namespace each.
// Printed per phase: delivery latency (write call → bytes handed to the watcher's consumer)
// p50/p99/max, events delivered/s, poll queries/s (changesAfter calls, and every SQL
// statement outside the writer's transactions), RSS and heap.
import { parseArgs } from 'node:util';
import { Registry } from 'prom-client';
import { setLogLevel } from '../../lib/log.ts';
import { Store } from '../../storage/store.ts';
import { openTestStore, stopTestPostgres, type Backend } from '../../storage/testing.ts';
import { jsonEncoder } from '../../apiserver/watch/encode.ts';
import { WatchHub } from '../../apiserver/watch/hub.ts';
import type { Watcher } from '../../apiserver/watch/watcher.ts';
import { now, PodWorkload, RateWriter } from './fanout-workload.ts';
import { recordRun } from '../report/record.ts';

const { values: args } = parseArgs({
  options: {
    watchers: { type: 'string', default: '10000' },
    namespaces: { type: 'string', default: '1000' },
    all: { type: 'string', default: '100' },
    rate: { type: 'string', default: '500' },
    seconds: { type: 'string', default: '30' },
    'baseline-seconds': { type: 'string', default: '10' },
    storage: { type: 'string', default: 'sqlite' },
    replicas: { type: 'string', default: '1' },
  },
});
setLogLevel('warn');
const nWatchers = Number(args.watchers);
const nNamespaces = Number(args.namespaces);
const nAll = Number(args.all);
const rate = Number(args.rate);
const seconds = Number(args.seconds);
const baselineSeconds = Number(args['baseline-seconds']);
const mb = (n: number) => `${(n / 1048576).toFixed(0)} MiB`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const backend = args.storage as Backend;
const nReplicas = Math.max(1, Number(args.replicas));
const { store, url, close } = await openTestStore(backend);
// SQLite: all-in-one (one Store, one hub). PostgreSQL: one Store per replica, as processes.
const hubStores = backend === 'sqlite' ? [store] : await Promise.all(Array.from({ length: nReplicas }, () => Store.open(url)));
const hubs = hubStores.map((s) => new WatchHub(s, { registry: new Registry() }));
const pollQueries = () => hubs.reduce((n, h) => n + h.stats().pollQueries, 0);

// ---- the workload: pods over namespaces, ~1.5 KB each
const podsPerNs = 5;
const workload = new PodWorkload(nNamespaces, podsPerNs);
for (const events of workload.initial()) await store.applyBatch('c1', events);

for (const h of hubs) await h.start();

// ---- counting queries: the pollers' calls, and all SQL of the hubs' Stores outside the writer's transactions
let sqlOutsideTrx = 0;
for (const s of hubStores) {
  s.conn.knex.on('query', (q: { __knexTxId?: string }) => {
    if (!q.__knexTxId) sqlOutsideTrx++;
  });
}

// ---- consumers: latency from the write call (stamped in the object) to the consumer
const latencyHist = new Uint32Array(100_001); // 0.1 ms buckets up to 10 s
let delivered = 0;
let maxLatency = 0;
const sentOf = new WeakMap<Buffer, number>();
function onData(buf: Buffer): void {
  let sent = sentOf.get(buf);
  if (sent === undefined) {
    const m = /"bench\/sent":"([0-9.]+)"/.exec(buf.toString('latin1'));
    sent = m ? Number(m[1]) : -1;
    sentOf.set(buf, sent);
  }
  if (sent < 0) return;
  const ms = now() - sent;
  latencyHist[Math.min(100_000, Math.max(0, Math.round(ms * 10)))]++;
  if (ms > maxLatency) maxLatency = ms;
  delivered++;
}
function resetStats(): void {
  latencyHist.fill(0);
  delivered = 0;
  maxLatency = 0;
}
function quantile(q: number): number {
  const total = latencyHist.reduce((a, b) => a + b, 0);
  let acc = 0;
  for (let i = 0; i < latencyHist.length; i++) {
    acc += latencyHist[i];
    if (acc >= q * total) return i / 10;
  }
  return Infinity;
}
const watchers: Watcher[] = [];
function addWatcher(namespace?: string): void {
  const hub = hubs[watchers.length % hubs.length];
  const w = hub.watch({
    query: { group: '', resource: 'pods', ...(namespace ? { namespaces: [namespace] } : {}) },
    kind: 'Pod',
    apiVersion: 'v1',
    options: { resourceVersion: hub.rv, allowWatchBookmarks: true, timeoutSeconds: 3600 },
    encoder: jsonEncoder,
  });
  w.on('data', onData);
  w.on('close', () => {
    if (w.closeReason !== 'shutdown') console.error(`watcher closed: ${w.closeReason}`);
  });
  watchers.push(w);
}

// ---- the writer: `rate` events/s, one batch every 20 ms
const writer = new RateWriter(store, workload, rate);

interface PhaseResult {
  watchers: number;
  seconds: number;
  written: number;
  deliveredPerSec: number;
  p50: number;
  p99: number;
  max: number;
  pollQueriesPerSec: number;
  sqlPerSec: number;
  rssMax: number;
  heapMax: number;
}

async function phase(label: string, secs: number): Promise<PhaseResult> {
  await sleep(2000); // warm-up
  resetStats();
  const w0 = writer.written;
  const q0 = pollQueries();
  const s0 = sqlOutsideTrx;
  const t0 = now();
  let rssMax = 0;
  let heapMax = 0;
  for (let s = 0; s < secs; s++) {
    await sleep(1000);
    const m = process.memoryUsage();
    rssMax = Math.max(rssMax, m.rss);
    heapMax = Math.max(heapMax, m.heapUsed);
  }
  const dt = (now() - t0) / 1000;
  const r: PhaseResult = {
    watchers: watchers.length,
    seconds: dt,
    written: writer.written - w0,
    deliveredPerSec: delivered / dt,
    p50: quantile(0.5),
    p99: quantile(0.99),
    max: maxLatency,
    pollQueriesPerSec: (pollQueries() - q0) / dt,
    sqlPerSec: (sqlOutsideTrx - s0) / dt,
    rssMax,
    heapMax,
  };
  console.log(
    `${label}: ${r.watchers} watchers, ${(r.written / dt).toFixed(0)} events/s written, ${r.deliveredPerSec.toFixed(0)} deliveries/s; ` +
      `latency p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms, max ${r.max.toFixed(1)} ms; ` +
      `poll queries ${r.pollQueriesPerSec.toFixed(1)}/s (SQL statements outside writes ${r.sqlPerSec.toFixed(1)}/s); ` +
      `RSS max ${mb(r.rssMax)}, heap max ${mb(r.heapMax)}`,
  );
  return r;
}

const rssBefore = process.memoryUsage().rss;
console.log(`${backend}, ${hubs.length} replica(s): ${nNamespaces * podsPerNs} pods in ${nNamespaces} namespaces; RSS before watchers ${mb(rssBefore)}`);
writer.start();
addWatcher();
const one = await phase('phase 1 (1 watcher)', baselineSeconds);
const t0 = now();
for (let i = 0; i < nAll - 1; i++) addWatcher();
for (let i = 0; i < nWatchers - nAll; i++) addWatcher(`ns${i % nNamespaces}`);
console.log(`started ${nWatchers - 1} more watchers in ${(now() - t0).toFixed(0)} ms; hub 1: ${JSON.stringify(hubs[0].stats())}`);
const visits = () => hubs.reduce((n, h) => n + h.stats().dispatchVisits, 0);
const before = { visits: visits(), rv: hubs[0].rv };
const many = await phase(`phase 2 (${nWatchers} watchers)`, seconds);
await writer.stop();
const perChange = (visits() - before.visits) / Math.max(1, hubs[0].rv - before.rv);
console.log(`phase 2: watcher visits per change ${perChange.toFixed(1)} (of ${watchers.length} watchers: the index); poller lag at end ${hubs.map((h) => h.stats().pollerLag).join(', ')}`);
console.log(
  JSON.stringify({
    p50Ms: +many.p50.toFixed(1),
    p99Ms: +many.p99.toFixed(1),
    pollQueriesPerSec1: +one.pollQueriesPerSec.toFixed(1),
    pollQueriesPerSecN: +many.pollQueriesPerSec.toFixed(1),
    sqlPerSec1: +one.sqlPerSec.toFixed(1),
    sqlPerSecN: +many.sqlPerSec.toFixed(1),
    rssMaxMiB: Math.round(many.rssMax / 1048576),
  }),
);
for (const h of hubs) await h.stop();
if (backend !== 'sqlite') for (const s of hubStores) await s.close();
await close();
await stopTestPostgres();
await recordRun(`watch-fanout-${backend}${nReplicas > 1 ? `-${nReplicas}-replicas` : ''}`, 'watch-fanout', { ...args }, {
  backend,
  replicas: hubs.length,
  pods: nNamespaces * podsPerNs,
  namespaces: nNamespaces,
  rssBeforeMiB: rssBefore / 1048576,
  phases: [one, many].map((r) => ({
    watchers: r.watchers,
    seconds: r.seconds,
    writtenPerSec: r.written / r.seconds,
    deliveredPerSec: r.deliveredPerSec,
    p50Ms: r.p50,
    p99Ms: r.p99,
    maxMs: r.max,
    pollQueriesPerSec: r.pollQueriesPerSec,
    sqlPerSec: r.sqlPerSec,
    rssMaxMiB: r.rssMax / 1048576,
    heapMaxMiB: r.heapMax / 1048576,
  })),
  visitsPerChange: perChange,
  targets: { p99Ms: 500, rssMB: 600 },
});
