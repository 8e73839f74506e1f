// SQLite's WAL checkpoints move to a worker once the log is large: the process's connection
// then never checkpoints in a commit (wal_autocheckpoint 0),
// the worker's PASSIVE checkpoints copy the whole log back, the writer restarts the log, and
// every write is there after the store is closed and opened again. A small database starts
// no thread.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { Store } from './store.ts';
import type { UpstreamEvent } from './types.ts';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function pods(from: number, n: number, pad = 2000): UpstreamEvent[] {
  return Array.from({ length: n }, (_, i) => ({
    group: '',
    version: 'v1',
    resource: 'pods',
    type: 'ADDED' as const,
    object: { apiVersion: 'v1', kind: 'Pod', metadata: { name: `p${from + i}`, namespace: 'ns', uid: `u${from + i}`, resourceVersion: String(from + i + 1) }, spec: { note: 'x'.repeat(pad) } },
  }));
}

async function until(what: string, fn: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await fn()) return;
    await sleep(20);
  }
  throw new Error(`timed out waiting for ${what}`);
}

const autocheckpoint = async (store: Store) => Number(((await store.conn.knex.raw('PRAGMA wal_autocheckpoint')) as Array<{ wal_autocheckpoint: number }>)[0].wal_autocheckpoint);

t.test('a small database: the connection checkpoints itself, no worker', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'panoptes-ckpt-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const store = await Store.open(`sqlite:${join(dir, 'db')}`, { sqliteCheckpoint: { checkEveryMs: 20 } });
  t.teardown(() => store.close());
  await store.applyBatch('east', pods(0, 20));
  await sleep(100);
  t.equal(store.conn.checkpointer?.active, false);
  t.equal(await autocheckpoint(store), 1000, "SQLite's default");
});

t.test('past startBytes a worker checkpoints; commits do not', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'panoptes-ckpt-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const url = `sqlite:${join(dir, 'db')}`;
  const store = await Store.open(url, { sqliteCheckpoint: { startBytes: 256 * 1024, checkEveryMs: 20, intervalMs: 50 } });
  let n = 0;
  for (; n < 2000 && !store.conn.checkpointer?.active; n += 50) {
    await store.applyBatch('east', pods(n, 50));
    await sleep(25);
  }
  const cp = store.conn.checkpointer!;
  t.ok(cp.active, `the worker started (after ${n} pods)`);
  await until('the connection no longer checkpoints', async () => (await autocheckpoint(store)) === 0);
  t.pass('wal_autocheckpoint 0 on the connection');

  // Writes go on; the worker copies the whole log back each time, and the log is reused from its start.
  const sizes: number[] = [];
  for (let round = 0; round < 10; round++) {
    await store.applyBatch('east', pods(n, 50));
    n += 50;
    const runs = cp.runs;
    await until('a checkpoint after the writes', () => cp.runs > runs + 1);
    sizes.push(statSync(join(dir, 'db-wal')).size);
  }
  t.ok(cp.lastResult && cp.lastResult.log === cp.lastResult.checkpointed && cp.lastResult.busy === 0, `the log checkpointed whole (${JSON.stringify(cp.lastResult)})`);
  t.ok(Math.max(...sizes) <= 4 * sizes[0] + 1024 * 1024, `the log does not grow with the writes (${sizes.join(', ')} bytes)`);

  await store.close();

  const again = await Store.open(url, { sqliteCheckpoint: false });
  t.teardown(() => again.close());
  const page = await again.list({ group: '', resource: 'pods', limit: 5000 });
  t.equal(page.items.length, n, 'every write is there after a reopen');
});

t.test('writes that never pause: the log is started again, not grown without end', async (t) => {
  const wal = async (restartBytes: number) => {
    const dir = mkdtempSync(join(tmpdir(), 'panoptes-ckpt-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const store = await Store.open(`sqlite:${join(dir, 'db')}`, { sqliteCheckpoint: { startBytes: 64 * 1024, checkEveryMs: 20, intervalMs: 50, restartBytes } });
    const until = Date.now() + 2500;
    for (let n = 0; Date.now() < until; n += 20) {
      await store.applyBatch('east', pods(n, 20));
      await store.applyBatch('east', pods(n, 20).map((e) => ({ ...e, type: 'DELETED' as const })));
      await new Promise((r) => setImmediate(r)); // timers run, as between a process's I/O
    }
    const restarts = store.conn.checkpointer!.restarts;
    const size = statSync(join(dir, 'db-wal')).size;
    await store.close();
    return { restarts, size };
  };
  const bounded = await wal(256 * 1024);
  const unbounded = await wal(Infinity);
  t.ok(bounded.restarts > 0, `started again ${bounded.restarts} times`);
  t.equal(unbounded.restarts, 0, 'never, without the RESTART step');
  // Without RESTART the log grows only while the writes leave SQLite no moment to reset it:
  // on a busy machine the writer is descheduled often enough that it resets on its own (and
  // stays small). How far the bounded log grows between two restarts depends on when the
  // machine schedules the checkpoint's thread (81 MB against 241 MB once, at a load of 4 on
  // 2 cores): it is shorter than the log without restarts, or short anyway (64 MiB).
  t.ok(bounded.size < Math.max(unbounded.size, 64 * 1024 * 1024), `the log stays shorter: ${bounded.size} bytes against ${unbounded.size} without`);
});
