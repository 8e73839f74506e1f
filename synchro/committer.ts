// Group commit: one writer per synchro process for all its clusters. Each round takes what
// every cluster's queue (Batcher) holds, up to the transaction's limits, and writes it in one
// transaction: the change log's rv counter is locked once per round instead of once per
// cluster, and no batch waits for company — when storage is idle an event is written at
// once; under load the next round forms while the previous one commits. A cluster whose
// lease moved on (FencedError) is dropped from the round and the rest is written; other
// failures retry the whole round with backoff, so order per cluster holds.
import type { Logger } from '../lib/log.ts';
import { FencedError } from '../storage/leases.ts';
import type { Store } from '../storage/store.ts';
import { Backoff } from './backoff.ts';
import type { Batcher, Item } from './batcher.ts';
import type { SynchroMetrics } from './metrics.ts';

export interface CommitterOptions {
  /** Events per transaction at most. */
  maxEvents: number;
  /** Bytes (of upstream JSON) per transaction at most. */
  maxBytes: number;
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
  private take(): Array<{ b: Batcher; items: Item[] }> {
    const all = [...this.batchers];
    const round: Array<{ b: Batcher; items: Item[] }> = [];
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
      const round = this.take();
      if (round.length === 0) continue;
      // More may be queued than one round takes: go again at once.
      if ([...this.batchers].some((b) => b.size > 0)) this.pending = true;
      await this.write(round);
    }
  }

  /** Writes one round, retrying until it commits (dropping fenced clusters, and closing ones that keep failing). */
  private async write(round: Array<{ b: Batcher; items: Item[] }>): Promise<void> {
    const backoff = new Backoff({ initialMs: 100, maxMs: 10_000 });
    while (round.length > 0) {
      const started = performance.now();
      try {
        const results = await this.store.applyBatches(round.map(({ b, items }) => ({ cluster: b.cluster, events: items.map((i) => i.event), fence: b.fence })));
        const now = performance.now();
        round.forEach(({ b, items }, i) => b.committed(items, results[i], started, now));
        return;
      } catch (err) {
        if (err instanceof FencedError) {
          const i = round.findIndex(({ b }) => b.fence?.lease === err.fence.lease && b.fence.epoch === err.fence.epoch);
          if (i >= 0) {
            const [{ b, items }] = round.splice(i, 1);
            b.fenced(err, items.length);
            continue;
          }
        }
        for (const { b } of round) this.metrics.errors.inc({ cluster: b.cluster, kind: 'storage' });
        const delay = backoff.next();
        this.log.error('storage write failed; retrying', { err: err as Error, clusters: round.map(({ b }) => b.cluster), events: round.reduce((n, r) => n + r.items.length, 0), retryInMs: delay, attempt: backoff.attempts });
        if (backoff.attempts >= attemptsWhenClosing) {
          for (const { b } of round.filter((r) => r.b.isClosing)) b.fail(new Error(`storage write failed: ${(err as Error).message}`));
          round.splice(0, round.length, ...round.filter((r) => !r.b.isClosing));
        }
        await new Promise((r) => setTimeout(r, delay));
      }
    }
  }
}
