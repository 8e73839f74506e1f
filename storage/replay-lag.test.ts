// The lag measure alone, on a clock the test moves: behind since the primary first had an rv
// the database lacks; 0 when it lacks none (an idle primary); bounded marks that never report a
// database less behind than it is, and at most one merged span more.
import t from 'tap';
import { ReplayLag } from './replay-lag.ts';

t.test('behind since the first watermark above the rv, 0 when caught up', async (t) => {
  let now = 1000;
  const lag = new ReplayLag(() => now);
  lag.primaryAt(10);
  now += 500;
  lag.primaryAt(12);
  now += 500;
  lag.primaryAt(12); // seen again: still first seen 500 ms ago
  t.equal(lag.behindMs(9), 1000, 'lacks 10: since 10 was seen');
  t.equal(lag.behindMs(10), 500, 'lacks 11 and 12: since 12 was seen');
  t.equal(lag.behindMs(12), 0, 'lacks nothing');
  t.equal(lag.behindRv(9), 3);
  now += 60_000;
  t.equal(lag.behindMs(12), 0, 'an idle primary: still 0 however long nothing commits');
  lag.forgetUpTo(10);
  t.equal(lag.behindMs(10), 60_500, 'forgetting what no database lacks keeps the rest');
  t.equal(lag.behindMs(9), 60_500, 'a database below what was forgotten: behind since the oldest mark kept');
});

t.test('bounded marks: never less behind, at most one merged span more', async (t) => {
  let now = 0;
  const lag = new ReplayLag(() => now, 64);
  const seen: number[] = [];
  for (let rv = 1; rv <= 10_000; rv++) {
    now = rv * 10;
    lag.primaryAt(rv);
    seen[rv] = now;
  }
  t.ok(lag.size <= 64, `${lag.size} marks kept`);
  now = 200_000;
  t.equal(lag.behindMs(0), now - seen[1], 'the oldest mark is kept exactly');
  let worst = 0;
  const less: number[] = [];
  for (let rv = 0; rv < 10_000; rv++) {
    const truth = now - seen[rv + 1];
    const measured = lag.behindMs(rv);
    if (measured < truth) less.push(rv);
    worst = Math.max(worst, measured - truth);
  }
  t.same(less, [], 'never less behind than it is, at any rv');
  // 64 marks over 100 s of commits: the closest two span at most 2 × 100 s / 63 when merged.
  t.ok(worst <= (2 * 100_000) / 63, `at most one merged span more (${worst} ms)`);
});
