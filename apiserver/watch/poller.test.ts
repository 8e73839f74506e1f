// The poller against a scripted change source: one query at a time, woken at once, in-order
// batches, back-off on errors, lag.
import t from 'tap';
import { Registry } from 'prom-client';
import { CompactedError } from '../../storage/errors.ts';
import type { Change } from '../../storage/types.ts';
import { logger } from '../../lib/log.ts';
import { watchMetrics } from './metrics.ts';
import { Poller, type ChangeSource } from './poller.ts';
import { delay } from '../../hack/testing/watch-engine.ts';

const change = (rv: number): Change => ({
  rv, type: 'ADDED', cluster: 'c', group: '', version: 'v1', resource: 'pods', namespace: 'n', name: `p${rv}`, uid: `u${rv}`,
  object: '{}', prevObject: null, ts: Date.now(), epoch: null,
});

class FakeLog implements ChangeSource {
  head = 0;
  compacted = 0;
  inFlight = 0;
  maxInFlight = 0;
  calls = 0;
  failNext = 0;
  latencyMs = 5;
  async changesAfter(rv: number, limit: number): Promise<Change[]> {
    this.calls++;
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      await delay(this.latencyMs);
      if (this.failNext > 0) {
        this.failNext--;
        throw new Error('connection refused');
      }
      if (rv < this.compacted) throw new CompactedError(rv, this.compacted, 'watch');
      const out: Change[] = [];
      for (let r = rv + 1; r <= this.head && out.length < limit; r++) out.push(change(r));
      return out;
    } finally {
      this.inFlight--;
    }
  }
}

const quiet = logger('test', {});

/** Resolves once cond() holds, polled every 2 ms, or after timeoutMs (the assertions then say what is missing). */
async function until(cond: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond() && Date.now() < deadline) await delay(2);
}

/** Whether `p` settles within ms (the timer cleared either way). */
async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((r) => (timer = setTimeout(() => r(false), ms)));
  try {
    return await Promise.race([p.then(() => true), late]);
  } finally {
    clearTimeout(timer);
  }
}

function poller(log: FakeLog, opts: ConstructorParameters<typeof Poller>[4], got: number[], onGap = (e: CompactedError) => e.compacted) {
  const metrics = watchMetrics(new Registry());
  const p = new Poller(log, 0, { onBatch: (cs) => got.push(...cs.map((c) => c.rv)), onGap }, metrics, opts, quiet);
  return { p, metrics };
}

t.test('woken at once, never concurrent with itself, batches in order', async (t) => {
  const log = new FakeLog();
  const got: number[] = [];
  // An interval far beyond the bounded wait below: what is delivered within it was not polled at the interval.
  const { p } = poller(log, { intervalMs: 600_000, minIntervalMs: 0, batchSize: 3 }, got);
  p.start();
  t.teardown(() => p.stop());
  await delay(30);
  const calls = log.calls;
  log.head = 7;
  for (let i = 0; i < 50; i++) p.wake(7);
  await until(() => got.length >= 7, 30_000);
  t.same(got, [1, 2, 3, 4, 5, 6, 7], 'full batches are followed by another poll at once, without waiting for the interval');
  t.equal(log.maxInFlight, 1, 'one query at a time, however often woken');
  t.ok(log.calls - calls <= 5, `50 wake-ups coalesce into few polls (${log.calls - calls})`);
  t.equal(p.rv, 7);
  t.equal(p.lag, 0);
});

t.test('polls on its interval without wake-ups; minIntervalMs caps the query rate', async (t) => {
  const log = new FakeLog();
  log.latencyMs = 0;
  const got: number[] = [];
  const { p, metrics } = poller(log, { intervalMs: 40, minIntervalMs: 20 }, got);
  p.start();
  t.teardown(() => p.stop());
  await delay(50);
  log.head = 2;
  await delay(120);
  t.same(got, [1, 2], 'delivered by polling alone');
  const before = log.calls;
  const until = Date.now() + 300;
  while (Date.now() < until) {
    p.wake();
    await delay(1);
  }
  const rate = (log.calls - before) / 0.3;
  t.ok(rate <= 60, `woken continuously: ${rate.toFixed(0)} polls/s ≤ 1/minInterval`);
  t.equal((await metrics.pollQueries.get()).values[0].value, log.calls);
});

t.test('errors back off and polling resumes; lag is known from commit hints', async (t) => {
  const log = new FakeLog();
  log.latencyMs = 0;
  const got: number[] = [];
  const { p, metrics } = poller(log, { intervalMs: 20, minIntervalMs: 1, maxBackoffMs: 200 }, got);
  p.start();
  t.teardown(() => p.stop());
  await delay(30);
  log.failNext = 3;
  log.head = 4;
  p.wake(4);
  t.equal(p.lag, 4, 'newest committed (4) − newest delivered (0)');
  await delay(30);
  const during = log.calls;
  await delay(40);
  t.ok(log.calls - during <= 2, 'backing off, not hammering the database');
  await delay(800);
  t.same(got, [1, 2, 3, 4]);
  t.equal(p.lag, 0);
  t.equal((await metrics.pollErrors.get()).values[0].value, 3);
});

t.test('fallen behind compaction: the hub is told, polling continues from the compacted rv', async (t) => {
  const log = new FakeLog();
  log.latencyMs = 0;
  const got: number[] = [];
  const gaps: number[] = [];
  const { p } = poller(log, { intervalMs: 10 }, got, (e) => {
    gaps.push(e.compacted);
    return e.compacted;
  });
  log.head = 10;
  log.compacted = 6;
  p.start();
  t.teardown(() => p.stop());
  await delay(100);
  t.same(gaps, [6]);
  t.same(got, [7, 8, 9, 10]);
});

t.test('stop ends a sleeping poller at once', async (t) => {
  const log = new FakeLog();
  // Its sleep (the interval) is far longer than the bounded wait for stop().
  const { p } = poller(log, { intervalMs: 600_000 }, []);
  p.start();
  await delay(20);
  t.ok(await settlesWithin(p.stop(), 30_000), 'stopped without sleeping out the interval');
});

t.test('back-off: at most 1 s by default; a wake-up cuts it short, but not below its first step', async (t) => {
  const log = new FakeLog();
  log.latencyMs = 0;
  const got: number[] = [];
  const { p } = poller(log, { intervalMs: 20 }, got);
  p.start();
  t.teardown(() => p.stop());
  await delay(30);
  log.failNext = 1_000_000; // storage is down
  await delay(4000);
  const quiet = log.calls;
  await delay(1100);
  t.ok(log.calls - quiet >= 1 && log.calls - quiet <= 2, `without wake-ups: a poll a second at most and at least (${log.calls - quiet})`);
  const before = log.calls;
  const until = Date.now() + 500;
  while (Date.now() < until) {
    p.wake(); // watches waiting for rvs, commit hints
    await delay(2);
  }
  const woken = log.calls - before;
  t.ok(woken >= 3 && woken <= 12, `woken continuously for 500 ms: ${woken} polls (one per 50 ms first step at most)`);
  log.failNext = 0; // storage is back
  log.head = 3;
  await delay(20);
  const recovered = Date.now();
  p.wake(3);
  while (got.length < 3 && Date.now() - recovered < 2000) await delay(5);
  t.same(got, [1, 2, 3], `delivered after the wake-up (${Date.now() - recovered} ms), not a back-off later`);
});

t.test('a wake-up after an outage delivers at once, not after the back-off it had reached', async (t) => {
  const log = new FakeLog();
  log.latencyMs = 0;
  const got: number[] = [];
  const { p } = poller(log, { intervalMs: 20, maxBackoffMs: 600_000 }, got);
  p.start();
  t.teardown(() => p.stop());
  await delay(30);
  log.failNext = 1_000_000; // storage is down
  const before = log.calls;
  const down = Date.now();
  // Seven failed polls: 50, 100, ... 3200 ms apart; the next is 6.4 s after the seventh.
  while (log.calls - before < 7 && Date.now() - down < 60_000) await delay(10);
  t.equal(log.calls - before, 7, 'seven failed polls');
  log.failNext = 0; // storage is back
  log.head = 3;
  p.wake(3);
  const woken = Date.now();
  // Well within the 6.4 s back-off: what is delivered here came from the wake-up.
  while (got.length < 3 && Date.now() - woken < 4000) await delay(5);
  t.same(got, [1, 2, 3], `delivered ${Date.now() - woken} ms after the wake-up`);
});

t.test('a change a notification carried is delivered without a query when it is the next rv; a gap is read from the log', async (t) => {
  const log = new FakeLog();
  log.latencyMs = 0;
  const got: number[] = [];
  const { p, metrics } = poller(log, { intervalMs: 10_000, minIntervalMs: 0 }, got);
  p.start();
  t.teardown(() => p.stop());
  await delay(30);
  const calls = log.calls;
  log.head = 3;
  for (const rv of [1, 2, 3]) p.offer(change(rv));
  t.same(got, [1, 2, 3], 'delivered at once, in order');
  p.offer(change(2));
  t.same(got, [1, 2, 3], 'an rv already delivered is ignored');
  await delay(30);
  t.equal(log.calls, calls, 'no query');
  t.equal(p.notified, 3);
  t.equal((await metrics.notifiedChanges.get()).values[0].value, 3);
  // rv 4 was announced by rv alone (too long to carry); 5 comes carried: the log is read from 3.
  log.head = 5;
  p.offer(change(5));
  t.same(got, [1, 2, 3], 'not delivered out of order');
  await delay(30);
  t.same(got, [1, 2, 3, 4, 5], 'the query delivers the gap and what came after it, once');
  t.equal(log.calls, calls + 1, 'one query');
  t.equal(p.rv, 5);
  t.equal(p.lag, 0);
});

t.test("a commit's changes are delivered together without a query from the first not delivered yet; after a gap the log is read", async (t) => {
  const log = new FakeLog();
  log.latencyMs = 0;
  const batches: number[][] = [];
  const metrics = watchMetrics(new Registry());
  const p = new Poller(log, 0, { onBatch: (cs) => batches.push(cs.map((c) => c.rv)), onGap: (e) => e.compacted }, metrics, { intervalMs: 10_000, minIntervalMs: 0 }, quiet);
  p.start();
  t.teardown(() => p.stop());
  await delay(30);
  const calls = log.calls;
  log.head = 3;
  p.offerBatch([change(1), change(2), change(3)]);
  t.same(batches, [[1, 2, 3]], 'one batch, at once');
  log.head = 5;
  p.offerBatch([change(2), change(3), change(4), change(5)]);
  t.same(batches, [[1, 2, 3], [4, 5]], 'what was delivered already is left out');
  await delay(30);
  t.equal(log.calls, calls, 'no query');
  t.equal(p.notified, 5);
  // rv 6 was committed by another writer: this process's commit of 7 and 8 waits for the log.
  log.head = 8;
  p.offerBatch([change(7), change(8)]);
  t.same(batches.length, 2, 'not delivered out of order');
  await delay(30);
  t.same(batches.slice(2).flat(), [6, 7, 8], 'the query delivers the gap and the commit, once');
  t.equal(log.calls, calls + 1, 'one query');
  t.equal(p.rv, 8);
});

t.test('changes delivered from notifications while a query runs are not delivered again', async (t) => {
  const log = new FakeLog();
  log.latencyMs = 40;
  const got: number[] = [];
  const { p } = poller(log, { intervalMs: 10_000, minIntervalMs: 0 }, got);
  p.start();
  t.teardown(() => p.stop());
  await delay(60);
  log.head = 4;
  p.wake(4);
  await delay(10); // the query from rv 0 is under way
  p.offer(change(1));
  p.offer(change(2));
  await delay(80);
  t.same(got, [1, 2, 3, 4], 'every rv once, in order');
});

t.test('a source that lags its wake-ups (a standby) is read again until it has the notified rv', async (t) => {
  const log = new FakeLog();
  const got: number[] = [];
  // An interval far beyond the bounded wait below: a read within it is the chase's, not the interval's.
  const { p } = poller(log, { intervalMs: 600_000, minIntervalMs: 5, sourceMayLag: true, chaseMs: 2000 }, got);
  p.start();
  t.teardown(() => p.stop());
  await delay(30);
  // The primary committed rv 1 and said so; the standby replays it 100 ms later.
  p.wake(1);
  await delay(100);
  t.same(got, [], 'not before the source has it');
  log.head = 1;
  await until(() => got.length > 0, 30_000);
  t.same(got, [1], 'read by chasing the notified rv, not at the next poll interval');
  t.equal(p.lag, 0);
  // Without a notified rv ahead, it polls at its interval again.
  const calls = log.calls;
  await delay(100);
  t.ok(log.calls - calls <= 1, 'no chasing when nothing is announced');
  // A chase ends after chaseMs even if the rv never comes (a promoted standby that lost it).
  p.wake(5);
  await delay(2300);
  const c2 = log.calls;
  await delay(200);
  t.ok(log.calls - c2 <= 1, 'the chase ended');
});
