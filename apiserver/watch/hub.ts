// The hub: one per process. It owns the poller and the window, indexes live watchers by
// group/resource → cluster|* → namespace|* so that a change visits only its candidate
// watchers, and starts each watch: a snapshot (synthetic ADDED) or a start rv, then a
// catch-up from the change log and/or the window, then live — without losing or repeating
// an event at the switch (see catchUp).
import type { Registry } from 'prom-client';
import { StatusError } from '../../kube/status.ts';
import { logger, type Logger } from '../../lib/log.ts';
import { traceMark, tracing } from '../../lib/trace.ts';
import { kindsOf } from '../../storage/collection.ts';
import { CompactedError, RvTooLargeError } from '../../storage/errors.ts';
import { listenForCommits, type CommitSubscription } from '../../storage/listen.ts';
import { ReadPool, type Freshness } from '../../storage/read-pool.ts';
import type { Store } from '../../storage/store.ts';
import type { Change, ListQuery } from '../../storage/types.ts';
import { ChangeEvent, OutEvent } from './encode.ts';
import { watchMetrics, type WatchMetrics } from './metrics.ts';
import { Poller, type PollerOptions } from './poller.ts';
import { Watcher, type WatcherHost, type WatcherLimits, type WatchRequest } from './watcher.ts';
import { Window, type WindowOptions } from './window.ts';

export interface HubOptions {
  poll?: PollerOptions;
  window?: WindowOptions;
  /** Changes loaded into the window at start, so resumes after a restart need no query (default 1,000). */
  prefill?: number;
  /** Per-watcher queue bounds: beyond them a live watcher is closed as slow (default 8 MiB, 10,000 events). */
  maxQueueBytes?: number;
  maxQueueEvents?: number;
  /** Periodic BOOKMARK interval (default 60 s) and the lead of the last one before the deadline (default 2 s). */
  bookmarkIntervalMs?: number;
  preDeadlineBookmarkMs?: number;
  /** Without timeoutSeconds a watch lasts this × a random factor in [1, 2), as kube-apiserver's min-request-timeout (default 1800). */
  defaultTimeoutSeconds?: number;
  /** How long a watch from an rv this process has not reached yet waits (default 3 s). */
  futureRvWaitMs?: number;
  /**
   * How long a watch whose start was read from storage (its snapshot, the most recent rv: committed
   * already) waits for this process's poller to reach it (default futureRvWaitMs plus the reads'
   * lagBoundMs: a standby that does not catch up by then is not read, and the poller reads the
   * primary).
   */
  catchUpWaitMs?: number;
  /** Changes per change-log page when a watch replays from storage (default 1,000). */
  replayPageSize?: number;
  /** Objects per page of a synthetic-ADDED snapshot (default 500). */
  listPageSize?: number;
  /** Metrics (default: registered once in `registry`, or prom-client's default registry). */
  metrics?: WatchMetrics;
  registry?: Registry;
  /** PostgreSQL LISTEN for commits of other processes (default true; no-op on SQLite). */
  listen?: boolean;
  /**
   * Where the watch engine reads (the change log, snapshots, the start rv): a ReadPool, over
   * standbys or not (storage/read-pool.ts); every start is read through its one consistent-read
   * path. Default: the store alone. Commit notifications still come from the store (the primary:
   * NOTIFY is not replayed on standbys), and with standbys they only wake the poller: a change
   * is handed to watchers once the database read has it.
   */
  reads?: HubReads;
  /** Told each batch of changes once it was dispatched (e.g. the catalog follows Cluster changes). */
  onDispatched?: (changes: readonly Change[]) => void;
  log?: Logger;
}

/** What the watch engine reads: the change log, and every start through the one consistent-read path. */
export type HubReads = Pick<ReadPool, 'read' | 'changesAfter' | 'meta' | 'hasStandbys' | 'lagBoundMs'>;

export interface HubStats {
  rv: number;
  watchers: number;
  live: number;
  windowStartRv: number;
  windowEvents: number;
  windowBytes: number;
  /** Watcher visits by live dispatch since start (what the index saves). */
  dispatchVisits: number;
  pollQueries: number;
  /** Changes delivered as commit notifications carried them, without a query. */
  notifiedChanges: number;
  pollerLag: number;
}

const ALL = '\u0000*';
const MAX_CATCHUP_STEPS = 1_000_000;
const MAX_SNAPSHOT_PAGES = 1_000_000;

type Index = Map<string, Map<string, Map<string, Set<Watcher>>>>;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class WatchHub implements WatcherHost {
  private window: Window<ChangeEvent>;
  private poller: Poller | undefined;
  private readonly index: Index = new Map();
  private readonly keys = new Map<Watcher, Array<[string, string, string]>>();
  private readonly all = new Set<Watcher>();
  private readonly waiters = new Set<{ rv: number; done: (ok: boolean) => void }>();
  private readonly dispatchListeners = new Set<(changes: readonly Change[]) => void>();
  private unsubscribeCommit: (() => void) | undefined;
  private listen: CommitSubscription | undefined;
  private started = false;
  private stopped = false;
  private visits = 0;
  /** Dispatches so far: a watcher sent events in one is flushed once at its end. */
  private dispatchSeq = 0;
  private readonly metrics: WatchMetrics;
  private readonly log: Logger;
  private readonly limits: WatcherLimits;
  private readonly reads: HubReads;

  constructor(
    private readonly store: Store,
    private readonly opts: HubOptions = {},
  ) {
    this.metrics = opts.metrics ?? watchMetrics(opts.registry);
    this.log = opts.log ?? logger('watch');
    this.reads = opts.reads ?? ReadPool.primaryOnly(store);
    this.window = new Window<ChangeEvent>(0, opts.window);
    this.limits = {
      maxQueueBytes: opts.maxQueueBytes ?? 8 * 1024 * 1024,
      maxQueueEvents: opts.maxQueueEvents ?? 10_000,
      bookmarkIntervalMs: opts.bookmarkIntervalMs ?? 60_000,
      preDeadlineBookmarkMs: opts.preDeadlineBookmarkMs ?? 2000,
    };
  }

  /** The newest rv dispatched: every change up to it has been offered to live watchers. */
  get rv(): number {
    return this.window.endRv;
  }

  /** Loads the window and starts the poller (and LISTEN on PostgreSQL). */
  async start(): Promise<void> {
    if (this.started) return;
    this.window = await this.prefill();
    this.poller = new Poller(
      this.reads,
      this.window.endRv,
      { onBatch: (changes) => this.dispatch(changes), onGap: (err) => this.gap(err) },
      this.metrics,
      { ...this.opts.poll, sourceMayLag: this.reads.hasStandbys },
      this.log.child({ part: 'poller' }),
    );
    // A change a commit of this process or a notification carried is the primary's: on other
    // reads (a standby that may not have replayed it yet) it is a wake-up only, so that nothing
    // reaches a watcher before a list or get on the same database can see it.
    const offer = !this.reads.hasStandbys;
    this.unsubscribeCommit = this.store.onCommit((rv, changes) => {
      if (tracing) traceMark('notified', changes[0]?.rv ?? rv, rv);
      if (offer && changes.length > 0) this.poller?.offerBatch(changes);
      else this.poller?.wake(rv);
    });
    if (this.opts.listen !== false)
      this.listen = listenForCommits(this.store.conn, (rv, change) => {
        if (tracing && Number.isFinite(change?.rv ?? rv)) traceMark('notified', change?.rv ?? rv, change?.rv ?? rv);
        return change && offer ? this.poller?.offer(change) : this.poller?.wake(change?.rv ?? rv);
      });
    this.started = true;
    this.poller.start();
    this.updateWindowMetrics();
  }

  /** Ends every watch cleanly and stops polling. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.unsubscribeCommit?.();
    await this.poller?.stop();
    await this.listen?.close();
    for (const w of [...this.all]) w.close('shutdown');
    for (const w of [...this.waiters]) w.done(false);
  }

  /**
   * Tells `listener` each batch of changes once it was dispatched to the watchers, in rv order
   * (e.g. a proxied write waits for its object's change); returns the unsubscribe.
   */
  onDispatch(listener: (changes: readonly Change[]) => void): () => void {
    this.dispatchListeners.add(listener);
    return () => this.dispatchListeners.delete(listener);
  }

  /** Wakes the poller (e.g. after a write this process made through another Store). */
  wake(): void {
    this.poller?.wake();
  }

  /**
   * Starts a watch. The returned Watcher is a Readable of encoded events (one chunk per
   * event) that ends cleanly at the deadline, on close(), after an ERROR event (410 for a
   * compacted rv; 504 ResourceVersionTooLarge for an rv not reached within futureRvWaitMs), or
   * when it cannot keep up. Parameters must be valid already (params.ts).
   */
  watch(req: WatchRequest): Watcher {
    if (!this.started || this.stopped) throw new StatusError('ServiceUnavailable', 'the watch engine is not running');
    const t = req.options.timeoutSeconds;
    const timeoutMs = t !== undefined && t > 0 ? t * 1000 : (this.opts.defaultTimeoutSeconds ?? 1800) * 1000 * (1 + Math.random());
    const arrived = performance.now();
    const w = new Watcher(this, req, timeoutMs, this.limits);
    this.all.add(w);
    this.metrics.watchers.inc();
    void this.begin(w, arrived);
    return w;
  }

  stats(): HubStats {
    let live = 0;
    for (const w of this.all) if (w.state === 'live') live++;
    return {
      rv: this.rv,
      watchers: this.all.size,
      live,
      windowStartRv: this.window.startRv,
      windowEvents: this.window.length,
      windowBytes: this.window.bytes,
      dispatchVisits: this.visits,
      pollQueries: this.poller?.queries ?? 0,
      notifiedChanges: this.poller?.notified ?? 0,
      pollerLag: this.poller?.lag ?? 0,
    };
  }

  // --- WatcherHost

  unregister(w: Watcher): void {
    this.deindex(w);
    if (this.all.delete(w)) this.metrics.watchers.dec();
  }

  sent(n: number): void {
    this.metrics.eventsSent.inc(n);
  }

  closedSlow(): void {
    this.metrics.watchersClosedSlow.inc();
  }

  // --- start of a watch

  /**
   * Where a watch starts, in kube's terms: without resourceVersion the most recent state (every
   * change committed before it arrived: the reads' consistent path, as a most-recent list),
   * with 0 any state, with N not older than N (reached by this process already).
   */
  private startOf(rv: number | undefined, arrived: number): Freshness {
    if (rv === undefined) return { kind: 'most-recent', since: arrived };
    if (rv === 0) return { kind: 'any' };
    return { kind: 'not-older-than', rv, orPrimary: true };
  }

  private async begin(w: Watcher, arrived: number): Promise<void> {
    const o = w.request.options;
    const rv = o.resourceVersion;
    const start = this.startOf(rv, arrived);
    try {
      let from: number;
      if (o.sendInitialEvents === true || (o.sendInitialEvents === undefined && (rv === undefined || rv === 0))) {
        // Synthetic ADDED from a snapshot as fresh as the start asks, then changes after it.
        if (o.sendInitialEvents && rv !== undefined && rv > 0) await this.awaitRv(rv);
        from = await this.snapshot(w, start);
        if (w.isClosed) return;
        w.cursor = from;
        if (o.sendInitialEvents) w.bookmark({ 'k8s.io/initial-events-end': 'true' });
      } else if (rv === undefined || rv === 0) {
        // sendInitialEvents=false without rv (or 0): from the most recent rv (or any).
        from = (await this.reads.read(start, (store, minRv) => store.watermark(minRv), this.futureRvWaitMs)).value;
      } else {
        await this.awaitRv(rv);
        from = rv;
      }
      if (w.isClosed) return;
      await this.catchUp(w, from);
    } catch (err) {
      if (!(err instanceof StatusError) && !this.stopped) this.log.warn('watch failed', { err: err as Error, query: `${w.query.group}/${w.query.resource}` });
      w.fail(err);
    }
  }

  private get futureRvWaitMs(): number {
    return this.opts.futureRvWaitMs ?? 3000;
  }

  /** Waits until this process has dispatched `rv`: 504 ResourceVersionTooLarge after `ms`. */
  private async awaitRv(rv: number, ms = this.futureRvWaitMs): Promise<void> {
    if (rv <= this.rv) return;
    if (await this.waitFor(rv, ms)) return;
    if (rv > this.rv) throw new RvTooLargeError(rv, this.rv);
  }

  private waitFor(rv: number, ms: number): Promise<boolean> {
    if (rv <= this.rv) return Promise.resolve(true);
    if (this.stopped || ms <= 0) return Promise.resolve(false);
    this.poller?.wake();
    return new Promise((resolve) => {
      const waiter = {
        rv,
        done: (ok: boolean) => {
          clearTimeout(timer);
          this.waiters.delete(waiter);
          resolve(ok);
        },
      };
      const timer = setTimeout(() => waiter.done(false), ms);
      this.waiters.add(waiter);
    });
  }

  /**
   * Sends every matching object as ADDED, from one snapshot as fresh as `start` asks; returns
   * its rv. Later pages are read where the first one was: on the primary when it served the
   * first (the standby did not catch up), else on a standby that has the first page's rv, or
   * the primary after the wait.
   */
  private async snapshot(w: Watcher, start: Freshness): Promise<number> {
    const base: ListQuery = { ...w.query, limit: this.opts.listPageSize ?? 500, continue: undefined, exactRv: undefined };
    let cont: string | undefined;
    let want = start;
    for (let i = 0; i < MAX_SNAPSHOT_PAGES; i++) {
      const q: ListQuery = cont ? { ...base, continue: cont } : base;
      const read = await this.reads.read(want, (store, minRv) => store.list(minRv === undefined ? q : { ...q, minRv }), this.futureRvWaitMs);
      const page = read.value;
      for (const item of page.items) {
        if (w.pressured) await w.drained();
        if (w.isClosed) return page.resourceVersion;
        w.send(new OutEvent('ADDED', item.object, item.rv, item.cluster));
      }
      if (!page.continue) return page.resourceVersion;
      cont = page.continue;
      // The token carries the first page's rv: the read checks it.
      want = read.primary ? { kind: 'primary' } : { kind: 'not-older-than', rv: undefined, orPrimary: true };
    }
    throw new StatusError('InternalError', 'snapshot has too many pages');
  }

  /**
   * From `from` (exclusive) to live. Each step serves the changes after the watcher's cursor
   * from the window when it covers the cursor (serveFromWindow, which also goes live), else
   * one page of the change log (replayFromLog). A cursor ahead of this process's poller (a
   * snapshot or most recent rv read from storage after the poller's last poll, or on the
   * primary while the poller reads a standby) waits for the poller: bounded (catchUpWaitMs),
   * then ERROR 504. A replay waits for a slow consumer instead of
   * overflowing its queue.
   */
  private async catchUp(w: Watcher, from: number): Promise<void> {
    w.cursor = from;
    w.state = 'replay';
    const page = this.opts.replayPageSize ?? 1000;
    for (let step = 0; step < MAX_CATCHUP_STEPS; step++) {
      if (w.isClosed || this.stopped) return;
      if (w.cursor > this.rv) {
        await this.awaitRv(w.cursor, this.opts.catchUpWaitMs ?? this.futureRvWaitMs + this.reads.lagBoundMs);
        continue;
      }
      const fromWindow = this.serveFromWindow(w, page);
      if (fromWindow === 'live') return;
      if (fromWindow === 'not covered') await this.replayFromLog(w, page);
      if (w.pressured) await w.drained();
    }
    w.close('closed');
  }

  /**
   * Offers the window's changes after the watcher's cursor (at most `limit`), and registers
   * the watcher for live dispatch once it has reached the hub's rv. Synchronous on purpose:
   * dispatch runs between awaits only, so no change can be dispatched between the window's
   * last event offered here and the registration; the first live change the watcher gets is
   * hub.rv + 1 — nothing lost, nothing twice. Never add an await to this method.
   */
  private serveFromWindow(w: Watcher, limit: number): 'live' | 'served' | 'not covered' {
    const recent = this.window.since(w.cursor, limit);
    if (!recent) return 'not covered';
    for (const ev of recent) {
      if (w.pressured || w.isClosed) break;
      w.offer(ev);
      ev.release();
    }
    if (w.isClosed || w.cursor !== this.rv) return 'served';
    w.state = 'live';
    this.register(w);
    return 'live';
  }

  /**
   * One page of the change log after the watcher's cursor, for a cursor older than the
   * window, up to the hub's rv (the window holds what follows). A compacted cursor throws
   * CompactedError: the watcher gets ERROR 410.
   */
  private async replayFromLog(w: Watcher, limit: number): Promise<void> {
    if (!w.replayedFromLog) {
      w.replayedFromLog = true;
      this.metrics.storageReplays.inc();
    }
    const changes: Change[] = await this.reads.changesAfter(w.cursor, limit);
    const upTo = this.rv;
    if (changes.length === 0) {
      await sleep(10);
      return;
    }
    for (const c of changes) {
      if (c.rv > upTo) break;
      if (w.pressured) await w.drained();
      if (w.isClosed) return;
      w.offer(new ChangeEvent(c));
    }
  }

  // --- live dispatch

  private dispatch(changes: Change[]): void {
    const now = Date.now();
    const touched: Watcher[] = [];
    const seq = ++this.dispatchSeq;
    for (const c of changes) {
      const ev = new ChangeEvent(c);
      this.window.push(ev);
      const byCluster = this.index.get(`${c.group}/${c.resource}`);
      if (byCluster) {
        for (const ck of [c.cluster, ALL]) {
          const byNs = byCluster.get(ck);
          if (!byNs) continue;
          for (const nk of [c.namespace, ALL]) {
            const set = byNs.get(nk);
            if (!set) continue;
            for (const w of set) {
              this.visits++;
              try {
                if (w.offer(ev) && w.dispatchSeq !== seq) {
                  w.dispatchSeq = seq;
                  touched.push(w);
                }
              } catch (err) {
                this.log.warn('dispatch to a watcher failed', { err: err as Error, rv: c.rv });
                w.fail(err);
              }
            }
          }
        }
      }
      ev.release();
      this.metrics.dispatchDelay.observe(Math.max(0, now - c.ts) / 1000);
    }
    if (tracing) traceMark('dispatched', changes[0].rv, changes[changes.length - 1].rv);
    // Every watcher sent something writes it now, in one write.
    for (const w of touched) w.flush();
    this.updateWindowMetrics();
    this.releaseWaiters();
    for (const listener of this.opts.onDispatched ? [this.opts.onDispatched, ...this.dispatchListeners] : this.dispatchListeners) {
      try {
        listener(changes);
      } catch (err) {
        this.log.warn('a dispatch listener failed', { err: err as Error });
      }
    }
  }

  /**
   * The poller fell behind compaction: live watchers cannot be served what was lost, and
   * the window restarts at the compacted rv. Watches waiting for an rv up to it stop waiting:
   * their rv is now older than anything the log holds, so they get 410 Expired at once.
   */
  private gap(err: CompactedError): number {
    for (const w of [...this.all]) if (w.state === 'live') w.close('closed');
    this.window = new Window<ChangeEvent>(err.compacted, this.opts.window);
    this.updateWindowMetrics();
    this.releaseWaiters();
    return err.compacted;
  }

  /** Resolves the waits for every rv this process has reached. */
  private releaseWaiters(): void {
    for (const waiter of [...this.waiters]) if (waiter.rv <= this.rv) waiter.done(true);
  }

  private indexKeys(w: Watcher): Array<[string, string, string]> {
    const q = w.query;
    const clusters = q.clusters ?? [ALL];
    let namespaces: string[] = q.namespaces ?? [ALL];
    if (!q.namespaces) {
      const ns = q.fieldSelector?.find((f) => f.field === 'metadata.namespace' && f.operator === '=');
      if (ns) namespaces = [ns.value];
    }
    if (clusters.length * namespaces.length > 256) namespaces = [ALL];
    const keys: Array<[string, string, string]> = [];
    // A collection is indexed under each of its kinds.
    for (const gr of new Set(kindsOf(q).map((k) => `${k.group}/${k.resource}`))) for (const c of new Set(clusters)) for (const n of new Set(namespaces)) keys.push([gr, c, n]);
    return keys;
  }

  private register(w: Watcher): void {
    const keys = this.indexKeys(w);
    this.keys.set(w, keys);
    for (const [gr, c, n] of keys) {
      let byCluster = this.index.get(gr);
      if (!byCluster) this.index.set(gr, (byCluster = new Map()));
      let byNs = byCluster.get(c);
      if (!byNs) byCluster.set(c, (byNs = new Map()));
      let set = byNs.get(n);
      if (!set) byNs.set(n, (set = new Set()));
      set.add(w);
    }
  }

  private deindex(w: Watcher): void {
    const keys = this.keys.get(w);
    if (!keys) return;
    this.keys.delete(w);
    for (const [gr, c, n] of keys) {
      const byCluster = this.index.get(gr);
      const byNs = byCluster?.get(c);
      const set = byNs?.get(n);
      if (!set) continue;
      set.delete(w);
      if (set.size === 0) {
        byNs!.delete(n);
        if (byNs!.size === 0) {
          byCluster!.delete(c);
          if (byCluster!.size === 0) this.index.delete(gr);
        }
      }
    }
  }

  /** A window holding the newest `prefill` changes (fewer if compacted), ending at the watermark or later. */
  private async prefill(): Promise<Window<ChangeEvent>> {
    const want = Math.max(0, this.opts.prefill ?? 1000);
    const maxEvents = this.opts.window?.maxEvents ?? 10_000;
    for (let attempt = 0; attempt < 3; attempt++) {
      const meta = await this.reads.meta();
      const from = Math.max(meta.compactedRv, meta.rv - Math.min(want, maxEvents));
      let win = new Window<ChangeEvent>(from, this.opts.window);
      try {
        for (let i = 0; i < 1000 && win.endRv < meta.rv; i++) {
          const changes = await this.reads.changesAfter(win.endRv, 1000);
          if (changes.length === 0) break;
          // No change has the store's initial rv: the log may begin after `from` (not compacted: changesAfter checked).
          if (win.length === 0 && changes[0].rv > win.endRv + 1) win = new Window<ChangeEvent>(changes[0].rv - 1, this.opts.window);
          for (const c of changes) win.push(new ChangeEvent(c));
        }
        // Nothing after `from`: nothing up to the watermark either.
        if (win.length === 0) win = new Window<ChangeEvent>(Math.max(from, meta.rv), this.opts.window);
        return win;
      } catch (err) {
        if (!(err instanceof CompactedError)) throw err;
      }
    }
    return new Window<ChangeEvent>((await this.reads.meta()).rv, this.opts.window);
  }

  private updateWindowMetrics(): void {
    this.metrics.windowEvents.set(this.window.length);
    this.metrics.windowBytes.set(this.window.bytes);
  }
}
