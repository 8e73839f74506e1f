// Batched writes of one cluster's events to storage: one transaction per batch, cut by
// count, size and a few milliseconds of linger; events committed in the order pushed (so
// order per object holds); a bounded queue whose push() makes the producer wait (the
// reflector stops reading its watch stream) instead of growing; retries with backoff.
import type { Logger } from '../lib/log.ts';
import type { Store } from '../storage/store.ts';
import { FencedError, type Fence } from '../storage/leases.ts';
import type { UpstreamEvent } from '../storage/types.ts';
import { Backoff } from './backoff.ts';
import type { SynchroMetrics } from './metrics.ts';
import { resourceLabel } from './resources.ts';

export interface BatcherOptions {
  /** Events per batch at most. */
  maxEvents: number;
  /** Bytes (of upstream JSON) per batch at most. */
  maxBytes: number;
  /** How long the first event of a batch waits for company. */
  lingerMs: number;
  /** push() makes the producer wait while more than this many events are queued... */
  highWaterEvents: number;
  /** ...or more than this many bytes. */
  highWaterBytes: number;
}

export function defaultBatcherOptions(dialect: 'sqlite' | 'postgres'): BatcherOptions {
  return dialect === 'sqlite'
    ? { maxEvents: 500, maxBytes: 8 << 20, lingerMs: 5, highWaterEvents: 2000, highWaterBytes: 32 << 20 }
    : { maxEvents: 500, maxBytes: 8 << 20, lingerMs: 5, highWaterEvents: 4000, highWaterBytes: 32 << 20 };
}

/** Called after each commit (benchmarks measure upstream-to-commit lag with it). */
export type CommitHook = (cluster: string, events: UpstreamEvent[], receivedAt: number[], committedAt: number) => void;

export interface BatcherHooks {
  onCommit?: CommitHook;
  /** The cluster lease this batcher writes under: every batch carries it. */
  fence?: Fence;
  /** Storage refused a batch because the lease moved on: the batcher has stopped, its queue dropped. */
  onFenced?: (err: FencedError) => void;
}

interface Item {
  event: UpstreamEvent;
  bytes: number;
  /** performance.now() when received from the cluster. */
  receivedAt: number;
  seq: number;
}

export class Batcher {
  private queue: Item[] = [];
  private head = 0;
  private queuedBytes = 0;
  private seq = 0;
  private committedSeq = 0;
  private flushWaiters: Array<{ seq: number; resolve: () => void; reject: (err: Error) => void }> = [];
  private spaceWaiters: Array<() => void> = [];
  private wakeLoop?: () => void;
  private stopped = false;
  private failed?: Error;
  private readonly loop: Promise<void>;

  constructor(
    private readonly store: Store,
    readonly cluster: string,
    private readonly opts: BatcherOptions,
    private readonly metrics: SynchroMetrics,
    private readonly log: Logger,
    private readonly hooks: BatcherHooks = {},
  ) {
    this.loop = this.run();
  }

  get size(): number {
    return this.queue.length - this.head;
  }

  private get full(): boolean {
    return this.size >= this.opts.highWaterEvents || this.queuedBytes >= this.opts.highWaterBytes;
  }

  /**
   * Queues an event. Returns undefined when there is room, or a promise that resolves once
   * the queue has drained below its high-water mark: the caller awaits it before reading on.
   */
  push(event: UpstreamEvent, bytes: number, receivedAt = performance.now()): Promise<void> | undefined {
    if (this.failed) throw this.failed;
    if (this.stopped) throw new Error(`batcher of cluster ${this.cluster} is stopped`);
    this.queue.push({ event, bytes, receivedAt, seq: ++this.seq });
    this.queuedBytes += bytes;
    if (this.wakeLoop && (this.size >= this.opts.maxEvents || this.size === 1)) this.wakeLoop();
    if (!this.full) return undefined;
    this.metrics.queued.set({ cluster: this.cluster }, this.size);
    return new Promise((resolve) => this.spaceWaiters.push(resolve));
  }

  /** Resolves when every event pushed so far is committed. */
  flush(): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    if (this.committedSeq >= this.seq) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.flushWaiters.push({ seq: this.seq, resolve, reject });
      this.wakeLoop?.();
    });
  }

  /** Commits what is queued, then stops. */
  async close(): Promise<void> {
    this.stopped = true;
    this.wakeLoop?.();
    await this.loop;
  }

  private wait(ms?: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = ms === undefined ? undefined : setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wakeLoop = () => {
        this.wakeLoop = undefined;
        done();
      };
    });
  }

  private take(): Item[] {
    const out: Item[] = [];
    let bytes = 0;
    while (this.head < this.queue.length && out.length < this.opts.maxEvents) {
      const it = this.queue[this.head];
      if (out.length > 0 && bytes + it.bytes > this.opts.maxBytes) break;
      out.push(it);
      bytes += it.bytes;
      this.head++;
    }
    if (this.head > 4096 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    return out;
  }

  private async run(): Promise<void> {
    for (;;) {
      if (this.size === 0) {
        if (this.stopped) break;
        await this.wait();
        continue;
      }
      // Linger for company unless a batch is full, someone waits for a flush, or we stop.
      const age = performance.now() - this.queue[this.head].receivedAt;
      if (this.size < this.opts.maxEvents && age < this.opts.lingerMs && this.flushWaiters.length === 0 && !this.stopped && !this.full) {
        await this.wait(this.opts.lingerMs - age);
        continue;
      }
      const batch = this.take();
      const ok = await this.write(batch);
      if (!ok) break;
    }
  }

  /** Writes one batch, retrying until it commits; false when stopped while failing. */
  private async write(batch: Item[]): Promise<boolean> {
    const events = batch.map((b) => b.event);
    const backoff = new Backoff({ initialMs: 100, maxMs: 10_000 });
    for (;;) {
      const started = performance.now();
      try {
        const result = await this.store.applyBatch(this.cluster, events, { fence: this.hooks.fence });
        const now = performance.now();
        this.metrics.batchDuration.observe({ cluster: this.cluster }, (now - started) / 1000);
        this.metrics.batchSize.observe({ cluster: this.cluster }, batch.length);
        this.metrics.rvLockWait.observe({ cluster: this.cluster }, result.lockWaitMs / 1000);
        for (const b of batch) this.metrics.lag.observe({ cluster: this.cluster }, (now - b.receivedAt) / 1000);
        for (const c of result.changes) this.metrics.eventsApplied.inc({ cluster: this.cluster, resource: resourceLabel(c), type: c.type });
        this.hooks.onCommit?.(this.cluster, events, batch.map((b) => b.receivedAt), now);
        this.committed(batch);
        return true;
      } catch (err) {
        if (err instanceof FencedError) {
          // Another process owns this cluster now: nothing of ours may be written, ever.
          this.metrics.fencedBatches.inc({ cluster: this.cluster });
          this.log.warn('batch fenced: the cluster lease moved on; this process stops writing for it', { events: batch.length, queued: this.size, reason: err.message });
          this.fail(err);
          this.hooks.onFenced?.(err);
          return false;
        }
        this.metrics.errors.inc({ cluster: this.cluster, kind: 'storage' });
        const delay = backoff.next();
        this.log.error('storage write failed; retrying', { err: err as Error, events: batch.length, retryInMs: delay, attempt: backoff.attempts });
        if (this.stopped && backoff.attempts >= 3) {
          this.fail(new Error(`storage write failed: ${(err as Error).message}`));
          return false;
        }
        await new Promise((r) => setTimeout(r, delay));
      }
    }
  }

  /** Gives up: what is queued is dropped, flushes reject, producers stop waiting (and push() throws). */
  private fail(err: Error): void {
    this.failed = err;
    this.stopped = true;
    this.queue = [];
    this.head = 0;
    this.queuedBytes = 0;
    this.metrics.queued.set({ cluster: this.cluster }, 0);
    for (const w of this.flushWaiters.splice(0)) w.reject(err);
    for (const w of this.spaceWaiters.splice(0)) w();
  }

  private committed(batch: Item[]): void {
    for (const b of batch) this.queuedBytes -= b.bytes;
    this.committedSeq = batch[batch.length - 1].seq;
    this.metrics.queued.set({ cluster: this.cluster }, this.size);
    if (this.flushWaiters.length) {
      const ready = this.flushWaiters.filter((w) => w.seq <= this.committedSeq);
      this.flushWaiters = this.flushWaiters.filter((w) => w.seq > this.committedSeq);
      for (const w of ready) w.resolve();
    }
    if (this.spaceWaiters.length && (!this.full || this.stopped)) for (const w of this.spaceWaiters.splice(0)) w();
  }
}
