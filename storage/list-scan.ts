// The page query of a list: the objects after the continue key in list order (namespace,
// name, cluster), read as ordered scans of objects_list_order (grp, resource, namespace, name,
// cluster) that stop at the page's end, so that page N reads what page 1 reads.
//
// A filter with several namespaces or clusters is one scan per value (per pair when both have
// several, up to maxScans), each with the value as an equality, merged in list order by a
// UNION ALL under the ORDER BY and LIMIT (PostgreSQL plans a Merge Append of index scans,
// SQLite merges the compound SELECT's ordered arms). A list of values as one condition
// (`IN (...)`) loses the order: PostgreSQL 15's btree returns no ordered rows for `= ANY`
// on a column after the index's first (indxpath.c, build_index_paths: "found_lower_saop_clause"),
// so the planner either reads every row after the key and sorts them or filters rows one by
// one after reading them from the table; SQLite seeks each namespace of an IN from its start
// and filters the rows before the continue key one by one.
//
// A collection (storage/collection.ts) is one such scan per kind (and value), merged in the list
// order then the kind. SQLite merges them as they are; PostgreSQL does not carry the kind, a
// constant of each scan, out of it as an order, so it sorts the merged rows again: at most
// (limit + 1) per scan, each scan stopped by its own LIMIT (list-scan.test.ts checks both plans).
//
// A single scan with a substring of names (fuzzyName) that the engine checks on the index
// entries only after reading each row (PostgreSQL) reads its keys first, then its rows
// (Dialect.keysFirst): the names it passes over cost no row read.
//
// The continue key is compared as `(cols) >= (key) AND (cols) <> (key)`, not `(cols) > (key)`:
// PostgreSQL estimates a row comparison by its first column alone (clausesel.c, rowcomparesel),
// and `namespace > 'ns'` leaves out the key's whole namespace. In the middle of a large
// namespace that estimate is a few rows, and a plan that reads and sorts every row left looks
// as cheap as the ordered scan; with `>=` the estimate counts the namespace.
import type { Knex } from 'knex';
import type { Dialect } from './dialect.ts';
import { whereMatches } from './filters.ts';
import { kindQuery, kindsOf } from './collection.ts';
import { compareKinds, compareText, objectColumns } from './rows.ts';
import { scanRoom } from './term-budget.ts';
import type { CollectionKind, ListQuery } from './types.ts';

/** The last key a page served; a collection's also names the kind (storage/collection.ts). */
export type Key = { namespace: string; name: string; cluster: string; group?: string; resource?: string };

/** At most this many scans merged for one page (each reads at least one index entry). */
export const maxScans = 32;

/** What one scan holds to a single value. */
type Fixed = { namespace?: string; cluster?: string };

/** The distinct values of a multi-value filter, or undefined when it has fewer than two. */
function several(values: string[] | undefined): string[] | undefined {
  if (!values) return undefined;
  const distinct = [...new Set(values)];
  return distinct.length > 1 ? distinct : undefined;
}

/**
 * The scans of a list: one per namespace × cluster pair when both filters have several values
 * and the pairs are few; else one per namespace (each a range of the index), else one per
 * cluster (each filtered inside the index), else one.
 */
export function scansOf(q: Pick<ListQuery, 'namespaces' | 'clusters'>, budget = maxScans): Fixed[] {
  const namespaces = several(q.namespaces);
  const clusters = several(q.clusters);
  const per = (ns: string[] | undefined, cl: string[] | undefined): Fixed[] =>
    (ns ?? [undefined]).flatMap((namespace) => (cl ?? [undefined]).map((cluster) => ({ namespace, cluster })));
  if ((namespaces?.length ?? 1) * (clusters?.length ?? 1) <= budget) return per(namespaces, clusters);
  if (namespaces && namespaces.length <= budget) return per(namespaces, undefined);
  if (clusters && clusters.length <= budget) return per(undefined, clusters);
  return [{}];
}

/**
 * Holds `column` to `value` as a range of one value: an equality would make the column a
 * constant of the scan, which PostgreSQL then leaves out of the scan's order, and the merge,
 * which needs the whole list order from every scan, would sort instead.
 */
function pin(qb: Knex.QueryBuilder, column: string, value: string, from = true): void {
  if (from) qb.andWhere(column, '>=', value);
  qb.andWhere(column, '<=', value);
}

/**
 * Adds a scan's values and, with `after`, "after the key" to the scan; false when nothing in
 * the scan comes after the key (its namespace sorts before the key's).
 */
function narrow(qb: Knex.QueryBuilder, fixed: Fixed, kind: CollectionKind, after: Key | undefined): boolean {
  if (fixed.cluster !== undefined) pin(qb, 'o.cluster', fixed.cluster);
  const sinceKey = after !== undefined && (fixed.namespace === undefined || compareText(fixed.namespace, after.namespace) === 0);
  if (fixed.namespace !== undefined) {
    if (after && compareText(fixed.namespace, after.namespace) < 0) return false;
    // From the key on, the row comparison below is the scan's start.
    pin(qb, 'o.namespace', fixed.namespace, !sinceKey);
  }
  if (!after || !sinceKey) return true;
  // A scan of one cluster holds rows equal to the key in namespace and name: after the key
  // when its cluster (then its kind) sorts after the key's. Every scan is of one kind: its
  // rows equal to the key in namespace, name and cluster are after it when the kind sorts
  // after the key's (a collection's key names its kind; a single kind's has none: equal).
  const cols = fixed.cluster === undefined ? ['o.namespace', 'o.name', 'o.cluster'] : ['o.namespace', 'o.name'];
  const vals = fixed.cluster === undefined ? [after.namespace, after.name, after.cluster] : [after.namespace, after.name];
  const byKind = compareKinds(kind, after);
  const strict = (fixed.cluster === undefined ? byKind : compareText(fixed.cluster, after.cluster) || byKind) <= 0;
  const row = `(${cols.join(', ')})`;
  const marks = `(${cols.map(() => '?').join(', ')})`;
  qb.andWhereRaw(`${row} >= ${marks}`, vals);
  if (strict) qb.andWhereRaw(`${row} <> ${marks}`, vals);
  return true;
}

/**
 * The page after `after` (all of it without one) of the objects matching `q`, at most `limit`
 * rows, in list order; `atRv` leaves out rows changed after it. Undefined when no row can
 * come after the key.
 */
export function pageQuery(knex: Knex, dialect: Dialect, q: ListQuery, opts: { after?: Key; limit?: number; atRv?: number }): Knex.QueryBuilder | undefined {
  const scans: Knex.QueryBuilder[] = [];
  const kinds = kindsOf(q);
  // A collection: the scans of every kind, within one budget, and within the values a
  // statement may bind (each scan binds its kind's values again: storage/term-budget.ts).
  const fixedScans = scansOf(q, Math.max(1, Math.min(Math.floor(maxScans / kinds.length), scanRoom(q))));
  for (const kind of kinds) {
    for (const fixed of fixedScans) {
      const rest: ListQuery = kindQuery(q, kind);
      if (fixed.namespace !== undefined) delete rest.namespaces;
      if (fixed.cluster !== undefined) delete rest.clusters;
      const qb = knex('objects as o').select(objectColumns.map((c) => `o.${c}`));
      whereMatches(qb, knex, dialect, rest);
      if (opts.atRv !== undefined) qb.andWhere('o.rv', '<=', opts.atRv);
      if (narrow(qb, fixed, kind, opts.after)) scans.push(qb);
    }
  }
  const order = q.kinds ? collectionOrder : listOrder;
  if (scans.length === 0) return undefined;
  if (scans.length > 1) return dialect.mergeInOrder(knex, scans, order, opts.limit);
  if (q.nameContains?.length && !q.kinds && dialect.keysFirst) return dialect.keysFirst(knex, scans[0], order, opts.limit);
  const page = scans[0].orderBy(order.map((c) => `o.${c}`));
  if (opts.limit !== undefined) page.limit(opts.limit);
  return page;
}

/** The list order: objects_list_order after its group and resource. */
const listOrder = ['namespace', 'name', 'cluster'];
/** A collection's: the list order, then the kind (each scan reads one kind, so its index order is the same). */
const collectionOrder = [...listOrder, 'grp', 'resource'];
