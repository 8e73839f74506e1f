// Everything that differs between SQLite and PostgreSQL lives here; the rest of storage/
// is portable knex.
import type { Knex } from 'knex';
import { chunk } from './rows.ts';
import { columnType } from './schema-types.ts';

export type DialectName = 'sqlite' | 'postgres';

export interface Dialect {
  name: DialectName;
  /** Column type for keys compared in list order: byte order on both engines. */
  keyType: string;
  /** Takes the write lock that orders rv allocation: held until commit. Returns the last allocated rv. */
  lockRv(trx: Knex.Transaction): Promise<number>;
  /** Runs before the migration transaction: whatever must exist for lockMigrations. */
  prepareMigrations(knex: Knex): Promise<void>;
  /** Serializes schema migrations across processes starting at once. */
  lockMigrations(trx: Knex.Transaction): Promise<void>;
  /** Starts a read transaction that sees one consistent snapshot. */
  snapshot(knex: Knex): Promise<Knex.Transaction>;
  /** SQL for the database clock, ms since the epoch (leases compare against one clock). */
  nowMs: string;
  /** Appended to a SELECT of a row that must not change until the transaction ends (a shared row lock). */
  lockForWrite: string;
  /** SQL (and bindings) for the text value of `key` in a JSON object held in a text column. */
  jsonText(column: string, key: string): [string, string[]];
  /** Refreshes the planner's statistics. */
  analyze(knex: Knex): Promise<void>;
  /**
   * The row source of a multi-row INSERT (`VALUES …` or a SELECT) with its bindings, split
   * into as many statements as the engine's parameter limit needs.
   */
  rowsSource(table: string, columns: string[], rows: Array<Record<string, unknown>>): Array<[string, unknown[]]>;
  /**
   * `SELECT columns FROM objects o WHERE where AND (o.namespace, o.name) is one of pairs`, with
   * its bindings, written so that the engine probes the index once per pair.
   */
  selectObjectsByNames(columns: string, where: string, whereBindings: unknown[], pairs: Array<[string, string]>): [string, unknown[]];
  /** Tells other processes that changes were committed (a hint; polling still delivers). */
  notifyCommit(trx: Knex.Transaction, rv: number): Promise<void>;
  /**
   * Each `objects o` row's object as a JSON document: a join to add to the FROM clause (none
   * needed on SQLite) and the SQL that names the document in the JSON functions below.
   */
  jsonDocument: { join?: string; ref: string };
  /** SQL (and bindings) for the JSON number at `path` of the document: NULL when absent or not a number. */
  jsonNumberAt(ref: string, path: string[]): [string, unknown[]];
  /** The scalar at `path` as text (a string as is, a number or boolean as JSON writes it): NULL when absent, null, an object or an array. */
  jsonScalarTextAt(ref: string, path: string[]): [string, unknown[]];
  /** Whether `path` holds something other than null (a boolean SQL expression). */
  jsonPresentAt(ref: string, path: string[]): [string, unknown[]];
}

/** Rejects path keys the engines' path syntaxes cannot carry (callers validate first; this is a guard). */
function checkPath(path: string[]): void {
  if (path.length === 0) throw new Error('empty JSON path');
  for (const k of path) if (k === '' || /["\\\u0000-\u001f]/.test(k)) throw new Error(`JSON path key ${JSON.stringify(k)} is not supported`);
}

/** SQLite JSON path `$."a"."b"`. */
function sqlitePath(path: string[]): string {
  checkPath(path);
  return '$' + path.map((k) => `."${k}"`).join('');
}

/** PostgreSQL text[] literal `{"a","b"}` (bound as a string and cast). */
function pgPath(path: string[]): string {
  checkPath(path);
  return `{${path.map((k) => `"${k}"`).join(',')}}`;
}

/** The channel PostgreSQL NOTIFY uses to wake pollers in other processes. */
export const notifyChannel = 'panoptes_changes';

const migrationLockKey = 7_461_726_112;

export const sqlite: Dialect = {
  name: 'sqlite',
  keyType: 'text',
  async lockRv(trx) {
    // A write first, so the transaction holds SQLite's single write lock from here on
    // (a read first could not be upgraded if another process wrote in between).
    await trx('meta').where({ key: 'rv' }).update({ value: trx.raw('value') });
    const row = await trx('meta').where({ key: 'rv' }).first('value');
    return Number(row.value);
  },
  async prepareMigrations(knex) {
    // Outside any transaction: a statement of its own waits for the lock (busy_timeout).
    await knex.raw('CREATE TABLE IF NOT EXISTS schema_migrations (version integer primary key, applied_at text not null)');
  },
  async lockMigrations(trx) {
    // A write first takes the write lock, so a second process waits here until the first
    // commits (a read first would hold a snapshot that cannot be upgraded).
    await trx.raw('DELETE FROM schema_migrations WHERE version < 0');
  },
  async snapshot(knex) {
    return knex.transaction();
  },
  nowMs: "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)",
  // One writer at a time: a write transaction already excludes every other writer.
  lockForWrite: '',
  jsonText(column, key) {
    return [`json_extract(${column}, ?)`, [`$."${key}"`]];
  },
  async analyze(knex) {
    await knex.raw('ANALYZE');
  },
  rowsSource(_table, columns, rows) {
    const tuple = `(${columns.map(() => '?').join(', ')})`;
    return chunk(rows, columns.length).map((part) => {
      const bindings: unknown[] = [];
      for (const row of part) for (const c of columns) bindings.push(row[c]);
      return [`VALUES ${new Array(part.length).fill(tuple).join(', ')}`, bindings];
    });
  },
  selectObjectsByNames(columns, where, whereBindings, pairs) {
    const values = pairs.map(() => '(?, ?)').join(', ');
    return [`SELECT ${columns} FROM objects o WHERE ${where} AND (o.namespace, o.name) IN (VALUES ${values})`, [...whereBindings, ...pairs.flat()]];
  },
  async notifyCommit() {
    // One process owns an embedded database's writes; in-process listeners are woken by the store.
  },
  // json_* functions parse the text column; SQLite caches the parse of a row's document.
  jsonDocument: { ref: 'o.object' },
  jsonNumberAt(ref, path) {
    const p = sqlitePath(path);
    return [`(CASE WHEN json_type(${ref}, ?) IN ('integer', 'real') THEN json_extract(${ref}, ?) END)`, [p, p]];
  },
  jsonScalarTextAt(ref, path) {
    const p = sqlitePath(path);
    return [
      `(CASE json_type(${ref}, ?) WHEN 'text' THEN json_extract(${ref}, ?) WHEN 'integer' THEN CAST(json_extract(${ref}, ?) AS TEXT) WHEN 'real' THEN CAST(json_extract(${ref}, ?) AS TEXT) WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' END)`,
      [p, p, p, p],
    ];
  },
  jsonPresentAt(ref, path) {
    return [`(COALESCE(json_type(${ref}, ?), 'null') <> 'null')`, [sqlitePath(path)]];
  },
};

export const postgres: Dialect = {
  name: 'postgres',
  keyType: 'text COLLATE "C"',
  async lockRv(trx) {
    // The row lock orders writers: the next one allocates only after this one is visible.
    const row = await trx('meta').where({ key: 'rv' }).forUpdate().first('value');
    return Number(row.value);
  },
  async prepareMigrations() {
    // Everything happens under the advisory lock (concurrent CREATE TABLE IF NOT EXISTS can fail).
  },
  async lockMigrations(trx) {
    await trx.raw('SELECT pg_advisory_xact_lock(?)', [migrationLockKey]);
    await trx.raw('CREATE TABLE IF NOT EXISTS schema_migrations (version integer primary key, applied_at text not null)');
  },
  async snapshot(knex) {
    return knex.transaction({ isolationLevel: 'repeatable read', readOnly: true });
  },
  nowMs: '(extract(epoch from clock_timestamp()) * 1000)::bigint',
  lockForWrite: ' FOR SHARE',
  jsonText(column, key) {
    return [`(${column}::jsonb ->> ?)`, [key]];
  },
  async analyze(knex) {
    await knex.raw('ANALYZE');
  },
  rowsSource(table, columns, rows) {
    // One parameter, the rows as JSON: far cheaper to bind and parse than thousands of parameters.
    const defs = columns.map((c) => `"${c}" ${columnType(table, c)}`).join(', ');
    const list = columns.map((c) => `"${c}"`).join(', ');
    return [[`SELECT ${list} FROM json_to_recordset(?::json) AS x(${defs})`, [JSON.stringify(rows)]]];
  },
  selectObjectsByNames(columns, where, whereBindings, pairs) {
    // A lateral join, kept one (OFFSET 0 stops the planner from flattening it into a hash join
    // over the whole resource, which it picks while a fresh table has no statistics): one index
    // lookup per pair.
    // The key columns are COLLATE "C": so must the compared values be, or the index is unusable.
    const json = JSON.stringify(pairs.map(([x, y]) => ({ x, y })));
    const sql =
      `SELECT ${columns} FROM json_to_recordset(?::json) AS k(x text, y text) CROSS JOIN LATERAL ` +
      `(SELECT * FROM objects o WHERE ${where} AND o.namespace = k.x COLLATE "C" AND o.name = k.y COLLATE "C" OFFSET 0) AS o`;
    return [sql, [json, ...whereBindings]];
  },
  async notifyCommit(trx, rv) {
    await trx.raw('SELECT pg_notify(?, ?)', [notifyChannel, String(rv)]);
  },
  // The text column is parsed to jsonb once per row (OFFSET 0 keeps the planner from inlining
  // the cast into every expression that uses it).
  jsonDocument: { join: 'CROSS JOIN LATERAL (SELECT o.object::jsonb AS doc OFFSET 0) AS j', ref: 'j.doc' },
  jsonNumberAt(ref, path) {
    const p = pgPath(path);
    return [`(CASE WHEN jsonb_typeof(${ref} #> ?::text[]) = 'number' THEN (${ref} #>> ?::text[])::numeric END)`, [p, p]];
  },
  jsonScalarTextAt(ref, path) {
    const p = pgPath(path);
    return [`(CASE WHEN jsonb_typeof(${ref} #> ?::text[]) IN ('string', 'number', 'boolean') THEN ${ref} #>> ?::text[] END)`, [p, p]];
  },
  jsonPresentAt(ref, path) {
    return [`(COALESCE(jsonb_typeof(${ref} #> ?::text[]), 'null') <> 'null')`, [pgPath(path)]];
  },
};
