// The planner's statistics as the tables grow. PostgreSQL plans with what its last ANALYZE
// saw, and autovacuum analyzes a table only once the rows changed since pass a threshold and
// its next round comes (autovacuum_naptime, 1 min by default:
// https://www.postgresql.org/docs/15/routine-vacuuming.html#AUTOVACUUM). A sync that grows
// the tables tenfold in seconds (a fleet's initial lists, or the synced copies of a dispatch
// wave: 19,000 EndpointSlices in 11 s in bench:mcs) is queried meanwhile with plans made for
// tables ten times smaller: a label-selected list of objects took 3 s, one over every
// dispatched slice 27 s, against milliseconds once analyzed. So the Store analyzes by itself
// each time the rows it wrote double (from `minRows`), in the background, one at a time.
import { logger } from '../lib/log.ts';

const log = logger('storage.statistics');

export class GrowthAnalyzer {
  private written = 0;
  private nextAt: number;
  private running?: Promise<void>;

  /** `analyze` refreshes the statistics; the first runs once `minRows` rows were written. */
  constructor(
    private readonly analyze: () => Promise<void>,
    private readonly minRows = 5000,
  ) {
    this.nextAt = minRows;
  }

  /** `rows` more were written; starts an analyze (unless one runs) once they doubled since the last. */
  wrote(rows: number): void {
    this.written += rows;
    if (this.written < this.nextAt || this.running) return;
    this.nextAt = Math.max(this.minRows, this.written * 2);
    const started = performance.now();
    this.running = this.analyze()
      .then(() => log.debug('planner statistics refreshed', { rowsWritten: this.written, ms: Math.round(performance.now() - started) }))
      .catch((err: unknown) => log.warn('refreshing the planner statistics failed (autovacuum still does)', { err: err as Error }))
      .finally(() => (this.running = undefined));
  }

  /** Resolves once no analyze runs (close, tests). */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }
}
