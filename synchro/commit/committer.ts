// Group commit: one writer per synchro process for all its clusters. Each round takes what
// every cluster's queue (Batcher) holds, up to the transaction's limits, and writes it in one
// transaction: the change log's rv counter is locked once per round instead of once per
// cluster, and no batch waits for company — when storage is idle an event is written at
// once; under load the next round forms while the previous one commits.
//
// A failed round is handled by why it failed (storage/write-errors.ts):
// - fenced: the cluster whose lease moved on is dropped from the round, the rest is written;
// - outage: the whole round is retried with backoff, so order per cluster holds;
// - data (the rows were refused: a value too long, a constraint, anything not an outage):
//   retrying cannot help, so the round is split — per cluster, then each cluster's events in
//   halves, first half first, so order per cluster still holds — until the event that fails
//   on its own is found. That event is set aside and its object quarantined (the batcher
//   keeps it, its cluster's status names it, a metric counts it); everything else commits.
//   One tenant's object cannot stall every cluster of the process.
import type { Logger } from '../../lib/log.ts';
import { FencedError } from '../../storage/leases.ts';
import type { Store } from '../../storage/store.ts';
import { describeWriteError, writeErrorKind } from '../../storage/write-errors.ts';
import { Backoff } from '../../lib/backoff.ts';
import { traceMark, tracing, wallOf } from '../../lib/trace.ts';
import type { BatchResult } from '../../storage/types.ts';
import type { Batcher, Item } from './batcher.ts';
import type { SynchroMetrics } from '../metrics/metrics.ts';

export interface CommitterOptions {
  /** Events per transaction at most. */
  maxEvents: number;
  /** Bytes (of upstream JSON) per transaction at most. */
  maxBytes: number;
}

/** One cluster's share of a round: events taken from its queue, in order. */
type Part = { b: Batcher; items: Item[] };

/** Trace marks of a committed round (lib/trace.ts): when its oldest event arrived, when the round began (the store marks its lock and commit). */
function traceRound(round: Part[], results: BatchResult[], started: number): void {
  round.forEach(({ items }, i) => {
    const { changes } = results[i];
    if (changes.length === 0) return;
    const [from, to] = [changes[0].rv, changes[changes.length - 1].rv];
    traceMark('received', from, to, wallOf(items.reduce((m, it) => Math.min(m, it.receivedAt), Infinity)));
    traceMark('taken', from, to, wallOf(started));
  });
}

/** Failed attempts after which the events of closing batchers are given up. */
const attemptsWhenClosing = 3;

export class Committer {
  private readonly batchers = new Set<Batcher>();
  private wakeLoop?: () => void;
  private pending = false;
  private stopped = false;
  private next = 0;
  private readonly loop: Promise<void>;

  constructor(
    private readonly store: Store,
    private readonly opts: CommitterOptions,
    private readonly metrics: SynchroMetrics,
    private readonly log: Logger,
  ) {
    this.loop = this.run();
  }

  register(b: Batcher): void {
    this.batchers.add(b);
  }

  unregister(b: Batcher): void {
    this.batchers.delete(b);
  }

  /** Something was queued (or a flush waits): write it as soon as the current round is done. */
  wake(): void {
    this.pending = true;
    this.wakeLoop?.();
  }

  /** Stops after the current round; batchers must be closed (flushed) first. */
  async close(): Promise<void> {
    this.stopped = true;
    this.wakeLoop?.();
    await this.loop;
  }

  private idle(): Promise<void> {
    return new Promise((resolve) => {
      this.wakeLoop = () => {
        this.wakeLoop = undefined;
        resolve();
      };
    });
  }

  /** One round: the oldest events of every queue, clusters in turn, within the limits. */
  private take(): Part[] {
    const all = [...this.batchers];
    const round: Part[] = [];
    const clusters = new Set<string>();
    let events = 0;
    for (let i = 0; i < all.length && events < this.opts.maxEvents; i++) {
      const b = all[(this.next + i) % all.length];
      // One part per cluster (a cluster re-acquired while its old batcher still drains has two).
      if (b.size === 0 || clusters.has(b.cluster)) continue;
      clusters.add(b.cluster);
      const items = b.take(Math.max(1, Math.ceil((this.opts.maxEvents - events) / Math.max(1, all.length - i))), this.opts.maxBytes);
      if (items.length === 0) continue;
      round.push({ b, items });
      events += items.length;
    }
    // Fair under load: the next round starts with the next cluster.
    this.next = all.length ? (this.next + 1) % all.length : 0;
    return round;
  }

  private async run(): Promise<void> {
    for (;;) {
      if (!this.pending) {
        if (this.stopped) return;
        await this.idle();
        continue;
      }
      this.pending = false;
      await this.writeRound();
    }
  }

  /**
   * Takes and writes one round. A function of its own so that the round's events are let go
   * when it returns: a local of run() would stay in its suspended frame (V8 keeps an async
   * function's registers across an await) while it waits idle, every event of the last
   * round with it.
   */
  private async writeRound(): Promise<void> {
    const round = this.take();
    if (round.length === 0) return;
    // More may be queued than one round takes: go again at once.
    if ([...this.batchers].some((b) => b.size > 0)) this.pending = true;
    await this.write(round);
  }

  /**
   * Writes one round: commits it (retrying outages with backoff, dropping fenced clusters, and
   * closing ones that keep failing), or, when storage refuses its rows, splits it until the
   * refused event is found and set aside.
   */
  private async write(round: Part[]): Promise<void> {
    const backoff = new Backoff({ initialMs: 100, maxMs: 10_000 });
    for (;;) {
      // Batchers fenced or given up while an earlier part of a split round was written.
      round = round.filter(({ b }) => !b.isFailed);
      if (round.length === 0) return;
      const started = performance.now();
      try {
        // The quarantined version of an object is not offered to storage again.
        const parts = round.map(({ b, items }) => ({ cluster: b.cluster, events: items.filter((i) => !b.held(i.event)).map((i) => i.event), fence: b.fence }));
        // A retry reads what storage holds under the lock: the failed attempt may have committed.
        const results = await this.store.applyBatches(parts, backoff.attempts > 0 ? { readUnderLock: true } : undefined);
        const now = performance.now();
        if (results.length > 0) this.metrics.rvLockHeld.observe(results[0].heldMs / 1000);
        round.forEach(({ b, items }, i) => b.committed(items, results[i], started, now));
        if (tracing) traceRound(round, results, started);
        return;
      } catch (err) {
        const kind = writeErrorKind(err);
        if (err instanceof FencedError) {
          const i = round.findIndex(({ b }) => b.fence?.lease === err.fence.lease && b.fence.epoch === err.fence.epoch);
          if (i >= 0) {
            const [{ b, items }] = round.splice(i, 1);
            b.fenced(err, items.length);
            continue;
          }
        }
        if (kind === 'data') {
          const single = round.length === 1 && round[0].items.length === 1;
          if (!single) return this.split(round);
          // Refused on its own; unless storage does not answer at all (then it is an outage after all).
          if (await this.storageAnswers()) return round[0].b.setAside(round[0].items[0], err);
        }
        for (const { b } of round) this.metrics.errors.inc({ cluster: b.cluster, kind: 'storage' });
        const delay = backoff.next();
        this.log.error('storage write failed; retrying', { ...describeWriteError(err), clusters: round.map(({ b }) => b.cluster), events: round.reduce((n, r) => n + r.items.length, 0), retryInMs: delay, attempt: backoff.attempts });
        if (backoff.attempts >= attemptsWhenClosing) {
          for (const { b } of round.filter((r) => r.b.isClosing)) b.fail(new Error(`storage write failed: ${(err as Error).message}`));
          round.splice(0, round.length, ...round.filter((r) => !r.b.isClosing));
        }
        await new Promise((r) => setTimeout(r, delay));
      }
    }
  }

  /** A round whose rows storage refused: each cluster alone, then each cluster's events in halves, in order. */
  private async split(round: Part[]): Promise<void> {
    this.log.warn('storage refused the rows of a batch; splitting it to find the event', { clusters: round.map(({ b }) => b.cluster), events: round.reduce((n, r) => n + r.items.length, 0) });
    if (round.length > 1) {
      for (const part of round) await this.write([part]);
      return;
    }
    const [{ b, items }] = round;
    const half = Math.ceil(items.length / 2);
    await this.write([{ b, items: items.slice(0, half) }]);
    await this.write([{ b, items: items.slice(half) }]);
  }

  private async storageAnswers(): Promise<boolean> {
    try {
      await this.store.ping();
      return true;
    } catch {
      return false;
    }
  }
}
