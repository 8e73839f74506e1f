import t from 'tap';
import { compactorLease } from './leases.ts';
import { backends, openTestStore, podEvent, stopTestPostgres, takeLease } from './testing.ts';

t.teardown(stopTestPostgres);

for (const backend of backends) {
  t.test(`${backend}: isVersionOf tells an object's own versions from other rvs`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    const a = await store.applyBatch('c', [podEvent('ADDED', 'n', 'a', '10')]);
    const b = await store.applyBatch('c', [podEvent('ADDED', 'n', 'b', '11')]);
    const a2 = await store.applyBatch('c', [podEvent('MODIFIED', 'n', 'a', '12')]);
    const key = { cluster: 'c', group: '', resource: 'pods', namespace: 'n', name: 'a' };
    const [rv1, rvB, rv2] = [a.changes[0].rv, b.changes[0].rv, a2.changes[0].rv];
    t.equal(await store.isVersionOf(key, rv1), true, 'its first version');
    t.equal(await store.isVersionOf(key, rv2), true, 'its current version');
    t.equal(await store.isVersionOf(key, rvB), false, "another object's version");
    t.equal(await store.isVersionOf({ ...key, cluster: 'd' }, rv1), false, 'the same name in another cluster');
    t.equal(await store.isVersionOf(key, rv2 + 100), false, 'an rv not reached');
    t.equal(await store.isVersionOf(key, 0), false);
    t.equal(await store.isVersionOf(key, Number.MAX_SAFE_INTEGER + 2), false, 'beyond what an rv can be: no query');
    await store.compact({ minAgeMs: 0, minCount: 1 }, await takeLease(store, compactorLease));
    t.equal(await store.isVersionOf(key, rv1), false, 'a compacted version is not known any more');
    t.equal(await store.isVersionOf(key, rv2), true);
  });
}
