// Compaction on both backends: compacted_rv never moves back, whatever two compactions do at
// once, and the retention age is measured on the database's clock, as the change rows' times
// are written.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import t from 'tap';
import { compactorLease, type Fence } from './leases.ts';
import { Store } from './store.ts';
import { backends, openTestStore, podEvent, stopTestPostgres } from './testing.ts';

t.teardown(stopTestPostgres);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function compactorFence(store: Store): Promise<Fence> {
  return { lease: compactorLease, holder: 'c', epoch: (await store.acquireLease(compactorLease, 'c', 60_000))! };
}

/** Waits until a statement of another session of this PostgreSQL database waits for a lock (at most 5 s). */
async function someoneWaitsForALock(store: Store): Promise<boolean> {
  const deadline = Date.now() + 5000;
  while (Date.now() < deadline) {
    const r = (await store.conn.knex.raw("SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")) as { rows: Array<{ n: string }> };
    if (Number(r.rows[0].n) > 0) return true;
    await sleep(20);
  }
  return false;
}

/**
 * Another compactor's transaction, open: it deleted the changes up to `rv` and set
 * compacted_rv to it, and commits when `commit` is called (PostgreSQL) or after half a second
 * (SQLite: another process, since this one waits for the file lock synchronously).
 */
async function otherCompaction(url: string, rv: number): Promise<{ commit(): Promise<void> }> {
  if (url.startsWith('sqlite:')) {
    const script = `
      const db = new (require('better-sqlite3'))(process.argv[1]);
      db.exec('BEGIN IMMEDIATE');
      db.prepare('DELETE FROM changes WHERE rv <= ?').run(${rv});
      db.prepare("UPDATE meta SET value = ? WHERE key = 'compacted_rv'").run(${rv});
      process.stdout.write('locked\\n');
      setTimeout(() => { db.exec('COMMIT'); db.close(); }, 500);`;
    const child = spawn(process.execPath, ['-e', script, url.slice('sqlite:'.length)], { stdio: ['ignore', 'pipe', 'inherit'] });
    await once(child.stdout, 'data');
    const exited = once(child, 'exit');
    return { commit: async () => void (await exited) };
  }
  const other = await Store.open(url);
  const trx = await other.conn.knex.transaction();
  await trx('changes').where('rv', '<=', rv).delete();
  await trx('meta').where({ key: 'compacted_rv' }).update({ value: rv });
  return {
    async commit() {
      await trx.commit();
      await other.close();
    },
  };
}

for (const backend of backends) {
  t.test(`${backend}: compacted_rv never moves back when two compactions overlap`, async (t) => {
    const { store, url, close } = await openTestStore(backend);
    t.teardown(close);
    for (let i = 0; i < 10; i++) await store.applyBatch('c', [podEvent('ADDED', 'n', `p${i}`, String(i + 1))]);
    t.equal(await store.watermark(), 11);
    const fence = await compactorFence(store);

    // Another compactor (a second process with this identity, or one that resumed while its
    // term looked valid) compacts up to rv 8 in a transaction still open while this one starts
    // from what it read before: its target is 5.
    const other = await otherCompaction(url, 8);
    const mine = store.compact({ minAgeMs: 0, minCount: 6 }, fence).then(
      (r) => r,
      (e: unknown) => e as Error,
    );
    if (backend === 'postgres') t.ok(await someoneWaitsForALock(store), 'this compaction waits for the other');
    await other.commit();
    const result = await mine;
    t.notOk(result instanceof Error, `this compaction completes (${result instanceof Error ? result.message : 'ok'})`);
    t.equal((await store.meta()).compactedRv, 8, 'compacted_rv stays at the higher of the two');
    await t.rejects(store.changesAfter(7, 100), { code: 410 }, 'below it: 410, never a silent gap');
    t.same((await store.changesAfter(8, 100)).map((c) => c.rv), [9, 10, 11], 'above it: every change');
  });

  t.test(`${backend}: the retention age is the database's clock`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    const fence = await compactorFence(store);
    const realNow = Date.now;
    const hour = 3_600_000;
    // The writing host's clock is an hour behind.
    Date.now = () => realNow() - hour;
    try {
      for (let i = 0; i < 5; i++) await store.applyBatch('c', [podEvent('ADDED', 'n', `p${i}`, String(i + 1))]);
    } finally {
      Date.now = realNow;
    }
    const changes = await store.changesAfter(1, 100);
    t.ok(changes.every((c) => Math.abs(c.ts - realNow()) < 60_000), 'each change is stamped with the database clock, not the writer host');
    t.same(await store.compact({ minAgeMs: 15 * 60_000, minCount: 0 }, fence), { compactedRv: 0, deleted: 0 }, 'changes younger than the retention age stay');

    // The compacting host's clock is an hour ahead.
    Date.now = () => realNow() + hour;
    let r;
    try {
      r = await store.compact({ minAgeMs: 15 * 60_000, minCount: 0 }, fence);
    } finally {
      Date.now = realNow;
    }
    t.same(r, { compactedRv: 0, deleted: 0 }, 'a compactor whose clock runs ahead keeps them too');
    t.same(await store.compact({ minAgeMs: 0, minCount: 0 }, fence), { compactedRv: 6, deleted: 5 }, 'older than an age of 0: compacted');
  });
}
