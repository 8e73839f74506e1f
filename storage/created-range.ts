// Time ranges on creationTimestamp: createdSince (inclusive) and createdBefore (exclusive),
// each in the form kube writes creationTimestamp (RFC 3339, UTC, whole seconds: metav1.Time),
// compared as text in byte order, in SQL over the objects_by_created index and in memory alike.
// An object without a creationTimestamp is in no range.
import type { Knex } from 'knex';
import type { Dialect } from './dialect.ts';
import { compareText } from './rows.ts';
import { sqlText } from './sql-values.ts';
import type { KubeObject, ListQuery } from './types.ts';

type Range = Pick<ListQuery, 'createdSince' | 'createdBefore'>;

/** The range as SQL over `alias`.created_at. */
function rangeSql(dialect: Dialect, column: string, q: Range): [string, string[]] {
  const parts: string[] = [];
  const bindings: string[] = [];
  if (q.createdSince !== undefined) {
    parts.push(`${column} >= ?`);
    bindings.push(q.createdSince);
  }
  if (q.createdBefore !== undefined) {
    parts.push(`${column} < ?`, `${column} > ''`);
    bindings.push(q.createdBefore);
  }
  return [parts.join(' AND '), bindings];
}

export function whereCreated(qb: Knex.QueryBuilder, dialect: Dialect, q: Range & Pick<ListQuery, 'group' | 'resource' | 'termPlan'>): void {
  if (q.createdSince === undefined && q.createdBefore === undefined) return;
  const via = q.termPlan?.created;
  if (via === 'index') {
    // The objects of the range, from objects_by_created (covering: the row id is in it); the
    // planner then fetches these rows and sorts them (storage/term-plan.ts).
    const [sql, bindings] = rangeSql(dialect, dialect.byteOrder('c.created_at'), q);
    qb.andWhereRaw(`o.id IN (SELECT c.id FROM objects c WHERE c.grp = ? AND c.resource = ? AND ${sql})`, [q.group, q.resource, ...bindings]);
    return;
  }
  const column = dialect.byteOrder(via === 'scan' ? dialect.unindexed('o.created_at') : 'o.created_at');
  const [sql, bindings] = rangeSql(dialect, column, q);
  qb.andWhereRaw(sql, bindings);
}

/** The text storage keeps as created_at (storage/write.ts). */
export const createdText = (obj: KubeObject): string => sqlText(obj.metadata?.creationTimestamp ?? '');

export function createdMatches(q: Range, obj: KubeObject): boolean {
  const c = createdText(obj);
  if (q.createdSince !== undefined && compareText(c, q.createdSince) < 0) return false;
  if (q.createdBefore !== undefined && (c === '' || compareText(c, q.createdBefore) >= 0)) return false;
  return true;
}
