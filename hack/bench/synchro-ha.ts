// Benchmark of several `panoptes synchro` processes sharing the member clusters on PostgreSQL
// (the simulated clusters in a child process, every synchro a process of its own).
//
//   node --import tsx hack/bench/synchro-ha.ts [--clusters 12] [--duration 20]
//        [--members 1,3] [--rates-1 1000,2000,3000] [--rates-2 2000,3000,4000] [--rates-3 2000,4000,6000]
//        [--skip-throughput] [--skip-failover]
//
// 1. Throughput: 1 member, then 3 members, over --clusters clusters, at each rate (events/s in
//    total: creates/updates/deletes of configmaps and pods) for --duration seconds: upstream
//    event to commit lag (from the member's write to the change row's commit time), events
//    committed per second, and how long batches waited for the rv counter's lock. The
//    sustained rate is the highest whose lag p99 stays <= 100 ms with >= 95% of the events
//    committed in time. Target: 3 members sustain 2x the rate of 1.
// 2. Failover (3 members, default 15 s lease TTL, churn on): kill -9 of a member (on one host
//    its dead pid frees its leases at once) and SIGSTOP of a member (a hung or partitioned
//    process: the TTL path); for each of its clusters the time until the first write of the
//    new owner (target: TTL + 5 s), and storage equal to every member's own list afterwards.
import { spawn, type ChildProcess } from 'node:child_process';
import { parseArgs } from 'node:util';
import { setLogLevel } from '../../lib/log.ts';
import { createDatabase, startPostgres, type PostgresServer } from '../../storage/testing/postgres.ts';
import { percentile } from '../fixtures.ts';
import { instanceCpuSeconds, postmasterOf } from './process-cpu.ts';
import { rowsOf } from '../../storage/rows.ts';
import { Store } from '../../storage/store.ts';
import type { Change, KubeObject } from '../../storage/types.ts';
import { tempDir, writeClusters } from '../../synchro/testutil.ts';
import { SimProcess } from './sim-process.ts';
import type { SynchroHaFailoverFigures, SynchroHaFigures, SynchroHaThroughputFigures } from '../report/figures.ts';
import { recordRun } from '../report/record.ts';

const { values: args } = parseArgs({
  options: {
    clusters: { type: 'string', default: '12' },
    duration: { type: 'string', default: '20' },
    'rates-1': { type: 'string', default: '1000,2000,3000' },
    'rates-2': { type: 'string', default: '2000,3000,4000' },
    'rates-3': { type: 'string', default: '2000,4000,6000' },
    members: { type: 'string', default: '1,3' },
    'skip-throughput': { type: 'boolean', default: false },
    'skip-failover': { type: 'boolean', default: false },
  },
});
setLogLevel('warn');
const nClusters = Number(args.clusters);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const bin = new URL('../../bin/panoptes.mjs', import.meta.url).pathname;

interface Member {
  name: string;
  child: ChildProcess;
  exited: Promise<number | null>;
  metricsUrl: Promise<string>;
}

function startMember(name: string, storage: string, clustersFile: string, extra: string[] = []): Member {
  const child = spawn(process.execPath, [bin, 'synchro', '--storage', storage, '--clusters', clustersFile, '--identity', name, '--metrics-listen', '127.0.0.1:0', '--log-level', 'info', ...extra], { stdio: ['ignore', 'ignore', 'pipe'] });
  let resolveUrl!: (u: string) => void;
  const metricsUrl = new Promise<string>((r) => (resolveUrl = r));
  let buf = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    buf += d;
    const lines = buf.split('\n');
    buf = lines.pop()!;
    for (const l of lines) if (l.includes('metrics listening')) resolveUrl(JSON.parse(l).url as string);
  });
  return { name, child, exited: new Promise((r) => child.on('exit', (c) => r(c))), metricsUrl };
}

async function stopMembers(members: Member[]): Promise<void> {
  for (const m of members) if (m.child.exitCode === null && m.child.signalCode === null) m.child.kill('SIGTERM');
  await Promise.all(members.map((m) => Promise.race([m.exited, sleep(20_000).then(() => m.child.kill('SIGKILL'))])));
}

async function metricSum(url: string, name: string): Promise<number> {
  const text = await (await fetch(url)).text();
  let sum = 0;
  for (const line of text.split('\n')) if (line.startsWith(name) && !line.startsWith('#')) sum += Number(line.split(' ').pop());
  return sum;
}

/** The cumulative buckets of histogram `name` (upper bound in seconds → count), summed over its series. */
async function metricBuckets(url: string, name: string): Promise<Map<number, number>> {
  const text = await (await fetch(url)).text();
  const out = new Map<number, number>();
  for (const line of text.split('\n')) {
    const m = line.startsWith(`${name}_bucket{`) ? /le="([^"]+)"\}\s+(\S+)$/.exec(line) : null;
    const le = m ? (m[1] === '+Inf' ? Infinity : Number(m[1])) : Number.NaN;
    if (m) out.set(le, (out.get(le) ?? 0) + Number(m[2]));
  }
  return out;
}

/** The bucket bound (ms) below which `q`% of the observations between two readings of a histogram fall. */
function bucketPercentile(before: Map<number, number>[], after: Map<number, number>[], q: number): number {
  const delta = new Map<number, number>();
  after.forEach((buckets, i) => {
    for (const [le, n] of buckets) delta.set(le, (delta.get(le) ?? 0) + n - (before[i].get(le) ?? 0));
  });
  const bounds = [...delta.keys()].sort((a, b) => a - b);
  const total = delta.get(Infinity) ?? 0;
  if (total === 0) return Number.NaN;
  for (const le of bounds) if ((delta.get(le) ?? 0) >= (total * q) / 100) return le * 1000;
  return Infinity;
}

/** Every change after `rv`, in pages. */
async function changesSince(store: Store, rv: number): Promise<Change[]> {
  const out: Change[] = [];
  for (let after = rv, i = 0; i < 10_000; i++) {
    const page = await store.changesAfter(after, 5000);
    if (page.length === 0) break;
    out.push(...page);
    after = page[page.length - 1].rv;
  }
  return out;
}

const upstreamOf = (c: Change) => (JSON.parse(c.object) as KubeObject).metadata?.annotations?.['panoptes.io/upstream-resource-version'] ?? '';

async function waitFor(what: string, fn: () => Promise<boolean>, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await fn().catch(() => false)) return;
    await sleep(200);
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function allOwned(store: Store): Promise<boolean> {
  const leases = (await store.listLeases()).filter((l) => l.name.startsWith('cluster/') && l.holder);
  if (leases.length < nClusters) return false;
  for (const l of leases) {
    const st = (await store.getCluster(l.name.slice('cluster/'.length)))?.status as { initialSync?: { complete?: boolean } } | undefined;
    if (!st?.initialSync?.complete) return false;
  }
  return true;
}

async function setup(pg: PostgresServer, sims: SimProcess, label: string): Promise<{ store: Store; url: string; file: string; cleanup: () => void }> {
  const url = await createDatabase(pg.url, `bench_ha_${label}_${Date.now() % 100000}`);
  const store = await Store.open(url);
  const { dir, cleanup } = tempDir();
  const file = `${dir}/clusters.yaml`;
  writeClusters(file, sims.urls.map((u, i) => ({ name: `bench-${i}`, server: u, resources: ['configmaps', 'pods'] })));
  return { store, url, file, cleanup };
}

interface Throughput {
  rate: number;
  committed: number;
  p50: number;
  p99: number;
  matched: number;
  lockWaitMs: number;
  batches: number;
  /** The serialized section: how long each round held the rv lock (mean; p50 and p99 as histogram bucket bounds), rounds, and events per round. */
  heldMeanMs: number;
  heldP50Ms: number;
  heldP99Ms: number;
  rounds: number;
  eventsPerRound: number;
  /** CPU ms per 1,000 events committed: the synchro members together, and the PostgreSQL instance. */
  synchroCpuPer1000: number;
  postgresCpuPer1000: number;
  /** Whether the members wrote in parallel (a database created by this version) or serially (the rv lock first). */
  parallel: boolean;
}

async function throughput(pg: PostgresServer, members: number, rate: number): Promise<Throughput> {
  const sims = await SimProcess.start(nClusters);
  const { store, url, file, cleanup } = await setup(pg, sims, `t${members}`);
  const procs = Array.from({ length: members }, (_, i) => startMember(`m${i + 1}`, url, file));
  try {
    await waitFor('every cluster owned and synced', () => allOwned(store), 120_000);
    const from = await store.watermark();
    const upstream = new Map<string, number>();
    sims.onTimes = (times) => {
      for (const [c, rv, t] of times) upstream.set(`${c}/${rv}`, t);
    };
    const postmaster = postmasterOf(Number(rowsOf<{ pid: number }>(await store.conn.knex.raw('SELECT pg_backend_pid() AS pid'))[0].pid));
    const cpuBefore = { synchro: await Promise.all(procs.map(async (m) => metricSum(await m.metricsUrl, 'process_cpu_seconds_total'))), postgres: instanceCpuSeconds(postmaster) };
    const held = 'panoptes_synchro_rv_lock_held_seconds';
    const heldBefore = await Promise.all(procs.map(async (m) => ({ buckets: await metricBuckets(await m.metricsUrl, held), sum: await metricSum(await m.metricsUrl, `${held}_sum`), count: await metricSum(await m.metricsUrl, `${held}_count`) })));
    const lockBefore = await Promise.all(procs.map(async (m) => [await metricSum(await m.metricsUrl, 'panoptes_synchro_rv_lock_wait_seconds_sum'), await metricSum(await m.metricsUrl, 'panoptes_synchro_rv_lock_wait_seconds_count')]));
    const duration = Number(args.duration) * 1000;
    await sims.call({ cmd: 'churn', ratePerCluster: rate / nClusters });
    await sleep(duration);
    await sims.call({ cmd: 'stop-churn' });
    await sleep(3000);
    const cpuAfter = { synchro: await Promise.all(procs.map(async (m) => metricSum(await m.metricsUrl, 'process_cpu_seconds_total'))), postgres: instanceCpuSeconds(postmaster) };
    const lockAfter = await Promise.all(procs.map(async (m) => [await metricSum(await m.metricsUrl, 'panoptes_synchro_rv_lock_wait_seconds_sum'), await metricSum(await m.metricsUrl, 'panoptes_synchro_rv_lock_wait_seconds_count')]));
    const heldAfter = await Promise.all(procs.map(async (m) => ({ buckets: await metricBuckets(await m.metricsUrl, held), sum: await metricSum(await m.metricsUrl, `${held}_sum`), count: await metricSum(await m.metricsUrl, `${held}_count`) })));
    const rounds = heldAfter.reduce((n, h, i) => n + h.count - heldBefore[i].count, 0);
    const heldSum = heldAfter.reduce((n, h, i) => n + h.sum - heldBefore[i].sum, 0);
    const lags: number[] = [];
    for (const c of await changesSince(store, from)) {
      const t = upstream.get(`${c.cluster}/${upstreamOf(c)}`);
      if (t !== undefined) lags.push(c.ts - t);
    }
    const waitSum = lockAfter.reduce((n, [s], i) => n + s - lockBefore[i][0], 0);
    const batches = lockAfter.reduce((n, [, c], i) => n + c - lockBefore[i][1], 0);
    return {
      rate: upstream.size / (duration / 1000),
      committed: lags.length / (duration / 1000),
      p50: percentile(lags, 50),
      p99: percentile(lags, 99),
      matched: lags.length / Math.max(1, upstream.size),
      lockWaitMs: (waitSum / Math.max(1, batches)) * 1000,
      batches,
      heldMeanMs: (heldSum / Math.max(1, rounds)) * 1000,
      heldP50Ms: bucketPercentile(heldBefore.map((h) => h.buckets), heldAfter.map((h) => h.buckets), 50),
      heldP99Ms: bucketPercentile(heldBefore.map((h) => h.buckets), heldAfter.map((h) => h.buckets), 99),
      rounds,
      eventsPerRound: lags.length / Math.max(1, rounds),
      synchroCpuPer1000: (cpuAfter.synchro.reduce((n, c, i) => n + c - cpuBefore.synchro[i], 0) * 1e6) / Math.max(1, lags.length),
      postgresCpuPer1000: ((cpuAfter.postgres - cpuBefore.postgres) * 1e6) / Math.max(1, lags.length),
      parallel: (await store.writeProtocol()) === 'parallel',
    };
  } finally {
    await stopMembers(procs);
    await sims.exit();
    await store.close();
    cleanup();
  }
}

async function failover(pg: PostgresServer): Promise<NonNullable<SynchroHaFigures['failover']>> {
  const sims = await SimProcess.start(nClusters);
  const { store, url, file, cleanup } = await setup(pg, sims, 'f');
  const procs = ['m1', 'm2', 'm3'].map((n) => startMember(n, url, file));
  const ttl = 15_000;
  const scenarios: SynchroHaFailoverFigures[] = [];
  try {
    await waitFor('every cluster owned and synced', () => allOwned(store), 120_000);
    await sims.call({ cmd: 'churn', ratePerCluster: 600 / nClusters });
    await sleep(3000);
    for (const [how, signal] of [['kill -9', 'SIGKILL'], ['SIGSTOP (hung or partitioned)', 'SIGSTOP']] as const) {
      const leases = (await store.listLeases()).filter((l) => l.name.startsWith('cluster/'));
      const live = procs.filter((p) => p.child.exitCode === null && p.child.signalCode === null);
      const victim = live.sort((a, b) => leases.filter((l) => l.holder === b.name).length - leases.filter((l) => l.holder === a.name).length)[0];
      const mine = leases.filter((l) => l.holder === victim.name);
      const from = await store.watermark();
      const at = Date.now();
      victim.child.kill(signal);
      const firstWrite = new Map<string, number>();
      const deadline = at + ttl + 30_000;
      let after = from;
      while (firstWrite.size < mine.length && Date.now() < deadline) {
        for (const c of await store.changesAfter(after, 5000)) {
          after = c.rv;
          const lease = mine.find((l) => l.name === `cluster/${c.cluster}`);
          if (lease && (c.epoch ?? 0) > lease.epoch && !firstWrite.has(c.cluster)) firstWrite.set(c.cluster, c.ts - at);
        }
        await sleep(50);
      }
      const times = mine.map((l) => firstWrite.get(l.name.slice('cluster/'.length)));
      const worst = Math.max(...times.map((t) => t ?? Infinity));
      scenarios.push({ how, member: victim.name, firstWriteSeconds: times.map((t) => (t === undefined ? null : t / 1000)) });
      console.log(
        `failover, ${how} of ${victim.name} holding ${mine.length} of ${nClusters} clusters under churn: first write of the new owner after ${times.map((t) => (t === undefined ? 'never' : `${(t / 1000).toFixed(1)} s`)).join(', ')}; ` +
          `target <= TTL + 5 s = ${(ttl + 5000) / 1000} s: ${worst <= ttl + 5000 ? 'met' : 'MISSED'}`,
      );
      if (signal === 'SIGSTOP') {
        victim.child.kill('SIGCONT');
        await sleep(5000);
      }
    }
    await sims.call({ cmd: 'stop-churn' });
    await sleep(5000);
    const diff = await sims.call({ cmd: 'lists' });
    let differences = 0;
    for (const [i, items] of (diff.lists as Array<Array<[string, string]>>).entries()) {
      const upstream = new Map(items);
      const stored = new Map<string, string>();
      for (const r of ['configmaps', 'pods']) for (const o of (await store.list({ group: '', resource: r, clusters: [`bench-${i}`] })).items) stored.set(`${r}/${o.namespace}/${o.name}`, `${o.uid}@${o.upstreamRv}`);
      for (const [k, v] of upstream) if (stored.get(k) !== v) differences++;
      for (const k of stored.keys()) if (!upstream.has(k)) differences++;
    }
    console.log(`failover: storage equals every member cluster's own list afterwards: ${differences === 0 ? 'yes' : `NO (${differences} differences)`}`);
    return { leaseTtlSeconds: ttl / 1000, scenarios, differences };
  } finally {
    await stopMembers(procs);
    await sims.exit();
    await store.close();
    cleanup();
  }
}

const pg = await startPostgres();
const recorded: SynchroHaFigures = { clusters: nClusters, targets: { lagP99Ms: 100, threeOverOne: 2, failoverSeconds: 20 } };
try {
  if (!args['skip-throughput']) {
    const runs: SynchroHaThroughputFigures[] = [];
    const sustained: Record<number, number> = {};
    for (const members of String(args.members).split(',').map(Number)) {
      for (const rate of String(args[members === 1 ? 'rates-1' : members === 2 ? 'rates-2' : 'rates-3']).split(',').map(Number)) {
        const r = await throughput(pg, members, rate);
        const ok = r.p99 <= 100 && r.matched >= 0.95;
        if (ok) sustained[members] = Math.max(sustained[members] ?? 0, r.committed);
        // The fleet's ceiling that the serialized section implies: one round at a time, whoever writes it.
        const ceiling = r.eventsPerRound / (r.heldMeanMs / 1000);
        runs.push({
          members,
          askedPerSec: rate,
          upstreamPerSec: r.rate,
          committedPerSec: r.committed,
          matched: r.matched,
          p50Ms: r.p50,
          p99Ms: r.p99,
          lockWaitMsPerBatch: r.lockWaitMs,
          batches: r.batches,
          serialized: { meanMs: r.heldMeanMs, p50Ms: r.heldP50Ms, p99Ms: r.heldP99Ms, rounds: r.rounds, eventsPerRound: r.eventsPerRound, ceilingPerSec: ceiling },
          cpuMsPer1000Events: { synchro: r.synchroCpuPer1000, postgres: r.postgresCpuPer1000 },
          sustained: ok,
        });
        console.log(
          `throughput, ${members} member${members > 1 ? 's' : ''}, ${nClusters} clusters, asked ${rate}/s: upstream ${r.rate.toFixed(0)}/s, committed ${r.committed.toFixed(0)}/s (${(r.matched * 100).toFixed(1)}%), ` +
            `lag p50 ${r.p50.toFixed(0)} ms, p99 ${r.p99.toFixed(0)} ms; rv lock wait ${r.lockWaitMs.toFixed(2)} ms per batch over ${r.batches} batches${ok ? '' : '  (not sustained)'}`,
        );
        console.log(
          `  serialized section (${r.parallel ? 'allocation + publish from the end of its waits to its commit, the database\'s clock' : 'rv lock held, lock to end of commit'}): mean ${r.heldMeanMs.toFixed(2)} ms, p50 <= ${r.heldP50Ms} ms, p99 <= ${r.heldP99Ms} ms (target <= 2 ms) ` +
            `over ${r.rounds} rounds of ${r.eventsPerRound.toFixed(1)} events: a fleet ceiling of ${ceiling.toFixed(0)} events/s (goal >= 20,000)`,
        );
        console.log(`  CPU per 1,000 events committed: synchro members ${r.synchroCpuPer1000.toFixed(0)} ms, PostgreSQL ${r.postgresCpuPer1000.toFixed(0)} ms (2 cores: ${((r.committed * (r.synchroCpuPer1000 + r.postgresCpuPer1000)) / 1e6 / 2 * 100).toFixed(0)}% of the machine)`);
      }
    }
    const ratio = (sustained[3] ?? 0) / Math.max(1, sustained[1] ?? 0);
    if (sustained[2] !== undefined) {
      const two = sustained[2] / Math.max(1, sustained[1] ?? 0);
      console.log(`sustained at lag p99 <= 100 ms: 2 members ${sustained[2].toFixed(0)}/s: ${two.toFixed(2)}x one; target >= 1.6x: ${two >= 1.6 ? 'met' : 'MISSED'}`);
    }
    recorded.throughput = runs;
    recorded.sustainedPerSec = { one: sustained[1] ?? 0, ...(sustained[2] !== undefined ? { two: sustained[2] } : {}), three: sustained[3] ?? 0 };
    console.log(`sustained at lag p99 <= 100 ms: 1 member ${(sustained[1] ?? 0).toFixed(0)}/s, 3 members ${(sustained[3] ?? 0).toFixed(0)}/s: ${ratio.toFixed(2)}x; target >= 2x: ${ratio >= 2 ? 'met' : 'MISSED'}`);
  }
  if (!args['skip-failover']) recorded.failover = await failover(pg);
} finally {
  await pg.stop();
}
await recordRun('synchro-ha', 'synchro-ha', { ...args }, recorded);
