// rvs become visible in commit order: a reader polling the change log by rv never skips a
// row that commits late, also with several writer connections committing concurrently.
import t, { type Test } from 'tap';
import { Store } from './store.ts';
import { wallNow } from '../lib/trace.ts';
import { clusterLease } from './leases.ts';
import { backends, emptyStorageUrl, heldOpen, podEvent, stopTestPostgres, takeLease } from './testing.ts';
import type { UpstreamEvent } from './types.ts';

t.teardown(stopTestPostgres);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls changesAfter(last) until `until` resolves and the log is drained; returns every rv seen, in order. */
async function poll(store: Store, until: Promise<unknown>): Promise<number[]> {
  const seen: number[] = [];
  let last = 1;
  let done = false;
  void until.finally(() => (done = true));
  const deadline = Date.now() + 60_000;
  for (;;) {
    const changes = await store.changesAfter(last, 50);
    for (const c of changes) seen.push(c.rv);
    if (changes.length > 0) last = changes[changes.length - 1].rv;
    if (changes.length === 0) {
      if (done && last === (await store.watermark())) return seen;
      if (Date.now() > deadline) throw new Error('poller did not drain in time');
      await sleep(1);
    }
  }
}

/** Two writer Stores and a reader on one new PostgreSQL database: three connections, as three processes. */
async function twoWritersAndAReader(t: Test): Promise<{ writerA: Store; writerB: Store; reader: Store }> {
  const { url } = await emptyStorageUrl('postgres');
  const [writerA, writerB, reader] = await Promise.all([Store.open(url), Store.open(url), Store.open(url)]);
  t.teardown(async () => {
    await Promise.all([writerA.close(), writerB.close(), reader.close()]);
  });
  return { writerA, writerB, reader };
}

t.test('postgres: a batch that commits late is never skipped by a poller', async (t) => {
  // A writes first and holds its transaction open; B writes while A is open; a reader polls
  // the whole time. With rvs from a plain sequence, B's rvs would become visible before A's
  // and the reader, having moved past them, would never see A's.
  const { writerA, writerB, reader } = await twoWritersAndAReader(t);
  const { release: releaseA, done: aDone } = await heldOpen((opts) => writerA.applyBatch('a', [podEvent('ADDED', 'n', 'a1', '1'), podEvent('ADDED', 'n', 'a2', '2')], opts));
  const bDone = writerB.applyBatch('b', [podEvent('ADDED', 'n', 'b1', '1')]);
  const seenWhileOpen = await Promise.race([reader.changesAfter(1, 100), sleep(300).then(() => 'timeout')]);
  t.same(seenWhileOpen, [], 'nothing is visible while the first writer holds its rvs');
  await sleep(200);
  releaseA();
  await Promise.all([aDone, bDone]);
  const all = await reader.changesAfter(1, 100);
  t.same(all.map((c) => [c.rv, c.name]), [[2, 'a1'], [3, 'a2'], [4, 'b1']], 'rvs follow commit order');
});

t.test('postgres: parallel writers overlap, and each commits after every writer that allocated before it', async (t) => {
  // A and B hold leases of different clusters: A allocates first and holds its transaction
  // open before commit; B writes all its rows meanwhile (nothing serializes them), and its
  // commit waits for A's. Nothing of either is visible until A commits.
  const { writerA, writerB, reader } = await twoWritersAndAReader(t);
  const fenceA = await takeLease(writerA, clusterLease('a'));
  const fenceB = await takeLease(writerB, clusterLease('b'));
  const { release: releaseA, done: aDone } = await heldOpen((opts) =>
    writerA.applyBatches([{ cluster: 'a', events: [podEvent('ADDED', 'n', 'a1', '1'), podEvent('ADDED', 'n', 'a2', '2')], fence: fenceA }], opts),
  );
  let bWritten = false;
  let bWrittenAt = 0;
  const bDone = writerB.applyBatches([{ cluster: 'b', events: [podEvent('ADDED', 'n', 'b1', '1')], fence: fenceB }], {
    beforeCommit: async () => void ((bWritten = true), (bWrittenAt = wallNow())),
  });
  for (let i = 0; i < 200 && !bWritten; i++) await sleep(10);
  t.ok(bWritten, "B wrote its rows while A's transaction was open");
  const seenWhileOpen = await Promise.race([reader.changesAfter(1, 100), sleep(300).then(() => 'timeout')]);
  t.same(seenWhileOpen, [], 'nothing is visible while the first writer is open');
  t.equal(await reader.watermark(), 1, 'and the watermark has not moved');
  const released = wallNow();
  releaseA();
  const [[a], [b]] = (await Promise.all([aDone, bDone])) as Array<Array<{ changes: Array<{ rv: number }>; heldMs: number }>>;
  const all = await reader.changesAfter(1, 100);
  t.same(all.map((c) => [c.rv, c.name]), [[2, 'a1'], [3, 'a2'], [4, 'b1']], 'rvs in allocation order, committed in that order');
  // B waited for A from before the 300 ms above to A's release; its serialized section, as
  // the database measured it, is its allocation and what followed that wait, not the wait.
  t.ok(a.heldMs >= 0 && b.heldMs >= 0 && b.heldMs < released - bWrittenAt, `the serialized section of B (${b.heldMs.toFixed(1)} ms) leaves out its wait for A (${(released - bWrittenAt).toFixed(0)} ms at least)`);
});

for (const backend of backends) {
  t.test(`${backend}: concurrent writers, some aborting, one poller sees every rv exactly once, in order`, async (t) => {
    const { url, cleanup } = await emptyStorageUrl(backend);
    t.teardown(cleanup);
    // PostgreSQL: 4 writer connections in this process, each under its cluster's lease, so
    // they write in parallel (storage/ordered-commits.ts). SQLite: one connection per process
    // (better-sqlite3 is synchronous), so the writers share a Store and SQLite's write lock
    // orders them; the test still proves the poller's view.
    const writers = backend === 'postgres' ? await Promise.all([1, 2, 3, 4].map(() => Store.open(url))) : [await Store.open(url)];
    const reader = backend === 'postgres' ? await Store.open(url) : writers[0];
    t.teardown(async () => {
      await Promise.all(writers.map((w) => w.close()));
      if (reader !== writers[0]) await reader.close();
    });
    const fences = await Promise.all([0, 1, 2, 3].map((w) => takeLease(writers[w % writers.length], clusterLease(`cluster-${w}`))));
    const batches = 30;
    let seed = 42;
    const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    let aborted = 0;
    let written = 0;
    const write = async (w: number) => {
      const store = writers[w % writers.length];
      for (let b = 0; b < batches; b++) {
        const size = 1 + Math.floor(rand() * 20);
        const events: UpstreamEvent[] = [];
        for (let i = 0; i < size; i++) events.push(podEvent('ADDED', `ns-${w}`, `p-${b}-${i}`, String(b * 100 + i)));
        // Some transactions abort after their rows are written (their rvs allocated), some hold on a little.
        const abort = rand() < 0.15;
        try {
          await store.applyBatches([{ cluster: `cluster-${w}`, events, fence: fences[w] }], {
            beforeCommit: async () => {
              if (rand() < 0.3) await sleep(rand() * 5);
              if (abort) throw new Error('abort');
            },
          });
          written += size;
        } catch (err) {
          if ((err as Error).message !== 'abort') throw err;
          aborted++;
        }
      }
    };
    const writing = Promise.all([0, 1, 2, 3].map(write));
    const seen = await poll(reader, writing);
    await writing;
    const watermark = await reader.watermark();
    t.ok(aborted > 5 && written > 100, `wrote ${written} changes, ${aborted} batches aborted`);
    const expected = Array.from({ length: watermark - 1 }, (_, i) => i + 2);
    t.same(seen, expected, 'every rv exactly once, in order: no hole, none twice');
    const changes = await reader.changesAfter(1, 100_000);
    t.equal(changes.filter((c) => c.resource === 'pods').length, written, 'every committed change, and none of an aborted batch');
    t.equal((await reader.list({ group: '', resource: 'pods' })).items.length, written, 'the objects: every committed one');
  });
}
