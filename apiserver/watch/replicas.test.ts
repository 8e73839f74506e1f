// Replicas on PostgreSQL: several hubs (each with a Store of its own, as separate apiserver
// processes would have) on one database, fed by concurrent writers, serve identical event
// sequences; NOTIFY wakes a replica's poller; a client whose replica dies resumes on another.
import t from 'tap';
import { parseLabelSelector } from '../../kube/labels.ts';
import { Store } from '../../storage/store.ts';
import { openTestStore, podEvent, stopTestPostgres } from '../../storage/testing.ts';
import type { WatchHub } from './hub.ts';
import { delay, podWatch, Reader, rvOf, startHub, type ReadEvent } from '../../hack/testing/watch-engine.ts';

t.teardown(stopTestPostgres);

const { store: writerA, url, close } = await openTestStore('postgres');
const writerB = await Store.open(url);
const replicaStores = await Promise.all([1, 2, 3].map(() => Store.open(url)));
const hubs: WatchHub[] = [];
// A poll interval so long that only NOTIFY can explain a delivery within half of it, whatever the machine's load.
// A poll interval far beyond every bounded wait here: what arrives within one came by NOTIFY.
for (const s of replicaStores) hubs.push(await startHub(s, { poll: { intervalMs: 600_000 }, prefill: 0 }));
t.teardown(async () => {
  for (const h of hubs) await h.stop();
  for (const s of replicaStores) await s.close().catch(() => {});
  await writerB.close();
  await close();
});
await delay(300); // LISTEN connections up

const key = (e: ReadEvent) => `${e.type} ${rvOf(e)} ${e.object.metadata?.annotations?.['panoptes.io/cluster']}/${e.object.metadata?.namespace}/${e.object.metadata?.name}`;

t.test('NOTIFY from another process wakes the poller (interval 10 min)', async (t) => {
  const r = new Reader(hubs[0].watch(podWatch({ resourceVersion: hubs[0].rv })));
  for (let i = 0; i < 2; i++) {
    await writerA.applyBatch('a', [podEvent('ADDED', 'n', `notify${i}`, '1')]);
    await r.count(i + 1, 60_000);
    t.equal(r.events.length, i + 1, `change ${i} delivered, not at the next poll`);
  }
  r.w.close();
});

t.test('replicas serve identical sequences under concurrent writers; a client resumes on another replica', async (t) => {
  const w0 = await writerA.watermark();
  await delay(100);
  const all = hubs.slice(0, 2).map((h) => new Reader(h.watch(podWatch({ resourceVersion: w0 }))));
  const selected = hubs.slice(0, 2).map(
    (h) => new Reader(h.watch(podWatch({ resourceVersion: w0 }, { namespaces: ['ns1', 'ns2'], labelSelector: parseLabelSelector('tier=web') }))),
  );
  const dying = new Reader(hubs[2].watch(podWatch({ resourceVersion: w0 })));

  const write = async (store: Store, cluster: string) => {
    for (let i = 0; i < 60; i++) {
      const n = 1 + (i % 3);
      const events = Array.from({ length: n }, (_, k) =>
        podEvent(i % 5 === 4 ? 'MODIFIED' : 'ADDED', `ns${k}`, `p${Math.floor(i / 5)}-${k}`, String(i + 1), { labels: { tier: i % 2 ? 'web' : 'db' } }),
      );
      await store.applyBatch(cluster, events);
      if (i % 10 === 0) await delay(2);
    }
  };
  const writing = Promise.all([write(writerA, 'a'), write(writerB, 'b')]);
  await dying.until((r) => r.events.length >= 40, 10_000, '40 events on the dying replica');
  // Replica 3 dies mid-stream: its clients' streams end; they resume elsewhere from their last rv.
  await hubs[2].stop();
  await replicaStores[2].close();
  await dying.end();
  const last = rvOf(dying.events[dying.events.length - 1]);
  const resumed = new Reader(hubs[1].watch(podWatch({ resourceVersion: last })));
  await writing;
  const final = await writerA.watermark();
  t.ok(final - w0 >= 200, `${final - w0} changes written`);
  for (const r of [...all, resumed]) await r.reach(final, 15_000);
  await delay(200);

  const want = Array.from({ length: final - w0 }, (_, k) => w0 + 1 + k);
  t.same(all[0].events.map(rvOf), want, 'replica 1: every change exactly once, in rv order');
  t.same(all[1].events.map(key), all[0].events.map(key), 'replica 2: the identical sequence');
  t.ok(selected[0].events.length > 0);
  t.same(selected[1].events.map(key), selected[0].events.map(key), 'filtered watches too (with selector transitions)');
  t.ok(selected[0].events.some((e) => e.type === 'DELETED'), 'transitions happened');
  t.same([...dying.events, ...resumed.events].map(key), all[0].events.map(key), 'the client of the dead replica missed nothing and got nothing twice');
  for (const r of [...all, ...selected, resumed]) r.w.close();
});

t.test('a replica delivers what a notification carried without a query; a change too long to carry, or a large batch, is read from the log, in order', async (t) => {
  const store = await Store.open(url);
  // Polling on its interval would also deliver: a minute is longer than the test.
  const hub = await startHub(store, { poll: { intervalMs: 60_000 }, prefill: 0 });
  t.teardown(async () => {
    await hub.stop();
    await store.close();
  });
  await delay(300); // LISTEN up, and the poll it triggers done
  const r = new Reader(hub.watch(podWatch({ resourceVersion: hub.rv })));
  const before = hub.stats();
  const from = await writerA.watermark();
  await writerA.applyBatch('carried', [podEvent('ADDED', 'n', 'small', '1')]);
  await r.count(1, 5000);
  t.equal(hub.stats().pollQueries, before.pollQueries, 'a small change: no query');
  t.equal(hub.stats().notifiedChanges, before.notifiedChanges + 1, 'delivered as the notification carried it');
  t.match(r.events[0], { type: 'ADDED', object: { metadata: { name: 'small', resourceVersion: String(from + 1), annotations: { 'panoptes.io/cluster': 'carried' } } } });

  // One batch: small, too long for a notification (8000 bytes), small; then a batch of 101.
  const big = podEvent('ADDED', 'n', 'big', '2');
  big.object.metadata!.annotations = { filler: 'x'.repeat(9000) };
  await writerA.applyBatch('carried', [podEvent('ADDED', 'n', 'before-big', '3'), big, podEvent('ADDED', 'n', 'after-big', '4')]);
  await writerA.applyBatch('carried', Array.from({ length: 101 }, (_, i) => podEvent('ADDED', 'n', `many-${i}`, String(10 + i))));
  const final = await writerA.watermark();
  await r.reach(final, 5000);
  await delay(100);
  t.same(r.events.map(rvOf), Array.from({ length: final - from }, (_, i) => from + 1 + i), 'every rv once, in order');
  t.same(r.names.slice(0, 5), ['small', 'before-big', 'big', 'after-big', 'many-0']);
  t.equal(r.events[2].object.metadata?.annotations?.filler, 'x'.repeat(9000), 'the long change read from the log, whole');
  const after = hub.stats();
  t.ok(after.pollQueries > before.pollQueries, `the log was read for the rest (${after.pollQueries - before.pollQueries} queries)`);
  t.ok(after.notifiedChanges - before.notifiedChanges <= 3, 'the large batch came by rv alone');
  r.w.close();
});
