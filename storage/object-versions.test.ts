import t from 'tap';
import { compactorLease } from './leases.ts';
import { backends, openTestStore, podEvent, stopTestPostgres, takeLease } from './testing.ts';

t.teardown(stopTestPostgres);

for (const backend of backends) {
  t.test(`${backend}: memberRvAt gives the member rv of each of an object's versions, and nothing for other rvs`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    const a = await store.applyBatch('c', [podEvent('ADDED', 'n', 'a', '10')]);
    const b = await store.applyBatch('c', [podEvent('ADDED', 'n', 'b', '11')]);
    const a2 = await store.applyBatch('c', [podEvent('MODIFIED', 'n', 'a', '12')]);
    const key = { cluster: 'c', group: '', resource: 'pods', namespace: 'n', name: 'a' };
    const [rv1, rvB, rv2] = [a.changes[0].rv, b.changes[0].rv, a2.changes[0].rv];
    t.equal(await store.memberRvAt(key, rv1), '10', 'its first version, at the member rv it had then');
    t.equal(await store.memberRvAt(key, rv2), '12', 'its current version');
    t.equal(await store.memberRvAt(key, rvB), undefined, "another object's version");
    t.equal(await store.memberRvAt({ ...key, cluster: 'd' }, rv1), undefined, 'the same name in another cluster');
    t.equal(await store.memberRvAt(key, rv2 + 100), undefined, 'an rv not reached');
    t.equal(await store.memberRvAt(key, 0), undefined);
    t.equal(await store.memberRvAt(key, Number.MAX_SAFE_INTEGER + 2), undefined, 'beyond what an rv can be: no query');
    const gone = await store.applyBatch('c', [podEvent('DELETED', 'n', 'a', '13')]);
    t.equal(await store.memberRvAt(key, gone.changes[0].rv), '13', 'its deletion is a version too');
    await store.compact({ minAgeMs: 0, minCount: 1 }, await takeLease(store, compactorLease));
    t.equal(await store.memberRvAt(key, rv1), undefined, 'a compacted version is not known any more');
    t.equal(await store.memberRvAt(key, gone.changes[0].rv), '13');
  });
}
