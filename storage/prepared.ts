// The hot statements of the write and watch paths, run on the connection itself and prepared
// once per connection, instead of through knex's query builder. Each statement through knex
// costs its compile and binding rewrite in JavaScript, and on PostgreSQL a parse and a plan
// on the server (an unnamed statement is planned at every bind): a one-event write took
// 0.55 ms to lock the rv, 0.57 ms to read its key and 0.94 ms to write, of which the server
// spent 0.2 ms, 0.25 ms and 0.56 ms parsing, planning and running (PostgreSQL's
// log_min_duration_statement). Prepared by name, the parse happens once per connection and
// the plan is cached once it is generic.
//
// Each statement is announced as knex announces its own (the `query` event, with its SQL and
// bindings) before the driver sees it: so every value passes the one check that bound-values.ts
// installs there, and whoever counts statements counts these too.
import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import { rowsOf } from './rows.ts';

/** What is used of knex's client: an EventEmitter, and for a transaction its id. */
interface KnexClient {
  emit(event: 'query', q: { method: 'raw'; sql: string; bindings: readonly unknown[]; __knexTxId?: string }): boolean;
  txId?: string;
  config?: { client?: unknown };
}

/** Tells `db`'s listeners of the statement as knex would (bound-values.ts checks the bindings there, and throws). */
function announce(db: Knex | Knex.Transaction, sql: string, bindings: readonly unknown[]): void {
  const client = db.client as unknown as KnexClient;
  client.emit('query', { method: 'raw', sql, bindings, ...(client.txId ? { __knexTxId: client.txId } : {}) });
}

// --- SQLite (better-sqlite3: synchronous, on the event loop)

/** better-sqlite3's statement and database, as far as these paths use them. */
export interface SqliteStatement {
  run(...params: unknown[]): unknown;
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
}
export interface SqliteDatabase {
  prepare(sql: string): SqliteStatement;
  pragma(source: string): unknown;
}
const sqliteStatements = new WeakMap<SqliteDatabase, Map<string, SqliteStatement>>();

/** The transaction's (or the pool's one) better-sqlite3 connection, or undefined on the sqlite3 driver or PostgreSQL. */
export async function sqliteDatabase(db: Knex | Knex.Transaction): Promise<SqliteDatabase | undefined> {
  if (!isTransaction(db)) return undefined;
  const conn = await (db.client as unknown as { acquireConnection(): Promise<unknown> }).acquireConnection();
  // better-sqlite3 (synchronous) has pragma(); the sqlite3 driver's Database has an asynchronous prepare() only.
  return conn && typeof (conn as SqliteDatabase).pragma === 'function' ? (conn as SqliteDatabase) : undefined;
}

/** The connection's prepared statement for `sql`, prepared once. */
export function sqliteStatement(db: SqliteDatabase, sql: string): SqliteStatement {
  let cache = sqliteStatements.get(db);
  if (!cache) sqliteStatements.set(db, (cache = new Map()));
  let stmt = cache.get(sql);
  if (!stmt) cache.set(sql, (stmt = db.prepare(sql)));
  return stmt;
}

// --- PostgreSQL (pg)

/** What is used of pg's Client. */
interface PgClient {
  query(config: { text: string; values: unknown[]; name?: string }): Promise<{ rows: unknown[] }>;
}

/** Statements prepared by name on one connection at most; past it, statements run unnamed. */
const maxPreparedPerConnection = 64;
const preparedNames = new WeakMap<PgClient, Set<string>>();
const positional = new Map<string, { text: string; name: string }>();

/** `sql` with knex's `?` placeholders as `$1, $2, ...`, and a name for it (cached: the statements are few and fixed). */
function pgText(sql: string): { text: string; name: string } {
  let p = positional.get(sql);
  if (!p) {
    let n = 0;
    const text = sql.replace(/\?/g, () => `$${++n}`);
    p = { text, name: `panoptes_${createHash('sha1').update(text).digest('hex').slice(0, 20)}` };
    if (positional.size < 1024) positional.set(sql, p);
  }
  return p;
}

/** A statement prepared before a schema change that changed its result (0A000) is prepared again under a new name. */
let generation = 0;

function isTransaction(db: Knex | Knex.Transaction): db is Knex.Transaction {
  return (db as Knex.Transaction).isTransaction === true;
}

/** The transaction's pg client, or undefined elsewhere (SQLite). */
async function pgClient(trx: Knex.Transaction): Promise<PgClient | undefined> {
  if (trx.client.config?.client !== 'pg') return undefined;
  return (await (trx.client as unknown as { acquireConnection(): Promise<PgClient> }).acquireConnection()) ?? undefined;
}

/**
 * Runs `sql` (knex's `?` placeholders, no `??`) with `bindings` on `client`, prepared by name
 * once per connection (PgBouncer in transaction mode serves named statements from 1.21 on,
 * with max_prepared_statements set).
 */
async function pgQuery<Row>(client: PgClient, sql: string, bindings: readonly unknown[], inTransaction: boolean): Promise<Row[]> {
  const { text, name: base } = pgText(sql);
  const name = generation ? `${base}_${generation}` : base;
  let names = preparedNames.get(client);
  if (!names) preparedNames.set(client, (names = new Set()));
  const values = bindings as unknown[];
  if (!names.has(name) && names.size >= maxPreparedPerConnection) return rowsOf<Row>(await client.query({ text, values }));
  try {
    const result = await client.query({ text, values, name });
    names.add(name);
    return rowsOf<Row>(result);
  } catch (err) {
    // "cached plan must not change result type": a migration of another process changed a
    // table. Statements are prepared again under new names; in a transaction (aborted by the
    // error) the write is retried as after an outage (write-errors.ts), else it runs again now.
    if ((err as { code?: string }).code !== '0A000') throw err;
    generation++;
    if (inTransaction) throw err;
    return rowsOf<Row>(await client.query({ text, values }));
  }
}

/**
 * Runs `sql` on the transaction's own connection, prepared once per connection where the driver
 * allows it (PostgreSQL, better-sqlite3), else through knex. Returns the rows.
 */
export async function hotQuery<Row>(trx: Knex.Transaction, sql: string, bindings: readonly unknown[]): Promise<Row[]> {
  const pg = await pgClient(trx);
  if (pg) {
    announce(trx, sql, bindings);
    return pgQuery<Row>(pg, sql, bindings, true);
  }
  const db = await sqliteDatabase(trx);
  if (db) {
    announce(trx, sql, bindings);
    const stmt = sqliteStatement(db, sql);
    return (stmt as { reader?: boolean }).reader ? (stmt.all(...bindings) as Row[]) : (stmt.run(...bindings), []);
  }
  return rowsOf<Row>(await trx.raw(sql, bindings as Knex.ValueDict[keyof Knex.ValueDict][]));
}

/** hotQuery outside a transaction: on a connection of the pool, given back after. */
export async function hotRead<Row>(knex: Knex, sql: string, bindings: readonly unknown[]): Promise<Row[]> {
  const client = knex.client as unknown as { acquireConnection(): Promise<unknown>; releaseConnection(c: unknown): Promise<void>; config?: { client?: string } };
  const conn = await client.acquireConnection();
  try {
    if (client.config?.client === 'pg') {
      announce(knex, sql, bindings);
      return await pgQuery<Row>(conn as PgClient, sql, bindings, false);
    }
    if (conn && typeof (conn as SqliteDatabase).pragma === 'function') {
      announce(knex, sql, bindings);
      return sqliteStatement(conn as SqliteDatabase, sql).all(...bindings) as Row[];
    }
  } finally {
    await client.releaseConnection(conn);
  }
  return rowsOf<Row>(await knex.raw(sql, bindings as Knex.ValueDict[keyof Knex.ValueDict][]));
}
