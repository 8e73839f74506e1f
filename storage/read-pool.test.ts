// Reads that must see an rv (a standby's snapshot is checked where it is read): list, get and
// aggregate refuse a snapshot below minRv with RvTooLargeError, on both backends; the pool
// over a primary alone reads it; untilFresh retries until the deadline, then gives up.
import t from 'tap';
import { RvTooLargeError } from './errors.ts';
import { ReadPool } from './read-pool.ts';
import { backends, openTestStore, podEvent, stopTestPostgres } from './testing.ts';

t.teardown(stopTestPostgres);

for (const backend of backends) {
  t.test(`${backend}: minRv`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    const { watermark } = await store.applyBatch('a', [podEvent('ADDED', 'ns', 'p', '1')]);
    const key = { cluster: 'a', group: '', resource: 'pods', namespace: 'ns', name: 'p' };
    t.equal((await store.list({ group: '', resource: 'pods', minRv: watermark })).items.length, 1, 'list at the watermark');
    t.equal((await store.get(key, watermark))?.name, 'p', 'get at the watermark');
    t.equal((await store.aggregate({ select: { group: '', resource: 'pods' }, fn: 'count', minRv: watermark })).rows[0].value, 1, 'aggregate at the watermark');
    await t.rejects(store.list({ group: '', resource: 'pods', minRv: watermark + 1 }), new RvTooLargeError(watermark + 1, watermark), 'list above it');
    await t.rejects(store.get(key, watermark + 1), RvTooLargeError, 'get above it');
    await t.rejects(store.aggregate({ select: { group: '', resource: 'pods' }, fn: 'count', minRv: watermark + 1 }), RvTooLargeError, 'aggregate above it');
    t.same(await store.replicationStatus(), { rv: watermark, recovery: false }, 'a primary, not in recovery');

    const pool = ReadPool.primaryOnly(store);
    t.equal(pool.hasStandbys, false);
    t.equal(pool.pick().store, store, 'a pool without standbys reads the primary');
    t.equal(pool.pick().authoritative, true);

    const start = Date.now();
    await t.rejects(ReadPool.untilFresh(() => store.list({ group: '', resource: 'pods', minRv: watermark + 1 }), Date.now() + 300), RvTooLargeError, 'untilFresh gives up at the deadline');
    t.ok(Date.now() - start >= 290, 'after waiting');
    const later = ReadPool.untilFresh(() => store.list({ group: '', resource: 'pods', minRv: watermark + 1 }), Date.now() + 5000);
    await new Promise((r) => setTimeout(r, 100));
    await store.applyBatch('a', [podEvent('ADDED', 'ns', 'q', '2')]);
    t.equal((await later).items.length, 2, 'and reads once the rv is there');
  });
}

t.test('--storage-read needs PostgreSQL', async (t) => {
  const { store, close } = await openTestStore('sqlite');
  t.teardown(close);
  await t.rejects(ReadPool.open(store, ['postgres://127.0.0.1:1/x']), /needs PostgreSQL storage/);
});
