// Why a write failed, as a writer must act on it: fenced (the lease moved on: stop writing
// for that cluster), outage (storage is unwell: retry the same write later) or data (this
// write's content is refused, and retrying it will not help: find the event and set it aside).
import { StorageClosedError } from './connect.ts';
import { FencedError } from './leases.ts';
import { UnstorableError } from './sql-values.ts';

export type WriteErrorKind = 'fenced' | 'outage' | 'data';

/**
 * PostgreSQL SQLSTATE classes that say the server or the connection is unwell, or the
 * transaction lost a race, not that the rows are wrong: 08 connection exception, 40
 * transaction rollback (serialization failure, deadlock), 53 insufficient resources (disk
 * full, out of memory, too many connections), 57 operator intervention (shutdown, cancel,
 * statement timeout), 58 system error (I/O), XX internal error.
 * https://www.postgresql.org/docs/current/errcodes-appendix.html
 */
const postgresOutageClasses = new Set(['08', '40', '53', '57', '58', 'XX']);

/**
 * SQLite result codes (better-sqlite3's `code`, extended codes included: SQLITE_IOERR_WRITE)
 * that say the database is unwell or busy, not that the rows are wrong.
 * https://www.sqlite.org/rescode.html
 */
const sqliteOutagePrefixes = ['SQLITE_BUSY', 'SQLITE_LOCKED', 'SQLITE_IOERR', 'SQLITE_FULL', 'SQLITE_CANTOPEN', 'SQLITE_NOMEM', 'SQLITE_PROTOCOL', 'SQLITE_READONLY', 'SQLITE_CORRUPT', 'SQLITE_NOTADB', 'SQLITE_INTERRUPT', 'SQLITE_ABORT'];

/** Node's socket errors, pg's connection loss and knex's pool: the database did not answer. */
const connectionCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ECONNABORTED']);
const connectionMessages = /Connection terminated|connection error|Client was closed|Knex: Timeout acquiring a connection|Unable to acquire a connection|database system is (starting up|shutting down)/i;

/**
 * How a failed write should be handled. Unknown errors are data: a round that fails for a
 * reason that is neither fencing nor an outage is split until the event that fails alone is
 * found (synchro/commit/committer.ts), and only that event is set aside; were storage down, the
 * split's first write would fail as an outage and be retried as one.
 */
export function writeErrorKind(err: unknown): WriteErrorKind {
  if (err instanceof FencedError) return 'fenced';
  if (err instanceof UnstorableError) return 'data';
  // This process closes its storage (it stops): the write was not made, and is not the rows' fault.
  if (err instanceof StorageClosedError) return 'outage';
  const e = err as { code?: unknown; name?: unknown; message?: unknown } | null;
  const code = typeof e?.code === 'string' ? e.code : '';
  // A statement prepared on the connection (storage/prepared.ts) before another process's
  // migration changed its result: prepared again under a new name on the next try.
  if (code === '0A000' && typeof e?.message === 'string' && /cached plan must not change result type/.test(e.message)) return 'outage';
  if (/^[0-9A-Z]{5}$/.test(code)) return postgresOutageClasses.has(code.slice(0, 2)) ? 'outage' : 'data';
  if (code.startsWith('SQLITE_')) return sqliteOutagePrefixes.some((p) => code === p || code.startsWith(`${p}_`)) ? 'outage' : 'data';
  if (connectionCodes.has(code)) return 'outage';
  if (e?.name === 'KnexTimeoutError') return 'outage';
  if (typeof e?.message === 'string' && connectionMessages.test(e.message)) return 'outage';
  return 'data';
}

/**
 * What may be said of a write error in logs and status: its kind, code and class, never the
 * text of a refusal (which may quote the rows; Panoptes' own refusals name the field and say
 * why, never the value). An outage's message is kept: it says what happened to storage.
 */
export function describeWriteError(err: unknown): { kind: WriteErrorKind; code: string; error: string } {
  const kind = writeErrorKind(err);
  const e = err as { code?: unknown; message?: unknown } | null;
  const code = typeof e?.code === 'string' ? e.code : '';
  const name = (err as object | null)?.constructor?.name ?? 'Error';
  const message = typeof e?.message === 'string' ? e.message : '';
  if (err instanceof UnstorableError) return { kind, code, error: err.message };
  if (kind === 'outage' || kind === 'fenced') return { kind, code, error: `${name}${code ? ` ${code}` : ''}: ${message.slice(-300)}` };
  return { kind, code, error: code ? `${name} ${code}` : name };
}
