// The rows one batch writes once its changes are decided (storage/write.ts), and the portable
// way to write them: one statement per table, in order. PostgreSQL writes them in one
// statement instead (dialect.writeBatch): each statement is a round trip, and a commit's
// latency is mostly round trips.
import type { Knex } from 'knex';
import type { Dialect } from './dialect.ts';
import { insertRows, type InsertOptions } from './insert.ts';
import { hotQuery } from './prepared.ts';
import type { ChangeRowValues, ObjectRow } from './rows.ts';

/** An object's identity in `objects` (its unique key). */
export interface ObjectIdentity {
  cluster: string;
  grp: string;
  resource: string;
  namespace: string;
  name: string;
}

export interface LabelRow {
  key: string;
  value: string;
  num: string | null;
}

export type CountDelta = { cluster: string; grp: string; resource: string; namespace: string; n: number };

export interface BatchRows {
  /** Objects inserted or updated (by identity). */
  upserts: Array<Omit<ObjectRow, 'id'>>;
  /** Objects deleted, with their label rows. */
  deleteIds: number[];
  /** Upserted objects whose labels are written: all of them; an existing one (`id`) loses the labels it no longer has. */
  relabel: Array<{ object: ObjectIdentity; id?: number; labels: LabelRow[] }>;
  /** Object count deltas (none zero). */
  counts: CountDelta[];
  /** The change rows, in rv order, and the batch's watermark (null: a parallel writer's, moved when it publishes). */
  changes: ChangeRowValues[];
  rv: number | null;
  /**
   * A parallel writer at the head of the line (PostgreSQL, storage/ordered-commits.ts) moves
   * the watermark itself: set to its first rv, the rvs between the watermark and it (left by
   * writers that aborted) become gap rows in the same statement.
   */
  fillGapsBelow?: number;
}

export const identityKey = (o: ObjectIdentity): string => `${o.cluster}\u0000${o.grp}\u0000${o.resource}\u0000${o.namespace}\u0000${o.name}`;

/** The upsert of object rows, returning each one's id. */
export const objectsUpsert: InsertOptions = {
  conflict: ['grp', 'resource', 'namespace', 'name', 'cluster'],
  update: ['version', 'uid', 'rv', 'upstream_rv', 'created_at', 'owner_uid', 'fields', 'object', 'json_doc'],
  returning: ['id', 'cluster', 'grp', 'resource', 'namespace', 'name'],
};

/** object_counts' upsert: deltas add up, never below zero (counts that drifted stay counts: storage/counts.ts repairs them); returning the counts. */
export const countsUpsert: InsertOptions = {
  conflict: ['grp', 'resource', 'cluster', 'namespace'],
  updateSql: 'n = CASE WHEN object_counts.n + excluded.n < 0 THEN 0 ELSE object_counts.n + excluded.n END',
  returning: ['grp', 'resource', 'cluster', 'namespace', 'n'],
};

/** A decrement of a count that was never kept inserts it negative: set to zero. */
export async function zeroNegativeCounts(trx: Knex.Transaction, rows: Array<Omit<CountDelta, 'n'> & { n: number | string | null }>): Promise<void> {
  for (const r of rows) if (r.n !== null && Number(r.n) < 0) await trx('object_counts').where({ grp: r.grp, resource: r.resource, cluster: r.cluster, namespace: r.namespace }).update({ n: 0 });
}

/** Adds object count deltas (per cluster, resource and namespace) to object_counts, never below zero. */
export async function addCounts(trx: Knex.Transaction, dialect: Dialect, deltas: CountDelta[]): Promise<void> {
  if (deltas.length === 0) return;
  const decrements = deltas.some((d) => d.n < 0);
  const rows = await insertRows<CountDelta, CountDelta>(trx, dialect, 'object_counts', deltas, decrements ? countsUpsert : { ...countsUpsert, returning: undefined });
  await zeroNegativeCounts(trx, rows);
}

/** Writes a batch's rows one table at a time, SQLite's way (each statement is a call into the library, not a round trip). */
export async function writeBatchRows(trx: Knex.Transaction, dialect: Dialect, b: BatchRows): Promise<void> {
  if (b.fillGapsBelow !== undefined) throw new Error(`writeBatch: only PostgreSQL writes in parallel (${dialect.name})`);
  const ids = new Map<string, number>();
  const upserted = await insertRows<Omit<ObjectRow, 'id'>, ObjectIdentity & Pick<ObjectRow, 'id'>>(trx, dialect, 'objects', b.upserts, objectsUpsert);
  for (const r of upserted) ids.set(identityKey(r), Number(r.id));
  const dropLabels = [...b.deleteIds, ...b.relabel.flatMap((r) => (r.id === undefined ? [] : [r.id]))];
  // The ids as one JSON array: one statement, prepared once (storage/prepared.ts), whatever their number.
  if (dropLabels.length) await hotQuery(trx, 'DELETE FROM object_labels WHERE obj_id IN (SELECT value FROM json_each(?))', [JSON.stringify(dropLabels)]);
  if (b.deleteIds.length) await hotQuery(trx, 'DELETE FROM objects WHERE id IN (SELECT value FROM json_each(?))', [JSON.stringify(b.deleteIds)]);
  const labelRows = b.relabel.flatMap((r) => r.labels.map((l) => ({ obj_id: ids.get(identityKey(r.object))!, ...l })));
  await insertRows(trx, dialect, 'object_labels', labelRows);
  await addCounts(trx, dialect, b.counts);
  await dialect.publishChanges(trx, b.changes, b.rv);
}
