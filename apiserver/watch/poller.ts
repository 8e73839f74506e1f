// The poller: one per process, whatever the number of watchers. It reads the change log
// after its last rv in batches, on an interval and at once when woken (commits of this
// process; NOTIFY from others; a watch waiting for an rv it has not seen), never
// concurrently with itself, and hands each batch, in rv order, to the hub. Wake-ups are
// hints: polling alone still delivers everything. A change that another process's commit
// notification carried (storage/notify-payload.ts) is handed on at once, without a query,
// when it is the next rv; anything else it was told (an rv alone, a change after a gap) is
// read from the log, so the hub still sees every rv once, in order.
//
// After a failed poll it backs off (doubling, at most 1 s), but a wake-up during the back-off
// polls again once the first step (50 ms) has passed: a watch from a fresh rv waits at most
// 3 s for the poller (hub.ts futureRvWaitMs), and must not sleep through a storage blip's end.
import { CompactedError } from '../../storage/errors.ts';
import type { Change } from '../../storage/types.ts';
import { logger, type Logger } from '../../lib/log.ts';
import { traceMark, tracing, wallNow } from '../../lib/trace.ts';
import type { WatchMetrics } from './metrics.ts';

/** What the poller reads: the Store satisfies it. */
export interface ChangeSource {
  changesAfter(rv: number, limit: number): Promise<Change[]>;
}

export interface PollerOptions {
  /** Poll period when nothing wakes the poller (default 100 ms). */
  intervalMs?: number;
  /** At most one poll per this period, however often woken (default 10 ms). */
  minIntervalMs?: number;
  /** Changes per query (default 1,000); a full batch is followed by another poll at once. */
  batchSize?: number;
  /**
   * Back-off after a failed poll: doubles from max(50 ms, minIntervalMs·10) up to this
   * (default 1 s, well below the 3 s a watch waits for a future rv); a wake-up cuts it short
   * after its first step.
   */
  maxBackoffMs?: number;
  /**
   * The source may not have yet what wake-ups announce (a standby replaying the primary that
   * sent the notification): while a notified rv is not read yet, the log is read again every
   * minIntervalMs (not intervalMs), for at most chaseMs after the last wake-up (default 5 s).
   * A standby's log read after the poller's rv is an index probe that finds nothing until
   * replay brings the change, as cheap as asking for its replay position, and it says the
   * one thing that matters: whether the change is readable there.
   */
  sourceMayLag?: boolean;
  chaseMs?: number;
}

export interface PollerHooks {
  /** A batch of changes, in rv order, contiguous with the previous batch. Called synchronously. */
  onBatch(changes: Change[]): void;
  /**
   * The log was compacted past the poller's rv (it fell behind the retention window): events
   * are lost for everyone watching. Returns the rv to continue from.
   */
  onGap(err: CompactedError): number;
}

export class Poller {
  private last: number;
  private committed: number;
  private stopped = true;
  private dirty = false;
  private wakeSleep: (() => void) | undefined;
  private sleepTimer: NodeJS.Timeout | undefined;
  private loopDone: Promise<void> | undefined;
  private lastPollStart = 0;
  private lastWake = 0;
  private readonly intervalMs: number;
  private readonly minIntervalMs: number;
  private readonly batchSize: number;
  private readonly maxBackoffMs: number;
  private readonly log: Logger;
  /** Queries issued (also counted in metrics.pollQueries). */
  queries = 0;
  /** Changes delivered as notifications carried them, without a query (also in metrics.notifiedChanges). */
  notified = 0;

  constructor(
    private readonly source: ChangeSource,
    startRv: number,
    private readonly hooks: PollerHooks,
    private readonly metrics: WatchMetrics,
    private readonly opts: PollerOptions = {},
    log: Logger = logger('watch.poller'),
  ) {
    this.last = startRv;
    this.committed = startRv;
    this.intervalMs = Math.max(1, opts.intervalMs ?? 100);
    this.minIntervalMs = Math.max(0, Math.min(opts.minIntervalMs ?? 10, this.intervalMs));
    this.batchSize = Math.max(1, opts.batchSize ?? 1000);
    this.maxBackoffMs = Math.max(1, opts.maxBackoffMs ?? 1000);
    this.log = log;
  }

  /** The newest rv handed to the hub. */
  get rv(): number {
    return this.last;
  }

  /** The first step of the back-off after a failed poll. */
  private get firstBackoffMs(): number {
    return Math.min(this.maxBackoffMs, Math.max(50, this.minIntervalMs * 10));
  }

  /** Newest committed rv known minus newest delivered. */
  get lag(): number {
    return Math.max(0, this.committed - this.last);
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.loopDone = this.loop();
  }

  /** Polls as soon as allowed. `committedRv` (if known) is the newest rv committed somewhere. */
  wake(committedRv?: number): void {
    this.lastWake = Date.now();
    if (committedRv !== undefined && Number.isFinite(committedRv) && committedRv > this.committed) {
      this.committed = committedRv;
      this.metrics.pollerLag.set(this.lag);
    }
    this.dirty = true;
    this.wakeSleep?.();
  }

  /**
   * A change committed elsewhere, as its commit notification carried it: handed to the hub at
   * once if it is the next rv; one already delivered is ignored; after a gap (a change announced
   * by rv alone, a notification lost) the log is read instead, which delivers it too.
   */
  offer(change: Change): void {
    this.offerBatch([change]);
  }

  /**
   * Changes committed together, in rv order (a commit of this process: Store.onCommit): handed
   * on at once from the first one not delivered yet, when that is the next rv; else the log is
   * read (a change of another writer came between).
   */
  offerBatch(changes: readonly Change[]): void {
    if (this.stopped) return;
    let i = 0;
    while (i < changes.length && changes[i].rv <= this.last) i++;
    if (i === changes.length) return;
    if (changes[i].rv !== this.last + 1) return this.wake(changes[changes.length - 1].rv);
    const batch = i === 0 ? [...changes] : changes.slice(i);
    for (let j = 1; j < batch.length; j++) if (batch[j].rv !== batch[j - 1].rv + 1) return this.wake(batch[batch.length - 1].rv);
    this.last = batch[batch.length - 1].rv;
    if (this.committed < this.last) this.committed = this.last;
    this.notified += batch.length;
    this.metrics.notifiedChanges.inc(batch.length);
    this.metrics.pollerLag.set(this.lag);
    if (tracing) traceMark('read', batch[0].rv, this.last);
    this.hooks.onBatch(batch);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wakeSleep?.();
    await this.loopDone;
  }

  private sleep(ms: number, wakeable: boolean): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        if (this.sleepTimer) clearTimeout(this.sleepTimer);
        this.sleepTimer = undefined;
        this.wakeSleep = undefined;
        resolve();
      };
      this.sleepTimer = setTimeout(done, ms);
      // stop() always ends a sleep; wake() only a wakeable one.
      this.wakeSleep = wakeable ? done : () => (this.stopped ? done() : undefined);
    });
  }

  private async loop(): Promise<void> {
    let backoff = 0;
    while (!this.stopped) {
      this.dirty = false;
      this.lastPollStart = Date.now();
      let full = false;
      let failed = false;
      try {
        this.queries++;
        this.metrics.pollQueries.inc();
        const polledAt = tracing ? wallNow() : 0;
        const read = await this.source.changesAfter(this.last, this.batchSize);
        if (this.stopped) break;
        // Changes delivered from notifications while the query ran are not delivered again.
        const changes = read.length > 0 && read[0].rv <= this.last ? read.filter((c) => c.rv > this.last) : read;
        if (changes.length > 0) {
          if (changes[0].rv !== this.last + 1) throw new Error(`change log gap: expected rv ${this.last + 1}, read ${changes[0].rv}`);
          this.last = changes[changes.length - 1].rv;
          if (tracing) {
            traceMark('polling', changes[0].rv, this.last, polledAt);
            traceMark('read', changes[0].rv, this.last);
          }
          this.hooks.onBatch(changes);
        }
        full = read.length >= this.batchSize;
        // A commit notified before this query started is visible to it: unless a wake-up came
        // during the query (dirty), nothing newer than `last` is known to be committed.
        if (!full && !this.dirty && !this.opts.sourceMayLag) this.committed = this.last;
        else if (this.committed < this.last) this.committed = this.last;
        this.metrics.pollerLag.set(this.lag);
        backoff = 0;
      } catch (err) {
        if (this.stopped) break;
        if (err instanceof CompactedError) {
          this.log.error('poller fell behind compaction: watchers are closed and resume (or relist)', { from: this.last, compacted: err.compacted });
          this.last = this.hooks.onGap(err);
          this.committed = Math.max(this.committed, this.last);
          continue;
        }
        failed = true;
        this.metrics.pollErrors.inc();
        backoff = Math.min(this.maxBackoffMs, backoff === 0 ? this.firstBackoffMs : backoff * 2);
        this.log.warn('change-log poll failed; backing off', { err: err as Error, backoffMs: backoff, rv: this.last });
      }
      if (this.stopped) break;
      if (failed) {
        // The first step is slept out whatever wakes the poller (no hammering a storage that
        // is down); the rest ends at a wake-up, or at once if one came during the first step.
        const first = Math.min(backoff, this.firstBackoffMs);
        await this.sleep(first, false);
        if (!this.stopped && !this.dirty && backoff > first) await this.sleep(backoff - first, true);
        continue;
      }
      const chasing = this.opts.sourceMayLag === true && this.committed > this.last && Date.now() - this.lastWake < (this.opts.chaseMs ?? 5000);
      if (!full && !this.dirty && !chasing) await this.sleep(this.intervalMs, true);
      const since = Date.now() - this.lastPollStart;
      if (!this.stopped && since < this.minIntervalMs) await this.sleep(this.minIntervalMs - since, false);
    }
  }
}
