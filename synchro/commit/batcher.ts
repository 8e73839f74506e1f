// One cluster's queue of events on their way to storage: bounded (push() makes the producer
// wait — the reflector stops reading its watch stream — instead of growing), committed in
// the order pushed (so order per object holds), under the cluster's lease. The process's
// Committer takes what every queue holds and writes it in one transaction (group commit);
// this queue keeps the bookkeeping: flushes, backpressure, metrics, what happens when
// storage fences the cluster, and the cluster's quarantine: objects whose event storage
// refused for its content (the committer found it by splitting the round), kept out of
// storage until a newer version of them arrives.
import type { Logger } from '../../lib/log.ts';
import type { FencedError, Fence } from '../../storage/leases.ts';
import type { Identity } from '../../storage/sql-values.ts';
import { describeWriteError } from '../../storage/write-errors.ts';
import type { BatchResult, UpstreamEvent } from '../../storage/types.ts';
import type { SynchroMetrics } from '../metrics/metrics.ts';
import { resourceLabel } from '../cluster/resources.ts';

export interface BatcherOptions {
  /** Events per transaction at most (all clusters of the process together). */
  maxEvents: number;
  /** Bytes (of upstream JSON) per transaction at most. */
  maxBytes: number;
  /** push() makes the producer wait while more than this many events are queued... */
  highWaterEvents: number;
  /** ...or more than this many bytes. */
  highWaterBytes: number;
}

export function defaultBatcherOptions(dialect: 'sqlite' | 'postgres'): BatcherOptions {
  return dialect === 'sqlite'
    ? { maxEvents: 500, maxBytes: 8 << 20, highWaterEvents: 2000, highWaterBytes: 32 << 20 }
    : { maxEvents: 500, maxBytes: 8 << 20, highWaterEvents: 4000, highWaterBytes: 32 << 20 };
}

/** Called after each commit (benchmarks measure upstream-to-commit lag with it). */
export type CommitHook = (cluster: string, events: UpstreamEvent[], receivedAt: number[], committedAt: number) => void;

export interface BatcherHooks {
  onCommit?: CommitHook;
  /** The cluster lease this batcher writes under: every batch carries it. */
  fence: Fence;
  /** Storage refused a batch because the lease moved on: the batcher has stopped, its queue dropped. */
  onFenced?: (err: FencedError) => void;
  /** The set of quarantined objects changed. */
  onQuarantine?: () => void;
}

/** An object whose latest version storage refused: which one (never its content), and why. */
export interface QuarantinedObject extends Omit<Identity, 'cluster'> {
  /** The storage error's kind and code, or Panoptes' own reason (no values). */
  reason: string;
  since: string;
}

/** Objects kept in quarantine per cluster at most; the oldest is let go first (and tried again when it comes by). */
const maxQuarantined = 1000;

/** A member-given identity value as logs and status show it: at most 253 characters (a name's limit), then how long it was. */
export const clip = (s: string): string => (s.length <= 253 ? s : `${s.slice(0, 253)}… (${s.length} characters)`);

const quarantineKey = (e: UpstreamEvent): string => `${e.group}\u0000${e.resource}\u0000${e.object.metadata?.namespace ?? ''}\u0000${e.object.metadata?.name ?? ''}`;

export interface Item {
  event: UpstreamEvent;
  bytes: number;
  /** performance.now() when received from the cluster. */
  receivedAt: number;
  seq: number;
}

/**
 * What drains the queues: the process's Committer (committer.ts). The queue knows only this much
 * of it, so the committer depends on the queue and not the reverse.
 */
export interface CommitLoop {
  register(b: Batcher): void;
  unregister(b: Batcher): void;
  /** Events were queued (or the queue closed): commit them. */
  wake(): void;
}

export class Batcher {
  private queue: Item[] = [];
  private head = 0;
  private queuedBytes = 0;
  private seq = 0;
  private committedSeq = 0;
  private flushWaiters: Array<{ seq: number; resolve: () => void; reject: (err: Error) => void }> = [];
  private spaceWaiters: Array<() => void> = [];
  private closing = false;
  private failed?: Error;
  private readonly quarantine = new Map<string, QuarantinedObject>();

  constructor(
    private readonly committer: CommitLoop,
    readonly cluster: string,
    private readonly opts: BatcherOptions,
    private readonly metrics: SynchroMetrics,
    private readonly log: Logger,
    private readonly hooks: BatcherHooks,
  ) {
    committer.register(this);
  }

  get size(): number {
    return this.queue.length - this.head;
  }

  get fence(): Fence {
    return this.hooks.fence;
  }

  /** Closed: waiting for its last events to commit (the committer gives up on them after a few failures). */
  get isClosing(): boolean {
    return this.closing;
  }

  /** Failed (fenced, or given up while closing): nothing more of it is written. */
  get isFailed(): boolean {
    return this.failed !== undefined;
  }

  /** The objects in quarantine, oldest first. */
  get quarantined(): QuarantinedObject[] {
    return [...this.quarantine.values()];
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
    if (this.closing) throw new Error(`batcher of cluster ${this.cluster} is closed`);
    this.queue.push({ event, bytes, receivedAt, seq: ++this.seq });
    this.queuedBytes += bytes;
    this.committer.wake();
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
      this.committer.wake();
    });
  }

  /** Commits what is queued, then leaves the committer. */
  async close(): Promise<void> {
    this.closing = true;
    await this.flush().catch(() => undefined);
    this.committer.unregister(this);
    for (const w of this.spaceWaiters.splice(0)) w();
    this.forgetQuarantine();
  }

  /** This queue's quarantine ends with it (a new owner of the cluster finds those objects again, once). */
  private forgetQuarantine(): void {
    if (this.quarantine.size === 0) return;
    this.quarantine.clear();
    this.metrics.quarantinedObjects.set({ cluster: this.cluster }, 0);
  }

  // --- the committer's side

  /** The oldest queued events, up to the limits (at least one). */
  take(maxEvents: number, maxBytes: number): Item[] {
    const out: Item[] = [];
    let bytes = 0;
    while (this.head < this.queue.length && out.length < maxEvents) {
      const it = this.queue[this.head];
      if (out.length > 0 && bytes + it.bytes > maxBytes) break;
      out.push(it);
      bytes += it.bytes;
      this.head++;
    }
    // Taken items leave the array: all at once when it is drained (an idle queue would
    // otherwise keep up to 4,096 events, objects included, until the next one arrives),
    // or in one copy once they are most of a long queue.
    if (this.head === this.queue.length) {
      this.queue = [];
      this.head = 0;
    } else if (this.head > 4096 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    return out;
  }

  /** `items` (taken earlier) committed as `result`; `startedAt`/`now` bracket the transaction (performance.now()). */
  committed(items: Item[], result: BatchResult, startedAt: number, now: number): void {
    const c = { cluster: this.cluster };
    this.metrics.batchDuration.observe(c, (now - startedAt) / 1000);
    this.metrics.batchSize.observe(c, items.length);
    this.metrics.rvLockWait.observe(c, result.lockWaitMs / 1000);
    for (const b of items) this.metrics.lag.observe(c, (now - b.receivedAt) / 1000);
    for (const ch of result.changes) this.metrics.eventsApplied.inc({ cluster: this.cluster, resource: resourceLabel(ch), type: ch.type });
    this.hooks.onCommit?.(this.cluster, items.map((b) => b.event), items.map((b) => b.receivedAt), now);
    this.done(items);
  }

  /**
   * Whether `event` is the quarantined version of its object, which storage is not asked for
   * again (a relist or a replayed watch brings it back). Any other event of a quarantined
   * object (a newer version, a delete) lifts the quarantine and is written as usual.
   */
  held(event: UpstreamEvent): boolean {
    if (this.quarantine.size === 0) return false;
    const key = quarantineKey(event);
    const q = this.quarantine.get(key);
    if (!q) return false;
    const md = event.object.metadata ?? {};
    if (event.type !== 'DELETED' && event.version === q.version && (md.uid ?? '') === q.uid && (md.resourceVersion ?? '') === q.upstreamRv) return true;
    this.quarantine.delete(key);
    this.metrics.quarantinedObjects.set({ cluster: this.cluster }, this.quarantine.size);
    this.log.info('a newer version of a quarantined object arrived; storing it is tried again', this.describe(q));
    this.hooks.onQuarantine?.();
    return false;
  }

  /** Storage refused `item`'s event on its own (for its content): it is set aside, the object quarantined, and the queue goes on. */
  setAside(item: Item, err: unknown): void {
    const e = item.event;
    const md = e.object.metadata ?? {};
    const { error } = describeWriteError(err);
    const q: QuarantinedObject = { group: e.group, version: e.version, resource: e.resource, namespace: md.namespace ?? '', name: md.name ?? '', uid: md.uid ?? '', upstreamRv: md.resourceVersion ?? '', reason: error, since: new Date().toISOString() };
    const key = quarantineKey(e);
    this.quarantine.delete(key);
    this.quarantine.set(key, q);
    if (this.quarantine.size > maxQuarantined) this.quarantine.delete(this.quarantine.keys().next().value!);
    this.metrics.quarantinedEvents.inc({ cluster: this.cluster, resource: resourceLabel(e) });
    this.metrics.quarantinedObjects.set({ cluster: this.cluster }, this.quarantine.size);
    this.log.error('storage refused an object; it is quarantined until a newer version of it arrives, and everything else is written', this.describe(q));
    this.done([item]);
    this.hooks.onQuarantine?.();
  }

  private describe(q: QuarantinedObject): Record<string, string> {
    return { resource: resourceLabel(q), namespace: clip(q.namespace), name: clip(q.name), uid: clip(q.uid), upstreamResourceVersion: clip(q.upstreamRv), reason: q.reason };
  }

  /** `items` are through: committed, or set aside. */
  private done(items: Item[]): void {
    if (items.length === 0) return;
    const c = { cluster: this.cluster };
    for (const b of items) this.queuedBytes -= b.bytes;
    this.committedSeq = Math.max(this.committedSeq, items[items.length - 1].seq);
    this.metrics.queued.set(c, this.size);
    if (this.flushWaiters.length) {
      const ready = this.flushWaiters.filter((w) => w.seq <= this.committedSeq);
      this.flushWaiters = this.flushWaiters.filter((w) => w.seq > this.committedSeq);
      for (const w of ready) w.resolve();
    }
    if (this.spaceWaiters.length && (!this.full || this.closing)) for (const w of this.spaceWaiters.splice(0)) w();
  }

  /** Storage fenced this cluster's writes: another process owns it now; nothing of ours may be written, ever. */
  fenced(err: FencedError, items: number): void {
    this.metrics.fencedBatches.inc({ cluster: this.cluster });
    this.log.warn('batch fenced: the cluster lease moved on; this process stops writing for it', { events: items, queued: this.size, reason: err.message });
    this.fail(err);
    this.hooks.onFenced?.(err);
  }

  /** Gives up: what is queued is dropped, flushes reject, producers stop waiting (and push() throws). */
  fail(err: Error): void {
    this.failed = err;
    this.closing = true;
    this.forgetQuarantine();
    this.queue = [];
    this.head = 0;
    this.queuedBytes = 0;
    this.metrics.queued.set({ cluster: this.cluster }, 0);
    for (const w of this.flushWaiters.splice(0)) w.reject(err);
    for (const w of this.spaceWaiters.splice(0)) w();
    this.committer.unregister(this);
  }
}
