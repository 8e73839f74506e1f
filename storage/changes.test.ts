import t from 'tap';
import { compactorLease } from './leases.ts';
import { backends, openTestStore, podEvent, stopTestPostgres, takeLease } from './testing.ts';

t.teardown(stopTestPostgres);

for (const backend of backends) {
  t.test(backend, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    for (let i = 0; i < 10; i++) await store.applyBatch('c', [podEvent('ADDED', 'n', `p${i}`, String(i + 1))]);

    t.test('changesAfter reads in rv order, in batches', async (t) => {
      t.same((await store.changesAfter(1, 3)).map((c) => c.rv), [2, 3, 4]);
      t.same((await store.changesAfter(4, 100)).map((c) => c.rv), [5, 6, 7, 8, 9, 10, 11]);
      t.same(await store.changesAfter(11, 100), []);
      t.same(await store.changesAfter(50, 100), [], 'nothing after a future rv (the apiserver decides what that means)');
      const [c] = await store.changesAfter(2, 1);
      t.match(c, { rv: 3, type: 'ADDED', cluster: 'c', group: '', version: 'v1', resource: 'pods', namespace: 'n', name: 'p1', uid: 'uid-n-p1', prevObject: null });
      t.ok(c.ts > 0);
    });

    t.test('compaction keeps the retention window by count and by age', async (t) => {
      const fence = await takeLease(store, compactorLease);
      t.same(await store.compact({ minAgeMs: 60_000, minCount: 0 }, fence), { compactedRv: 0, deleted: 0 }, 'everything is younger than a minute');
      const r = await store.compact({ minAgeMs: 0, minCount: 4 }, fence);
      t.same(r, { compactedRv: 7, deleted: 6 }, 'keeps the 4 newest');
      t.same((await store.meta()).compactedRv, 7);
      t.same((await store.changesAfter(7, 100)).map((c) => c.rv), [8, 9, 10, 11], 'reads from the compacted rv itself still work');
      await t.rejects(store.changesAfter(6, 100), { code: 410, reason: 'Expired', message: 'too old resource version: 6 (7)' });
      await t.rejects(store.changesAfter(1, 100), { code: 410 });
      t.same(await store.compact({ minAgeMs: 0, minCount: 4 }, fence), { compactedRv: 7, deleted: 0 }, 'compaction is idempotent');
      const all = await store.compact({ minAgeMs: 0, minCount: 0 }, fence);
      t.equal(all.compactedRv, 11);
      t.same(await store.changesAfter(11, 10), [], 'nothing is missing after the watermark');
      await t.rejects(store.changesAfter(10, 10), { code: 410 }, 'an empty log below the watermark is Expired, not silence');
    });
  });
}

for (const backend of backends) {
  t.test(`${backend}: changesOfResources reads only the given resources, up to a watermark`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    const svc = (name: string, rv: string) => ({ type: 'ADDED' as const, group: '', version: 'v1', resource: 'services', object: { metadata: { name, namespace: 'n', uid: `uid-${name}`, resourceVersion: rv } } });
    const slice = (name: string, rv: string) => ({ type: 'ADDED' as const, group: 'discovery.k8s.io', version: 'v1', resource: 'endpointslices', object: { metadata: { name, namespace: 'n', uid: `uid-s-${name}`, resourceVersion: rv } } });
    const b = await store.watermark();
    await store.applyBatch('c', [podEvent('ADDED', 'n', 'p0', '1'), svc('a', '2'), podEvent('ADDED', 'n', 'p1', '3'), slice('a-1', '4'), podEvent('ADDED', 'n', 'p2', '5'), svc('b', '6')]);
    const followed = [{ group: '', resource: 'services' }, { group: 'discovery.k8s.io', resource: 'endpointslices' }];
    // Their rvs relative to the log before the batch.
    const names = (cs: Awaited<ReturnType<typeof store.changesOfResources>>) => cs.map((c) => `${c.rv - b} ${c.resource} ${c.name}`);
    const w = await store.watermark();
    t.equal(w, b + 6);
    t.same(names(await store.changesOfResources(b, w, followed, 100)), ['2 services a', '4 endpointslices a-1', '6 services b'], 'no pod');
    t.same(names(await store.changesOfResources(b, w, followed, 2)), ['2 services a', '4 endpointslices a-1'], 'at most limit, in rv order');
    t.same(names(await store.changesOfResources(b + 2, b + 5, followed, 100)), ['4 endpointslices a-1'], 'within (rv, upTo]');
    t.same(names(await store.changesOfResources(b, w, [{ group: '', resource: 'services' }], 100)), ['2 services a', '6 services b']);
    t.same(await store.changesOfResources(b, w, [], 100), []);
    t.same(await store.changesOfResources(w, w, followed, 100), []);
    const fence = await takeLease(store, compactorLease);
    await store.compact({ minAgeMs: 0, minCount: 2 }, fence);
    await t.rejects(store.changesOfResources(b + 1, w, followed, 100), { code: 410 }, 'compacted past the reader: Expired, never a silent skip');
    t.same(names(await store.changesOfResources(b + 4, w, followed, 100)), ['6 services b']);
  });
}
