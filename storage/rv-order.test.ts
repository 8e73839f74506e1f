// rvs become visible in commit order: a reader polling the change log by rv never skips a
// row that commits late, also with several writer connections committing concurrently.
import t from 'tap';
import { Store } from './store.ts';
import { backends, emptyStorageUrl, podEvent, stopTestPostgres } from './testing.ts';
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

t.test('postgres: a batch that commits late is never skipped by a poller', async (t) => {
  // A writes first and holds its transaction open; B writes while A is open; a reader polls
  // the whole time. With rvs from a plain sequence, B's rvs would become visible before A's
  // and the reader, having moved past them, would never see A's.
  const { url } = await emptyStorageUrl('postgres');
  const writerA = await Store.open(url);
  const writerB = await Store.open(url);
  const reader = await Store.open(url);
  t.teardown(async () => {
    await Promise.all([writerA.close(), writerB.close(), reader.close()]);
  });
  let releaseA!: () => void;
  let aDone!: Promise<unknown>;
  const aHolding = new Promise<void>((resolve) => {
    const a = writerA.applyBatch('a', [podEvent('ADDED', 'n', 'a1', '1'), podEvent('ADDED', 'n', 'a2', '2')], {
      beforeCommit: () => {
        resolve();
        return new Promise<void>((r) => (releaseA = r));
      },
    });
    aDone = a;
  });
  await aHolding;
  const bDone = writerB.applyBatch('b', [podEvent('ADDED', 'n', 'b1', '1')]);
  const seenWhileOpen = await Promise.race([reader.changesAfter(1, 100), sleep(300).then(() => 'timeout')]);
  t.same(seenWhileOpen, [], 'nothing is visible while the first writer holds its rvs');
  await sleep(200);
  releaseA();
  await Promise.all([aDone, bDone]);
  const all = await reader.changesAfter(1, 100);
  t.same(all.map((c) => [c.rv, c.name]), [[2, 'a1'], [3, 'a2'], [4, 'b1']], 'rvs follow commit order');
});

for (const backend of backends) {
  t.test(`${backend}: concurrent writers, one poller sees every rv exactly once, in order`, async (t) => {
    const { url, cleanup } = await emptyStorageUrl(backend);
    t.teardown(cleanup);
    // PostgreSQL: 4 writer connections in this process. SQLite: one connection per process
    // (better-sqlite3 is synchronous), so the writers share a Store and SQLite's write lock
    // orders them; the test still proves the poller's view.
    const writers = backend === 'postgres' ? await Promise.all([1, 2, 3, 4].map(() => Store.open(url))) : [await Store.open(url)];
    const reader = backend === 'postgres' ? await Store.open(url) : writers[0];
    t.teardown(async () => {
      await Promise.all(writers.map((w) => w.close()));
      if (reader !== writers[0]) await reader.close();
    });
    const batches = 30;
    let seed = 42;
    const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const write = async (w: number) => {
      const store = writers[w % writers.length];
      for (let b = 0; b < batches; b++) {
        const size = 1 + Math.floor(rand() * 20);
        const events: UpstreamEvent[] = [];
        for (let i = 0; i < size; i++) events.push(podEvent('ADDED', `ns-${w}`, `p-${b}-${i}`, String(b * 100 + i)));
        await store.applyBatch(`cluster-${w}`, events, {
          // Hold some transactions open a little, so commits interleave.
          beforeCommit: async () => {
            if (rand() < 0.3) await sleep(rand() * 5);
          },
        });
      }
    };
    const writing = Promise.all([0, 1, 2, 3].map(write));
    const seen = await poll(reader, writing);
    await writing;
    const watermark = await reader.watermark();
    t.ok(watermark > 100, `wrote ${watermark - 1} changes`);
    const expected = Array.from({ length: watermark - 1 }, (_, i) => i + 2);
    t.same(seen, expected, 'every rv exactly once, in order');
  });
}
