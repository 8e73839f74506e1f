// Group commit of Cluster objects, on both backends: the writes of many clusters queued while a
// round commits go together in one transaction (one rv lock), each gets its own rv and its own
// result; a stale fence, or a write storage refuses, fails alone and the rest are written; an
// outage fails the round's writes, and writes after it succeed.
import t from 'tap';
import { logger } from '../../lib/log.ts';
import type { ClusterObjectState, ClusterObjectWrite } from '../../storage/cluster-objects.ts';
import { clusterLease, FencedError, type Fence } from '../../storage/leases.ts';
import type { Store } from '../../storage/store.ts';
import { backends, openTestStore } from '../../storage/testing.ts';
import { ClusterObjectCommitter } from './cluster-object-committer.ts';
import '../testutil.ts';

const put =
  (name: string, status: Record<string, unknown>) =>
  (cur: ClusterObjectState | undefined): ClusterObjectWrite => ({
    action: 'put',
    object: { apiVersion: 'panoptes.io/v1alpha1', kind: 'Cluster', metadata: { name, uid: cur?.uid ?? `uid-${name}` }, spec: {}, status },
  });

async function fenceFor(store: Store, name: string, holder = 's1'): Promise<Fence> {
  const lease = clusterLease(name);
  return { lease, holder, epoch: (await store.acquireLease(lease, holder, 60_000, ['s1']))! };
}

/** Counts Store.writeClusterObjects calls (transactions) and the writes in each. */
function countRounds(store: Store): number[] {
  const rounds: number[] = [];
  const write = store.writeClusterObjects.bind(store);
  store.writeClusterObjects = (writes) => {
    rounds.push(writes.length);
    return write(writes);
  };
  return rounds;
}

for (const backend of backends) {
  t.test(`${backend}: writes queued together go in one transaction, each with its own rv and result`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    const names = Array.from({ length: 40 }, (_, i) => `c${String(i).padStart(2, '0')}`);
    const fences = new Map<string, Fence>();
    for (const n of names) fences.set(n, await fenceFor(store, n));
    const rounds = countRounds(store);
    const committer = new ClusterObjectCommitter(store, logger('test'), { maxPerRound: 25 });
    const before = await store.watermark();
    const results = await Promise.all(names.map((n) => committer.write(n, put(n, { phase: 'Ready' }), fences.get(n)!)));
    // The first write starts a round at once; the 39 queued meanwhile go 25 and 14.
    t.same(rounds, [1, 25, 14], `40 writes queued at once: ${rounds.length} transactions, none above the limit`);
    t.equal(rounds.reduce((a, b) => a + b, 0), 40);
    const rvs = results.map((r) => r.change!.rv);
    t.same(rvs, Array.from({ length: 40 }, (_, i) => before + 1 + i), 'consecutive rvs in the order queued');
    t.ok(results.every((r) => r.change!.type === 'ADDED'));
    const changes = (await store.changesAfter(before, 100)).map((c) => [c.rv, c.name, c.type]);
    t.same(changes, names.map((n, i) => [before + 1 + i, n, 'ADDED']), 'the change log has each, in rv order, no gap');
    t.equal(await store.watermark(), before + 40);
    for (const n of names) t.match((await store.getClusterObject(n))?.object, { metadata: { name: n }, status: { phase: 'Ready' } });

    // Two writes of one cluster queued together: written in order, in two rounds.
    const [a, b] = await Promise.all([committer.write('c00', put('c00', { phase: 'A' }), fences.get('c00')!), committer.write('c00', put('c00', { phase: 'B' }), fences.get('c00')!)]);
    t.ok(a.change!.rv < b.change!.rv);
    t.match((await store.getClusterObject('c00'))?.object, { status: { phase: 'B' } }, 'the later write is the one that stays');
    await committer.close();
  });

  t.test(`${backend}: a stale fence or a refused write fails alone; the round's other writes are written`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    const east = await fenceFor(store, 'east');
    const west = await fenceFor(store, 'west');
    const north = await fenceFor(store, 'north');
    const south = await fenceFor(store, 'south');
    // west's lease moves on to another holder.
    await store.releaseLease(west.lease, west.holder, west.epoch);
    await fenceFor(store, 'west', 's2');
    const rounds = countRounds(store);
    const committer = new ClusterObjectCommitter(store, logger('test'));
    const refused = (): ClusterObjectWrite => {
      throw new Error('refused by decide');
    };
    const outcomes = await Promise.allSettled([
      committer.write('east', put('east', { phase: 'Ready' }), east),
      committer.write('west', put('west', { phase: 'Ready' }), west),
      committer.write('north', refused, north),
      committer.write('south', put('south', { phase: 'Ready' }), south),
    ]);
    t.equal(outcomes[0].status, 'fulfilled', 'east written');
    t.equal(outcomes[1].status, 'rejected');
    t.ok((outcomes[1] as PromiseRejectedResult).reason instanceof FencedError, 'west: FencedError');
    t.equal(outcomes[2].status, 'rejected');
    t.match(((outcomes[2] as PromiseRejectedResult).reason as Error).message, /refused by decide/, 'north: its own error');
    t.equal(outcomes[3].status, 'fulfilled', 'south written');
    t.ok(await store.getClusterObject('east'));
    t.ok(await store.getClusterObject('south'));
    t.notOk(await store.getClusterObject('west'), 'nothing of the stale fence');
    t.notOk(await store.getClusterObject('north'));
    // east alone (the first write starts a round at once); then west, north and south together;
    // without west (fenced); then north and south one by one (north refused).
    t.same(rounds, [1, 3, 2, 1, 1], 'retried without the stale fence, then one by one');
    await committer.close();
  });

  t.test(`${backend}: an outage fails the writes of its round; the next writes are written`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    const east = await fenceFor(store, 'east');
    const west = await fenceFor(store, 'west');
    const committer = new ClusterObjectCommitter(store, logger('test'));
    const write = store.writeClusterObjects.bind(store);
    let down = true;
    store.writeClusterObjects = (writes) => (down ? Promise.reject(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })) : write(writes));
    const failed = await Promise.allSettled([committer.write('east', put('east', {}), east), committer.write('west', put('west', {}), west)]);
    t.same(
      failed.map((o) => o.status),
      ['rejected', 'rejected'],
    );
    down = false;
    t.ok((await committer.write('east', put('east', { phase: 'Ready' }), east)).change, 'written once storage answers');
    await committer.close();
    t.ok((await committer.write('west', put('west', { phase: 'Ready' }), west)).change, 'after close, a write goes to storage on its own');
  });
}
