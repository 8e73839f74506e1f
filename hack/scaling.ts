// How a test checks that a cost grows as it should (linear, n log n) without a clock's bound:
// the same work at two sizes, measured against each other in one run, interleaved, the best of
// a few rounds each (a busy machine slows a round, rarely the best of several).

/** The best (least) time of each run, in ms, over `rounds` interleaved rounds. */
export function bestTimes(runs: ReadonlyArray<() => number>, rounds = 3): number[] {
  const mins = runs.map(() => Infinity);
  for (let r = 0; r < rounds; r++) for (const [i, run] of runs.entries()) mins[i] = Math.min(mins[i], run());
  return mins;
}

/** A run that times `work` (set up fresh by `setup` each time, untimed). */
export function timed<T>(setup: () => T, work: (x: T) => void): () => number {
  return () => {
    const x = setup();
    const started = performance.now();
    work(x);
    return performance.now() - started;
  };
}
