// Benchmark of apiserver reads on a PostgreSQL hot standby against reads on the primary: a
// primary and a streaming standby on loopback (hack/postgres-standby.ts), one `panoptes
// apiserver` process on each (the standby one with --storage-read), writes made by this
// process on the primary as synchro's would be.
//
//   node --import tsx hack/bench/standby.ts [--objects 2000] [--lists 300] [--rate 2000]
//        [--cpu-lists 1000] [--watch-writes 200]
//
// 1. Most-recent list (resourceVersion unset, limit=500: a first page, as informers list)
//    through each replica, p50/p99: replication idle, then under --rate events/s of writes
//    (batches of 100, four writers).
// 2. Write→watch: a one-event batch committed on the primary, until a watcher on each
//    replica receives it (p50/p99 of --watch-writes writes, 20 ms apart).
// 3. Primary CPU per 1,000 lists: CPU time of every process of the primary's PostgreSQL
//    instance (/proc/<pid>/stat utime+stime of the postmaster and its children) over
//    --cpu-lists lists through the primary replica, then through the standby replica.
// 4. The rv lock, from the write side: each batch's time from its lock (after lockWaitMs) to
//    its commit returned (an upper bound of the hold: it includes the COMMIT round trip), for
//    batches of 20 and 200 events from one writer, and the load's batches of 100 from four; the lock serializes every writer of the
//    fleet, so events per batch / hold is the cap of the whole fleet's write rate.
// Prints the figures and records them in docs/bench/standby.json (charts beside it).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { setLogLevel } from '../../lib/log.ts';
import { Store } from '../../storage/store.ts';
import { podEvent, seedCluster } from '../../storage/testing.ts';
import { percentile } from '../fixtures.ts';
import { instanceCpuSeconds } from './process-cpu.ts';
import { startStandbyPair } from '../postgres-standby.ts';
import { recordRun } from '../report/record.ts';
import { get } from '../sim/testutil.ts';
import { startApiserverProcess } from '../testing/apiserver-process.ts';
import { httpWatch, rvOf } from '../testing/watch-http.ts';

const { values: args } = parseArgs({
  options: {
    objects: { type: 'string', default: '2000' },
    lists: { type: 'string', default: '300' },
    rate: { type: 'string', default: '2000' },
    'cpu-lists': { type: 'string', default: '1000' },
    'watch-writes': { type: 'string', default: '200' },
  },
});
setLogLevel('warn');
const nObjects = Number(args.objects);
const nLists = Number(args.lists);
const rate = Number(args.rate);
const cpuLists = Number(args['cpu-lists']);
const watchWrites = Number(args['watch-writes']);

const PODS = '/apis/panoptes.io/v1alpha1/resources/api/v1/pods';
const apiResources = [{ group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, singularName: 'pod', shortNames: ['po'] }];
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const stats = (xs: number[]) => ({ p50: percentile(xs, 50), p99: percentile(xs, 99), n: xs.length });
const ms = (x: { p50: number; p99: number }) => `p50 ${x.p50.toFixed(2)} ms, p99 ${x.p99.toFixed(2)} ms`;

async function listTimes(base: string, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const r = await get(`${base}${PODS}?limit=500`);
    if (r.status !== 200) throw new Error(`list: ${r.status} ${r.text.slice(0, 200)}`);
    out.push(performance.now() - t0);
  }
  return out;
}

async function main(): Promise<void> {
  const pair = await startStandbyPair();
  const stops: Array<() => Promise<void>> = [() => pair.close()];
  try {
    const db = await pair.createDatabase('panoptes');
    const writer = await Store.open(db.primary);
    stops.unshift(() => writer.close());
    await seedCluster(writer, 'a', { phase: 'Ready', ready: true, apiResources });
    for (let i = 0; i < nObjects; i += 500) {
      await writer.applyBatch('a', Array.from({ length: Math.min(500, nObjects - i) }, (_, k) => podEvent('ADDED', `ns${(i + k) % 20}`, `seed-${i + k}`, '1')));
    }
    await writer.analyze();
    await pair.caughtUp(60_000);
    const onPrimary = await startApiserverProcess(['--storage', db.primary], `${PODS}?limit=1`);
    stops.unshift(() => onPrimary.stop());
    const onStandby = await startApiserverProcess(['--storage', db.primary, '--storage-read', db.standby], `${PODS}?limit=1`);
    stops.unshift(() => onStandby.stop());
    const replicas = { primary: onPrimary.base, standby: onStandby.base };
    await listTimes(onPrimary.base, 20);
    await listTimes(onStandby.base, 20);

    // 1. Most-recent lists, idle.
    const idle = { primary: stats(await listTimes(replicas.primary, nLists)), standby: stats(await listTimes(replicas.standby, nLists)) };
    process.stdout.write(`most-recent list (limit=500 of ${nObjects}), idle: primary ${ms(idle.primary)}; standby ${ms(idle.standby)}\n`);

    // ... and under writes; the writer also measures the rv lock's hold per batch of 20.
    let writing = true;
    let seq = 0;
    const holdsLoad: number[] = [];
    const perBatch = 100;
    // Four writers at once, as synchro's shards and group commits overlap: one alone waits for
    // each commit (synchronous_commit) and falls short of the rate on a small machine.
    const writers = 4;
    const writeLoad = Promise.all(Array.from({ length: writers }, async () => {
      const everyMs = (perBatch / rate) * 1000 * writers;
      let next = performance.now();
      while (writing) {
        const events = Array.from({ length: perBatch }, () => {
          const i = seq++;
          return podEvent('MODIFIED', `ns${i % 20}`, `seed-${i % nObjects}`, String(10 + i), { labels: { n: String(i) } });
        });
        const t0 = performance.now();
        const r = await writer.applyBatch('a', events);
        holdsLoad.push(performance.now() - t0 - r.lockWaitMs);
        next += everyMs;
        const wait = next - performance.now();
        if (wait > 0) await sleep(wait);
      }
    }));
    await sleep(500);
    const loadStart = seq;
    const loadT0 = performance.now();
    const loaded = { primary: stats(await listTimes(replicas.primary, nLists)), standby: stats(await listTimes(replicas.standby, nLists)) };
    const achieved = ((seq - loadStart) / (performance.now() - loadT0)) * 1000;
    writing = false;
    await writeLoad;
    process.stdout.write(`most-recent list under ${achieved.toFixed(0)} events/s of writes: primary ${ms(loaded.primary)}; standby ${ms(loaded.standby)}\n`);
    await pair.caughtUp(60_000);

    // 2. Write→watch.
    const from = await writer.watermark();
    const watches = { primary: await httpWatch(`${replicas.primary}${PODS}?watch=1&resourceVersion=${from}`), standby: await httpWatch(`${replicas.standby}${PODS}?watch=1&resourceVersion=${from}`) };
    const committedAt = new Map<number, number>();
    const arrived = { primary: new Map<number, number>(), standby: new Map<number, number>() };
    const follow = (which: 'primary' | 'standby') => {
      const w = watches[which];
      let seen = 0;
      const timer = setInterval(() => {
        for (; seen < w.events.length; seen++) arrived[which].set(rvOf(w.events[seen]), performance.now());
      }, 1);
      return () => clearInterval(timer);
    };
    const unfollow = [follow('primary'), follow('standby')];
    for (let i = 0; i < watchWrites; i++) {
      const r = await writer.applyBatch('a', [podEvent('MODIFIED', 'ns0', 'seed-0', String(1_000_000 + i), { labels: { w: String(i) } })]);
      committedAt.set(r.watermark, performance.now());
      await sleep(20);
    }
    const last = await writer.watermark();
    for (const w of Object.values(watches)) await w.until((x) => x.events.some((e) => rvOf(e) >= last), 15_000, `rv ${last}`);
    await sleep(20);
    for (const u of unfollow) u();
    for (const w of Object.values(watches)) w.close();
    const latency = (which: 'primary' | 'standby') => stats([...committedAt].map(([rv, at]) => (arrived[which].get(rv) ?? NaN) - at).filter((x) => Number.isFinite(x)));
    const writeToWatch = { primary: latency('primary'), standby: latency('standby') };
    process.stdout.write(`write→watch: primary replica ${ms(writeToWatch.primary)}; standby replica ${ms(writeToWatch.standby)}\n`);

    // 3. Primary CPU per 1,000 lists.
    const postmaster = Number(readFileSync(join(pair.primary.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    const cpuPer1000 = async (base: string) => {
      const before = instanceCpuSeconds(postmaster);
      await listTimes(base, cpuLists);
      return ((instanceCpuSeconds(postmaster) - before) / cpuLists) * 1000;
    };
    const primaryCpu = { readsOnPrimary: await cpuPer1000(replicas.primary), readsOnStandby: await cpuPer1000(replicas.standby) };
    process.stdout.write(
      `primary PostgreSQL CPU per 1,000 most-recent lists: ${primaryCpu.readsOnPrimary.toFixed(2)} s with reads on the primary, ${primaryCpu.readsOnStandby.toFixed(2)} s with reads on the standby\n`,
    );

    // 4. The rv lock's hold per batch, and the write rate it caps.
    const holdsOf = async (size: number, batches: number) => {
      const holds: number[] = [];
      for (let i = 0; i < batches; i++) {
        const events = Array.from({ length: size }, (_, k) => podEvent('MODIFIED', `ns${k % 20}`, `seed-${(i * size + k) % nObjects}`, String(2_000_000 + seq++), { labels: { h: String(i) } }));
        const t0 = performance.now();
        const r = await writer.applyBatch('a', events);
        holds.push(performance.now() - t0 - r.lockWaitMs);
      }
      return stats(holds);
    };
    const lock = [
      { eventsPerBatch: 20, writers: 1, hold: await holdsOf(20, 200) },
      { eventsPerBatch: perBatch, writers: 4, hold: stats(holdsLoad) },
      { eventsPerBatch: 200, writers: 1, hold: await holdsOf(200, 100) },
    ].map((x) => ({ ...x, capEventsPerSec: (x.eventsPerBatch / x.hold.p50) * 1000 }));
    for (const l of lock) process.stdout.write(`rv lock hold per batch of ${l.eventsPerBatch} (${l.writers} writer${l.writers > 1 ? 's' : ''}): ${ms(l.hold)}; the fleet's write rate is capped near ${l.capEventsPerSec.toFixed(0)} events/s\n`);

    await recordRun('standby', 'standby', { objects: nObjects, lists: nLists, rate, 'cpu-lists': cpuLists, 'watch-writes': watchWrites }, {
      objects: nObjects,
      listIdleMs: idle,
      listUnderWritesMs: { ...loaded, eventsPerSec: achieved },
      writeToWatchMs: writeToWatch,
      primaryCpuSecondsPer1000Lists: primaryCpu,
      rvLock: lock,
    });
  } finally {
    for (const stop of stops) await stop().catch(() => {});
  }
}

await main();
