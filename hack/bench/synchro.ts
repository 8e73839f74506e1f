// Benchmark of panoptes synchro against simulated clusters (run in a child process).
//
//   node --import tsx hack/bench/synchro.ts [--objects 100000] [--duration 120] [--rate 2000]
//        [--clusters 3] [--storage sqlite|postgres] [--skip-initial] [--skip-churn]
//
// 1. Initial sync: one cluster holding --objects configmaps; time until all are committed
//    to a fresh store (target: 100,000 in <= 10 s on SQLite).
// 2. Churn: --clusters clusters, --rate events/s in total (the simulator's churn generator,
//    creates/updates/deletes of configmaps and pods), for --duration seconds, default
//    resource set. Upstream-event-to-commit lag (target p99 <= 100 ms) and synchro's RSS
//    over time (target: its anonymous part flat; the file-backed part is mostly SQLite's
//    memory map of the database file). Afterwards storage is compared with each cluster's list.
import { statSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { setLogLevel } from '../../lib/log.ts';
import { SimProcess } from './sim-process.ts';
import { procMemory } from '../panoptes-process.ts';
import { emptyStorageUrl, stopTestPostgres, type Backend } from '../../storage/testing.ts';
import { Store } from '../../storage/store.ts';
import { startSynchro } from '../../synchro/synchro.ts';
import { tempDir, writeClusters } from '../../synchro/testutil.ts';
import type { SynchroChurnFigures, SynchroInitialFigures } from '../report/figures.ts';
import { recordRun } from '../report/record.ts';

const { values: args } = parseArgs({
  options: {
    objects: { type: 'string', default: '100000' },
    duration: { type: 'string', default: '120' },
    rate: { type: 'string', default: '2000' },
    clusters: { type: 'string', default: '3' },
    storage: { type: 'string', default: 'sqlite' },
    'skip-initial': { type: 'boolean', default: false },
    'skip-churn': { type: 'boolean', default: false },
  },
});
setLogLevel((process.env.PANOPTES_LOG_LEVEL as 'warn') ?? 'warn');
const backend = args.storage as Backend;
const now = () => performance.timeOrigin + performance.now();
const mb = (n: number) => `${(n / 1048576).toFixed(0)} MiB`;

/** CPU of this process (synchro; the simulated clusters are a child) since `from`, in ms. */
function cpuSince(from: NodeJS.CpuUsage): number {
  const u = process.cpuUsage(from);
  return (u.user + u.system) / 1000;
}

/** Events synchro has written (panoptes_synchro_batch_size_sum). */
async function synchroEvents(synchro: { metrics: { batchSize: { get(): Promise<{ values: Array<{ metricName?: string; value: number }> }> } } }): Promise<number> {
  return (await synchro.metrics.batchSize.get()).values.filter((v) => v.metricName === 'panoptes_synchro_batch_size_sum').reduce((a, v) => a + v.value, 0);
}

async function initialSync(): Promise<SynchroInitialFigures> {
  const objects = Number(args.objects);
  const sim = await SimProcess.start();
  const { urls } = await sim.call({ cmd: 'start', clusters: 1 });
  await sim.call({ cmd: 'bulk', cluster: 0, count: objects, namespaces: 100 });
  const { url, cleanup } = await emptyStorageUrl(backend);
  const store = await Store.open(url);
  const { dir, cleanup: rmDir } = tempDir();
  writeClusters(`${dir}/clusters.yaml`, [{ name: 'big', server: urls[0], resources: ['configmaps'] }]);
  const rss0 = process.memoryUsage().rss;
  const started = performance.now();
  const cpu0 = process.cpuUsage();
  const synchro = await startSynchro({ store, clustersFile: `${dir}/clusters.yaml` });
  const ok = await synchro.waitForInitialSync(120_000);
  const seconds = (performance.now() - started) / 1000;
  const cpuMs = cpuSince(cpu0);
  const stored = (await store.storedKeys('big', '', 'configmaps')).length;
  const batches = await synchro.metrics.batchSize.get();
  const count = batches.values.find((v) => v.metricName === 'panoptes_synchro_batch_size_count')?.value ?? 0;
  const commitSeconds = (await synchro.metrics.batchDuration.get()).values.find((v) => v.metricName === 'panoptes_synchro_batch_duration_seconds_sum')?.value ?? 0;
  const rss1 = process.memoryUsage().rss;
  console.log(`initial sync (${backend}): ${stored} of ${objects} objects in ${seconds.toFixed(2)} s = ${Math.round(stored / seconds)} objects/s${ok ? '' : ' (NOT COMPLETE)'}; ${count} batches taking ${commitSeconds.toFixed(2)} s in storage.applyBatch; RSS ${mb(rss0)} -> ${mb(rss1)}; target <= 10 s: ${ok && seconds <= 10 && stored === objects ? 'met' : 'MISSED'}`);
  console.log(`  synchro CPU: ${(cpuMs / 1000).toFixed(2)} s, ${((cpuMs / Math.max(1, stored)) * 1000).toFixed(1)} µs per object synced (this process: synchro alone, the clusters run in a child)`);
  await synchro.stop();
  await store.close();
  await cleanup();
  rmDir();
  await sim.exit();
  return { objects, stored, seconds, complete: ok, batches: count, storageSeconds: commitSeconds, rssBeforeMiB: rss0 / 1048576, rssAfterMiB: rss1 / 1048576, cpuUsPerObject: (cpuMs / Math.max(1, stored)) * 1000 };
}

async function churn(): Promise<SynchroChurnFigures> {
  const n = Number(args.clusters);
  const rate = Number(args.rate);
  const duration = Number(args.duration) * 1000;
  const sim = await SimProcess.start();
  const { urls } = await sim.call({ cmd: 'start', clusters: n });
  const { url, cleanup } = await emptyStorageUrl(backend);
  const store = await Store.open(url);
  const { dir, cleanup: rmDir } = tempDir();
  writeClusters(`${dir}/clusters.yaml`, urls.map((u: string, i: number) => ({ name: `bench-${i}`, server: u })));

  // Lag: upstream event time (from the simulator) matched with its commit, in 1 ms bins.
  const bins = new Uint32Array(10_001);
  let matched = 0;
  const produced = new Map<string, number>();
  const committed = new Map<string, number>();
  const record = (lagMs: number) => {
    bins[Math.min(10_000, Math.max(0, Math.round(lagMs)))]++;
    matched++;
  };
  sim.onTimes = (times) => {
    for (const [c, rv, t] of times) {
      const key = `${c}/${rv}`;
      const at = committed.get(key);
      if (at !== undefined) {
        committed.delete(key);
        record(at - t);
      } else produced.set(key, t);
    }
  };
  const synchro = await startSynchro({
    store,
    clustersFile: `${dir}/clusters.yaml`,
    onCommit: (cluster, events, _received, committedAt) => {
      const at = performance.timeOrigin + committedAt;
      for (const e of events) {
        const rv = e.object.metadata?.resourceVersion;
        if (!rv) continue;
        const key = `${cluster}/${rv}`;
        const t = produced.get(key);
        if (t !== undefined) {
          produced.delete(key);
          record(at - t);
        } else committed.set(key, at);
      }
    },
  });
  await synchro.waitForInitialSync(60_000);
  await sim.call({ cmd: 'churn', ratePerCluster: rate / n });
  const started = now();
  const cpu0 = process.cpuUsage();
  const events0 = await synchroEvents(synchro);
  const rss: number[] = [];
  const anon: number[] = [];
  const file: number[] = [];
  while (now() - started < duration) {
    await new Promise((r) => setTimeout(r, 5000));
    const m = procMemory(process.pid);
    rss.push(m.rss);
    anon.push(m.anon);
    file.push(m.file);
    // Unmatched entries older than 10 s are lost events (or not ours): drop them to stay bounded.
    const old = now() - 10_000;
    for (const [k, t] of produced) if (t < old) produced.delete(k);
    for (const [k, t] of committed) if (t < old) committed.delete(k);
    if (process.env.BENCH_VERBOSE) console.log(`t=${((now() - started) / 1000).toFixed(0)}s rss=${mb(rss[rss.length - 1])} matched=${matched} wal=${(() => { try { return mb(statSync(url.slice(7) + '-wal').size); } catch { return '-'; } })()}`);
  }
  const cpuMs = cpuSince(cpu0);
  const synced = (await synchroEvents(synchro)) - events0;
  const { stats } = await sim.call({ cmd: 'stop-churn' });
  const elapsed = (now() - started) / 1000;
  await new Promise((r) => setTimeout(r, 1000));
  const pct = (p: number) => {
    const target = matched * p;
    let acc = 0;
    for (let i = 0; i < bins.length; i++) if ((acc += bins[i]) >= target) return i;
    return 10_000;
  };
  let max = 0;
  for (let i = 0; i < bins.length; i++) if (bins[i]) max = i;
  const ops = stats.reduce((s: number, x: any) => s + x.creates + x.updates + x.deletes, 0);
  // Flat is judged on anonymous memory: file-backed pages are mostly SQLite's memory map of
  // the database file (storage/connect.ts), which grows as the change log fills up to its
  // retention and which the kernel reclaims under pressure.
  const warm = anon[Math.min(anon.length - 1, 5)] ?? anon[0];
  const last = anon[anon.length - 1];
  console.log(`churn (${backend}): ${n} clusters, ${ops} upstream writes in ${elapsed.toFixed(0)} s = ${Math.round(ops / elapsed)}/s; ${matched} events matched to their commit`);
  console.log(`  upstream-event-to-commit lag: p50 ${pct(0.5)} ms, p90 ${pct(0.9)} ms, p99 ${pct(0.99)} ms, max ${max} ms; target p99 <= 100 ms: ${pct(0.99) <= 100 ? 'met' : 'MISSED'}`);
  const metric = async (m: { get(): Promise<{ values: Array<{ metricName?: string; value: number }> }> }, name: string) => (await m.get()).values.filter((v) => v.metricName === name).reduce((a, v) => a + v.value, 0);
  const nBatches = await metric(synchro.metrics.batchSize, 'panoptes_synchro_batch_size_count');
  const nEvents = await metric(synchro.metrics.batchSize, 'panoptes_synchro_batch_size_sum');
  const tBatches = await metric(synchro.metrics.batchDuration, 'panoptes_synchro_batch_duration_seconds_sum');
  const lagSum = await metric(synchro.metrics.lag, 'panoptes_synchro_event_lag_seconds_sum');
  console.log(`  ${nBatches} batches, ${(nEvents / Math.max(1, nBatches)).toFixed(1)} events each on average, ${((tBatches / Math.max(1, nBatches)) * 1000).toFixed(1)} ms each in storage (storage busy ${((tBatches / elapsed) * 100).toFixed(0)}% of the time); mean receive-to-commit ${((lagSum / Math.max(1, nEvents)) * 1000).toFixed(1)} ms`);
  const list = (xs: number[]) => xs.map((r) => (r / 1048576).toFixed(0)).join(' ');
  console.log(`  synchro CPU: ${((cpuMs / 1000 / elapsed) * 100).toFixed(0)}% of a core, ${((cpuMs / Math.max(1, synced)) * 1000).toFixed(1)} µs per event synced (${synced} events)`);
  console.log(`  RSS every 5 s: ${list(rss)} MiB (max ${mb(Math.max(...rss))}); file-backed: ${list(file)} MiB`);
  console.log(`  anonymous every 5 s: ${list(anon)} MiB; after 30 s ${mb(warm)}, at the end ${mb(last)}, max ${mb(Math.max(...anon))}; flat (end within 15% of the 30 s value): ${last <= warm * 1.15 ? 'yes' : 'NO'}`);
  await synchro.stop();
  await store.close();
  await cleanup();
  rmDir();
  await sim.exit();
  const lag: Array<[number, number]> = [];
  for (let i = 0; i < bins.length; i++) if (bins[i]) lag.push([i, bins[i]]);
  return { clusters: n, upstreamWrites: ops, seconds: elapsed, matched, lag, batches: nBatches, eventsPerBatch: nEvents / Math.max(1, nBatches), storageMsPerBatch: (tBatches / Math.max(1, nBatches)) * 1000, rssMiB: rss.map((r) => r / 1048576), anonMiB: anon.map((r) => r / 1048576), fileMiB: file.map((r) => r / 1048576), rssEverySeconds: 5, cpuUsPerEvent: (cpuMs / Math.max(1, synced)) * 1000 };
}

try {
  const initial = args['skip-initial'] ? undefined : await initialSync();
  const churned = args['skip-churn'] ? undefined : await churn();
  await recordRun(`synchro-${backend}`, 'synchro', { ...args }, { backend, initial, churn: churned, targets: { initialSyncSeconds: 10, lagP99Ms: 100, rssFlatWithin: 1.15 } });
} finally {
  await stopTestPostgres();
}
