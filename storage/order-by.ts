// orderBy: lists sorted by name, namespace, cluster, creationTimestamp or the scalar at a JSON
// path, each ascending or descending, then by the list order (namespace, name, cluster) in
// the direction of the last key: a total order, so a page continues exactly after the last
// row it served (its sort values ride in the continue token), and a one-key sort reads an
// index (objects_by_created, objects_by_name, objects_list_order) forwards or backwards.
// Values compare as text in byte order on both engines and in memory; a path that is
// absent, null, an object or an array sorts as ''.
import type { Knex } from 'knex';
import { badRequest } from '../kube/status.ts';
import { createdText } from './created-range.ts';
import type { Dialect } from './dialect.ts';
import { whereMatches } from './filters.ts';
import { compareText, objectColumns } from './rows.ts';
import { sqlText } from './sql-values.ts';
import type { KubeObject, ListQuery, ObjectKey, OrderKey } from './types.ts';

/** One column of the sort, as SQL. */
interface SortColumn {
  sql: string;
  bindings: unknown[];
  desc: boolean;
}

/** A row's place in the sort: its sort keys' values, then its key. */
export interface SortPosition {
  values: string[];
  namespace: string;
  name: string;
  cluster: string;
}

const listOrder = ['namespace', 'name', 'cluster'] as const;

/** The order as a continue token names it: a page is continued only under the order it was served in. */
export const orderSignature = (order: OrderKey[]): string => JSON.stringify(order.map((k) => [k.key, k.path ?? null, k.desc]));

function keyColumn(dialect: Dialect, k: OrderKey): SortColumn {
  switch (k.key) {
    case 'name':
    case 'namespace':
    case 'cluster':
      return { sql: `o.${k.key}`, bindings: [], desc: k.desc };
    case 'creationTimestamp':
      return { sql: dialect.byteOrder('o.created_at'), bindings: [], desc: k.desc };
    case 'path': {
      const [sql, bindings] = dialect.jsonScalarTextAt(dialect.jsonDocument.ref, k.path!);
      return { sql: dialect.byteOrder(`COALESCE(${sql}, '')`), bindings, desc: k.desc };
    }
  }
}

function sortColumns(dialect: Dialect, order: OrderKey[]): SortColumn[] {
  const last = order[order.length - 1].desc;
  return [...order.map((k) => keyColumn(dialect, k)), ...listOrder.map((c) => ({ sql: `o.${c}`, bindings: [], desc: last }))];
}

/**
 * "After `pos` in the sort": with one direction a row comparison (an index range), else
 * (a > x) OR (a = x AND b > y) ... with each column's own direction.
 */
function whereAfter(qb: Knex.QueryBuilder, cols: SortColumn[], pos: SortPosition): void {
  const vals = [...pos.values, pos.namespace, pos.name, pos.cluster];
  if (cols.every((c) => c.desc === cols[0].desc)) {
    const row = `(${cols.map((c) => c.sql).join(', ')})`;
    const marks = `(${vals.map(() => '?').join(', ')})`;
    const colBindings = cols.flatMap((c) => c.bindings);
    // `>=` and `<>` rather than `>`: see storage/list-scan.ts on PostgreSQL's row comparison estimate.
    qb.andWhereRaw(`${row} ${cols[0].desc ? '<=' : '>='} ${marks} AND ${row} <> ${marks}`, [...colBindings, ...vals, ...colBindings, ...vals] as Knex.RawBinding[]);
    return;
  }
  const arms: string[] = [];
  const bindings: unknown[] = [];
  for (let i = 0; i < cols.length; i++) {
    const parts: string[] = [];
    for (let j = 0; j < i; j++) {
      parts.push(`${cols[j].sql} = ?`);
      bindings.push(...cols[j].bindings, vals[j]);
    }
    parts.push(`${cols[i].sql} ${cols[i].desc ? '<' : '>'} ?`);
    bindings.push(...cols[i].bindings, vals[i]);
    arms.push(`(${parts.join(' AND ')})`);
  }
  qb.andWhereRaw(`(${arms.join(' OR ')})`, bindings as Knex.RawBinding[]);
}

/**
 * The page after `after` (all of it without one) of the objects matching `q`, sorted by
 * q.orderBy, at most `limit` rows; each row also has its sort values as sk0, sk1, ...
 */
export function orderedPageQuery(knex: Knex, dialect: Dialect, q: ListQuery, opts: { after?: SortPosition; limit?: number; atRv?: number }): Knex.QueryBuilder {
  const order = q.orderBy!;
  const cols = sortColumns(dialect, order);
  const qb = knex('objects as o').select(objectColumns.map((c) => `o.${c}`));
  const doc = dialect.jsonDocument;
  if (doc.join && order.some((k) => k.key === 'path')) qb.joinRaw(doc.join);
  order.forEach((_, i) => qb.select(knex.raw(`${cols[i].sql} AS sk${i}`, cols[i].bindings as Knex.RawBinding[])));
  whereMatches(qb, knex, dialect, q);
  if (opts.atRv !== undefined) qb.andWhere('o.rv', '<=', opts.atRv);
  if (opts.after) whereAfter(qb, cols, opts.after);
  qb.orderByRaw(cols.map((c) => `${c.sql} ${c.desc ? 'DESC' : 'ASC'}`).join(', '), cols.flatMap((c) => c.bindings) as Knex.RawBinding[]);
  if (opts.limit !== undefined) qb.limit(opts.limit);
  return qb;
}

/** The column orders of the indexes after (grp, resource): list order, objects_by_name, objects_by_created. */
const indexOrders = [listOrder.join(), 'name,namespace,cluster', 'creationTimestamp,namespace,name,cluster'];

/**
 * Whether an index reads the order as it is (forwards or backwards): one direction, and the
 * keys then the tie-break are an index's columns.
 */
export function servedByIndex(order: OrderKey[]): boolean {
  if (order.some((k) => k.key === 'path' || k.desc !== order[0].desc)) return false;
  const cols = [...new Set([...order.map((k) => k.key), ...listOrder])];
  return indexOrders.includes(cols.join());
}

/**
 * An order no index reads sorts every matching object for each page: at most this many, so
 * that one list cannot hold the database for long (about 70 ms for a JSON path at 10,000
 * objects on SQLite, docs/bench/search-terms.md).
 */
export const maxSortedObjects = 10_000;

/** A 400 when `q`'s order would sort more than maxSortedObjects objects. */
export async function checkSortBudget(trx: Knex.Transaction, dialect: Dialect, q: ListQuery, atRv: number | undefined): Promise<void> {
  if (!q.orderBy || servedByIndex(q.orderBy)) return;
  const sub = trx('objects as o').select(trx.raw('1'));
  whereMatches(sub, trx, dialect, q);
  if (atRv !== undefined) sub.andWhere('o.rv', '<=', atRv);
  const row = (await trx.count({ n: '*' }).from(sub.limit(maxSortedObjects + 1).as('s')).first()) as { n: number | string };
  if (Number(row.n) > maxSortedObjects) {
    const keys = q.orderBy.map((k) => (k.key === 'path' ? k.path!.join('.') : k.key) + (k.desc ? ' desc' : '')).join(',');
    throw badRequest(
      `orderBy ${JSON.stringify(keys)} sorts every matching object and this list matches more than ${maxSortedObjects}: narrow it (namespaces, clusters, labels, fuzzyName, createdSince) or order by one of name, namespace, creationTimestamp (each read from an index)`,
    );
  }
}

/** The scalar at `path` as the engines' jsonScalarTextAt reads it, '' for anything else. */
function scalarText(obj: KubeObject, path: string[]): string {
  let v: unknown = obj;
  for (const p of path) {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return '';
    v = (v as Record<string, unknown>)[p];
  }
  if (typeof v === 'string') return sqlText(v);
  // Integers (what Kubernetes puts in objects) read alike on both engines; other numbers may be written differently by each.
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return '';
}

/** An object's sort values, in memory (rows rebuilt from the change log). */
export function sortValues(order: OrderKey[], key: Pick<ObjectKey, 'namespace' | 'name' | 'cluster'>, obj: KubeObject): string[] {
  return order.map((k) => (k.key === 'creationTimestamp' ? createdText(obj) : k.key === 'path' ? scalarText(obj, k.path!) : key[k.key]));
}

/** The sort's comparison of two positions. */
export function comparePositions(order: OrderKey[], a: SortPosition, b: SortPosition): number {
  for (let i = 0; i < order.length; i++) {
    const c = compareText(a.values[i], b.values[i]);
    if (c !== 0) return order[i].desc ? -c : c;
  }
  const c = compareText(a.namespace, b.namespace) || compareText(a.name, b.name) || compareText(a.cluster, b.cluster);
  return order[order.length - 1].desc ? -c : c;
}
