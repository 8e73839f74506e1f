// One watcher: its filter (with selector transitions), a bounded outgoing queue, its
// bookmark and deadline timers. It is the Readable the HTTP layer pipes to the response:
// one chunk per event (a whole line, never split), ending cleanly at the deadline, when
// closed, or after an ERROR event. A live watcher whose queue overflows is closed (the
// client re-watches from the last rv it received), so a slow client cannot grow memory.
import { Readable } from 'node:stream';
import { StatusError } from '../../kube/status.ts';
import { kindOf, kindsOf } from '../../storage/collection.ts';
import { filtersBeyondKeys, objectMatches } from '../../storage/filters.ts';
import type { ListQuery } from '../../storage/types.ts';
import { bookmarkEvent, errorEvent, type ChangeEvent, type Encoder, type OutEvent } from './encode.ts';

/** The watch parameters, already validated (see params.ts). */
export interface WatchOptions {
  /** undefined: unset; 0: "0"; N > 0: from rv N, exclusive. */
  resourceVersion?: number;
  /** Watch-list: undefined when not given. true needs allowWatchBookmarks. */
  sendInitialEvents?: boolean;
  allowWatchBookmarks?: boolean;
  /** Seconds; undefined or 0: the hub's bounded default. */
  timeoutSeconds?: number;
}

/** One watch, as the HTTP layer hands it to the hub. */
export interface WatchRequest {
  /** Resource and filters (clusters, namespaces, names, ownerUIDs, label and field selectors); paging fields are ignored. */
  query: ListQuery;
  /** Kind and apiVersion of the resource, for BOOKMARK objects (e.g. 'Pod', 'v1'). */
  kind: string;
  apiVersion: string;
  options: WatchOptions;
  /** Output format of every event; its bytes are shared with every watcher of the same encoder id. */
  encoder: Encoder;
  /** Output format of the first event only (e.g. a Table with columnDefinitions). */
  firstEncoder?: Encoder;
}

export interface WatcherLimits {
  /** Queue bound, bytes (default 8 MiB). */
  maxQueueBytes: number;
  /** Queue bound, events (default 10,000). */
  maxQueueEvents: number;
  bookmarkIntervalMs: number;
  /** The last bookmark goes this long before the deadline (default 2 s). */
  preDeadlineBookmarkMs: number;
}

export type WatcherState = 'starting' | 'replay' | 'live' | 'closed';

export type CloseReason = 'timeout' | 'slow' | 'error' | 'closed' | 'client' | 'shutdown';

/** What a watcher needs from its hub. */
export interface WatcherHost {
  /** The newest rv the hub has dispatched. */
  readonly rv: number;
  unregister(w: Watcher): void;
  sent(n: number): void;
  closedSlow(): void;
}

export class Watcher extends Readable {
  state: WatcherState = 'starting';
  /** The last rv this watcher has processed (sent or filtered out). */
  cursor = 0;
  /** Whether its catch-up read the change log (counted once per watch). */
  replayedFromLog = false;
  /** Why it ended, once it has. */
  closeReason: CloseReason | undefined;
  readonly query: ListQuery;
  readonly deadline: number;
  private readonly needsObject: boolean;
  private queue: Buffer[] = [];
  private queueHead = 0;
  private queued = 0;
  private wantsData = false;
  private ending = false;
  private firstSent = false;
  private readonly timers: NodeJS.Timeout[] = [];
  private drainWaiters: Array<() => void> = [];
  private preDeadlineSent = false;
  /** Sent events since the last flush(). */
  private unflushed = false;
  /** The hub's last dispatch that sent this watcher an event. */
  dispatchSeq = 0;

  constructor(
    private readonly host: WatcherHost,
    readonly request: WatchRequest,
    timeoutMs: number,
    private readonly limits: WatcherLimits,
  ) {
    super({ highWaterMark: 16 * 1024 });
    this.query = request.query;
    const q = request.query;
    this.needsObject = filtersBeyondKeys(q) || kindsOf(q).some((k) => k.bare);
    timeoutMs = Math.min(Math.max(0, timeoutMs), MAX_TIMER_MS); // setTimeout fires at once beyond 2^31-1 ms
    this.deadline = Date.now() + timeoutMs;
    this.timers.push(setTimeout(() => this.close('timeout'), timeoutMs));
    if (request.options.allowWatchBookmarks) this.scheduleBookmark();
  }

  /**
   * The hub's dispatch is over: a watcher that was sent events since the last one emits
   * 'flush', and the HTTP layer writes them to its socket now (apiserver/endpoints/watch-response.ts),
   * one write for all of them. Returns whether it had any.
   */
  flush(): boolean {
    if (!this.unflushed) return false;
    this.unflushed = false;
    this.emit('flush');
    return true;
  }

  get isClosed(): boolean {
    return this.state === 'closed';
  }

  /** Bytes waiting in this watcher's queue (not yet taken by the consumer). */
  get queuedBytes(): number {
    return this.queued;
  }

  get queuedEvents(): number {
    return this.queue.length - this.queueHead;
  }

  /** The event this change is for this watcher (selector transitions), or null. */
  transition(ev: ChangeEvent): 'ADDED' | 'MODIFIED' | 'DELETED' | null {
    const c = ev.change;
    const q = this.query;
    if (!kindOf(q, c.group, c.resource)) return null; // a collection: any of its kinds
    if (q.clusters && !q.clusters.includes(c.cluster)) return null;
    if (q.namespaces && !q.namespaces.includes(c.namespace)) return null;
    if (q.names && !q.names.includes(c.name)) return null;
    // Only key fields filter: they never change, so the change passes as it is.
    if (!this.needsObject) return c.type;
    const prev = ev.prev();
    const now = c.type !== 'DELETED' && objectMatches(q, c, ev.object());
    const before = prev !== null ? objectMatches(q, c, prev) : c.type === 'DELETED' && objectMatches(q, c, ev.object());
    if (now && before) return c.type === 'ADDED' ? 'ADDED' : 'MODIFIED';
    if (now) return 'ADDED';
    if (before) return 'DELETED';
    return null;
  }

  /** A change from live dispatch or replay, in rv order; duplicates (rv ≤ cursor) are dropped. Returns whether an event was sent. */
  offer(ev: ChangeEvent): boolean {
    if (this.state === 'closed' || ev.rv <= this.cursor) return false;
    this.cursor = ev.rv;
    const t = this.transition(ev);
    return t !== null && this.send(ev.as(t));
  }

  /** Queues one event. A live watcher over its bounds is closed as slow. */
  send(ev: OutEvent): boolean {
    if (this.state === 'closed' || this.ending) return false;
    const encoder = !this.firstSent && this.request.firstEncoder ? this.request.firstEncoder : this.request.encoder;
    this.firstSent = true;
    const buf = ev.bytes(encoder);
    this.host.sent(1);
    this.unflushed = true;
    if (this.wantsData && this.queuedEvents === 0) {
      this.wantsData = this.push(buf);
      return true;
    }
    this.queue.push(buf);
    this.queued += buf.length;
    if (this.state === 'live' && (this.queued > this.limits.maxQueueBytes || this.queuedEvents > this.limits.maxQueueEvents)) {
      this.host.closedSlow();
      this.close('slow');
      return false;
    }
    return true;
  }

  /** Whether a replay should wait for the consumer before queueing more. */
  get pressured(): boolean {
    return this.queued > this.limits.maxQueueBytes / 2 || this.queuedEvents > this.limits.maxQueueEvents / 2;
  }

  /** Resolves once the queue is below half its bounds, or the watcher is closed. */
  drained(): Promise<void> {
    if (!this.pressured || this.isClosed) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  /** Sends an ERROR event with the error's Status, then ends. */
  fail(err: unknown): void {
    if (this.isClosed) return;
    const status =
      err instanceof StatusError
        ? err.toStatus()
        : new StatusError('InternalError', `Internal error occurred: ${err instanceof Error ? err.message : String(err)}`).toStatus();
    // An error supersedes whatever is still queued only if the queue is full; otherwise it follows it.
    if (this.queued > this.limits.maxQueueBytes) this.dropQueue();
    if (this.state === 'live') this.state = 'replay'; // the ERROR event must not trip the slow-watcher close
    this.send(errorEvent(status));
    this.close('error');
  }

  /** Ends the stream cleanly after what is queued (a slow watcher's queue is dropped first). */
  close(reason: CloseReason = 'closed'): void {
    if (this.isClosed) return;
    this.closeReason = reason;
    this.state = 'closed';
    for (const t of this.timers) clearTimeout(t);
    this.timers.length = 0;
    this.host.unregister(this);
    if (reason === 'slow') this.dropQueue();
    this.ending = true;
    this.resolveDrain(true);
    if (this.queuedEvents === 0) this.push(null);
    else if (this.wantsData) this._read();
  }

  override _read(): void {
    this.wantsData = true;
    while (this.queueHead < this.queue.length) {
      const buf = this.queue[this.queueHead];
      this.queue[this.queueHead] = EMPTY;
      this.queueHead++;
      this.queued -= buf.length;
      if (!this.push(buf)) {
        this.wantsData = false;
        break;
      }
    }
    if (this.queueHead === this.queue.length) {
      this.queue = [];
      this.queueHead = 0;
    } else if (this.queueHead > 1024) {
      this.queue = this.queue.slice(this.queueHead);
      this.queueHead = 0;
    }
    this.resolveDrain(false);
    if (this.ending && this.queuedEvents === 0) this.push(null);
  }

  override _destroy(err: Error | null, callback: (error?: Error | null) => void): void {
    if (!this.isClosed) {
      this.closeReason = 'client';
      this.state = 'closed';
      for (const t of this.timers) clearTimeout(t);
      this.timers.length = 0;
      this.host.unregister(this);
    }
    this.dropQueue();
    this.resolveDrain(true);
    callback(err);
  }

  private dropQueue(): void {
    this.queue = [];
    this.queueHead = 0;
    this.queued = 0;
  }

  private resolveDrain(all: boolean): void {
    if (this.drainWaiters.length === 0 || (!all && this.pressured)) return;
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const w of waiters) w();
  }

  /** The rv a bookmark can carry: everything up to it has been processed. */
  private progressRv(): number {
    return this.state === 'live' ? Math.max(this.cursor, this.host.rv) : this.cursor;
  }

  /** Sends a BOOKMARK now (when streaming: not before the initial events are out). */
  bookmark(annotations?: Record<string, string>): void {
    if (this.state !== 'live' && this.state !== 'replay' && !annotations) return;
    const rv = annotations ? this.cursor : this.progressRv();
    this.send(bookmarkEvent(this.request.kind, this.request.apiVersion, rv, annotations));
  }

  // As kube-apiserver's cacheWatcher: about every bookmarkInterval, and once
  // preDeadlineBookmarkMs before the deadline; none when that moment has passed.
  private scheduleBookmark(): void {
    if (this.isClosed) return;
    const now = Date.now();
    let at = now + this.limits.bookmarkIntervalMs;
    const pre = this.deadline - this.limits.preDeadlineBookmarkMs;
    let isPre = false;
    if (pre < at) {
      if (this.preDeadlineSent || pre < now) return;
      at = pre;
      isPre = true;
    }
    const t = setTimeout(() => {
      const i = this.timers.indexOf(t);
      if (i >= 0) this.timers.splice(i, 1);
      if (isPre) this.preDeadlineSent = true;
      this.bookmark();
      this.scheduleBookmark();
    }, at - now);
    this.timers.push(t);
  }
}

const EMPTY = Buffer.alloc(0);
const MAX_TIMER_MS = 2 ** 31 - 1;
