// Group commit of the `clusters` table's statuses, on both backends: the status writes of many
// clusters queued while a round commits go together in one transaction (one statement on
// PostgreSQL), each with its own answer (an unregistered cluster: false); hostile text is
// stored as given; a stale fence fails alone and the rest are written.
import t from 'tap';
import { logger } from '../../lib/log.ts';
import { clusterLease, FencedError, type Fence } from '../../storage/leases.ts';
import type { Store } from '../../storage/store.ts';
import { backends, openTestStore } from '../../storage/testing.ts';
import { ClusterStatusCommitter } from './cluster-status-committer.ts';
import '../testutil.ts';

async function fenceFor(store: Store, name: string, holder = 's1'): Promise<Fence> {
  const lease = clusterLease(name);
  return { lease, holder, epoch: (await store.acquireLease(lease, holder, 60_000, ['s1']))! };
}

/** Counts Store.setClusterStatuses calls (transactions) and the writes in each. */
function countRounds(store: Store): number[] {
  const rounds: number[] = [];
  const write = store.setClusterStatuses.bind(store);
  store.setClusterStatuses = (writes) => {
    rounds.push(writes.length);
    return write(writes);
  };
  return rounds;
}

const hostile = { phase: 'Ready', message: `nul\u0000 astral \u{1F600} lone \ud800 ${'x'.repeat(70_000)}`, nested: JSON.parse(`${'{"a":'.repeat(60)}1${'}'.repeat(60)}`) as unknown };

for (const backend of backends) {
  t.test(`${backend}: status writes queued together go in one transaction; each gets its own answer`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    const names = Array.from({ length: 30 }, (_, i) => `c${String(i).padStart(2, '0')}`);
    const fences = new Map<string, Fence>();
    for (const n of [...names, 'unregistered']) fences.set(n, await fenceFor(store, n));
    for (const n of names) await store.upsertCluster(n, { server: `https://${n}` }, fences.get(n)!);
    const rounds = countRounds(store);
    const committer = new ClusterStatusCommitter(store, logger('test'), { maxPerRound: 20 });
    const statuses = new Map(names.map((n, i) => [n, i === 7 ? hostile : { phase: 'Ready', n: i }]));
    const answers = await Promise.all([...names, 'unregistered'].map((n) => committer.write(n, statuses.get(n) ?? { phase: 'Ready' }, fences.get(n)!)));
    // The first write starts a round at once; the 30 queued meanwhile go 20 and 10.
    t.same(rounds, [1, 20, 10], `31 writes queued at once: ${rounds.length} transactions, none above the limit`);
    t.same(answers, [...names.map(() => true), false], 'registered: true; unregistered: false');
    for (const n of names) t.same((await store.getCluster(n))?.status, statuses.get(n), `${n} as written`);
    t.notOk(await store.getCluster('unregistered'), 'no row made for an unregistered cluster');
    await committer.close();
    t.equal(await committer.write('c00', { phase: 'Gone' }, fences.get('c00')!), true, 'after close, a write goes to storage on its own');
    t.same((await store.getCluster('c00'))?.status, { phase: 'Gone' });
  });

  t.test(`${backend}: a stale fence fails alone; the round's other status writes are written`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    const fences = new Map<string, Fence>();
    for (const n of ['east', 'west', 'south']) {
      fences.set(n, await fenceFor(store, n));
      await store.upsertCluster(n, { server: `https://${n}` }, fences.get(n)!);
    }
    const west = fences.get('west')!;
    await store.releaseLease(west.lease, west.holder, west.epoch);
    await fenceFor(store, 'west', 's2');
    const rounds = countRounds(store);
    const committer = new ClusterStatusCommitter(store, logger('test'));
    const outcomes = await Promise.allSettled(['east', 'west', 'south'].map((n) => committer.write(n, { phase: 'Ready' }, fences.get(n)!)));
    t.same(outcomes.map((o) => o.status), ['fulfilled', 'rejected', 'fulfilled']);
    t.ok((outcomes[1] as PromiseRejectedResult).reason instanceof FencedError, 'west: FencedError');
    t.same((await store.getCluster('east'))?.status, { phase: 'Ready' });
    t.same((await store.getCluster('south'))?.status, { phase: 'Ready' });
    t.same((await store.getCluster('west'))?.status, {}, 'nothing of the stale fence');
    // east alone (the first write starts a round at once); west and south together; south without west.
    t.same(rounds, [1, 2, 1], 'retried without the stale fence');
    await committer.close();
  });
}
