// Initial-sync slots: at most `size` held at once, given in the order asked, a release is
// idempotent, and a waiter whose sync stops (abort) leaves the queue without a slot; synchro
// runs no more initial syncs at once than configured, and every cluster completes.
import t from 'tap';
import { startSimCluster } from '../../hack/sim/cluster.ts';
import { openTestStore } from '../../storage/testing.ts';
import { InitialSyncSlots, type Release } from './initial-sync-slots.ts';
import { startSynchro, type SynchroHandle } from '../synchro.ts';
import { fastTimings, tempDir, writeClusters } from '../testutil.ts';

t.test('at most size at once, in the order asked; release is idempotent; an aborted waiter leaves', async (t) => {
  const seen: Array<[number, number]> = [];
  const slots = new InitialSyncSlots(2, (running, waiting) => seen.push([running, waiting]));
  const never = new AbortController().signal;
  const a = (await slots.acquire(never))!;
  const b = (await slots.acquire(never))!;
  t.equal(slots.running, 2);
  const granted: string[] = [];
  const c = slots.acquire(never).then((r) => (granted.push('c'), r));
  const stopD = new AbortController();
  const d = slots.acquire(stopD.signal).then((r) => (granted.push('d'), r));
  const e = slots.acquire(never).then((r) => (granted.push('e'), r));
  t.equal(slots.queued, 3);
  stopD.abort();
  t.equal(await d, undefined, 'an aborted waiter gets no slot');
  t.equal(slots.queued, 2);
  a();
  a();
  const rc = (await c) as Release;
  t.equal(slots.running, 2, 'a second release of the same slot frees nothing more');
  t.same(granted, ['d', 'c'], 'c got the freed slot; d had left');
  b();
  const re = (await e) as Release;
  t.same(granted, ['d', 'c', 'e'], 'then e, in the order asked');
  rc();
  re();
  t.equal(slots.running, 0);
  t.same(seen.at(-1), [0, 0], 'the gauges follow');
  t.equal(await slots.acquire(AbortSignal.abort()), undefined, 'an already stopped sync asks for nothing');
  t.throws(() => new InitialSyncSlots(0), /at least 1/);
});

t.test('synchro: no more clusters in their initial sync at once than --initial-sync-concurrency; every one completes', async (t) => {
  const sims = await Promise.all(Array.from({ length: 5 }, (_, i) => startSimCluster({ name: `s${i}`, workload: true })));
  // Every answer takes 150 ms: an initial sync lasts long enough for the others to queue.
  for (const s of sims) s.faults.setLatency(150);
  const { store, close } = await openTestStore('sqlite');
  const { dir, cleanup } = tempDir();
  const file = `${dir}/clusters.yaml`;
  writeClusters(file, sims.map((s) => ({ name: s.name, server: s.url, resources: ['configmaps', 'pods'] })));
  let synchro: SynchroHandle | undefined;
  let sampling = true;
  t.teardown(async () => {
    sampling = false;
    await synchro?.stop();
    await Promise.all(sims.map((s) => s.close()));
    await close();
    cleanup();
  });
  synchro = await startSynchro({ store, clustersFile: file, timings: fastTimings, initialSyncConcurrency: 2 });
  const metrics = synchro.metrics;
  let maxRunning = 0;
  let maxWaiting = 0;
  const sampler = (async () => {
    while (sampling) {
      for (const v of (await metrics.initialSyncs.get()).values) {
        if (v.labels.state === 'running') maxRunning = Math.max(maxRunning, v.value);
        if (v.labels.state === 'waiting') maxWaiting = Math.max(maxWaiting, v.value);
      }
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  t.ok(await synchro.waitForInitialSync(60_000), 'every cluster completes its initial sync');
  sampling = false;
  await sampler;
  for (const s of sims) s.faults.setLatency(0);
  t.equal(maxRunning, 2, 'two at a time');
  t.ok(maxWaiting >= 1, `the others waited their turn (up to ${maxWaiting})`);
  for (const s of sims) t.match((await store.getCluster(s.name))?.status, { initialSync: { complete: true } }, `${s.name} complete`);
  const last = Object.fromEntries((await metrics.initialSyncs.get()).values.map((v) => [v.labels.state, v.value]));
  t.same(last, { running: 0, waiting: 0 }, 'every slot given back');
});
