// The window: the most recent changes in memory, bounded by count and bytes, so watches that
// start at a recent rv are served without a query. It covers the rvs (startRv, endRv]:
// every change in that range is held, in rv order.

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
  /** At most about this many bytes (default 64 MiB). */
  maxBytes?: number;
}

export class Window<T extends WindowItem> {
  private items: T[] = [];
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
    this.maxBytes = Math.max(1, opts.maxBytes ?? 64 * 1024 * 1024);
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
      const old = this.items[this.head];
      old.onResize = undefined;
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
    return this.items.slice(from, to);
  }
}
