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
// bounded: the objects the rest of the query selects are counted first (at most
// budget.rows + 1 index entries) and more than budget.rows is a 400 that says how to narrow;
// on PostgreSQL each statement of the list has budget.ms (statement_timeout), past which the
// list is a 504. SQLite cannot interrupt a statement from outside it: the row bound is what
// keeps its one thread from stalling.
import type { Knex } from 'knex';
import { kindFieldNames } from '../kube/fields.ts';
import { StatusError } from '../kube/status.ts';
import type { Dialect } from './dialect.ts';
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
}

/** What one list with unindexed JSON terms may cost. */
export interface QueryBudget {
  /** Objects whose documents it may read (Infinity: unbounded, uncounted: benchmarks' baselines). */
  rows: number;
  /** PostgreSQL: each statement's time, ms. */
  ms: number;
}

export const defaultQueryBudget: QueryBudget = { rows: 20_000, ms: 2_000 };

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

/** Adds the JSON terms of `q` to a query over `objects o`. */
export function whereJsonFields(qb: Knex.QueryBuilder, dialect: Dialect, q: ListQuery): void {
  for (const r of q.jsonFields ?? []) {
    const values = r.values.map(sqlText);
    const field = indexedField(q, r);
    // The selectable field's value is the same text for every scalar: a narrowing the index serves.
    // One value as `=`: SQLite reads the index for `= ?` where for `IN (?)` it estimates the
    // ordered scan cheaper (its statistics hold an average per value, not the value's share).
    const test = values.length === 1 ? '= ?' : `IN (${values.map(() => '?').join(', ')})`;
    if (field) qb.whereRaw(`${dialect.fieldsValue(field)} ${test}`, values);
    const [sql, bindings] = dialect.jsonAnyAt(r.path, r.operator === 'in' || r.operator === 'notin' ? 'in' : 'exists', values);
    qb.whereRaw(r.operator === 'notin' || r.operator === '!' ? `NOT ${sql}` : sql, bindings as Knex.RawBinding[]);
  }
}

/** The values at `path` (null: each element of an array). */
function valuesAt(obj: unknown, path: Array<string | null>): unknown[] {
  let cur: unknown[] = [obj];
  for (const k of path) {
    const next: unknown[] = [];
    for (const v of cur) {
      if (k === null) {
        if (Array.isArray(v)) next.push(...v);
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
    const wanted = r.values.map(sqlText);
    const hit = r.operator === 'in' || r.operator === 'notin' ? at.some((v) => wanted.includes(scalarText(v) as string)) : at.some((v) => v !== null && v !== undefined);
    return r.operator === 'in' || r.operator === 'exists' ? hit : !hit;
  });
}

/** 400 for a list whose unindexed JSON terms would read too many documents; 504 for one that ran out of time. */
export class QueryBudgetError extends StatusError {
  override name = 'QueryBudgetError';
}

/** Whether a query's JSON terms need the budget: none of them reads through an index. */
export function needsBudget(q: ListQuery): boolean {
  return (q.jsonFields?.length ?? 0) > 0 && !q.jsonFields!.some((r) => indexedField(q, r));
}

/**
 * Checks the row budget of a query with unindexed JSON terms (counting what the rest of the
 * query selects, at most rows + 1 entries) and bounds its statements' time.
 */
export async function enforceBudget(trx: Knex.Transaction, dialect: Dialect, q: ListQuery, candidates: (rest: ListQuery) => Knex.QueryBuilder): Promise<void> {
  if (!needsBudget(q)) return;
  const budget = q.budget ?? defaultQueryBudget;
  if (budget.rows === Infinity) return;
  const rest: ListQuery = { ...q, jsonFields: undefined };
  const row = (await trx.from(candidates(rest).select(trx.raw('1')).limit(budget.rows + 1).as('c')).count({ n: '*' }).first()) as { n: number | string } | undefined;
  const n = Number(row?.n ?? 0);
  if (n > budget.rows) {
    throw new QueryBudgetError(
      'BadRequest',
      `fieldSelector: the JSON path terms (${q.jsonFields!.map(describe).join(', ')}) are not indexed and would read more than ${budget.rows} objects; narrow the list by namespace, cluster, name, labels or an indexed field (${indexedFields.map((f) => `.${f}`).join(', ')} of the kinds that select by them)`,
    );
  }
  await dialect.boundStatements(trx, budget.ms);
}

/** A PostgreSQL statement cancelled by statement_timeout, as a Status. */
export function budgetTimeout(err: unknown, q: ListQuery): unknown {
  if ((err as { code?: string }).code !== '57014' || !needsBudget(q)) return err;
  const ms = (q.budget ?? defaultQueryBudget).ms;
  return new QueryBudgetError('Timeout', `fieldSelector: the JSON path terms (${q.jsonFields!.map(describe).join(', ')}) are not indexed and the list ran past its ${ms} ms budget; narrow it`, { retryAfterSeconds: 1 });
}

/** A term as written: `.a.b[*].c in (x)`. */
function describe(r: JsonFieldRequirement): string {
  const path = r.path.map((k) => (k === null ? '[*]' : /^[A-Za-z0-9_$-]+$/.test(k) ? `.${k}` : `['${k}']`)).join('');
  return r.operator === 'exists' ? path : r.operator === '!' ? `!${path}` : `${path} ${r.operator} (${r.values.join(',')})`;
}
