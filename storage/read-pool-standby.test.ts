// The read pool over a real PostgreSQL primary and a streaming hot standby (hack/postgres-standby.ts):
// how far behind a standby is. Replay paused while the primary commits thousands of changes,
// each seen by the pool, and the apiserver's wall clock stepped back a minute: the lag is the
// time since the primary first had an rv the standby lacks, on a monotonic clock, never less;
// past --storage-read-max-lag the standby is not read. Replay resumed: 0 behind, and still 0
// on an idle primary (no commits: the standby is not behind, however old its last replay).
import t from 'tap';
import { startStandbyPair } from '../hack/postgres-standby.ts';
import { ReadPool } from './read-pool.ts';
import { Store } from './store.ts';
import { podEvent } from './testing.ts';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

t.test('lag of a paused standby, over many commits and a wall-clock step', async (t) => {
  const pair = await startStandbyPair();
  t.teardown(() => pair.close());
  const db = await pair.createDatabase('panoptes');
  const primary = await Store.open(db.primary);
  t.teardown(() => primary.close());
  await primary.applyBatch('a', [podEvent('ADDED', 'ns', 'seed', '1')]);
  await pair.caughtUp();
  const maxLagMs = 2000;
  // Checked by hand (refresh) only: every observation below is the test's.
  const pool = await ReadPool.open(primary, [db.standby], { maxLagMs, refreshMs: 3_600_000 });
  t.teardown(() => pool.close());
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
});
