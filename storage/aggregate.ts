// Aggregates over the objects a query selects, computed in SQL from one snapshot: count, or
// sum / min / max / avg of the JSON number at a path of each object, for all selected objects
// or one row per cluster. Selection is the list filters (storage/filters.ts whereMatches) plus
// conditions on JSON paths of the object. The external metrics API (apiserver/external/)
// serves these values to the HorizontalPodAutoscaler.
import type { Knex } from 'knex';
import type { Dialect } from './dialect.ts';
import { whereMatches } from './filters.ts';
import { RvTooLargeError } from './errors.ts';
import { readMeta } from './meta.ts';
import { sqlText } from './sql-values.ts';
import { checkAggregateBudget } from './term-budget.ts';
import type { ListQuery } from './types.ts';

export type AggregateFunction = 'count' | 'sum' | 'min' | 'max' | 'avg';

/**
 * A condition on the object's JSON at `path` (keys from the root, e.g. ['status', 'phase']).
 * In / NotIn compare the scalar as text (numbers and booleans as JSON writes them); NotIn and
 * DoesNotExist also hold where the path is absent (as label `notin` and `!key` do). Gt / Lt
 * compare a JSON number with `values[0]`.
 */
export interface JsonRequirement {
  path: string[];
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist' | 'Gt' | 'Lt';
  values: string[];
}

export interface AggregateQuery {
  /** Which objects: the list filters (no paging, no snapshot choice). */
  select: Omit<ListQuery, 'limit' | 'continue' | 'exactRv' | 'minRv'>;
  /** The snapshot must have this rv already (RvTooLargeError otherwise), as ListQuery.minRv. */
  minRv?: number;
  /** Further conditions on the objects' JSON. */
  match?: JsonRequirement[];
  fn: AggregateFunction;
  /** For sum, min, max and avg: the JSON path of the number (objects without a number there are left out). */
  path?: string[];
  /** One row per cluster that has selected objects, instead of one row for all. */
  byCluster?: boolean;
}

export interface AggregateRow {
  /** The cluster of a byCluster row; '' otherwise. */
  cluster: string;
  /** The aggregate; null when no selected object had a number at the path (min, max, avg; sum of nothing is 0). */
  value: number | null;
  /** Selected objects. */
  objects: number;
}

export interface AggregateResult {
  /** The watermark of the snapshot the value was read at. */
  resourceVersion: number;
  /** byCluster: one row per cluster with selected objects, by name; otherwise exactly one row. */
  rows: AggregateRow[];
}

function matchSql(dialect: Dialect, ref: string, m: JsonRequirement): [string, unknown[]] {
  switch (m.operator) {
    case 'In':
    case 'NotIn': {
      if (m.values.length === 0) throw new Error(`${m.operator} needs values`);
      const [text, b] = dialect.jsonScalarTextAt(ref, m.path);
      const list = m.values.map(() => '?').join(', ');
      // The document's strings are read through sqlText (storage/sql-values.ts): so are the values.
      const values = m.values.map(sqlText);
      if (m.operator === 'In') return [`${text} IN (${list})`, [...b, ...values]];
      return [`(${text} IS NULL OR ${text} NOT IN (${list}))`, [...b, ...b, ...values]];
    }
    case 'Exists':
    case 'DoesNotExist': {
      const [present, b] = dialect.jsonPresentAt(ref, m.path);
      return [m.operator === 'Exists' ? present : `NOT ${present}`, b];
    }
    case 'Gt':
    case 'Lt': {
      const bound = Number(m.values[0]);
      if (!Number.isFinite(bound)) throw new Error(`${m.operator} needs a number, got ${JSON.stringify(m.values[0])}`);
      const [num, b] = dialect.jsonNumberAt(ref, m.path);
      return [`${num} ${m.operator === 'Gt' ? '>' : '<'} ?`, [...b, bound]];
    }
  }
}

const sqlFn: Record<Exclude<AggregateFunction, 'count'>, string> = { sum: 'SUM', min: 'MIN', max: 'MAX', avg: 'AVG' };

const toNumber = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

export async function aggregate(knex: Knex, dialect: Dialect, q: AggregateQuery): Promise<AggregateResult> {
  if (q.fn !== 'count' && !q.path?.length) throw new Error(`aggregate ${q.fn} needs a JSON path`);
  checkAggregateBudget(q);
  const trx = await dialect.snapshot(knex);
  try {
    const meta = await readMeta(trx);
    if (q.minRv !== undefined && meta.rv < q.minRv) throw new RvTooLargeError(q.minRv, meta.rv);
    const qb = trx('objects as o');
    const doc = dialect.jsonDocument;
    if (doc.join && (q.fn !== 'count' || q.match?.length)) qb.joinRaw(doc.join);
    whereMatches(qb, trx, dialect, q.select);
    for (const m of q.match ?? []) {
      const [sql, bindings] = matchSql(dialect, doc.ref, m);
      qb.whereRaw(sql, bindings as Knex.RawBinding[]);
    }
    if (q.fn === 'count') qb.select(trx.raw('COUNT(*) AS value'));
    else {
      const [num, bindings] = dialect.jsonNumberAt(doc.ref, q.path!);
      qb.select(trx.raw(`${sqlFn[q.fn]}(${num}) AS value`, bindings as Knex.RawBinding[]));
    }
    qb.select(trx.raw('COUNT(*) AS objects'));
    if (q.byCluster) qb.select('o.cluster').groupBy('o.cluster').orderBy('o.cluster');
    const raw = (await qb) as Array<{ value: unknown; objects: unknown; cluster?: string }>;
    const rows: AggregateRow[] = raw.map((r) => {
      const objects = Number(r.objects);
      let value = toNumber(r.value);
      if (value === null && (q.fn === 'sum' || q.fn === 'count')) value = 0;
      return { cluster: r.cluster ?? '', value, objects };
    });
    if (!q.byCluster && rows.length === 0) rows.push({ cluster: '', value: q.fn === 'count' || q.fn === 'sum' ? 0 : null, objects: 0 });
    return { resourceVersion: meta.rv, rows };
  } finally {
    await trx.commit();
  }
}
