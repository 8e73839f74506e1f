// object_counts repaired on both backends: counts that drifted (a writer of an earlier release
// that does not keep them, rows lost, negative counts) are recounted from the objects, under
// the compactor's lease and the rv lock, never negative; lists' remainingItemCount follows.
import t from 'tap';
import { compactorLease, type Fence } from './leases.ts';
import type { Store } from './store.ts';
import { backends, openTestStore, podEvent, seedClusterObject, stopTestPostgres } from './testing.ts';

t.teardown(stopTestPostgres);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** object_counts as `cluster/group/resource/namespace=n`, zeros left out. */
async function counted(store: Store): Promise<string[]> {
  const rows = (await store.conn.knex('object_counts').where('n', '<>', 0).select('cluster', 'grp', 'resource', 'namespace', 'n')) as Array<Record<string, unknown>>;
  return rows.map((r) => `${r.cluster}/${r.grp}/${r.resource}/${r.namespace}=${Number(r.n)}`).sort();
}

/** What object_counts must say: the objects, counted. */
async function actual(store: Store): Promise<string[]> {
  const rows = (await store.conn.knex('objects').groupBy('cluster', 'grp', 'resource', 'namespace').select('cluster', 'grp', 'resource', 'namespace').count({ n: '*' })) as Array<Record<string, unknown>>;
  return rows.map((r) => `${r.cluster}/${r.grp}/${r.resource}/${r.namespace}=${Number(r.n)}`).sort();
}

const pods = (cluster: string, ns: string, count: number) => Array.from({ length: count }, (_, i) => podEvent('ADDED', ns, `${cluster}-${i}`, String(i + 1)));

for (const backend of backends) {
  t.test(`${backend}: drifted counts are repaired`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    const k = store.conn.knex;
    await store.applyBatch('east', [...pods('east', 'a', 5), ...pods('east', 'b', 3)]);
    await store.applyBatch('west', pods('west', 'a', 4));
    await seedClusterObject(store, 'east', { phase: 'Ready' });
    const want = await actual(store);
    t.same(await counted(store), want, 'kept by every write');

    // A writer of an earlier release added objects without counting them; others were deleted
    // after, counted, and went negative; a row was lost; a count is simply wrong.
    await k('object_counts').where({ cluster: 'east', namespace: 'a' }).update({ n: -4 });
    await k('object_counts').where({ cluster: 'east', namespace: 'b' }).update({ n: 100 });
    await k('object_counts').where({ cluster: 'west' }).delete();
    await k('object_counts').insert({ cluster: 'gone', grp: '', resource: 'pods', namespace: 'x', n: 7 });
    const drifted = await store.list({ group: '', resource: 'pods', limit: 1 });
    t.not(drifted.remainingItemCount, 11, `remainingItemCount is wrong while the counts are (${drifted.remainingItemCount})`);
    t.notOk((await store.knownClusterNames()).includes('west'), 'a cluster whose counts are lost looks empty');

    const fence: Fence = { lease: compactorLease, holder: 'c', epoch: (await store.acquireLease(compactorLease, 'c', 60_000))! };
    const r = await store.repairCounts(fence);
    t.same(await counted(store), want, 'recounted from the objects');
    t.equal(r.repaired, 4, 'four counts were wrong');
    t.equal(Number((await k('object_counts').where('n', '<', 0).count({ n: '*' }).first())!.n), 0, 'none is negative');
    t.same(await store.repairCounts(fence), { checked: r.checked, repaired: 0 }, 'right counts: nothing to repair');

    t.equal((await store.list({ group: '', resource: 'pods', limit: 1 })).remainingItemCount, 11, 'remainingItemCount of every cluster');
    t.equal((await store.list({ group: '', resource: 'pods', limit: 2, clusters: ['east'] })).remainingItemCount, 6, 'of one cluster');
    t.equal((await store.list({ group: '', resource: 'pods', limit: 1, clusters: ['west'], namespaces: ['a'] })).remainingItemCount, 3, 'of one cluster and namespace');
    t.ok((await store.knownClusterNames()).includes('west'), 'every cluster with objects is known again');
    t.notOk((await store.knownClusterNames()).includes('gone'));
  });

  t.test(`${backend}: a count that drifted never goes below zero`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    const k = store.conn.knex;
    await store.applyBatch('east', [...pods('east', 'a', 3), ...pods('east', 'b', 3)]);
    // A writer of an earlier release wrote these objects without counting them.
    await k('object_counts').where({ namespace: 'a' }).delete();
    await k('object_counts').where({ namespace: 'b' }).update({ n: 1 });
    await store.applyBatch('east', [podEvent('DELETED', 'a', 'east-0', '10'), podEvent('DELETED', 'a', 'east-1', '11'), podEvent('DELETED', 'b', 'east-0', '12'), podEvent('DELETED', 'b', 'east-1', '13')]);
    t.same(await counted(store), [], 'decremented to zero, not below');
    t.equal(Number((await k('object_counts').where('n', '<', 0).count({ n: '*' }).first())!.n), 0, 'none is negative');
    t.equal((await store.list({ group: '', resource: 'pods', limit: 1 })).remainingItemCount, 0, 'remainingItemCount is never negative either');
    const fence: Fence = { lease: compactorLease, holder: 'c', epoch: (await store.acquireLease(compactorLease, 'c', 60_000))! };
    await store.repairCounts(fence);
    t.same(await counted(store), ['east//pods/a=1', 'east//pods/b=1'], 'and the repair makes them right');
  });

  t.test(`${backend}: a repair and a batch never interleave`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    await store.applyBatch('east', pods('east', 'a', 3));
    await store.conn.knex('object_counts').update({ n: 0 });
    const fence: Fence = { lease: compactorLease, holder: 'c', epoch: (await store.acquireLease(compactorLease, 'c', 60_000))! };
    // A batch holds the rv lock while the repair starts: the repair counts after it commits.
    let release!: () => void;
    let inside!: () => void;
    const entered = new Promise<void>((r) => (inside = r));
    const batch = store.applyBatch('east', [podEvent('ADDED', 'a', 'late', '9'), podEvent('DELETED', 'a', 'east-0', '10')], {
      beforeCommit: () => {
        inside();
        return new Promise<void>((r) => (release = r));
      },
    });
    await entered;
    let repaired = false;
    const repair = store.repairCounts(fence).then(() => (repaired = true));
    await sleep(200);
    t.notOk(repaired, 'the repair waits for the batch in flight');
    release();
    await batch;
    await repair;
    t.same(await counted(store), await actual(store), 'and counts what it committed');
    t.same(await counted(store), ['east//pods/a=3']);
  });
}
