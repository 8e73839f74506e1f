// The group committer: clusters' queues written together, fenced clusters dropped from a
// round without losing the others, one part per cluster, order per cluster kept.
import t, { type Test } from 'tap';
import { stillReachable } from '../../hack/testing/gc.ts';
import { logger } from '../../lib/log.ts';
import { clusterLease, type Fence } from '../../storage/leases.ts';
import type { Store } from '../../storage/store.ts';
import { backends, openTestStore, podEvent, refuseObjectsHolding, stopTestPostgres, takeLease, type Backend } from '../../storage/testing.ts';
import type { BatchPart } from '../../storage/write.ts';
import { Batcher, defaultBatcherOptions } from './batcher.ts';
import { Committer } from './committer.ts';
import { SynchroMetrics } from '../metrics/metrics.ts';

const opts = defaultBatcherOptions('sqlite');
const log = logger('test');

t.teardown(stopTestPostgres);

async function setup(t: Test, backend: Backend = 'sqlite'): Promise<{ store: Store; committer: Committer; metrics: SynchroMetrics; rounds: BatchPart[][] }> {
  const { store, close } = await openTestStore(backend);
  const metrics = new SynchroMetrics();
  // Record every round the committer writes.
  const rounds: BatchPart[][] = [];
  const applyBatches = store.applyBatches.bind(store);
  store.applyBatches = (parts) => {
    rounds.push(parts);
    return applyBatches(parts);
  };
  const committer = new Committer(store, opts, metrics, log);
  t.teardown(async () => {
    await committer.close();
    await close();
  });
  return { store, committer, metrics, rounds };
}

t.test("several clusters' queued events go in one transaction, in order per cluster", async (t) => {
  const { store, committer, rounds } = await setup(t);
  const a = new Batcher(committer, 'a', opts, new SynchroMetrics(), log, { fence: await takeLease(store, clusterLease('a')) });
  const b = new Batcher(committer, 'b', opts, new SynchroMetrics(), log, { fence: await takeLease(store, clusterLease('b')) });
  // Queued in one tick: the committer's next round takes them all.
  for (let i = 0; i < 5; i++) {
    a.push(podEvent('MODIFIED', 'n', 'p', String(10 + i), { labels: { i: String(i) } }), 100);
    b.push(podEvent('ADDED', 'n', `q${i}`, String(10 + i)), 100);
  }
  await Promise.all([a.flush(), b.flush()]);
  t.ok(rounds.length <= 2, `${rounds.length} transactions for 10 events of 2 clusters`);
  t.ok(rounds.some((r) => r.length === 2), 'one transaction carried both clusters');
  const p = await store.get({ cluster: 'a', group: '', resource: 'pods', namespace: 'n', name: 'p' });
  t.equal(p?.upstreamRv, '14', "a's events applied in order: the last one stays");
  t.equal((await store.list({ group: '', resource: 'pods', clusters: ['b'] })).items.length, 5);
  await Promise.all([a.close(), b.close()]);
});

t.test('a fenced cluster is dropped from the round; the others commit', async (t) => {
  const { store, committer } = await setup(t);
  const fenceOf = async (c: string, holder: string): Promise<Fence> => ({ lease: clusterLease(c), holder, epoch: (await store.acquireLease(clusterLease(c), holder, 60_000))! });
  const good = await fenceOf('good', 'me');
  const stale = await fenceOf('stale', 'me');
  await store.acquireLease(clusterLease('stale'), 'me', 60_000); // a newer epoch: `stale` is outdated
  let fenced = 0;
  const a = new Batcher(committer, 'good', opts, new SynchroMetrics(), log, { fence: good });
  const s = new Batcher(committer, 'stale', opts, new SynchroMetrics(), log, { fence: stale, onFenced: () => fenced++ });
  a.push(podEvent('ADDED', 'n', 'x', '1'), 100);
  s.push(podEvent('ADDED', 'n', 'y', '1'), 100);
  await a.flush();
  await t.rejects(s.flush(), { name: 'FencedError' }, "the fenced cluster's flush fails");
  t.equal(fenced, 1, 'and its owner is told');
  t.throws(() => s.push(podEvent('ADDED', 'n', 'z', '1'), 100), { name: 'FencedError' }, 'it takes no more events');
  t.ok(await store.get({ cluster: 'good', group: '', resource: 'pods', namespace: 'n', name: 'x' }), 'the other cluster committed');
  t.equal(await store.get({ cluster: 'stale', group: '', resource: 'pods', namespace: 'n', name: 'y' }), undefined, 'the fenced one wrote nothing');
  await a.close();
});

t.test('two batchers of one cluster (re-acquired while the old one drains) never share a round', async (t) => {
  const { store, committer, rounds } = await setup(t);
  // Both still valid here (the old one's epoch would be fenced): this is about rounds only.
  const fence = await takeLease(store, clusterLease('c'));
  const old = new Batcher(committer, 'c', opts, new SynchroMetrics(), log, { fence });
  const fresh = new Batcher(committer, 'c', opts, new SynchroMetrics(), log, { fence });
  old.push(podEvent('ADDED', 'n', 'a', '1'), 100);
  fresh.push(podEvent('ADDED', 'n', 'b', '2'), 100);
  await Promise.all([old.flush(), fresh.flush()]);
  t.ok(rounds.every((r) => new Set(r.map((p) => p.cluster)).size === r.length), 'one part per cluster in every round');
  await Promise.all([old.close(), fresh.close()]);
});

/** Resolves with `p`, or rejects after `ms` (a stalled committer must fail the test, not hang it). */
const within = <T>(p: Promise<T>, ms: number, what: string): Promise<T> =>
  Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`${what}: not done within ${ms} ms`)), ms).unref())]);

for (const backend of backends) {
  t.test(`${backend}: a round storage refuses is split; the refused event is quarantined, everything else commits`, async (t) => {
    const { store, committer, metrics } = await setup(t, backend);
    await refuseObjectsHolding(store, 'poison-pill');
    let failures = 0;
    const applyBatches = store.applyBatches.bind(store);
    store.applyBatches = (parts) => applyBatches(parts).catch((err: Error) => {
      failures++;
      throw err;
    });
    let told = 0;
    const a = new Batcher(committer, 'a', opts, metrics, log, { fence: await takeLease(store, clusterLease('a')), onQuarantine: () => told++ });
    const b = new Batcher(committer, 'b', opts, metrics, log, { fence: await takeLease(store, clusterLease('b')) });
    const pill = (rv: string) => podEvent('ADDED', 'n', 'poisoned', rv, { labels: { note: 'poison-pill' } });
    const nulName = { ...podEvent('ADDED', 'n', 'x', '13'), object: { ...podEvent('ADDED', 'n', 'x', '13').object, metadata: { name: 'bad\u0000name', namespace: 'n', uid: 'u-nul', resourceVersion: '13' } } };
    // In one tick: one round of both clusters, a's events around the two it cannot store.
    for (let i = 0; i < 10; i++) a.push(podEvent('ADDED', 'n', `before-${i}`, String(i)), 100);
    a.push(pill('11'), 100);
    a.push(podEvent('ADDED', 'n', 'long-owner', '12', { owner: 'o'.repeat(300) }), 100);
    a.push(nulName, 100);
    for (let i = 0; i < 10; i++) a.push(podEvent('ADDED', 'n', `after-${i}`, String(20 + i)), 100);
    for (let i = 0; i < 5; i++) b.push(podEvent('ADDED', 'n', `b-${i}`, String(i)), 100);
    await within(Promise.all([a.flush(), b.flush()]), 20_000, 'flush');

    const names = async (cluster: string) => (await store.list({ group: '', resource: 'pods', clusters: [cluster] })).items.map((i) => i.name).sort();
    const expected = [...Array.from({ length: 10 }, (_, i) => `after-${i}`), ...Array.from({ length: 10 }, (_, i) => `before-${i}`), 'long-owner'].sort();
    t.same(await names('a'), expected, "every other event of the poisoned cluster committed, in order, the 300-character owner uid too");
    t.same(await names('b'), ['b-0', 'b-1', 'b-2', 'b-3', 'b-4'], 'the other cluster of the round committed');
    t.same(a.quarantined.map((q) => [q.namespace, q.name, q.upstreamRv]), [['n', 'poisoned', '11'], ['n', 'bad\u0000name', '13']], 'the two refused objects are quarantined');
    t.match(a.quarantined[0].reason, backend === 'postgres' ? /23514/ : /SQLITE_CONSTRAINT/, 'by the storage error code');
    t.notMatch(a.quarantined[0].reason, /poison-pill/, 'never by content');
    t.match(a.quarantined[1].reason, /metadata\.name cannot be stored: it contains a NUL character/);
    t.equal(told, 2, 'the cluster is told (its status names them)');
    t.equal((await metrics.quarantinedEvents.get()).values.reduce((n, v) => n + v.value, 0), 2, 'a metric counts them');
    t.equal((await metrics.quarantinedObjects.get()).values.find((v) => v.labels.cluster === 'a')?.value, 2);

    // A relist brings the same versions back: storage is not asked again.
    const failed = failures;
    a.push(pill('11'), 100);
    a.push(nulName, 100);
    a.push(podEvent('ADDED', 'n', 'late', '40'), 100);
    await within(a.flush(), 10_000, 'flush after relist');
    t.equal(failures, failed, 'no failed write: the quarantined versions were not offered again');
    t.ok(await store.get({ cluster: 'a', group: '', resource: 'pods', namespace: 'n', name: 'late' }));

    // A newer version is tried again, and stored once it can be.
    const fixed = podEvent('MODIFIED', 'n', 'poisoned', '41', { labels: { note: 'cured' } });
    a.push(fixed, 100);
    await within(a.flush(), 10_000, 'flush of the newer version');
    t.equal((await store.get({ cluster: 'a', group: '', resource: 'pods', namespace: 'n', name: 'poisoned' }))?.upstreamRv, '41', 'the newer version is stored');
    t.same(a.quarantined.map((q) => q.name), ['bad\u0000name'], 'and out of quarantine');
    await Promise.all([a.close(), b.close()]);
  });
}

t.test('committed events are let go: an idle queue holds none of them', async (t) => {
  const { store, close } = await openTestStore('sqlite');
  const committer = new Committer(store, opts, new SynchroMetrics(), log);
  t.teardown(async () => {
    await committer.close();
    await close();
  });
  const q = new Batcher(committer, 'a', opts, new SynchroMetrics(), log, { fence: await takeLease(store, clusterLease('a')) });
  // Fewer events than a queue keeps before it compacts on its own.
  // (Pushed from a function of its own: a local of this async test would keep the last one.)
  const pushed = (i: number): WeakRef<object> => {
    const e = podEvent('ADDED', 'n', `p${i}`, String(10 + i));
    q.push(e, 100);
    return new WeakRef(e.object);
  };
  const refs = Array.from({ length: 300 }, (_, i) => pushed(i));
  await q.flush();
  t.equal((await store.list({ group: '', resource: 'pods', clusters: ['a'] })).items.length, 300, 'all committed');
  t.equal(await stillReachable(refs), 0, 'no committed object is still referenced');
  await q.close();
});
