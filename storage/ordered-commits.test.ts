// Parallel writes on PostgreSQL (storage/ordered-commits.ts, storage/README.md "One rv order,
// written in parallel"): what an aborted allocation leaves, what a write that runs alone does
// with it, that a stale fence allocates nothing, and the switch of a database created before.
import t, { type Test } from 'tap';
import { Store } from './store.ts';
import { clusterLease } from './leases.ts';
import { emptyStorageUrl, heldOpen, podEvent, stopTestPostgres, takeLease } from './testing.ts';
import { gapType } from './ordered-commits.ts';

t.teardown(stopTestPostgres);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function freshStore(t: Test): Promise<{ store: Store; url: string }> {
  const { url, cleanup } = await emptyStorageUrl('postgres');
  const store = await Store.open(url);
  t.teardown(async () => {
    await store.close();
    await cleanup();
  });
  return { store, url };
}

const abort = { beforeCommit: () => Promise.reject(new Error('abort')) };

t.test('a writer that aborts after allocating leaves gap rows, written by the next one to publish; no read serves them', async (t) => {
  const { store } = await freshStore(t);
  t.equal(await store.writeProtocol(), 'parallel', 'a database created now writes in parallel');
  const east = await takeLease(store, clusterLease('east'));
  await store.applyBatches([{ cluster: 'east', events: [podEvent('ADDED', 'web', 'a', '1')], fence: east }]);
  await t.rejects(store.applyBatches([{ cluster: 'east', events: [podEvent('ADDED', 'web', 'b', '2'), podEvent('ADDED', 'web', 'c', '3')], fence: east }], abort), /abort/);
  t.equal(await store.watermark(), 2, 'the watermark does not move for an aborted writer');
  const [r] = await store.applyBatches([{ cluster: 'east', events: [podEvent('ADDED', 'web', 'd', '4')], fence: east }]);
  t.same(r.changes.map((c) => c.rv), [5], 'the next writer allocates after the aborted range');
  const log = await store.changesAfter(1, 100);
  t.same(
    log.map((c) => [c.rv, c.type, c.resource, c.name]),
    [
      [2, 'ADDED', 'pods', 'a'],
      [3, gapType, '', ''],
      [4, gapType, '', ''],
      [5, 'ADDED', 'pods', 'd'],
    ],
    'the aborted range became gap rows: the log has no hole',
  );
  t.same((await store.list({ group: '', resource: 'pods' })).items.map((i) => i.name), ['a', 'd'], 'a list holds the committed objects only');
  t.same((await store.changesOfResources(1, 5, [{ group: '', resource: 'pods' }], 100)).map((c) => c.rv), [2, 5], 'a read of a resource history skips gap rows');
});

t.test('a write that runs alone waits for the parallel writers, and turns what they left into gap rows first', async (t) => {
  const { store, url } = await freshStore(t);
  const other = await Store.open(url);
  t.teardown(() => other.close());
  const east = await takeLease(store, clusterLease('east'));
  await t.rejects(store.applyBatches([{ cluster: 'east', events: [podEvent('ADDED', 'web', 'a', '1')], fence: east }], abort), /abort/);
  // A parallel writer holds its transaction open; an unleased write (it runs alone) waits for it.
  const { release, done: held } = await heldOpen((opts) => store.applyBatches([{ cluster: 'east', events: [podEvent('ADDED', 'web', 'b', '2')], fence: east }], opts));
  let aloneDone = false;
  const alone = other.applyBatch('west', [podEvent('ADDED', 'web', 'w', '1')]).then((r) => ((aloneDone = true), r));
  await sleep(300);
  t.notOk(aloneDone, 'the write that runs alone waits for the parallel writer in flight');
  release();
  const [, w] = (await Promise.all([held, alone])) as [unknown, { changes: Array<{ rv: number }> }];
  t.same(w.changes.map((c) => c.rv), [4], 'it allocates after every rv given out');
  t.same((await store.changesAfter(1, 100)).map((c) => [c.rv, c.type]), [
    [2, gapType],
    [3, 'ADDED'],
    [4, 'ADDED'],
  ]);
  // The parallel writers continue after it.
  const [r] = await store.applyBatches([{ cluster: 'east', events: [podEvent('ADDED', 'web', 'c', '3')], fence: east }]);
  t.same(r.changes.map((c) => c.rv), [5], 'and parallel writers continue after it, from the allocator it moved on');
});

t.test('a stale fence writes nothing and allocates nothing', async (t) => {
  const { store } = await freshStore(t);
  const east = await takeLease(store, clusterLease('east'));
  await store.releaseLease(east.lease, east.holder, east.epoch);
  await takeLease(store, clusterLease('east'), 'other');
  await t.rejects(store.applyBatches([{ cluster: 'east', events: [podEvent('ADDED', 'web', 'a', '1')], fence: east }]), { name: 'FencedError' });
  const west = await takeLease(store, clusterLease('west'));
  const [r] = await store.applyBatches([{ cluster: 'west', events: [podEvent('ADDED', 'web', 'a', '1')], fence: west }]);
  t.same(r.changes.map((c) => c.rv), [2], 'the next rv is the first: the fenced writer took none');
  t.same((await store.changesAfter(1, 100)).map((c) => c.type), ['ADDED'], 'no gap row either');
});

t.test('a database created before stays serial until switched; writers queued behind the switch start again in parallel', async (t) => {
  const { store, url } = await freshStore(t);
  // As a database created before this version: serial, a change already written.
  await store.conn.knex('meta').where({ key: 'write_protocol' }).update({ value: 0 });
  const serial = await Store.open(url);
  const queued = await Store.open(url);
  t.teardown(async () => {
    await serial.close();
    await queued.close();
  });
  t.equal(await serial.writeProtocol(), 'serial');
  const east = await takeLease(serial, clusterLease('east'));
  const west = await takeLease(serial, clusterLease('west'));
  // A serial writer holds the rv lock; the switch waits for it; another serial writer queues behind the switch.
  const { release, done: held } = await heldOpen((opts) => serial.applyBatches([{ cluster: 'east', events: [podEvent('ADDED', 'web', 'a', '1')], fence: east }], opts));
  let switched = false;
  const switching = store.enableParallelWrites().then((r) => ((switched = r), r));
  await sleep(200);
  const behind = queued.applyBatches([{ cluster: 'west', events: [podEvent('ADDED', 'web', 'w', '1')], fence: west }]);
  await sleep(200);
  t.notOk(switched, 'the switch waits for the serial writer in flight');
  release();
  await Promise.all([held, switching, behind]);
  t.ok(switched, 'switched');
  t.equal(await serial.writeProtocol(), 'parallel', 'every process reads the switch');
  const [r] = await serial.applyBatches([{ cluster: 'east', events: [podEvent('ADDED', 'web', 'b', '2')], fence: east }]);
  t.same(r.changes.map((c) => c.rv), [4], 'parallel writes continue from the watermark the serial ones left');
  t.same((await store.changesAfter(1, 100)).map((c) => [c.rv, c.name]), [
    [2, 'a'],
    [3, 'w'],
    [4, 'b'],
  ], 'one rv order across the switch, without a hole (a writer queued behind it that allocated from the meta row would have taken rv 3 again)');
  t.equal(await store.enableParallelWrites(), false, 'switching again changes nothing');
});
