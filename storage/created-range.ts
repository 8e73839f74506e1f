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

export function whereCreated(qb: Knex.QueryBuilder, dialect: Dialect, q: Range): void {
  const column = dialect.byteOrder('o.created_at');
  if (q.createdSince !== undefined) qb.andWhereRaw(`${column} >= ?`, [q.createdSince]);
  if (q.createdBefore !== undefined) qb.andWhereRaw(`${column} < ? AND ${column} > ''`, [q.createdBefore]);
}

/** The text storage keeps as created_at (storage/write.ts). */
export const createdText = (obj: KubeObject): string => sqlText(obj.metadata?.creationTimestamp ?? '');

export function createdMatches(q: Range, obj: KubeObject): boolean {
  const c = createdText(obj);
  if (q.createdSince !== undefined && compareText(c, q.createdSince) < 0) return false;
  if (q.createdBefore !== undefined && (c === '' || compareText(c, q.createdBefore) >= 0)) return false;
  return true;
}
