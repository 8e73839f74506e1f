// Reads that must see an rv (a standby's snapshot is checked where it is read): list, get and
// aggregate refuse a snapshot below minRv with RvTooLargeError, on both backends; the pool
// over a primary alone reads it; a read not older than N waits for N, then gives up.
import t from 'tap';
import { RvTooLargeError } from './errors.ts';
import { ReadPool, type FreshReader } from './read-pool.ts';
import type { ListResult } from './types.ts';
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

    const pods: FreshReader<ListResult> = (s, minRv) => s.list({ group: '', resource: 'pods', ...(minRv === undefined ? {} : { minRv }) });
    const start = performance.now();
    await t.rejects(pool.read({ kind: 'not-older-than', rv: watermark + 1 }, pods, 300), RvTooLargeError, 'a read not older than a future rv gives up at the end of the wait');
    t.ok(performance.now() - start >= 290, 'after waiting');
    t.equal((await pool.read({ kind: 'most-recent', since: performance.now() }, pods)).value.items.length, 1, 'most recent: the primary as it is');
    t.equal((await pool.read({ kind: 'any' }, pods)).value.items.length, 1, 'any: too');
    const later = pool.read({ kind: 'not-older-than', rv: watermark + 1 }, pods, 5000).then((r) => r.value);
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
