// The read pool over a real PostgreSQL primary and a streaming hot standby (hack/postgres-standby.ts):
// how far behind a standby is. Replay paused while the primary commits thousands of changes,
// each seen by the pool, and the apiserver's wall clock stepped back a minute: the lag is the
// time since the primary first had an rv the standby lacks, on a monotonic clock, never less;
// past --storage-read-max-lag the standby is not read. Replay resumed: 0 behind, and still 0
// on an idle primary (no commits: the standby is not behind, however old its last replay).
// Promoted between two checks and written to at once (another timeline): what it answers, a
// change-log poll or a list, is dropped and read on the primary.
import t, { type Test } from 'tap';
import { startStandbyPair } from '../hack/postgres-standby.ts';
import { ReadPool, type Freshness } from './read-pool.ts';
import { Store } from './store.ts';
import { podEvent } from './testing.ts';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** A primary (one pod) and a caught-up standby, and a pool over them that checks only when told (refresh): every observation is the test's. */
async function poolOnPair(t: Test, maxLagMs: number) {
  const pair = await startStandbyPair();
  t.teardown(() => pair.close());
  const db = await pair.createDatabase('panoptes');
  const primary = await Store.open(db.primary);
  t.teardown(() => primary.close());
  await primary.applyBatch('a', [podEvent('ADDED', 'ns', 'seed', '1')]);
  await pair.caughtUp();
  const pool = await ReadPool.open(primary, [db.standby], { maxLagMs, refreshMs: 3_600_000 });
  t.teardown(() => pool.close());
  return { pair, db, primary, pool };
}

t.test('lag of a paused standby, over many commits and a wall-clock step', async (t) => {
  const maxLagMs = 2000;
  const { pair, db, primary, pool } = await poolOnPair(t, maxLagMs);
  const standby = () => pool.status().find((s) => s.index === 1)!;
  t.equal(pool.pick().store === primary, false, 'caught up: the standby is read');
  t.equal(standby().lagSeconds, 0);

  await pair.pauseReplay();
  const t0 = performance.now();
  await primary.applyBatch('a', [podEvent('ADDED', 'ns', 'p0', '2')]);
  await pool.refresh();
  const t1 = performance.now();
  // More primary watermarks than any fixed buffer of samples keeps: each commit is seen.
  const commits = 4500;
  for (let i = 1; i < commits; i++) {
    await primary.applyBatch('a', [podEvent('ADDED', 'ns', `p${i}`, String(2 + i))]);
    await pool.primaryWatermark();
  }
  await pool.refresh();
  for (let i = 0; i < 100 && performance.now() - t1 <= maxLagMs; i++) await sleep(50);

  const lagWithin = (what: string, behind: number) => {
    const before = performance.now();
    const s = standby();
    const picked = pool.pick().store;
    const after = performance.now();
    t.equal(s.lagRv, behind, `${what}: every commit since replay paused, in rv`);
    t.ok(s.lagSeconds * 1000 >= before - t1 - 1, `${what}: at least since the first commit it lacks was seen (${s.lagSeconds.toFixed(2)} s, ${((before - t1) / 1000).toFixed(2)} s since)`);
    t.ok(s.lagSeconds * 1000 <= after - t0 + 1, `${what}: at most since that commit began (${s.lagSeconds.toFixed(2)} s, ${((after - t0) / 1000).toFixed(2)} s since)`);
    t.equal(picked, primary, `${what}: past the lag bound, the standby is not read`);
  };
  lagWithin(`after ${commits} commits`, commits);

  // The apiserver's wall clock stepped back a minute (NTP, a VM resumed): lag is not measured on it.
  const realNow = Date.now;
  t.teardown(() => {
    Date.now = realNow;
  });
  const offset = 60_000;
  Date.now = () => realNow.call(Date) - offset;
  await primary.applyBatch('a', [podEvent('ADDED', 'ns', 'after-step', String(2 + commits))]);
  await pool.refresh();
  lagWithin('with the wall clock stepped back 60 s', commits + 1);
  Date.now = realNow;

  await pair.resumeReplay();
  await pair.caughtUp();
  await pool.refresh();
  t.equal(standby().lagRv, 0, 'replay resumed: 0 resource versions behind');
  t.equal(standby().lagSeconds, 0, 'and 0 s');
  t.not(pool.pick().store, primary, 'the standby is read again');

  // No commits: the standby's last replayed commit grows old, but it lacks nothing.
  await sleep(maxLagMs + 200);
  await pool.refresh();
  await pool.primaryWatermark();
  t.equal(standby().lagSeconds, 0, 'an idle primary: 0 s behind');
  t.not(pool.pick().store, primary, 'and read');

  // Promoted between two checks (none runs here): another timeline, written to at once.
  const from = await primary.watermark();
  await pair.promote();
  const promoted = await Store.open(db.standby);
  t.teardown(() => promoted.close());
  await promoted.applyBatch('a', [podEvent('ADDED', 'ns', 'other-timeline', '90000')]);
  await primary.applyBatch('a', [podEvent('ADDED', 'ns', 'on-the-primary', '90001')]);
  t.equal(pool.status().find((s) => s.index === 1)?.role, 'standby', 'the pool has not seen the promotion yet');
  const changes = await pool.changesAfter(from, 10);
  t.same(changes.map((c) => c.name), ['on-the-primary'], 'the change log is read where the primary is: the promoted answer is dropped');
  t.equal(pool.status().find((s) => s.index === 1)?.role, 'promoted', 'the poll itself told it');
  t.equal(pool.pick().store, primary, 'it is not read while the primary answers');
});

t.test('a standby promoted between two checks: a list read there is not served', async (t) => {
  const { pair, db, primary, pool } = await poolOnPair(t, 10_000);
  await pair.promote();
  const promoted = await Store.open(db.standby);
  t.teardown(() => promoted.close());
  await promoted.applyBatch('a', [podEvent('ADDED', 'ns', 'other-timeline', '2')]);
  t.not(pool.pick().store, primary, 'the pool still takes it for a standby');
  const names = async (want: Freshness) =>
    (await pool.read(want, (store, minRv) => store.list({ group: '', resource: 'pods', ...(minRv === undefined ? {} : { minRv }) }))).value.items.map((i) => i.name);
  t.same(await names({ kind: 'any' }), ['seed'], 'resourceVersion=0: what it answered is dropped (it left recovery), the primary answers');
  t.equal(pool.pick().store, primary, 'and it is not read any more');
  t.same(await names({ kind: 'most-recent', since: performance.now() }), ['seed'], 'most recent: the primary');
});
