import { readFileSync } from 'node:fs';
import t from 'tap';
import { logger } from '../../lib/log.ts';
import { compactorLease, type Fence } from '../../storage/leases.ts';
import type { Store } from '../../storage/store.ts';
import { openTestStore, podEvent } from '../../storage/testing.ts';
import { defaultCompaction, startCompactor, type CompactorLease } from './compactor.ts';
import { waitUntil } from '../testutil.ts';

const log = logger('test');
const never = 3_600_000;

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

const counts = async (store: Store) => ((await store.conn.knex('object_counts').orderBy('namespace').select('namespace', 'n')) as Array<{ namespace: string; n: number | string }>).map((r) => `${r.namespace}=${Number(r.n)}`);

t.test('the compactor keeps the retention window and compacts the rest', async (t) => {
  const { store, close } = await openTestStore('sqlite');
  t.teardown(close);
  for (let i = 0; i < 10; i++) await store.applyBatch('c', [podEvent('ADDED', 'n', `p${i}`, String(i + 1))]);
  const compactor = startCompactor(store, { minAgeMs: 0, minCount: 3, intervalMs: 20, countRepairIntervalMs: never }, log, await lease(store));
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
  const compactor = startCompactor(store, { minAgeMs: 3_600_000, minCount: 0, intervalMs: 10, countRepairIntervalMs: never }, log, await lease(store));
  await new Promise((r) => setTimeout(r, 100));
  await compactor.stop();
  t.equal((await store.meta()).compactedRv, 0);
});

t.test('object counts are repaired at the start of each compactor term, then on a schedule', async (t) => {
  const { store, close } = await openTestStore('sqlite');
  t.teardown(close);
  await store.applyBatch('c', [podEvent('ADDED', 'a', 'x', '1'), podEvent('ADDED', 'b', 'y', '2')]);
  const k = store.conn.knex;
  await k('object_counts').update({ n: -2 });
  const l = await lease(store);
  // Compaction and the scheduled repair far away: only a new term repairs.
  const compactor = startCompactor(store, { minAgeMs: never, minCount: 0, intervalMs: never, countRepairIntervalMs: never }, log, l);
  t.teardown(() => compactor.stop());
  await waitUntil('counts repaired at the start of the term', async () => (await counts(store)).join() === 'a=1,b=1', 5000);
  t.pass('repaired when the term starts');

  await k('object_counts').update({ n: 5 });
  l.current = (await lease(store)).current; // the lease taken again: a new term (a higher epoch)
  await waitUntil('counts repaired at the start of the next term', async () => (await counts(store)).join() === 'a=1,b=1', 5000);
  t.pass('repaired when the next term starts');
  await compactor.stop();

  const scheduled = startCompactor(store, { minAgeMs: never, minCount: 0, intervalMs: never, countRepairIntervalMs: 50 }, log, l);
  t.teardown(() => scheduled.stop());
  await waitUntil('first repair of the term', async () => (await counts(store)).join() === 'a=1,b=1', 5000);
  await k('object_counts').update({ n: 9 });
  await waitUntil('counts repaired on the schedule', async () => (await counts(store)).join() === 'a=1,b=1', 5000);
  t.pass('repaired on the schedule, within the same term');
});

t.test('a compactor whose lease moved on writes nothing and gives the lease up', async (t) => {
  const { store, close } = await openTestStore('sqlite');
  t.teardown(close);
  for (let i = 0; i < 5; i++) await store.applyBatch('c', [podEvent('ADDED', 'n', `p${i}`, String(i + 1))]);
  await store.conn.knex('object_counts').update({ n: -1 });
  const stale = await lease(store, 'old');
  // 'old' paused past its TTL; 'new' took the lease over.
  await store.renewLeases('old', [{ name: compactorLease, epoch: stale.current!.epoch }], 1);
  await new Promise((r) => setTimeout(r, 20));
  await lease(store, 'new');
  const compactor = startCompactor(store, { minAgeMs: 0, minCount: 0, intervalMs: 20, countRepairIntervalMs: 20 }, log, stale);
  t.teardown(() => compactor.stop());
  await waitUntil('the compactor told its lease was fenced', () => stale.fenced.length > 0, 5000);
  await compactor.stop();
  t.equal(stale.fenced[0].holder, 'old');
  t.equal((await store.meta()).compactedRv, 0, 'nothing compacted');
  t.same(await counts(store), ['n=-1'], 'nothing recounted');
});

t.test('docs/storage.md says how long counts can be off: the recount interval', async (t) => {
  const storage = readFileSync(new URL('../../docs/storage.md', import.meta.url), 'utf8');
  const said = /recounts them when it takes its lease and every (\d+) minutes after/.exec(storage.replace(/\s+/g, ' '));
  t.ok(said, 'docs/storage.md names the interval');
  t.equal(Number(said?.[1]) * 60_000, defaultCompaction.countRepairIntervalMs, 'the one the compactor uses');
});
