import t from 'tap';
import { logger } from '../lib/log.ts';
import { openTestStore, podEvent } from '../storage/testing.ts';
import { startCompactor } from './compactor.ts';

t.test('the compactor keeps the retention window and compacts the rest', async (t) => {
  const { store, close } = await openTestStore('sqlite');
  t.teardown(close);
  for (let i = 0; i < 10; i++) await store.applyBatch('c', [podEvent('ADDED', 'n', `p${i}`, String(i + 1))]);
  const compactor = startCompactor(store, { minAgeMs: 0, minCount: 3, intervalMs: 20 }, logger('test'));
  const deadline = Date.now() + 5000;
  while ((await store.meta()).compactedRv === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  await compactor.stop();
  const meta = await store.meta();
  t.equal(meta.compactedRv, meta.rv - 3, 'the 3 newest changes are kept');
  t.same((await store.changesAfter(meta.compactedRv, 100)).length, 3);
  await t.rejects(store.changesAfter(meta.compactedRv - 1, 100), { code: 410 });
});

t.test('nothing younger than the retention age is compacted', async (t) => {
  const { store, close } = await openTestStore('sqlite');
  t.teardown(close);
  for (let i = 0; i < 5; i++) await store.applyBatch('c', [podEvent('ADDED', 'n', `p${i}`, String(i + 1))]);
  const compactor = startCompactor(store, { minAgeMs: 3_600_000, minCount: 0, intervalMs: 10 }, logger('test'));
  await new Promise((r) => setTimeout(r, 100));
  await compactor.stop();
  t.equal((await store.meta()).compactedRv, 0);
});
