// Reads from PostgreSQL hot standbys (`--storage-read`), with the primary (`--storage`) as
// the source of truth for what "most recent" means, as kube-apiserver serves consistent
// reads from its watch cache (KEP-2340): ask the source of truth for its current revision,
// wait until the copy has it, then read the copy.
//
// `read(freshness, ...)` is the one entry point of that rule: lists, gets, external metrics
// (apiserver/read/rv.ts) and every start of a watch (apiserver/watch/hub.ts: its snapshot, its
// start rv) say what they need in kube's terms (most recent, any, not older than N) and get a
// read that reflects it, on a standby when one has it, else on the primary.
//
// A standby replays the primary's WAL in commit order, and commit order is rv order (the
// rv lock, storage/dialect.ts lockRv), so any snapshot of a standby holds exactly the changes
// up to its `meta` rv: the rv a read needs is checked in the snapshot that is read (ListQuery
// minRv, Store.get's minRv), never in an earlier query. That also holds when one URL spreads
// its connections over several standbys at different replay positions (a CloudNativePG `-ro`
// Service): each read is checked where it runs.
//
// The pool watches every database (refreshMs): whether it answers, whether it is still in
// recovery (a standby) or out of it (promoted: another timeline), its rv, and how far behind
// the primary it is (storage/replay-lag.ts: rv watermarks on a monotonic clock). Reads go to
// one standby in recovery that answers and is at most maxLagMs behind (the same one while it
// stays so); without one, to the primary. A database out of recovery that is not the primary
// is never read while the primary answers. With the primary down, reads go to the database
// that answers with the highest rv, and the apiserver says so in a Warning.
import { StatusError } from '../kube/status.ts';
import { logger, type Logger } from '../lib/log.ts';
import { parseStorageUrl, type ConnectOptions } from './connect.ts';
import { RvTooLargeError } from './errors.ts';
import type { Meta } from './meta.ts';
import { ReplayLag } from './replay-lag.ts';
import { Store } from './store.ts';
import type { Change } from './types.ts';

export interface ReadDatabaseStatus {
  /** The database as host:port/name (no user, no password): for metrics, which need authorization. */
  database: string;
  /** 0 for the primary, 1.. for the standbys in --storage-read order: for /readyz, which needs none. */
  index: number;
  /** `promoted`: a --storage-read database out of recovery (another timeline), not read while the primary answers. */
  role: 'primary' | 'standby' | 'promoted';
  /** It answered the last check. */
  up: boolean;
  /** Its rv at the last check (the newest change it has). */
  rv: number;
  /** Changes the primary has that it has not replayed (0 for the primary). */
  lagRv: number;
  /** How long the primary has had a change it lacks, on a monotonic clock (0 when it lacks none). */
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

/**
 * What a read must reflect, in kube's resourceVersion terms (apiserver/read/rv.ts maps a list's or
 * get's parameters to it, apiserver/watch/hub.ts a watch's start).
 */
export type Freshness =
  /** resourceVersion unset: every change committed before `since` (performance.now()). */
  | { kind: 'most-recent'; since: number }
  /** resourceVersion=0: any state; the database read as it is. */
  | { kind: 'any' }
  /**
   * resourceVersion=N, a continue token: a snapshot that has `rv` (undefined: the read checks
   * the rv it carries, a continue token's), waited for; then RvTooLargeError (kube's 504), or
   * with `orPrimary` the primary's answer.
   */
  | { kind: 'not-older-than'; rv: number | undefined; orPrimary?: boolean }
  /** The primary's own state: the rest of a snapshot the primary began. */
  | { kind: 'primary' };

/** Reads the given database, in a snapshot that has `minRv` when it is set (RvTooLargeError otherwise). */
export type FreshReader<T> = (store: Store, minRv: number | undefined) => Promise<T>;

export interface FreshRead<T> {
  value: T;
  /** The primary did not answer: a most-recent read served another database's state as it is. */
  unconfirmed: boolean;
  /** The primary answered it. */
  primary: boolean;
}

/**
 * What a standby's answer says of its recovery: nothing read from it (nothing to keep out),
 * read while in recovery, read out of it (another timeline), or not known (ask it after).
 */
type Confirmation = 'nothing-read' | 'in-recovery' | 'out-of-recovery' | 'unknown';

/** A database reads can go to. */
export interface Reader {
  store: Store;
  /** The primary (--storage): its own state is the most recent. */
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
  /** The newest query of its replication state, for reads that must know it is still in recovery after them. */
  recoveryRead?: { started: number; result: Promise<boolean> };
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

/**
 * Retries `read` while it answers RvTooLargeError (the snapshot lacks an rv it needs: a standby
 * still replaying, or an rv not committed yet), until `deadline` (performance.now()); then
 * throws the last one.
 */
async function untilFresh<T>(read: () => Promise<T>, deadline: number): Promise<T> {
  let delay = 2;
  for (;;) {
    try {
      return await read();
    } catch (err) {
      if (!(err instanceof RvTooLargeError) || performance.now() >= deadline) throw err;
      await sleep(Math.min(delay, Math.max(1, deadline - performance.now())));
      delay = Math.min(delay * 2, 50);
    }
  }
}

export class ReadPool {
  readonly primary: Store;
  /** A standby further behind than this is not read. */
  readonly maxLagMs: number;
  /** How often every database is checked. */
  readonly refreshMs: number;
  private readonly dbs: Db[];
  private readonly standbys: Db[];
  private selected: Db | undefined;
  private readonly log: Logger;
  private timer: NodeJS.Timeout | undefined;
  private refreshing: Promise<void> | undefined;
  private closed = false;
  private readonly lag = new ReplayLag();
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

  /**
   * How far behind the primary the database reads go to can fall before reads leave it: its
   * lag is seen at most one check late, and past maxLagMs it is not read (0 without standbys).
   */
  get lagBoundMs(): number {
    return this.hasStandbys ? this.maxLagMs + this.refreshMs : 0;
  }

  /** Whether a standby in recovery may be read: it answers and is at most maxLagMs behind. */
  private readable(d: Db): boolean {
    return !d.primary && d.up && d.recovery && this.lag.behindMs(d.rv) <= this.maxLagMs;
  }

  /** Where reads go now (see the head of this file). */
  pick(): Reader {
    if (!this.hasStandbys) return this.reader(this.dbs[0]);
    const primary = this.dbs[0];
    let next = this.selected && this.readable(this.selected) ? this.selected : this.standbys.find((d) => this.readable(d));
    // A database out of recovery that is not the primary (promoted: another timeline) only while the primary does not answer.
    if (!next) next = primary.up ? primary : this.standbys.filter((d) => d.up).sort((a, b) => b.rv - a.rv)[0];
    next ??= primary;
    if (next !== this.selected) {
      if (this.selected) this.log.info('reads move to another database', { from: this.selected.display, to: next.display });
      this.selected = next;
    }
    return this.reader(next);
  }

  private reader(d: Db): Reader {
    return { store: d.store, authoritative: d.primary, display: d.display };
  }

  /** Whether the primary answered its last check (or its last watermark read). */
  get primaryUp(): boolean {
    return this.dbs[0].up;
  }

  /**
   * The primary's rv, read by a query that started at or after `since` (performance.now(): so
   * it has every change committed before then); concurrent callers share one query.
   */
  async primaryWatermark(since = performance.now()): Promise<number> {
    const inflight = this.primaryRead;
    if (inflight && inflight.started >= since) return inflight.result;
    const started = performance.now();
    const result = this.primary.watermark().then(
      (rv) => {
        this.lag.primaryAt(rv);
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
   * What a standby answered counts only if it was still in recovery after it (`confirm`: what
   * the value itself says, else a query after it): a standby promoted since its last check is
   * another timeline, and the read runs again where the next pick says.
   */
  private async withReader<T>(read: (r: Reader) => Promise<T>, confirm: (value: T) => Confirmation = () => 'unknown'): Promise<{ value: T; reader: Reader }> {
    const tried = new Set<Store>();
    // Each database fails once at most, and each standby leaves recovery once at most.
    for (let attempt = 0; attempt <= 2 * this.dbs.length; attempt++) {
      const r = this.pick();
      const d = this.dbOf(r.store);
      const standby = !d.primary && d.recovery;
      tried.add(r.store);
      try {
        const value = await read(r);
        if (standby) {
          const said = confirm(value);
          if (said === 'out-of-recovery') this.observe(d, { rv: d.rv, recovery: false });
          if (said === 'out-of-recovery' || (said === 'unknown' && !(await this.inRecoverySince(d, performance.now())))) continue;
        }
        return { value, reader: r };
      } catch (err) {
        if (!this.hasStandbys || !isDatabaseFailure(err)) throw err;
        this.markDown(r.store, err);
        if (tried.has(this.pick().store)) throw err;
      }
    }
    throw new Error('no database answers reads');
  }

  private dbOf(store: Store): Db {
    return this.dbs.find((d) => d.store === store) ?? this.dbs[0];
  }

  /**
   * Whether `d` is in recovery by a query that began at or after `since` (what it answered
   * before then is the primary's timeline); concurrent callers share one query.
   */
  private inRecoverySince(d: Db, since: number): Promise<boolean> {
    const inflight = d.recoveryRead;
    if (inflight && inflight.started >= since) return inflight.result;
    const started = performance.now();
    const result = d.store.replicationStatus().then((status) => {
      this.observe(d, status);
      return status.recovery;
    });
    d.recoveryRead = { started, result };
    result.catch(() => {});
    return result;
  }

  /** What a check found: its rv, whether it is in recovery; the primary's rv is a watermark seen now. */
  private observe(d: Db, status: { rv: number; recovery: boolean }): void {
    // The primary has what a standby of it replayed: seen now at the latest.
    if (d.primary || status.recovery) this.lag.primaryAt(status.rv);
    if (!d.up) this.log.info('a database reads use answers again', { database: d.display });
    if (!d.primary && d.recovery && !status.recovery) this.log.warn('a standby is out of recovery (promoted): it is not read while the primary answers', { database: d.display });
    d.up = true;
    d.recovery = status.recovery;
    d.rv = status.rv;
    d.error = undefined;
  }

  /**
   * Reads with `read` what `want` asks for (the one place the rule lives; see the head of this
   * file): on the picked standby in a snapshot that has the rv needed, waited for up to
   * `waitMs`; a most-recent read that the standby does not catch up for within it is served by
   * the primary (kube's fallback from its cache to etcd), so is `orPrimary`; with the primary
   * down, a most-recent read is the picked database's state as it is (`unconfirmed`).
   */
  async read<T>(want: Freshness, read: FreshReader<T>, waitMs = 3000): Promise<FreshRead<T>> {
    const deadline = performance.now() + waitMs;
    const floor = want.kind === 'not-older-than' ? want.rv : undefined;
    if (!this.hasStandbys || want.kind === 'primary') return { value: await untilFresh(() => read(this.primary, floor), deadline), unconfirmed: false, primary: true };
    let unconfirmed = false;
    let primary = false;
    /** After the wait: the primary, which has every committed rv. */
    const onPrimary = async (): Promise<T> => {
      this.fallbacks++;
      const value = await read(this.primary, floor);
      primary = true;
      return value;
    };
    const { value, reader } = await this.withReader(async (r) => {
      unconfirmed = false;
      primary = false;
      if (r.authoritative || want.kind === 'any') return untilFresh(() => read(r.store, floor), deadline);
      if (want.kind === 'not-older-than') {
        try {
          return await untilFresh(() => read(r.store, floor), deadline);
        } catch (err) {
          if (!(err instanceof RvTooLargeError) || !want.orPrimary) throw err;
          return onPrimary().catch((primaryErr: unknown) => {
            if (!isDatabaseFailure(primaryErr)) throw primaryErr;
            this.markDown(this.primary, primaryErr);
            throw err;
          });
        }
      }
      let target: number;
      try {
        target = await this.primaryWatermark(want.since);
      } catch (err) {
        if (!isDatabaseFailure(err)) throw err;
        unconfirmed = true;
        return read(r.store, undefined);
      }
      try {
        return await untilFresh(() => read(r.store, target), deadline);
      } catch (err) {
        if (!(err instanceof RvTooLargeError)) throw err;
      }
      try {
        return await onPrimary();
      } catch (err) {
        if (!isDatabaseFailure(err)) throw err;
        this.markDown(this.primary, err);
        unconfirmed = true;
        return read(r.store, undefined);
      }
    }, () => (primary ? 'nothing-read' : 'unknown'));
    return { value, unconfirmed, primary: primary || reader.authoritative };
  }

  // --- the change log, for the watch engine (apiserver/watch/hub.ts), on the picked database

  changesAfter(rv: number, limit: number): Promise<Change[]> {
    // On a standby, whether it is still in recovery comes with the rows, in the same statement:
    // the poll costs no second query.
    return this.withReader(
      async (r) => (r.authoritative ? { changes: await r.store.changesAfter(rv, limit), recovery: undefined } : r.store.changesAfterInRecovery(rv, limit)),
      (read) => (read.recovery === undefined ? 'nothing-read' : read.recovery ? 'in-recovery' : 'out-of-recovery'),
    ).then((x) => x.value.changes);
  }

  meta(): Promise<Meta> {
    return this.withReader((r) => r.store.meta()).then((x) => x.value);
  }

  // --- status

  /** Every database, for /readyz and metrics. */
  status(): ReadDatabaseStatus[] {
    return this.dbs.map((d) => ({
      database: d.label,
      index: d.index,
      role: d.primary ? 'primary' : d.recovery ? 'standby' : 'promoted',
      up: d.up,
      rv: d.rv,
      lagRv: d.primary ? 0 : this.lag.behindRv(d.rv),
      lagSeconds: d.primary ? 0 : this.lag.behindMs(d.rv) / 1000,
      selected: (this.selected ?? this.dbs[0]) === d,
      ...(d.error && !d.up ? { error: d.error } : {}),
    }));
  }

  /** Checks every database once (concurrent callers share it). */
  refresh(): Promise<void> {
    this.refreshing ??= this.check().finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }

  private async check(): Promise<void> {
    // All at once: a standby read before the primary looks behind by a watermark seen now (0 s).
    await Promise.all(
      this.dbs.map(async (d) => {
        try {
          const started = performance.now();
          const read = d.store.replicationStatus();
          // Also what reads that ended before this check began may rely on (inRecoverySince).
          if (!d.primary) {
            d.recoveryRead = { started, result: read.then((x) => x.recovery) };
            d.recoveryRead.result.catch(() => {});
          }
          this.observe(d, await read);
        } catch (err) {
          this.markDown(d.store, err);
        }
      }),
    );
    this.lag.forgetUpTo(Math.min(...this.standbys.map((d) => d.rv)));
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
