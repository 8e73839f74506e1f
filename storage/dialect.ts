// Everything that differs between SQLite and PostgreSQL lives here; the rest of storage/
// is portable knex.
import type { Knex } from 'knex';
import { countsUpsert, objectsUpsert, writeBatchRows, zeroNegativeCounts, type BatchRows } from './batch-rows.ts';
import { checkBindings } from './bound-values.ts';
import { insertRows, insertStatement, quote } from './insert.ts';
import { changePayload, maxNotifiedChanges, maxNotifyBytes } from './notify-payload.ts';
import { chunk, objectColumns, rowsOf, type ChangeRowValues } from './rows.ts';
import type { ObjectKey } from './types.ts';
import { columnType } from './schema-types.ts';
import { writeProtocolKey } from './meta.ts';
import { maxSqlDepth } from './sql-values.ts';
import { hotQuery, sqliteDatabase, sqliteStatement } from './prepared.ts';

export type DialectName = 'sqlite' | 'postgres';

/** An `objects` row's new values, by its id. */
export type ObjectRowUpdate = { id: number } & Record<string, string | number | null>;
export type ClusterRowUpdate = { name: string } & Record<string, string | null>;

export interface Dialect {
  name: DialectName;
  /** Column type for keys compared in list order: byte order on both engines. */
  keyType: string;
  /**
   * Takes the write lock that orders rv allocation (held until commit) and reads the named
   * leases, which stay locked against acquisition until commit (the writers' fences): one
   * statement on PostgreSQL. Returns the last allocated rv, the database's clock (change rows'
   * times) and the leases found; `switched`: the database writes in parallel now (read under
   * the lock: storage/ordered-commits.ts), and the serial write must start again.
   */
  lockRv(trx: Knex.Transaction, leases?: string[]): Promise<{ rv: number; now: number; leases: LeaseState[]; switched?: boolean }>;
  /**
   * lockRv for writes that append no change: only the named leases are locked against
   * acquisition until commit (PostgreSQL: FOR KEY SHARE; SQLite: the database's write lock, as
   * every write there), and read with the database's clock.
   */
  lockLeases(trx: Knex.Transaction, leases: string[]): Promise<{ now: number; leases: LeaseState[] }>;
  /**
   * Locks the lease row `name` for an acquisition if `takeable` (SQL over `leases`, with its
   * bindings) holds for it, waiting for every write transaction whose fence holds it
   * (PostgreSQL: FOR UPDATE, the one mode that conflicts with the fences' FOR KEY SHARE; SQLite:
   * the database's write lock). Returns whether it did.
   */
  lockLeaseForAcquisition(trx: Knex.Transaction, name: string, takeable: string, bindings: unknown[]): Promise<boolean>;
  /**
   * The end of a write: appends the change rows, moves the watermark to `rv` and tells other
   * processes (NOTIFY at commit, storage/notify-payload.ts): one statement on PostgreSQL.
   * `rv` null: a parallel writer, whose watermark moves when it publishes (ordered-commits.ts).
   */
  publishChanges(trx: Knex.Transaction, rows: ChangeRowValues[], rv: number | null): Promise<void>;
  /**
   * Updates `objects` rows by id, each with its values (the same columns in every row): one
   * statement on PostgreSQL, so that a round of status writes holds its rvs for one round trip
   * whatever its size (storage/cluster-objects.ts).
   */
  updateObjectRows(trx: Knex.Transaction, rows: readonly ObjectRowUpdate[]): Promise<void>;
  /**
   * Updates rows of the `clusters` table by name; returns the names of those that exist. One
   * statement on PostgreSQL: a round of status writes holds its connection for one round trip
   * whatever its size (storage/clusters.ts).
   */
  updateClusterRows(trx: Knex.Transaction, rows: readonly ClusterRowUpdate[]): Promise<string[]>;
  /**
   * Writes a batch's decided rows (objects, labels, counts) and publishes its changes: one
   * statement on PostgreSQL, one per table on SQLite (storage/batch-rows.ts).
   */
  writeBatch(trx: Knex.Transaction, rows: BatchRows): Promise<void>;
  /** Runs before the migration transaction: whatever must exist for lockMigrations. */
  prepareMigrations(knex: Knex): Promise<void>;
  /** Serializes schema migrations across processes starting at once. */
  lockMigrations(trx: Knex.Transaction): Promise<void>;
  /** Starts a read transaction that sees one consistent snapshot. */
  snapshot(knex: Knex): Promise<Knex.Transaction>;
  /** SQL for the database clock, ms since the epoch (leases compare against one clock). */
  nowMs: string;
  /** SQL: true while the server replays another's WAL (a hot standby, read-only); false on a primary. */
  inRecovery: string;
  /** SQL (and bindings) for the text value of `key` in a JSON object held in a text column. */
  jsonText(column: string, key: string): [string, string[]];
  /**
   * One query of `scans` (SELECTs of `objects o`, each read in index order) merged in `order`
   * (their result columns), at most `limit` rows: a merge of ordered scans that stops with
   * the limit, not a sort of everything the scans hold.
   */
  mergeInOrder(knex: Knex, scans: Knex.QueryBuilder[], order: string[], limit?: number): Knex.QueryBuilder;
  /**
   * The page of one ordered scan (a SELECT of `objects o`) whose filter passes over many index
   * entries for each it keeps (a substring of names, term-plan.ts), where reading a row for
   * each entry costs most: its keys first, then the page's rows by key. Undefined where the
   * engine checks such a filter on the index entries already (SQLite).
   */
  keysFirst?(knex: Knex, scan: Knex.QueryBuilder, order: string[], limit?: number): Knex.QueryBuilder;
  /** Refreshes the planner's statistics. */
  analyze(knex: Knex): Promise<void>;
  /**
   * Whether the Store refreshes the planner's statistics itself as the tables grow
   * (storage/statistics.ts): PostgreSQL's autovacuum comes a minute or more after a bulk sync;
   * SQLite plans with its own heuristics until an ANALYZE, and runs none by itself.
   */
  analyzeOnGrowth: boolean;
  /**
   * Runs `head <rows> suffix` for every row (an INSERT of `columns`, perhaps with ON CONFLICT
   * and RETURNING): SQLite runs one cached prepared statement per row on the driver (no
   * statement building or parsing per batch), PostgreSQL one statement whose rows travel as
   * one JSON parameter. Returns the RETURNING rows.
   */
  runInsert<Out>(trx: Knex.Transaction, insert: InsertStatement): Promise<Out[]>;
  /**
   * The `columns` of the objects named by `keys` (of any clusters and resources), probing the
   * index once per key: SQLite runs one cached prepared statement per key on the driver,
   * PostgreSQL one lateral join over the keys as a JSON parameter (one statement for a whole
   * group commit: a round trip under the rv lock costs every writer).
   */
  selectObjectsByKeys<Row>(trx: Knex.Transaction, columns: string, keys: ObjectKey[]): Promise<Row[]>;
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
  /** SQL (and bindings) true where the JSON text in `column` is beyond the engine's JSON functions, or '' when none is. */
  jsonUnreadable(column: string): [string, unknown[]];
  /**
   * Whether some value of `objects o`'s document at `path` (null: every element of an array,
   * `[*]`) is a scalar whose text is one of `values` ('in'), or is present and not null
   * ('exists'): a boolean SQL expression, never NULL (storage/json-fields.ts).
   */
  jsonAnyAt(path: Array<string | null>, test: 'in' | 'exists', values: string[], deadline?: number): [string, unknown[]];
  /**
   * How long a statement that walks documents may run, at most, whatever the budget's `ms`:
   * SQLite runs it on the event loop (better-sqlite3 is synchronous), so its walks over
   * arrays (jsonAnyAt's `deadline`, Date.now() ms) stop at a small bound; PostgreSQL runs it
   * in the server, bounded by statement_timeout (boundStatements).
   */
  walkMs: number;
  /** SQL of a selectable field's value in `o.fields`, with the field as a literal: the expression of objects_by_field_* (storage/json-fields.ts). */
  fieldsValue(field: string, alias?: string): string;
  /**
   * Statistics of `expr` over `objects`, kept by ANALYZE, for an index of it that is partial
   * (PostgreSQL's planner reads no statistics of a partial index: CREATE STATISTICS keeps them
   * apart). SQLite's ANALYZE keeps a partial index's own.
   */
  expressionStatistics(trx: Knex.Transaction, name: string, expr: string): Promise<void>;
  /** Bounds the time of each further statement of the transaction (PostgreSQL statement_timeout); SQLite has none to set. */
  boundStatements(trx: Knex.Transaction, ms: number): Promise<void>;
  /** Makes text columns unbounded: knex's string() is varchar(255) on PostgreSQL (SQLite bounds no text). */
  unboundText(trx: Knex.Transaction, table: string, columns: string[]): Promise<void>;
  /**
   * (Re)creates index `name` for equality lookups of a text column of any length: PostgreSQL's
   * btree refuses index rows over 2,704 bytes, its hash index stores a 4-byte hash.
   */
  equalityIndex(trx: Knex.Transaction, table: string, column: string, name: string): Promise<void>;
  /** `expr` (text) compared in byte order, as the key columns are: PostgreSQL COLLATE "C"; SQLite's BINARY already is. */
  byteOrder(expr: string): string;
  /**
   * Creates what serves substring search of names (storage/name-contains.ts): SQLite an FTS5
   * trigram table kept by triggers, PostgreSQL a pg_trgm GIN index. False when it cannot
   * (PostgreSQL: pg_trgm not installable by this role); searches then read without it.
   */
  nameSubstringIndex(trx: Knex.Transaction): Promise<boolean>;
  /**
   * SQL (and bindings) true where `o.name`, ASCII-lowercased, contains `needle` (ASCII
   * lowercase, no LIKE wildcard but `_`): through the trigram index, or as a filter the ordered
   * scan of the list evaluates (storage/term-plan.ts decides).
   */
  nameContains(needle: string, via: 'index' | 'scan'): [string, unknown[]];
  /**
   * Whether the planner chooses well between a term's own index and the list order's:
   * PostgreSQL estimates a range from its histograms and a substring from pg_trgm's statistics.
   * SQLite's estimates of both are fixed fractions, so storage/term-plan.ts decides for it,
   * with countNameCandidates.
   */
  plansTerms: boolean;
  /** How many objects the trigram index finds for `needle`, counted up to `cap` (where plansTerms is false). */
  countNameCandidates?(trx: Knex.Transaction, needle: string, cap: number): Promise<number>;
  /** `expr` as a value no index serves (SQLite `+expr`): the term is then a filter of the scan the planner orders by. */
  unindexed(expr: string): string;
  /** SQL for the length in bytes (UTF-8) of a text column. */
  byteLength(column: string): string;
  /** SQL for the bytes of the JSON text in `column` in the engine's binary JSON form (PostgreSQL jsonb, SQLite JSONB), as a column of that type would hold it. */
  binaryJsonBytes(column: string): string;
  /** The bytes each table, its TOAST and each index take on disk (storage/sizes.ts), and the database's. */
  relationSizes(knex: Knex): Promise<{ relations: RelationSize[]; databaseBytes: number }>;
  /** Gives the space of deleted rows back to the file system (SQLite VACUUM, PostgreSQL VACUUM FULL): benchmarks only, it locks every table. */
  reclaimSpace(knex: Knex): Promise<void>;
}

/** One table, TOAST table or index, as the engine stores it. */
export interface RelationSize {
  /** The table it belongs to. */
  table: string;
  /** Its own name: the table's, the index's, or `<table> (TOAST)`. */
  name: string;
  kind: 'table' | 'toast' | 'index';
  bytes: number;
}

/** Rejects path keys the engines' path syntaxes cannot carry (callers validate first; this is a guard). */
function checkPath(path: string[]): void {
  if (path.length === 0) throw new Error('empty JSON path');
  // Documents are cut below maxSqlDepth where SQLite could not read them (storage/sql-values.ts): shorter paths read the same on both engines.
  if (path.length >= maxSqlDepth) throw new Error(`JSON path of ${path.length} keys: at most ${maxSqlDepth - 1}`);
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

/** A path with [*] (null) as its runs of keys between them: `a.b[*].c` → [[a, b], [c]]. */
function splitAtEach(path: Array<string | null>): string[][] {
  const parts: string[][] = [[]];
  for (const k of path) {
    if (k === null) parts.push([]);
    else parts[parts.length - 1].push(k);
  }
  return parts;
}

/** `."a"."b"` (SQLite path text after `$` or an element's fullkey). */
function keysPath(keys: string[]): string {
  if (keys.length) checkPath(keys);
  return keys.map((k) => `."${k}"`).join('');
}

/** PostgreSQL text[] literal of keys, `{}` for none (the value itself). */
function pgKeys(keys: string[]): string {
  return keys.length ? pgPath(keys) : '{}';
}

/** Text inside an SQL string literal (a field name: no control characters, as checkPath). */
function sqlLiteralText(text: string): string {
  checkPath([text]);
  return text.replaceAll("'", "''");
}

/** An INSERT of many rows, as storage/insert.ts composes it. */
export interface InsertStatement {
  table: string;
  /** `INSERT INTO t (cols)` */
  head: string;
  /** ` ON CONFLICT ... RETURNING ...`, or '' */
  suffix: string;
  columns: string[];
  rows: Array<Record<string, unknown>>;
  returning: boolean;
}

/** A statement stopped by its walk's deadline (SQLite: panoptes_walk); json-fields.ts answers it as a 504. */
export class WalkDeadlineError extends Error {
  override name = 'WalkDeadlineError';
  readonly code = 'PANOPTES_WALK_DEADLINE';
  constructor() {
    super('the statement walked JSON arrays past its deadline');
  }
}

/** Elements walked, counted across statements: the clock is read every walkClockEvery elements. */
let walkedElements = 0;
const walkClockEvery = 64;

/**
 * The functions SQLite's SQL here calls, registered on each better-sqlite3 connection
 * (storage/connect.ts). panoptes_walk(deadline, element) is 1 until the clock reaches
 * `deadline` (ms since the epoch), then fails the statement: SQLite has no other way to stop a
 * statement from inside the process (better-sqlite3 is built without its progress handler and
 * offers no interrupt), and a statement runs on the event loop.
 */
export function sqliteFunctions(db: { function(name: string, opts: { deterministic: boolean; directOnly: boolean }, fn: (...args: unknown[]) => unknown): unknown }): void {
  // (Two arguments: better-sqlite3 takes the function's arity from its length.)
  db.function('panoptes_walk', { deterministic: false, directOnly: true }, (deadline: unknown, _element: unknown) => {
    if (++walkedElements % walkClockEvery === 0 && Date.now() >= Number(deadline)) throw new WalkDeadlineError();
    return 1;
  });
}

/** A lease as a write transaction sees it (storage/fenced.ts checks the fences against it). */
export interface LeaseState {
  name: string;
  holder: string | null;
  epoch: number;
  /** Its expiry is past on the database's clock. */
  expired: boolean;
}

export type LeaseRow = { name: string | null; holder: string | null; epoch: number | string; expires_at: number | string; now: number | string };

/** The lease rows of a locking statement (a LEFT JOIN: a row without a name found none), expiry against its `now`. */
export const leaseStates = (rows: LeaseRow[]): LeaseState[] =>
  rows.filter((r) => r.name !== null).map((r) => ({ name: r.name!, holder: r.holder, epoch: Number(r.epoch), expired: Number(r.expires_at) <= Number(r.now) }));

/** The channel PostgreSQL NOTIFY uses to wake pollers in other processes. */
export const notifyChannel = 'panoptes_changes';

const migrationLockKey = 7_461_726_112;

const sqliteNowMs = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)";
const postgresNowMs = '(extract(epoch from clock_timestamp()) * 1000)::bigint';

export const sqlite: Dialect = {
  name: 'sqlite',
  keyType: 'text',
  async lockRv(trx, leases = []) {
    // A write first, so the transaction holds SQLite's single write lock from here on
    // (a read first could not be upgraded if another process wrote in between); it also
    // excludes every acquisition until commit.
    const [row] = await hotQuery<{ value: number | string; now: number | string }>(trx, `UPDATE meta SET value = value WHERE key = 'rv' RETURNING value, ${sqliteNowMs} AS now`, []);
    const now = Number(row.now);
    const found = leases.length ? await hotQuery<LeaseRow>(trx, 'SELECT name, holder, epoch, expires_at, ? AS now FROM leases WHERE name IN (SELECT value FROM json_each(?))', [now, JSON.stringify(leases)]) : [];
    return { rv: Number(row.value), now, leases: leaseStates(found) };
  },
  async lockLeases(trx, leases) {
    const { now, leases: found } = await sqlite.lockRv(trx, leases);
    return { now, leases: found };
  },
  async lockLeaseForAcquisition(trx, name, takeable, bindings) {
    // A write: the transaction takes SQLite's write lock here (a read first could not be upgraded).
    return rowsOf(await trx.raw(`UPDATE leases SET holder = holder WHERE name = ? AND (${takeable}) RETURNING name`, [name, ...bindings] as Knex.ValueDict[keyof Knex.ValueDict][])).length > 0;
  },
  async publishChanges(trx, rows, rv) {
    await insertRows(trx, sqlite, 'changes', rows as unknown as Array<Record<string, unknown>>);
    if (rv !== null) await hotQuery(trx, "UPDATE meta SET value = ? WHERE key = 'rv'", [rv]);
  },
  async updateObjectRows(trx, rows) {
    // One process writes SQLite: a statement is a call, not a round trip.
    for (const { id, ...values } of rows) await trx('objects').where({ id }).update(values);
  },
  async updateClusterRows(trx, rows) {
    const found: string[] = [];
    for (const { name, ...values } of rows) if (Number(await trx('clusters').where({ name }).update(values)) > 0) found.push(name);
    return found;
  },
  writeBatch: (trx, rows) => writeBatchRows(trx, sqlite, rows),
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
  nowMs: sqliteNowMs,
  inRecovery: '0',
  mergeInOrder(_knex, scans, order, limit) {
    // A compound SELECT under ORDER BY merges its arms, each read in the index's order
    // (EXPLAIN QUERY PLAN: MERGE (UNION ALL)); an arm of its own ORDER BY would be a subquery
    // sorted apart.
    const merged = scans[0].unionAll(scans.slice(1)).orderBy(order);
    if (limit !== undefined) merged.limit(limit);
    return merged;
  },
  jsonText(column, key) {
    return [`json_extract(${column}, ?)`, [`$."${key}"`]];
  },
  async analyze(knex) {
    await knex.raw('ANALYZE');
  },
  analyzeOnGrowth: false,
  async runInsert<Out>(trx: Knex.Transaction, ins: InsertStatement): Promise<Out[]> {
    const sql = `${ins.head} VALUES (${ins.columns.map(() => '?').join(', ')})${ins.suffix}`;
    const db = await sqliteDatabase(trx);
    const out: Out[] = [];
    if (db) {
      const stmt = sqliteStatement(db, sql);
      const values: unknown[] = new Array(ins.columns.length);
      for (const row of ins.rows) {
        for (let i = 0; i < ins.columns.length; i++) values[i] = row[ins.columns[i]] ?? null;
        checkBindings(values); // bound on the driver, past knex's check (storage/bound-values.ts)
        if (ins.returning) out.push(stmt.get(...values) as Out);
        else stmt.run(...values);
      }
      return out;
    }
    // The asynchronous sqlite3 driver (compared in bench:storage): multi-row VALUES through knex.
    const tuple = `(${ins.columns.map(() => '?').join(', ')})`;
    for (const part of chunk(ins.rows, ins.columns.length)) {
      const bindings: unknown[] = [];
      for (const row of part) for (const c of ins.columns) bindings.push(row[c] ?? null);
      const result: unknown = await trx.raw(`${ins.head} VALUES ${new Array(part.length).fill(tuple).join(', ')}${ins.suffix}`, bindings as Knex.ValueDict[keyof Knex.ValueDict][]);
      if (ins.returning) out.push(...rowsOf<Out>(result));
    }
    return out;
  },
  async selectObjectsByKeys<Row>(trx: Knex.Transaction, columns: string, keys: ObjectKey[]): Promise<Row[]> {
    const db = await sqliteDatabase(trx);
    if (db) {
      const stmt = sqliteStatement(db, `SELECT ${columns} FROM objects o WHERE o.grp = ? AND o.resource = ? AND o.namespace = ? AND o.name = ? AND o.cluster = ?`);
      const out: Row[] = [];
      for (const k of keys) {
        const values = [k.group, k.resource, k.namespace, k.name, k.cluster];
        checkBindings(values);
        const row = stmt.get(...values);
        if (row) out.push(row as Row);
      }
      return out;
    }
    const out: Row[] = [];
    for (const part of chunk(keys, 5, 20_000)) {
      const values = part.map(() => '(?, ?, ?, ?, ?)').join(', ');
      const sql = `SELECT ${columns} FROM objects o WHERE (o.cluster, o.grp, o.resource, o.namespace, o.name) IN (VALUES ${values})`;
      out.push(...rowsOf<Row>(await trx.raw(sql, part.flatMap((k) => [k.cluster, k.group, k.resource, k.namespace, k.name]))));
    }
    return out;
  },
  // json_* functions parse the text column; SQLite caches the parse of a row's document.
  // json_doc is set where the object's own text is not what SQL may read (storage/sql-values.ts).
  jsonDocument: { ref: 'COALESCE(o.json_doc, o.object)' },
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
  jsonAnyAt(path, test, values, deadline) {
    // Each [*] is a json_each over the value before it, read from the previous element's own
    // `value` (a container's JSON text), never from the document by the element's fullkey:
    // a lookup by fullkey walks the array up to the element's index, so an array of n
    // elements cost n²/2 steps (a pod with 50,000 env entries held the event loop for 13 s).
    // Each element is written out and parsed a bounded number of times: the walk is linear
    // in the document. The value a step starts from is NULL where it is no container, and
    // json_each and json_type read NULL as nothing, as an element that is no object reads.
    // With a deadline every element of every level is counted by panoptes_walk (registered
    // on the connection, sqliteFunctions), which fails the statement once it is past.
    const parts = splitAtEach(path);
    const from: string[] = [];
    const bindings: unknown[] = [];
    const walked: string[] = [];
    let base = 'COALESCE(o.json_doc, o.object)';
    parts.slice(0, -1).forEach((keys, i) => {
      const at = '$' + keysPath(keys);
      from.push(`json_each(CASE WHEN json_type(${base}, ?) = 'array' THEN ${base} END, ?) e${i}`);
      bindings.push(at, at);
      // The element's id: SQLite evaluates the term in the element's own loop.
      if (deadline !== undefined) walked.push(`panoptes_walk(${Math.floor(deadline)}, e${i}.id)`);
      base = `(CASE WHEN e${i}.type IN ('object', 'array') THEN e${i}.value END)`;
    });
    const lastKeys = parts[parts.length - 1];
    const element = from.length > 0 && lastKeys.length === 0 ? `e${from.length - 1}` : undefined;
    const last = '$' + keysPath(lastKeys);
    // The value at the path: an element itself (a path ending in [*]) by its type and atom, else the keys after the last [*] from its base.
    const type = element ? `${element}.type` : `json_type(${base}, ?)`;
    const typeBindings = element ? [] : [last];
    const scalar = element ? `${element}.atom` : `json_extract(${base}, ?)`;
    const scalarBindings = element ? [] : [last];
    const cond =
      test === 'exists'
        ? `COALESCE(${type}, 'null') <> 'null'`
        : `(CASE ${type} WHEN 'text' THEN ${scalar} WHEN 'integer' THEN CAST(${scalar} AS TEXT) WHEN 'real' THEN CAST(${scalar} AS TEXT) WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' END) IN (${values.map(() => '?').join(', ')})`;
    const condBindings = test === 'exists' ? typeBindings : [...typeBindings, ...scalarBindings, ...scalarBindings, ...scalarBindings, ...values];
    if (from.length === 0) return [`COALESCE(${cond}, 0)`, condBindings];
    return [`EXISTS (SELECT 1 FROM ${from.join(', ')} WHERE ${[...walked, cond].join(' AND ')})`, [...bindings, ...condBindings]];
  },
  // A statement that walks documents holds the event loop at most this long (storage/json-fields.ts).
  walkMs: 250,
  fieldsValue: (field, alias = 'o.') => `json_extract(${alias}fields, '$."${sqlLiteralText(field)}"')`,
  async expressionStatistics() {},
  async boundStatements() {},
  // SQLite's JSON parser stops at 1,000 levels of nesting (json_valid is 0 past it).
  jsonUnreadable: (column) => [`(length(${column}) > 1800 AND json_valid(${column}) = 0)`, []],
  async unboundText() {},
  async equalityIndex(trx, table, column, name) {
    await trx.raw(`DROP INDEX IF EXISTS ${quote(name)}`);
    await trx.raw(`CREATE INDEX ${quote(name)} ON ${quote(table)} (${quote(column)})`);
  },
  byteOrder: (expr) => expr,
  async nameSubstringIndex(trx) {
    // An external-content FTS5 table over objects.name with the trigram tokenizer (SQLite 3.34+,
    // https://sqlite.org/fts5.html#the_trigram_tokenizer): `name LIKE '%abc%'` on it reads the
    // index. Names never change in a row (they are its key), so inserts and deletes keep it.
    await trx.raw(`CREATE VIRTUAL TABLE IF NOT EXISTS objects_names USING fts5(name, content='objects', content_rowid='id', tokenize='trigram case_sensitive 0')`);
    await trx.raw(`CREATE TRIGGER IF NOT EXISTS objects_names_insert AFTER INSERT ON objects BEGIN INSERT INTO objects_names (rowid, name) VALUES (new.id, new.name); END`);
    await trx.raw(`CREATE TRIGGER IF NOT EXISTS objects_names_delete AFTER DELETE ON objects BEGIN INSERT INTO objects_names (objects_names, rowid, name) VALUES ('delete', old.id, old.name); END`);
    await trx.raw(`INSERT INTO objects_names (objects_names) VALUES ('rebuild')`);
    return true;
  },
  nameContains(needle, via) {
    // FTS5 serves LIKE with two arguments only (no ESCAPE): `_` stays a wildcard there, which
    // finds a superset; instr() then holds each row to the exact substring (SQLite's lower()
    // folds ASCII only, as the in-memory matcher does). SQLite checks instr() on the list
    // index's entries before it reads a row.
    if (via === 'scan') return [`instr(lower(o.name), ?) > 0`, [needle]];
    return [`o.id IN (SELECT rowid FROM objects_names WHERE name LIKE ?) AND instr(lower(o.name), ?) > 0`, [`%${needle}%`, needle]];
  },
  async countNameCandidates(trx, needle, cap) {
    // Every resource's names (the FTS table has no resource column): an upper bound.
    const row = (await trx.raw(`SELECT count(*) AS n FROM (SELECT 1 FROM objects_names WHERE name LIKE ? LIMIT ?)`, [`%${needle}%`, cap])) as Array<{ n: number }>;
    return Number(row[0].n);
  },
  plansTerms: false,
  unindexed: (expr) => `+${expr}`,
  byteLength: (column) => `length(CAST(${column} AS BLOB))`,
  binaryJsonBytes: (column) => `length(jsonb(${column}))`,
  async relationSizes(knex) {
    // dbstat (compiled into better-sqlite3): the pages of every b-tree in use, free pages not counted.
    await knex.raw('PRAGMA wal_checkpoint(TRUNCATE)');
    const rows = rowsOf<{ name: string; type: string; tbl: string; bytes: number | string }>(
      await knex.raw(`SELECT d.name AS name, m.type AS type, m.tbl_name AS tbl, SUM(d.pgsize) AS bytes FROM dbstat d JOIN sqlite_schema m ON m.name = d.name GROUP BY d.name, m.type, m.tbl_name`),
    );
    const [pages] = rowsOf<{ page_count: number }>(await knex.raw('PRAGMA page_count'));
    const [size] = rowsOf<{ page_size: number }>(await knex.raw('PRAGMA page_size'));
    return {
      relations: rows.map((r) => ({ table: r.tbl, name: r.name, kind: r.type === 'index' ? 'index' : 'table', bytes: Number(r.bytes) })),
      databaseBytes: Number(pages.page_count) * Number(size.page_size),
    };
  },
  async reclaimSpace(knex) {
    await knex.raw('VACUUM');
  },
};

/** A SELECT of `rows` from one JSON parameter: far cheaper to bind and parse than thousands of parameters. */
function postgresRowsSource(table: string, columns: string[], rows: Array<Record<string, unknown>>): [string, unknown[]] {
  const defs = columns.map((c) => `"${c}" ${columnType(table, c)}`).join(', ');
  const list = columns.map((c) => `"${c}"`).join(', ');
  return [`SELECT ${list} FROM json_to_recordset(?::json) AS x(${defs})`, [JSON.stringify(rows)]];
}

type Binding = Knex.ValueDict[keyof Knex.ValueDict];

/**
 * The CTEs that append `rows` to the change log, move the watermark to `rv`, and select the
 * NOTIFYs (`notified`): one per change of a small batch, carrying it (or its rv alone when
 * the payload is too long: PostgreSQL checks the size in its own encoding, so the fallback is
 * made there), else one with the watermark. Sent at commit, in the order selected (rv order).
 */
function postgresPublish(rows: ChangeRowValues[], rv: number | null, fillGapsBelow?: number): [string, Binding[]] {
  const columns = Object.keys(rows[0]);
  const [source, values] = postgresRowsSource('changes', columns, rows as unknown as Array<Record<string, unknown>>);
  const notes = rows.length <= maxNotifiedChanges ? rows.map((r) => ({ rv: r.rv, p: changePayload(r) })) : [{ rv: rv ?? rows[rows.length - 1].rv, p: null }];
  if (fillGapsBelow !== undefined && rv === null) throw new Error('writeBatch: gaps are filled by a write that moves the watermark');
  // Every CTE reads the statement's snapshot: the gaps are below the watermark as it was.
  const gaps = fillGapsBelow === undefined ? '' : `gaps AS (${postgresGapRows("(SELECT value FROM meta WHERE key = 'rv') + 1", '?::bigint - 1')}), `;
  return [
    `appended AS (INSERT INTO changes (${columns.map(quote).join(', ')}) ${source}), ${gaps}${rv === null ? '' : "watermark AS (UPDATE meta SET value = ? WHERE key = 'rv'), "}` +
      `notified AS (SELECT pg_notify(?, CASE WHEN octet_length(n.p) <= ${maxNotifyBytes} THEN n.p ELSE n.rv::text END) FROM ROWS FROM (json_to_recordset(?::json) AS (rv bigint, p text)) WITH ORDINALITY AS n(rv, p, i) ORDER BY n.i)`,
    [...(values as Binding[]), ...(fillGapsBelow === undefined ? [] : [fillGapsBelow]), ...(rv === null ? [] : [rv]), notifyChannel, JSON.stringify(notes)],
  ];
}

/** What a gap row holds: the rv of a range allocated and never committed (storage/ordered-commits.ts). No list, history read or watch matches it. */
export const gapType = 'GAP';

/** The INSERT of gap rows for the rvs `from..to` (SQL expressions). */
export const postgresGapRows = (from: string, to: string): string =>
  `INSERT INTO changes (rv, type, cluster, grp, version, resource, namespace, name, uid, object, prev_object, ts, epoch) ` +
  `SELECT g, '${gapType}', '', '', '', '', '', '', '', '{}', NULL, ${postgres.nowMs}, NULL FROM generate_series(${from}, ${to}) g`;

export const postgres: Dialect = {
  name: 'postgres',
  keyType: 'text COLLATE "C"',
  async lockRv(trx, leases = []) {
    // The row lock orders writers: the next one allocates only after this one is visible.
    // The fences' lease rows are locked in the same statement, FOR KEY SHARE: an acquisition
    // (FOR UPDATE: lockLeaseForAcquisition) waits for this transaction, so no write lands after
    // its lease moved on, while a renewal (an UPDATE of no key column) does not: the holder's
    // renewals never queue behind its own writes, which queue for the rv lock (at a thousand
    // clusters, renewals took 1-5 s behind them and the leases were given up).
    // (FOR SHARE would block renewals too.)
    // Prepared once per connection (storage/prepared.ts): the lease names are one array value.
    // The protocol's row is locked with it: a switch to parallel writes (which updates it)
    // is read here by every serial writer that queued behind it (storage/ordered-commits.ts).
    const rows = await hotQuery<LeaseRow & { key: string; rv: number | string }>(
      trx,
      `SELECT m.key, m.value AS rv, c.now, l.name, l.holder, l.epoch, l.expires_at FROM meta m CROSS JOIN (SELECT ${postgresNowMs} AS now) c ` +
        `LEFT JOIN LATERAL (SELECT * FROM leases WHERE name = ANY(?::text[]) FOR KEY SHARE) l ON true WHERE m.key IN ('rv', '${writeProtocolKey}') ORDER BY m.key FOR UPDATE OF m`,
      [leases],
    );
    const rv = rows.find((r) => r.key === 'rv')!;
    const switched = rows.some((r) => r.key === writeProtocolKey && Number(r.rv) === 1);
    return { rv: Number(rv.rv), now: Number(rv.now), leases: leaseStates(rows.filter((r) => r.key === 'rv')), switched };
  },
  async lockLeases(trx, leases) {
    const rows = rowsOf<LeaseRow>(
      await trx.raw(
        `SELECT c.now, l.name, l.holder, l.epoch, l.expires_at FROM (SELECT ${postgresNowMs} AS now) c ` +
          `LEFT JOIN LATERAL (SELECT * FROM leases WHERE name IN (${leases.map(() => '?').join(', ')}) FOR KEY SHARE) l ON true`,
        leases,
      ),
    );
    return { now: Number(rows[0].now), leases: leaseStates(rows) };
  },
  async lockLeaseForAcquisition(trx, name, takeable, bindings) {
    return rowsOf(await trx.raw(`SELECT name FROM leases WHERE name = ? AND (${takeable}) FOR UPDATE`, [name, ...bindings] as Binding[])).length > 0;
  },
  async publishChanges(trx, rows, rv) {
    const [sql, bindings] = postgresPublish(rows, rv);
    await hotQuery(trx, `WITH ${sql} SELECT count(*) FROM notified`, bindings);
  },
  async updateObjectRows(trx, rows) {
    if (rows.length === 0) return;
    const columns = Object.keys(rows[0]).filter((c) => c !== 'id');
    const [source, bindings] = postgresRowsSource('objects', ['id', ...columns], [...rows]);
    await trx.raw(`UPDATE objects AS o SET ${columns.map((c) => `"${c}" = v."${c}"`).join(', ')} FROM (${source}) AS v WHERE o.id = v.id`, bindings as Binding[]);
  },
  async updateClusterRows(trx, rows) {
    if (rows.length === 0) return [];
    const columns = Object.keys(rows[0]).filter((c) => c !== 'name');
    const [source, bindings] = postgresRowsSource('clusters', ['name', ...columns], [...rows]);
    const updated = rowsOf<{ name: string }>(await trx.raw(`UPDATE clusters AS c SET ${columns.map((c) => `"${c}" = v."${c}"`).join(', ')} FROM (${source}) AS v WHERE c.name = v.name RETURNING c.name`, bindings as Binding[]));
    return updated.map((r) => r.name);
  },
  async writeBatch(trx, b) {
    // One statement: the rows of every table, the change log, the watermark and the NOTIFY.
    // Its parts see one snapshot and run in no set order, so no two touch the same row: an
    // object is upserted or deleted; a relabelled object's label rows not in its new set are
    // deleted, those in it upserted (an unchanged one is not rewritten).
    const parts: string[] = [];
    const bindings: Binding[] = [];
    const add = (sql: string, values: Binding[]) => {
      parts.push(sql);
      bindings.push(...values);
    };
    if (b.upserts.length) {
      const ins = insertStatement('objects', b.upserts, objectsUpsert);
      const [source, values] = postgresRowsSource('objects', ins.columns, ins.rows);
      add(`up AS (${ins.head} ${source}${ins.suffix})`, values as Binding[]);
    }
    const keep = b.relabel.flatMap((r) => (r.id === undefined ? [] : r.labels.map((l) => ({ obj_id: r.id, key: l.key }))));
    const dropFrom = [...b.deleteIds, ...b.relabel.flatMap((r) => (r.id === undefined ? [] : [r.id]))];
    if (dropFrom.length) {
      add(
        `dropped_labels AS (DELETE FROM object_labels d WHERE d.obj_id = ANY(?::bigint[]) AND NOT EXISTS ` +
          `(SELECT 1 FROM json_to_recordset(?::json) AS k(obj_id bigint, key text) WHERE k.obj_id = d.obj_id AND k.key = d.key))`,
        [dropFrom.map(String), JSON.stringify(keep)],
      );
    }
    if (b.deleteIds.length) add('dropped AS (DELETE FROM objects WHERE id = ANY(?::bigint[]))', [b.deleteIds.map(String)]);
    const labels = b.relabel.flatMap((r) => r.labels.map((l) => ({ ...r.object, ...l })));
    if (labels.length) {
      add(
        `labelled AS (INSERT INTO object_labels (obj_id, key, value, num) SELECT up.id, l.key, l.value, l.num FROM json_to_recordset(?::json) ` +
          `AS l(cluster text, grp text, resource text, namespace text, name text, key text, value text, num bigint) ` +
          `JOIN up ON up.cluster = l.cluster AND up.grp = l.grp AND up.resource = l.resource AND up.namespace = l.namespace AND up.name = l.name ` +
          `ON CONFLICT (obj_id, key) DO UPDATE SET value = excluded.value, num = excluded.num WHERE (object_labels.value, object_labels.num) IS DISTINCT FROM (excluded.value, excluded.num))`,
        [JSON.stringify(labels)],
      );
    }
    if (b.counts.length) {
      const ins = insertStatement('object_counts', b.counts, countsUpsert);
      const [source, values] = postgresRowsSource('object_counts', ins.columns, ins.rows);
      add(`counted AS (${ins.head} ${source}${ins.suffix})`, values as Binding[]);
    }
    const [publish, values] = postgresPublish(b.changes, b.rv, b.fillGapsBelow);
    add(publish, values);
    // The notifications are evaluated by the outer query (a CTE that is not data-modifying runs only when read);
    // counts that came out negative (a decrement of a count never kept) are set to zero after.
    const negative = b.counts.length ? 'LEFT JOIN counted c ON c.n < 0' : 'LEFT JOIN (SELECT NULL AS grp, NULL AS resource, NULL AS cluster, NULL AS namespace, NULL::bigint AS n) c ON false';
    const rows = await hotQuery<{ grp: string | null; resource: string; cluster: string; namespace: string; n: string | null }>(
      trx,
      `WITH ${parts.join(', ')} SELECT c.grp, c.resource, c.cluster, c.namespace, c.n FROM (SELECT count(*) FROM notified) s ${negative}`,
      bindings,
    );
    await zeroNegativeCounts(trx, rows.filter((r) => r.grp !== null) as Array<{ grp: string; resource: string; cluster: string; namespace: string; n: string }>);
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
  nowMs: postgresNowMs,
  inRecovery: 'pg_is_in_recovery()',
  mergeInOrder(knex, scans, order, limit) {
    // A Merge Append of the scans needs each of them to be ordered where it is planned: a
    // subquery with its own ORDER BY (and LIMIT), under a UNION ALL in FROM (a UNION ALL at
    // the top is planned as Append and Sort). Arms with WHERE clauses are not pulled up into
    // the outer query (prepjointree.c, is_safe_append_member), so without their own ORDER BY
    // they are planned unordered.
    const arms = scans.map((s, i) => {
      s.orderBy(order.map((c) => `o.${c}`));
      if (limit !== undefined) s.limit(limit);
      return knex.select('*').from(s.as(`s${i}`));
    });
    const merged = knex.select('*').from(arms[0].unionAll(arms.slice(1)).as('merged')).orderBy(order);
    if (limit !== undefined) merged.limit(limit);
    return merged;
  },
  keysFirst(knex, scan, order, limit) {
    // The keys as an index-only scan of objects_list_order, its filter checked on the entries
    // (the heap is read only for pages the visibility map does not vouch for): an ordered scan
    // that keeps a tenth of 25,000 entries reads 25,000 rows otherwise. A subquery with a LIMIT
    // is planned on its own (not pulled up into the join); a bitmap scan of the trigram index
    // (few matches) reads its rows either way. Then the page's rows, one probe of the unique
    // list index each: LATERAL, since a join left to the planner may estimate few matches and
    // hash every object.
    const key = ['grp', 'resource', ...order];
    const keys = scan.clearSelect().select(key.map((c) => `o.${c}`)).orderBy(order.map((c) => `o.${c}`));
    if (limit !== undefined) keys.limit(limit);
    // (LIMIT 1, of a unique key: a subquery without one is pulled up into a plain join.)
    const row = `SELECT ${objectColumns.map((c) => `r.${c}`).join(', ')} FROM objects r WHERE ${key.map((c) => `r.${c} = k.${c}`).join(' AND ')} LIMIT 1`;
    return knex
      .select(objectColumns.map((c) => `o.${c}`))
      .from(keys.as('k'))
      .joinRaw(`CROSS JOIN LATERAL (${row}) o`)
      .orderBy(order.map((c) => `k.${c}`));
  },
  jsonText(column, key) {
    return [`(${column}::jsonb ->> ?)`, [key]];
  },
  async analyze(knex) {
    await knex.raw('ANALYZE');
  },
  analyzeOnGrowth: true,
  async runInsert<Out>(trx: Knex.Transaction, ins: InsertStatement): Promise<Out[]> {
    const [source, bindings] = postgresRowsSource(ins.table, ins.columns, ins.rows);
    const result: unknown = await trx.raw(`${ins.head} ${source}${ins.suffix}`, bindings as Knex.ValueDict[keyof Knex.ValueDict][]);
    return ins.returning ? rowsOf<Out>(result) : [];
  },
  async selectObjectsByKeys<Row>(trx: Knex.Transaction, columns: string, keys: ObjectKey[]): Promise<Row[]> {
    // A lateral join, kept one (OFFSET 0 stops the planner from flattening it into a hash join
    // over the whole table, which it picks while a fresh table has no statistics): one index
    // lookup per key.
    // The key columns are COLLATE "C": so must the compared values be, or the index is unusable.
    const json = JSON.stringify(keys.map((k) => ({ c: k.cluster, g: k.group, r: k.resource, x: k.namespace, y: k.name })));
    const sql =
      `SELECT ${columns} FROM json_to_recordset(?::json) AS k(c text, g text, r text, x text, y text) CROSS JOIN LATERAL ` +
      `(SELECT * FROM objects o WHERE o.grp = k.g COLLATE "C" AND o.resource = k.r COLLATE "C" AND o.namespace = k.x COLLATE "C" AND o.name = k.y COLLATE "C" AND o.cluster = k.c COLLATE "C" OFFSET 0) AS o`;
    return hotQuery<Row>(trx, sql, [json]);
  },
  // The text column is parsed to jsonb once per row (OFFSET 0 keeps the planner from inlining
  // the cast into every expression that uses it).
  // json_doc is set where the object's own text is not what jsonb accepts (storage/sql-values.ts).
  jsonDocument: { join: 'CROSS JOIN LATERAL (SELECT COALESCE(o.json_doc, o.object)::jsonb AS doc OFFSET 0) AS j', ref: 'j.doc' },
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
  jsonAnyAt(path, test, values) {
    // (No deadline: the statement runs in the server, under statement_timeout.)
    const cond = (x: string) => (test === 'exists' ? `jsonb_typeof(${x}) <> 'null'` : `jsonb_typeof(${x}) IN ('string', 'number', 'boolean') AND ${x} #>> '{}' IN (${values.map(() => '?').join(', ')})`);
    // The document is parsed once per row (OFFSET 0 keeps the planner from inlining the cast
    // into each use). Each [*] is jsonb_array_elements of the value before it when that is an
    // array (of NULL, no rows); #> of an element that is no object is NULL, not an error.
    const parts = splitAtEach(path);
    const from = ['(SELECT COALESCE(o.json_doc, o.object)::jsonb AS d OFFSET 0) AS s'];
    const bindings: unknown[] = [];
    let base = 's.d';
    parts.slice(0, -1).forEach((keys, i) => {
      const at = `(${base} #> ?::text[])`;
      from.push(`jsonb_array_elements(CASE WHEN jsonb_typeof${at} = 'array' THEN ${at} END) AS e${i}(v)`);
      bindings.push(pgKeys(keys), pgKeys(keys));
      base = `e${i}.v`;
    });
    const last = pgKeys(parts[parts.length - 1]);
    const at = `(${base} #> ?::text[])`;
    return [`EXISTS (SELECT 1 FROM ${from.join(', ')} WHERE ${cond(at)})`, [...bindings, ...(test === 'exists' ? [last] : [last, last]), ...(test === 'exists' ? [] : values)]];
  },
  walkMs: Infinity,
  fieldsValue: (field, alias = 'o.') => `((${alias}fields)::jsonb ->> '${sqlLiteralText(field)}')`,
  async expressionStatistics(trx, name, expr) {
    await trx.raw(`CREATE STATISTICS IF NOT EXISTS ${name} ON (${expr}) FROM objects`);
  },
  async boundStatements(trx, ms) {
    await trx.raw(`SET LOCAL statement_timeout = ${Math.max(1, Math.floor(ms))}`);
  },
  // jsonb nests as deep as Kubernetes does (10,000 levels); \u0000 and lone surrogates are found by the LIKEs.
  jsonUnreadable: () => ['', []],
  async unboundText(trx, table, columns) {
    // varchar to text is binary coercible: no table rewrite.
    await trx.raw(`ALTER TABLE ${quote(table)} ${columns.map((c) => `ALTER COLUMN ${quote(c)} TYPE text`).join(', ')}`);
  },
  async equalityIndex(trx, table, column, name) {
    await trx.raw(`DROP INDEX IF EXISTS ${quote(name)}`);
    await trx.raw(`CREATE INDEX ${quote(name)} ON ${quote(table)} USING hash (${quote(column)})`);
  },
  byteOrder: (expr) => `(${expr} COLLATE "C")`,
  async nameSubstringIndex(trx) {
    // pg_trgm is a trusted extension (PostgreSQL 13+): a role with CREATE on the database may
    // install it (https://www.postgresql.org/docs/15/pgtrgm.html). Tried in a savepoint: a role
    // without the right leaves the migration whole and searches unindexed (docs/search.md).
    try {
      await trx.transaction(async (sp) => {
        await sp.raw('CREATE EXTENSION IF NOT EXISTS pg_trgm');
      });
    } catch {
      return false;
    }
    // lower() under COLLATE "C" (the name column's) folds ASCII only, as SQLite and the in-memory matcher do.
    await trx.raw('CREATE INDEX IF NOT EXISTS objects_name_trgm ON objects USING gin (lower(name) gin_trgm_ops)');
    return true;
  },
  nameContains(needle, via) {
    // strpos() is no operator of gin_trgm_ops: the planner reads the list order and filters.
    if (via === 'scan') return [`strpos(lower(o.name), ?) > 0`, [needle]];
    return [`lower(o.name) LIKE ? ESCAPE '!'`, [`%${needle.replace(/[!%_]/g, (c) => `!${c}`)}%`]];
  },
  plansTerms: true,
  unindexed: (expr) => expr,
  byteLength: (column) => `octet_length(${column})`,
  binaryJsonBytes: (column) => `pg_column_size(${column}::jsonb)`,
  async relationSizes(knex) {
    // The main fork of each table and index (free space that VACUUM left for reuse included) and each table's TOAST with its index.
    const rows = rowsOf<{ name: string; kind: string; tbl: string; bytes: number | string; toast: number | string }>(
      await knex.raw(
        `SELECT c.relname AS name, c.relkind AS kind, COALESCE(t.relname, c.relname) AS tbl, pg_relation_size(c.oid) AS bytes, ` +
          `CASE WHEN c.reltoastrelid <> 0 THEN pg_total_relation_size(c.reltoastrelid) ELSE 0 END AS toast ` +
          `FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace LEFT JOIN pg_index i ON i.indexrelid = c.oid LEFT JOIN pg_class t ON t.oid = i.indrelid ` +
          `WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'i')`,
      ),
    );
    const relations: RelationSize[] = [];
    for (const r of rows) {
      relations.push({ table: r.tbl, name: r.name, kind: r.kind === 'i' ? 'index' : 'table', bytes: Number(r.bytes) });
      if (r.kind === 'r') relations.push({ table: r.tbl, name: `${r.name} (TOAST)`, kind: 'toast', bytes: Number(r.toast) });
    }
    const [db] = rowsOf<{ bytes: number | string }>(await knex.raw('SELECT pg_database_size(current_database()) AS bytes'));
    return { relations, databaseBytes: Number(db.bytes) };
  },
  async reclaimSpace(knex) {
    await knex.raw('VACUUM FULL');
  },
};
