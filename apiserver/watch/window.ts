// The window: the most recent changes in memory, bounded by count and bytes, so watches that
// start at a recent rv are served without a query. It covers the rvs (startRv, endRv]:
// every change in that range is held, in rv order.
import { getHeapStatistics } from 'node:v8';

export interface WindowItem {
  readonly rv: number;
  /** Bytes held now; it may grow while held (cached encodings), reported through onResize. */
  readonly size: number;
  /** Set by the window while it holds the item: call it with the growth in bytes. */
  onResize?: ((delta: number) => void) | undefined;
}

export interface WindowOptions {
  /** At most this many changes (default 10,000). */
  maxEvents?: number;
  /** At most about this many bytes (default: defaultWindowBytes()). */
  maxBytes?: number;
}

const MiB = 1024 * 1024;

/**
 * The default byte bound: 1/64 of the V8 heap limit, between 4 and 16 MiB. The heap limit is
 * the replica's size as Node sees it: a quarter of the container's memory limit by default
 * (Node sizes V8's heap from the cgroup limit, nodejs/node#27508), or --max-old-space-size.
 * So a pod limited to 1 GiB (manifests/apiserver.yaml) keeps about 4 MiB of recent changes, and
 * 16 MiB is reached from a 4 GiB limit up. kube-apiserver's watch cache bounds its history by
 * count only (100 to 100 × 1024 events, sized to hold the last 75 s, watch_cache.go) and shares
 * the objects with its store; ours holds texts and encodings of its own, so it is bounded in
 * bytes as well. A watch from an rv older than the window reads the change log instead (a
 * query, not an error), so a small window costs queries, never correctness.
 */
export function defaultWindowBytes(heapLimit = getHeapStatistics().heap_size_limit): number {
  return Math.min(16 * MiB, Math.max(4 * MiB, Math.floor(heapLimit / 64)));
}

export class Window<T extends WindowItem> {
  /** Held items from `head` on; the slots before it are evicted (emptied, so that nothing keeps them). */
  private items: Array<T | undefined> = [];
  private head = 0;
  private bytesHeld = 0;
  private start: number;
  private end: number;
  readonly maxEvents: number;
  readonly maxBytes: number;

  /** An empty window at `rv`: it covers (rv, rv]. */
  constructor(rv: number, opts: WindowOptions = {}) {
    this.start = rv;
    this.end = rv;
    this.maxEvents = Math.max(1, opts.maxEvents ?? 10_000);
    this.maxBytes = Math.max(1, opts.maxBytes ?? defaultWindowBytes());
  }

  /** The rv just before the oldest change held: watches from here or later are covered. */
  get startRv(): number {
    return this.start;
  }

  /** The newest rv held (or the rv the window was created at). */
  get endRv(): number {
    return this.end;
  }

  get length(): number {
    return this.items.length - this.head;
  }

  get bytes(): number {
    return this.bytesHeld;
  }

  /**
   * Appends a change; its rv must be endRv + 1 (rvs have no holes). Evicts the oldest beyond
   * the bounds (the newest change is always kept, however large).
   */
  push(item: T): void {
    if (item.rv !== this.end + 1) throw new Error(`window: rv ${item.rv} does not follow ${this.end}`);
    this.items.push(item);
    this.end = item.rv;
    this.bytesHeld += item.size;
    item.onResize = (delta) => {
      this.bytesHeld += delta;
      this.evict();
    };
    this.evict();
  }

  /** Drops the oldest items beyond the bounds (the newest is always kept, however large). */
  private evict(): void {
    while (this.length > 1 && (this.length > this.maxEvents || this.bytesHeld > this.maxBytes)) {
      const old = this.items[this.head]!;
      old.onResize = undefined;
      // The slot is emptied now, not when the array is next compacted: until then it would
      // keep the change and its encodings, up to as many as the window holds, beyond its bounds.
      this.items[this.head] = undefined;
      this.head++;
      this.bytesHeld -= old.size;
      this.start = old.rv;
    }
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
  }

  /**
   * The changes with rv > `rv`, oldest first, if the window covers `rv`; undefined when
   * `rv` is older than the window (read it from the change log) or newer than its end (wait).
   * At most `limit` changes.
   */
  since(rv: number, limit = Infinity): T[] | undefined {
    if (rv < this.start || rv > this.end) return undefined;
    const from = this.head + (rv - this.start);
    const to = Math.min(this.items.length, from + limit);
    return this.items.slice(from, to) as T[];
  }
}
