// Reads from PostgreSQL hot standbys (`--storage-read`), with the primary (`--storage`) as
// the source of truth for what "most recent" means, as kube-apiserver serves consistent
// reads from its watch cache (KEP-2340): ask the source of truth for its current revision,
// wait until the copy has it, then read the copy.
//
// A standby replays the primary's WAL in commit order, and commit order is rv order (the
// rv lock, storage/dialect.ts lockRv), so any snapshot of a standby holds exactly the changes
// up to its `meta` rv: the rv a read needs is checked in the snapshot that is read (ListQuery
// minRv, Store.get's minRv), never in an earlier query. That also holds when one URL spreads
// its connections over several standbys at different replay positions (a CloudNativePG `-ro`
// Service): each read is checked where it runs.
//
// The pool watches every database (refreshMs): whether it answers, whether it is still in
// recovery (a standby) or was promoted, its rv, and how far behind the primary it is, in rv
// and in seconds (how long ago the primary first had an rv the standby still lacks). Reads go
// to one standby that answers and is at most maxLagMs behind (the same one while it stays so);
// without one, to the primary; with the primary down too, to the standby that answers with the
// most, and the apiserver says so in a Warning.
import { StatusError } from '../kube/status.ts';
import { logger, type Logger } from '../lib/log.ts';
import { parseStorageUrl, type ConnectOptions } from './connect.ts';
import { RvTooLargeError } from './errors.ts';
import type { Meta } from './meta.ts';
import { Store } from './store.ts';
import type { Change, ListQuery, ListResult } from './types.ts';

export interface ReadDatabaseStatus {
  /** The database as host:port/name (no user, no password): for metrics, which need authorization. */
  database: string;
  /** 0 for the primary, 1.. for the standbys in --storage-read order: for /readyz, which needs none. */
  index: number;
  role: 'primary' | 'standby' | 'promoted';
  /** It answered the last check. */
  up: boolean;
  /** Its rv at the last check (the newest change it has). */
  rv: number;
  /** Changes the primary has that it has not replayed (0 for the primary). */
  lagRv: number;
  /** How long the primary has had a change it lacks (0 when it lacks none). */
  lagSeconds: number;
  /** Reads go to it now. */
  selected: boolean;
  error?: string;
}

export interface ReadPoolOptions {
  /** A standby further behind than this is skipped (default 10 s). */
  maxLagMs?: number;
  /** How often every database is checked (default 1 s). */
  refreshMs?: number;
  /** Connection settings of the standbys (a short connect timeout by default: 3 s). */
  connect?: ConnectOptions;
  log?: Logger;
}

/** A database reads can go to. */
export interface Reader {
  store: Store;
  /** The primary, or a standby promoted to one: its own state is the most recent. */
  authoritative: boolean;
  display: string;
}

interface Db {
  store: Store;
  /** The URL without its password, for logs. */
  display: string;
  /** host:port/name. */
  label: string;
  index: number;
  primary: boolean;
  up: boolean;
  recovery: boolean;
  rv: number;
  error?: string;
  checked: boolean;
}

/** host:port/name of a storage URL: where a database is, without who connects to it. */
export function databaseLabel(url: string): string {
  try {
    const u = new URL(url);
    return `${u.host}${u.pathname}`;
  } catch {
    return 'database';
  }
}

/** A failure of the database, not of the request: the next database may answer. */
export function isDatabaseFailure(err: unknown): boolean {
  return !(err instanceof StatusError);
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Samples of the primary's rv kept for lag in seconds: one per check and per watermark read, bounded. */
const maxSamples = 4096;

export class ReadPool {
  readonly primary: Store;
  private readonly dbs: Db[];
  private readonly standbys: Db[];
  private selected: Db | undefined;
  private readonly maxLagMs: number;
  private readonly refreshMs: number;
  private readonly log: Logger;
  private timer: NodeJS.Timeout | undefined;
  private refreshing: Promise<void> | undefined;
  private closed = false;
  /** (time, primary rv) observations, oldest first, rv non-decreasing. */
  private samples: Array<{ at: number; rv: number }> = [];
  private primaryRead: { started: number; result: Promise<number> } | undefined;
  /** Reads that waited for a standby in vain and were served by the primary (kube's fallback). */
  fallbacks = 0;

  private constructor(primary: Store, standbys: Store[], opts: ReadPoolOptions) {
    this.primary = primary;
    this.maxLagMs = opts.maxLagMs ?? 10_000;
    this.refreshMs = Math.max(10, opts.refreshMs ?? 1000);
    this.log = opts.log ?? logger('storage.read');
    const db = (store: Store, index: number): Db => ({
      store,
      display: store.conn.display,
      label: databaseLabel(store.conn.display),
      index,
      primary: index === 0,
      up: true,
      recovery: index !== 0,
      rv: 0,
      checked: false,
    });
    this.standbys = standbys.map((s, i) => db(s, i + 1));
    this.dbs = [db(primary, 0), ...this.standbys];
  }

  /** A pool over `primary` alone (SQLite, one PostgreSQL): every read goes there, as before standbys. */
  static primaryOnly(primary: Store): ReadPool {
    return new ReadPool(primary, [], {});
  }

  /** Standbys at `urls` (PostgreSQL only), read beside `primary`; checked once before it resolves. */
  static async open(primary: Store, urls: string[], opts: ReadPoolOptions = {}): Promise<ReadPool> {
    if (urls.length > 0 && primary.dialect !== 'postgres') throw new Error('--storage-read needs PostgreSQL storage: SQLite has no standbys');
    for (const u of urls) if (parseStorageUrl(u).dialect.name !== 'postgres') throw new Error(`--storage-read ${JSON.stringify(u)}: standbys are PostgreSQL (postgres://...)`);
    const standbys = urls.map((u) => Store.openReader(u, { poolMax: 10, connectTimeoutMs: 3000, ...opts.connect }));
    const pool = new ReadPool(primary, standbys, opts);
    if (standbys.length > 0) {
      await pool.refresh();
      pool.schedule();
    }
    return pool;
  }

  get hasStandbys(): boolean {
    return this.standbys.length > 0;
  }

  /** Where reads go now (see the head of this file). */
  pick(): Reader {
    if (!this.hasStandbys) return this.reader(this.dbs[0]);
    const usable = (d: Db) => d.up && (!d.recovery || this.lagMs(d) <= this.maxLagMs);
    let next = this.selected && !this.selected.primary && usable(this.selected) ? this.selected : this.standbys.find(usable);
    if (!next) next = this.dbs[0].up ? this.dbs[0] : [...this.standbys].filter((d) => d.up).sort((a, b) => b.rv - a.rv)[0];
    next ??= this.dbs[0];
    if (next !== this.selected) {
      if (this.selected) this.log.info('reads move to another database', { from: this.selected.display, to: next.display });
      this.selected = next;
    }
    return this.reader(next);
  }

  private reader(d: Db): Reader {
    return { store: d.store, authoritative: d.primary || !d.recovery, display: d.display };
  }

  /** Whether the primary answered its last check (or its last watermark read). */
  get primaryUp(): boolean {
    return this.dbs[0].up;
  }

  /**
   * The primary's rv, read by a query that started at or after `since` (so it has every
   * change committed before then); concurrent callers share one query.
   */
  async primaryWatermark(since = Date.now()): Promise<number> {
    const inflight = this.primaryRead;
    if (inflight && inflight.started >= since) return inflight.result;
    const started = Date.now();
    const result = this.primary.watermark().then(
      (rv) => {
        this.sample(rv);
        this.dbs[0].up = true;
        this.dbs[0].rv = Math.max(this.dbs[0].rv, rv);
        return rv;
      },
      (err: unknown) => {
        this.markDown(this.dbs[0].store, err);
        throw err;
      },
    );
    this.primaryRead = { started, result };
    result.catch(() => {}).finally(() => {
      if (this.primaryRead?.result === result) this.primaryRead = undefined;
    });
    return result;
  }

  /** A query on `store` failed for want of the database: reads leave it until a check finds it answering. */
  markDown(store: Store, err: unknown): void {
    const d = this.dbs.find((x) => x.store === store);
    if (!d || !d.up) return;
    d.up = false;
    d.error = (err as Error)?.message ?? String(err);
    this.log.warn('a database reads use does not answer', { database: d.display, err: d.error });
  }

  /**
   * Runs `read` on the picked database; when that database fails (not the request: a Status
   * error is the answer), marks it down and runs it on the next pick, each database once.
   */
  async withReader<T>(read: (r: Reader) => Promise<T>): Promise<{ value: T; reader: Reader }> {
    const tried = new Set<Store>();
    for (;;) {
      const r = this.pick();
      tried.add(r.store);
      try {
        return { value: await read(r), reader: r };
      } catch (err) {
        if (!this.hasStandbys || !isDatabaseFailure(err)) throw err;
        this.markDown(r.store, err);
        if (tried.has(this.pick().store)) throw err;
      }
    }
  }

  /**
   * Retries `read` on `r` while it answers RvTooLargeError (the snapshot lacks an rv it needs:
   * a standby still replaying), until `deadline`; then throws the last one.
   */
  static async untilFresh<T>(read: () => Promise<T>, deadline: number): Promise<T> {
    let delay = 2;
    for (;;) {
      try {
        return await read();
      } catch (err) {
        if (!(err instanceof RvTooLargeError) || Date.now() >= deadline) throw err;
        await sleep(Math.min(delay, Math.max(1, deadline - Date.now())));
        delay = Math.min(delay * 2, 50);
      }
    }
  }

  // --- the reads of the watch engine (apiserver/watch/hub.ts), on the picked database

  changesAfter(rv: number, limit: number): Promise<Change[]> {
    return this.withReader((r) => r.store.changesAfter(rv, limit)).then((x) => x.value);
  }

  changesOfResources(rv: number, upTo: number, resources: ReadonlyArray<{ group: string; resource: string }>, limit: number): Promise<Change[]> {
    return this.withReader((r) => r.store.changesOfResources(rv, upTo, resources, limit)).then((x) => x.value);
  }

  watermark(): Promise<number> {
    return this.withReader((r) => r.store.watermark()).then((x) => x.value);
  }

  meta(): Promise<Meta> {
    return this.withReader((r) => r.store.meta()).then((x) => x.value);
  }

  /**
   * A list for the watch engine: a page after the first (a continue token) or at an exact rv
   * waits a little (3 s) for a standby that lacks that rv, then is read on the primary,
   * which has it.
   */
  async list(q: ListQuery, waitMs = 3000): Promise<ListResult> {
    const deadline = Date.now() + waitMs;
    const { value } = await this.withReader(async (r) => {
      try {
        return await ReadPool.untilFresh(() => r.store.list(q), deadline);
      } catch (err) {
        if (err instanceof RvTooLargeError && !r.authoritative) {
          this.fallbacks++;
          return this.primary.list(q);
        }
        throw err;
      }
    });
    return value;
  }

  // --- status

  /** Every database, for /readyz and metrics. */
  status(): ReadDatabaseStatus[] {
    const primaryRv = this.primaryRv();
    return this.dbs.map((d) => ({
      database: d.label,
      index: d.index,
      role: d.primary ? 'primary' : d.recovery ? 'standby' : 'promoted',
      up: d.up,
      rv: d.rv,
      lagRv: d.primary || !d.recovery ? 0 : Math.max(0, primaryRv - d.rv),
      lagSeconds: d.primary || !d.recovery ? 0 : this.lagMs(d) / 1000,
      selected: (this.selected ?? this.dbs[0]) === d,
      ...(d.error && !d.up ? { error: d.error } : {}),
    }));
  }

  private primaryRv(): number {
    return Math.max(this.dbs[0].rv, this.samples.length ? this.samples[this.samples.length - 1].rv : 0);
  }

  private sample(rv: number): void {
    const last = this.samples[this.samples.length - 1];
    if (last && rv <= last.rv) return;
    this.samples.push({ at: Date.now(), rv });
    if (this.samples.length > maxSamples) this.samples.splice(0, this.samples.length - maxSamples / 2);
  }

  /** How long the primary has had an rv `d` lacks: since the first sample above d's rv. */
  private lagMs(d: Db): number {
    if (!d.recovery) return 0;
    const first = this.samples.find((s) => s.rv > d.rv);
    return first ? Date.now() - first.at : 0;
  }

  /** Checks every database once (concurrent callers share it). */
  refresh(): Promise<void> {
    this.refreshing ??= this.check().finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }

  private async check(): Promise<void> {
    // All at once: a standby read before the primary looks behind by a sample taken now (0 s).
    await Promise.all(
      this.dbs.map(async (d) => {
        try {
          const status = await d.store.replicationStatus();
          if (d.primary) this.sample(status.rv);
          if (!d.up) this.log.info('a database reads use answers again', { database: d.display });
          if (!d.primary && d.checked && d.recovery && !status.recovery) this.log.warn('a standby was promoted: it is read as a primary', { database: d.display });
          d.up = true;
          d.recovery = status.recovery;
          d.rv = status.rv;
          d.error = undefined;
        } catch (err) {
          this.markDown(d.store, err);
        }
        d.checked = true;
      }),
    );
  }

  private schedule(): void {
    if (this.closed) return;
    this.timer = setTimeout(() => {
      void this.refresh().finally(() => this.schedule());
    }, this.refreshMs);
    this.timer.unref?.();
  }

  /** Stops checking and closes the standbys' connections (not the primary's). */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    await this.refreshing?.catch(() => {});
    await Promise.all(this.standbys.map((d) => d.store.close()));
  }
}
