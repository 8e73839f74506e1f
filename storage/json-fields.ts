// Field selectors on any JSON path of the object (`.status.phase`,
// `.spec.template.spec.containers[*].image`, `.metadata.annotations['a/b']`) with in, notin,
// exists and !, in SQL and for one object in memory; both must select the same objects.
//
// A path reaches the values at it, `[*]` every element of an array. `in` holds where some
// value reached is a scalar whose text (a string as is, a number or boolean as JSON writes it)
// is one of the values; `exists` where some value reached is present and not null; `notin`
// and `!` are their negations, so they hold where the path is absent (as label `notin` and
// `!key` do). Strings compare through sqlText (storage/sql-values.ts) on both sides.
//
// Which paths are indexed: the selectable fields listed in `indexedFields`, of the kinds that
// have them (pods' status.phase and spec.nodeName; namespaces' status.phase), through an
// expression index on the small `fields` column (objects_by_field_*), not on the document:
// writes parse no document for it. An `in` term on such a path reads the index and checks
// the document of the rows found. Every other term reads each candidate's document, so it is
// bounded before the list reads any: the objects the rest of the query selects (through the
// indexed terms' indexes alone) are counted first, at most budget.rows + 1 of them, with the
// bytes of their documents; more than budget.rows objects or budget.bytes of documents is a
// 400 that says how to narrow. An orderBy on a JSON path reads the documents of what it
// sorts: their bytes are bounded alike (storage/order-by.ts bounds how many). On PostgreSQL
// each statement of the list also has budget.ms (statement_timeout), past which the list is
// a 504. SQLite cannot interrupt a statement from outside it (better-sqlite3 runs it on the
// event loop, and is built without SQLite's progress handler): the walk over a document is
// linear in its size (storage/dialect.ts jsonAnyAt), so the byte bound is what keeps that
// one thread from stalling (docs/bench/json-walk.md: about 13 ms per MiB for two [*] levels).
import type { Knex } from 'knex';
import { kindFieldNames } from '../kube/fields.ts';
import { StatusError } from '../kube/status.ts';
import { WalkDeadlineError, type Dialect } from './dialect.ts';
import { sqlText } from './sql-values.ts';
import type { KubeObject, ListQuery } from './types.ts';

export interface JsonFieldRequirement {
  /** Keys from the document's root; null is `[*]`, every element of an array. */
  path: Array<string | null>;
  operator: 'in' | 'notin' | 'exists' | '!';
  /** For in and notin: at least one. */
  values: string[];
  /** Read the document even where an index could serve: the unindexed baseline of bench:list. */
  unindexed?: boolean;
  /** Read the index alone, not the document (an indexed term, in the budget's count of candidates). */
  indexOnly?: boolean;
}

/** What one list that reads its objects' documents (unindexed JSON terms, an orderBy JSON path) may cost. */
export interface QueryBudget {
  /** Objects whose documents its JSON terms may read (Infinity: unbounded, uncounted: benchmarks' baselines). */
  rows: number;
  /** Bytes of the documents it may read (Infinity: unbounded). */
  bytes: number;
  /** PostgreSQL: each statement's time, ms. */
  ms: number;
}

export const defaultQueryBudget: QueryBudget = { rows: 20_000, bytes: 16 * 1024 * 1024, ms: 2_000 };

/** Selectable fields with an expression index over their `fields` value (storage/schema.ts). */
export const indexedFields = ['status.phase', 'spec.nodeName'];

/** The index of one indexed field: objects_by_field_status_phase. */
export const fieldIndexName = (field: string): string => `objects_by_field_${field.replace(/[^A-Za-z0-9]/g, '_').toLowerCase()}`;

/** The indexed selectable field an `in` term reads through, if any. */
function indexedField(q: Pick<ListQuery, 'group' | 'resource'>, r: JsonFieldRequirement): string | undefined {
  if (r.operator !== 'in' || r.path.includes(null) || r.unindexed) return undefined;
  const field = r.path.join('.');
  return indexedFields.includes(field) && kindFieldNames(q.group, q.resource).includes(field) ? field : undefined;
}

/** A budget that bounds nothing: the benchmarks' unbounded baselines. */
const unbounded = (b: QueryBudget): boolean => b.rows === Infinity && b.bytes === Infinity;

/** Adds the JSON terms of `q` to a query over `objects o`. */
export function whereJsonFields(qb: Knex.QueryBuilder, dialect: Dialect, q: ListQuery): void {
  const budget = q.budget ?? defaultQueryBudget;
  // Where the engine runs the walk on the event loop (SQLite), it stops soon (Dialect.walkMs).
  const deadline = dialect.walkMs !== Infinity && !unbounded(budget) ? Date.now() + Math.min(budget.ms, dialect.walkMs) : undefined;
  for (const r of q.jsonFields ?? []) {
    const values = r.values.map(sqlText);
    const field = indexedField(q, r);
    // The selectable field's value is the same text for every scalar: a narrowing the index serves.
    // One value as `=`: SQLite reads the index for `= ?` where for `IN (?)` it estimates the
    // ordered scan cheaper (its statistics hold an average per value, not the value's share).
    const test = values.length === 1 ? '= ?' : `IN (${values.map(() => '?').join(', ')})`;
    if (field) qb.whereRaw(`${dialect.fieldsValue(field)} ${test}`, values);
    if (field && r.indexOnly) continue;
    const [sql, bindings] = dialect.jsonAnyAt(r.path, r.operator === 'in' || r.operator === 'notin' ? 'in' : 'exists', values, deadline);
    qb.whereRaw(r.operator === 'notin' || r.operator === '!' ? `NOT ${sql}` : sql, bindings as Knex.RawBinding[]);
  }
}

/** The values at `path` (null: each element of an array); linear in the values walked, whatever an array's length. */
function valuesAt(obj: unknown, path: Array<string | null>): unknown[] {
  let cur: unknown[] = [obj];
  for (const k of path) {
    const next: unknown[] = [];
    for (const v of cur) {
      if (k === null) {
        // One push per element: a spread of an array of 100,000 elements overflows the stack.
        if (Array.isArray(v)) for (const e of v) next.push(e);
      } else if (typeof v === 'object' && v !== null && !Array.isArray(v) && Object.hasOwn(v, k)) next.push((v as Record<string, unknown>)[k]);
    }
    cur = next;
  }
  return cur;
}

const scalarText = (v: unknown): string | undefined => (typeof v === 'string' ? sqlText(v) : typeof v === 'number' || typeof v === 'boolean' ? JSON.stringify(v) : undefined);

/** The same terms for one object outside SQL. */
export function jsonFieldsMatch(terms: JsonFieldRequirement[], obj: KubeObject): boolean {
  return terms.every((r) => {
    const at = valuesAt(obj, r.path);
    const wanted = new Set(r.values.map(sqlText));
    const hit = r.operator === 'in' || r.operator === 'notin' ? at.some((v) => wanted.has(scalarText(v) as string)) : at.some((v) => v !== null && v !== undefined);
    return r.operator === 'in' || r.operator === 'exists' ? hit : !hit;
  });
}

/** 400 for a list whose unindexed JSON terms would read too many documents; 504 for one that ran out of time. */
export class QueryBudgetError extends StatusError {
  override name = 'QueryBudgetError';
}

/** Whether a query's JSON terms need the budget: some of them reads documents beyond what an index finds. */
export function needsBudget(q: ListQuery): boolean {
  return (q.jsonFields ?? []).some((r) => !indexedField(q, r));
}

/** Whether a query reads documents to sort by (an orderBy on a JSON path). */
const sortsByDocument = (q: ListQuery): boolean => (q.orderBy ?? []).some((k) => k.key === 'path');

/**
 * Checks the budget of a query that reads its objects' documents, before it reads any:
 * counts what the rest of the query selects (its indexed JSON terms through their index
 * alone), at most `maxRows` + 1 objects (budget.rows with unindexed JSON terms, else
 * `sortedRows`, the bound of an orderBy), with their documents' bytes; then bounds its
 * statements' time.
 */
export async function enforceBudget(trx: Knex.Transaction, dialect: Dialect, q: ListQuery, candidates: (rest: ListQuery) => Knex.QueryBuilder, sortedRows: number): Promise<void> {
  const terms = needsBudget(q);
  if (!terms && !sortsByDocument(q)) return;
  const budget = q.budget ?? defaultQueryBudget;
  if (unbounded(budget)) return;
  const maxRows = terms ? budget.rows : sortedRows;
  const rest: ListQuery = { ...q, jsonFields: q.jsonFields?.filter((r) => indexedField(q, r)).map((r) => ({ ...r, indexOnly: true })) };
  const sub = candidates(rest).select(trx.raw(`${documentBytes} AS b`));
  if (maxRows !== Infinity) sub.limit(maxRows + 1);
  const row = (await trx.from(sub.as('c')).count({ n: '*' }).sum({ bytes: 'b' }).first()) as { n: number | string; bytes: number | string | null } | undefined;
  const n = Number(row?.n ?? 0);
  const bytes = Number(row?.bytes ?? 0);
  const what = terms ? `the JSON path terms (${q.jsonFields!.filter((r) => !indexedField(q, r)).map(describe).join(', ')}) are not indexed and` : 'the orderBy on a JSON path reads every matching document, and it';
  const narrow = `narrow the list by namespace, cluster, name, labels or an indexed field (${indexedFields.map((f) => `.${f}`).join(', ')} of the kinds that select by them)`;
  if (terms && n > budget.rows) throw new QueryBudgetError('BadRequest', `fieldSelector: ${what} would read more than ${budget.rows} objects; ${narrow}`);
  if (bytes > budget.bytes) {
    throw new QueryBudgetError('BadRequest', `${terms ? 'fieldSelector' : 'orderBy'}: ${what} would read ${mib(bytes)} of documents${maxRows !== Infinity && n > maxRows ? ' or more' : ''}, more than the ${mib(budget.bytes)} a list may; ${narrow}`);
  }
  await dialect.boundStatements(trx, budget.ms);
}

/**
 * The bytes of a row's document as the JSON functions read it, from the row's header alone
 * (SQLite 3.43+ and PostgreSQL read no content for octet_length: TOAST keeps the raw size).
 */
const documentBytes = 'COALESCE(octet_length(o.json_doc), octet_length(o.object))';

const mib = (bytes: number): string => `${(bytes / (1024 * 1024)).toFixed(bytes < 10 * 1024 * 1024 ? 1 : 0)} MiB`;

/** A statement cancelled by its time bound (PostgreSQL statement_timeout, SQLite's walk deadline), as a Status. */
export function budgetTimeout(err: unknown, q: ListQuery, dialect: Dialect): unknown {
  const code = (err as { code?: string } | null)?.code;
  if ((code !== '57014' && !(err instanceof WalkDeadlineError)) || !(needsBudget(q) || sortsByDocument(q))) return err;
  const ms = err instanceof WalkDeadlineError ? Math.min((q.budget ?? defaultQueryBudget).ms, dialect.walkMs) : (q.budget ?? defaultQueryBudget).ms;
  const what = needsBudget(q) ? `fieldSelector: the JSON path terms (${q.jsonFields!.filter((r) => !indexedField(q, r)).map(describe).join(', ')}) are not indexed and` : 'orderBy: the sort on a JSON path reads every matching document, and';
  return new QueryBudgetError('Timeout', `${what} the list ran past its ${ms} ms budget; narrow it`, { retryAfterSeconds: 1 });
}

/** A term as written: `.a.b[*].c in (x)`. */
function describe(r: JsonFieldRequirement): string {
  const path = r.path.map((k) => (k === null ? '[*]' : /^[A-Za-z0-9_$-]+$/.test(k) ? `.${k}` : `['${k}']`)).join('');
  return r.operator === 'exists' ? path : r.operator === '!' ? `!${path}` : `${path} ${r.operator} (${r.values.join(',')})`;
}
