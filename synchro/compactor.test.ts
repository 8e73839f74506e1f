import t from 'tap';
import { logger } from '../lib/log.ts';
import { compactorLease, type Fence } from '../storage/leases.ts';
import type { Store } from '../storage/store.ts';
import { openTestStore, podEvent } from '../storage/testing.ts';
import { startCompactor, type CompactorLease } from './compactor.ts';
import { waitUntil } from './testutil.ts';

const log = logger('test');

/** The compactor lease, taken by `holder`, as the lease keeper hands it to the compactor. */
async function lease(store: Store, holder = 'me'): Promise<CompactorLease & { current: Fence | undefined; fenced: Fence[] }> {
  const fence: Fence = { lease: compactorLease, holder, epoch: (await store.acquireLease(compactorLease, holder, 60_000))! };
  const l = {
    current: fence as Fence | undefined,
    fenced: [] as Fence[],
    fence: () => l.current,
    onFenced: (f: Fence) => {
      l.fenced.push(f);
      l.current = undefined;
    },
  };
  return l;
}


t.test('the compactor keeps the retention window and compacts the rest', async (t) => {
  const { store, close } = await openTestStore('sqlite');
  t.teardown(close);
  for (let i = 0; i < 10; i++) await store.applyBatch('c', [podEvent('ADDED', 'n', `p${i}`, String(i + 1))]);
  const compactor = startCompactor(store, { minAgeMs: 0, minCount: 3, intervalMs: 20 }, log, await lease(store));
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
  const compactor = startCompactor(store, { minAgeMs: 3_600_000, minCount: 0, intervalMs: 10 }, log, await lease(store));
  await new Promise((r) => setTimeout(r, 100));
  await compactor.stop();
  t.equal((await store.meta()).compactedRv, 0);
});

t.test('a compactor whose lease moved on writes nothing and gives the lease up', async (t) => {
  const { store, close } = await openTestStore('sqlite');
  t.teardown(close);
  for (let i = 0; i < 5; i++) await store.applyBatch('c', [podEvent('ADDED', 'n', `p${i}`, String(i + 1))]);
  const stale = await lease(store, 'old');
  // 'old' paused past its TTL; 'new' took the lease over.
  await store.renewLeases('old', [{ name: compactorLease, epoch: stale.current!.epoch }], 1);
  await new Promise((r) => setTimeout(r, 20));
  await lease(store, 'new');
  const compactor = startCompactor(store, { minAgeMs: 0, minCount: 0, intervalMs: 20 }, log, stale);
  t.teardown(() => compactor.stop());
  await waitUntil('the compactor told its lease was fenced', () => stale.fenced.length > 0, 5000);
  await compactor.stop();
  t.equal(stale.fenced[0].holder, 'old');
  t.equal((await store.meta()).compactedRv, 0, 'nothing compacted');
});
