// The group committer: clusters' queues written together, fenced clusters dropped from a
// round without losing the others, one part per cluster, order per cluster kept.
import t, { type Test } from 'tap';
import { logger } from '../lib/log.ts';
import { clusterLease, type Fence } from '../storage/leases.ts';
import type { Store } from '../storage/store.ts';
import { openTestStore, podEvent, takeLease } from '../storage/testing.ts';
import type { BatchPart } from '../storage/write.ts';
import { Batcher, defaultBatcherOptions } from './batcher.ts';
import { Committer } from './committer.ts';
import { SynchroMetrics } from './metrics.ts';

const opts = defaultBatcherOptions('sqlite');
const log = logger('test');

async function setup(t: Test): Promise<{ store: Store; committer: Committer; metrics: SynchroMetrics; rounds: BatchPart[][] }> {
  const { store, close } = await openTestStore('sqlite');
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
