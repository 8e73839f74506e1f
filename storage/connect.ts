// Storage URLs: `sqlite:PATH` (embedded, the default) or `postgres://user@host:port/db`.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import knexFactory, { type Knex } from 'knex';
import { logger } from '../lib/log.ts';
import { redact as redactText } from '../lib/redact.ts';
import { guardStatements } from './bound-values.ts';
import { postgres, sqlite, sqliteFunctions, type Dialect } from './dialect.ts';
import { Checkpointer, type CheckpointOptions } from './sqlite-checkpoint.ts';

export const defaultStorageUrl = 'sqlite:./data/panoptes.db';

export interface Connection {
  knex: Knex;
  dialect: Dialect;
  /** The URL without its password, for logs. */
  display: string;
  /** SQLite (better-sqlite3, a file): the WAL checkpoints off the event loop (storage/sqlite-checkpoint.ts). */
  checkpointer?: Checkpointer;
  /**
   * PostgreSQL: a second, separate pool of `poolMax` connections to the same database, for
   * statements that must never queue behind this pool's work (synchro's heartbeat and lease
   * renewals). Undefined on SQLite, whose one connection serializes everything anyway.
   */
  separatePool?(poolMax: number): Connection;
  /** Closes the connections (and the checkpointer). */
  close(): Promise<void>;
}

export class StorageUrlError extends Error {
  override name = 'StorageUrlError';
}

export function parseStorageUrl(url: string): { dialect: Dialect; target: string } {
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
    if (path === '') throw new StorageUrlError(`storage URL ${JSON.stringify(url)} names no file: use sqlite:PATH or sqlite::memory:`);
    return { dialect: sqlite, target: path };
  }
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    try {
      new URL(url);
    } catch {
      throw new StorageUrlError(`storage URL ${JSON.stringify(url)} is not a valid postgres:// URL`);
    }
    return { dialect: postgres, target: url };
  }
  throw new StorageUrlError(`unsupported storage URL ${JSON.stringify(url)}: use sqlite:PATH or postgres://user@host:5432/db`);
}

function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return url;
  }
}

// 16 KiB pages make commits write fewer WAL frames; checkpoints stay at SQLite's default of
// 1,000 pages (16 MiB) so that none of them stalls writers for long (write-to-commit p99).
// Reads of the first 16 MiB of the database file go through a memory map (the OS page cache,
// no read() per page missing from SQLite's cache); the rest with read(). The map is bounded
// because every page read through it stays in the process's resident set (file-backed, and
// evictable, but counted by `kubectl top` and the OOM killer): with a map of the whole file
// (2 GiB before), RSS grew with the file, not with what the process uses. bench:metrics' sum
// (below) had p50 38 ms with a 64 MiB map and 39.3 ms with 16 MiB, and bench:memory's
// all-in-one 201 against 152 MiB 30 s after a burst of 50,000 creates: so 16 MiB.
// SQLite's own page cache is anonymous memory that fills up to its size and is not given back
// while the connection lives; the OS page cache behind it serves the same reads (a copy per
// read() of a page, no disk). Measured with bench:metrics' sum (10,000 rows of 100,000 read at
// random), p50: 42 ms with a 64 MiB cache, 38 ms with 16, 37 with 4; bench:synchro's initial
// sync of 100,000 objects: 2.75 s of storage writes with 64 MiB, 2.94 s with 16 MiB. So 16 MiB
// (1,024 pages): about 5% on bulk writes, 48 MiB less resident after a burst.
export const defaultSqliteCacheBytes = 16 * 1024 * 1024;
const noAutoCheckpoint = 'PRAGMA wal_autocheckpoint = 0';
const sqlitePragmas = [
  'PRAGMA busy_timeout = 10000',
  'PRAGMA page_size = 16384',
  'PRAGMA journal_mode = WAL',
  'PRAGMA synchronous = NORMAL',
  // A negative cache_size is in KiB.
  `PRAGMA cache_size = -${defaultSqliteCacheBytes / 1024}`,
  'PRAGMA temp_store = MEMORY',
];

/** The default size of SQLite's memory map of the database file (PRAGMA mmap_size). */
export const defaultSqliteMmapBytes = 16 * 1024 * 1024;

export interface ConnectOptions {
  /** PostgreSQL pool size. */
  poolMax?: number;
  /**
   * PostgreSQL ends a session whose transaction sits idle this long (default 5 s): a writer
   * paused in a transaction (SIGSTOP, a long GC pause, a partition) must not hold the rv
   * counter's lock, and with it every other writer, beyond that.
   */
  idleInTransactionTimeoutMs?: number;
  /** PostgreSQL: give up connecting after this long (default: the driver's, none). A standby that is down is skipped sooner. */
  connectTimeoutMs?: number;
  /**
   * SQLite driver: better-sqlite3 (default, fastest here) or sqlite3 (bench:storage compares
   * them; it registers no functions, so lists with JSON path terms over arrays need better-sqlite3).
   */
  sqliteDriver?: 'better-sqlite3' | 'sqlite3';
  /** SQLite: bytes of the database file read through a memory map (default defaultSqliteMmapBytes; 0: none). */
  sqliteMmapBytes?: number;
  /** SQLite with better-sqlite3: when the WAL checkpoints move to a worker thread (storage/sqlite-checkpoint.ts); false: never. */
  sqliteCheckpoint?: CheckpointOptions | false;
}

type SqliteConn = { exec(sql: string, cb?: (err: Error | null) => void): unknown } & Parameters<typeof sqliteFunctions>[0];

export function connect(url: string, opts: ConnectOptions = {}): Connection {
  const { dialect, target } = parseStorageUrl(url);
  if (dialect.name === 'sqlite') {
    if (target !== ':memory:') mkdirSync(dirname(target), { recursive: true });
    const driver = opts.sqliteDriver ?? 'better-sqlite3';
    // better-sqlite3 runs statements on the event loop, checkpoints included: a worker runs them
    // once the log is large (the sqlite3 driver runs every statement on libuv's threads already).
    let checkpointer: Checkpointer | undefined;
    const knex = knexFactory({
      client: driver,
      connection: { filename: target },
      useNullAsDefault: true,
      // A failed statement's error says what failed, never the values bound (storage/bound-values.ts).
      compileSqlOnError: false,
      pool: {
        min: 1,
        max: 1,
        afterCreate(conn: SqliteConn, done: (err: Error | null, conn: unknown) => void) {
          const mmap = Math.max(0, Math.floor(opts.sqliteMmapBytes ?? defaultSqliteMmapBytes));
          const sql = [...sqlitePragmas, `PRAGMA mmap_size = ${mmap}`, ...(checkpointer?.active ? [noAutoCheckpoint] : [])].join(';\n');
          if (driver === 'sqlite3') {
            conn.exec(sql, (err) => done(err, conn));
            return;
          }
          try {
            conn.exec(sql);
            sqliteFunctions(conn);
            done(null, conn);
          } catch (err) {
            done(err as Error, conn);
          }
        },
      },
    });
    guardStatements(knex);
    if (driver === 'better-sqlite3' && target !== ':memory:' && opts.sqliteCheckpoint !== false)
      checkpointer = new Checkpointer(target, async () => void (await knex.raw(noAutoCheckpoint)), opts.sqliteCheckpoint);
    const refuseOnClose = refuseAfterClose(knex);
    return {
      knex,
      dialect,
      display: `sqlite:${target}`,
      checkpointer,
      async close() {
        refuseOnClose();
        await checkpointer?.close();
        await knex.destroy();
      },
    };
  }
  const knex = knexFactory({
    client: 'pg',
    connection: {
      connectionString: target,
      application_name: 'panoptes',
      idle_in_transaction_session_timeout: opts.idleInTransactionTimeoutMs ?? 5000,
      ...(opts.connectTimeoutMs !== undefined ? { connectionTimeoutMillis: opts.connectTimeoutMs } : {}),
    },
    pool: { min: 0, max: opts.poolMax ?? 10 },
    compileSqlOnError: false,
    log: driverLog,
  });
  guardStatements(knex);
  const refuseOnClose = refuseAfterClose(knex);
  return {
    knex,
    dialect,
    display: displayStorageUrl(url),
    separatePool: (poolMax: number) => connect(url, { ...opts, poolMax }),
    close: () => {
      refuseOnClose();
      return knex.destroy();
    },
  };
}

/** What a statement gets from a connection that is closing or closed. */
export class StorageClosedError extends Error {
  override name = 'StorageClosedError';
  constructor() {
    super('storage connection closed');
  }
}

/**
 * Once close() began, a statement that wants a connection of the pool fails at once. The pool
 * (tarn) takes acquisitions while it is being destroyed and, past the point where it gives up
 * the waiting ones, leaves them waiting for its acquire timeout (60 s): a late writer would hang
 * and keep the process alive. Statements of transactions already open run to their end (close
 * waits for them).
 */
function refuseAfterClose(knex: Knex): () => void {
  const client = knex.client as unknown as { acquireConnection(): Promise<unknown> };
  const acquire = client.acquireConnection.bind(client);
  let closed = false;
  client.acquireConnection = () => (closed ? Promise.reject(new StorageClosedError()) : acquire());
  return () => {
    closed = true;
  };
}

/** `url` as logs show it: without its password (and every log line goes through lib/redact.ts). */
export function displayStorageUrl(url: string): string {
  const { dialect, target } = parseStorageUrl(url);
  return dialect.name === 'sqlite' ? `sqlite:${target}` : redact(target);
}

/**
 * The driver's own warnings, as one line each without a stack. A connection that cannot be
 * made is not one: the query that wanted it fails with the same error, and says so.
 */
const driverLog = {
  warn(message: string) {
    if (message.startsWith('Acquire connection error')) return;
    logger('storage').warn(String(message).split('\n')[0]);
  },
};

/** Error codes of a database that does not answer (yet): the network's, and PostgreSQL's own. */
const unreachableCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EHOSTDOWN', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE', '57P01', '57P02', '57P03', '53300']);

/** What went wrong, in one line: an AggregateError (every address of a host refused) says each. */
export function describeStorageError(err: unknown): string {
  if (err instanceof AggregateError && err.errors.length > 0 && !err.message) return [...new Set(err.errors.map(describeStorageError))].join('; ');
  const e = err as { message?: string; code?: string };
  return redactText((e.message || e.code || String(err)).split('\n')[0]);
}

/**
 * Whether `err` says the database cannot be reached (now): refused, reset, timed out, a
 * host name not resolved, a server starting up or shutting down, no connection slot left,
 * connection class 08. Worth waiting for, as kube components wait for their storage; a
 * wrong password, a missing database or a bad file is not.
 */
export function isStorageUnreachable(err: unknown): boolean {
  if (err instanceof AggregateError) return err.errors.length > 0 && err.errors.every(isStorageUnreachable);
  const e = err as { code?: unknown; name?: unknown; message?: unknown };
  if (typeof e?.code === 'string' && (unreachableCodes.has(e.code) || e.code.startsWith('08'))) return true;
  if (e?.name === 'KnexTimeoutError') return true;
  return typeof e?.message === 'string' && /^Connection terminated|^timeout expired|connection timeout/i.test(e.message);
}
