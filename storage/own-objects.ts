// The objects of Panoptes' own kinds (panoptes.io/v1alpha1: Cluster, MultiClusterService):
// stored in `objects` under a reserved cluster name that no member cluster can have, each
// change appended to `changes` under the rv lock, so lists, gets and watches of them are those
// of any served resource and their `metadata.resourceVersion` is an rv of the one change log.
// Every write is a read-decide-write in one transaction holding the rv lock (writeOwnObject),
// so each decision sees the latest committed object: optimistic concurrency holds across
// apiserver replicas and synchro members. The row operations are exported for the Cluster
// objects (storage/cluster-objects.ts), which keep their inline credentials beside the row in
// the same transaction.
import type { Knex } from 'knex';
import type { Dialect, ObjectRowUpdate } from './dialect.ts';
import { writeTransaction } from './fenced.ts';
import { insertRows } from './insert.ts';
import { labelNumber } from './label-number.ts';
import type { Fence } from './leases.ts';
import { addCounts } from './batch-rows.ts';
import type { ChangeRowValues } from './rows.ts';
import type { EventType, KubeObject } from './types.ts';

/** The `cluster` column of Panoptes' own objects: not a DNS label, so never a member cluster's name. */
export const ownObjectsCluster = 'panoptes.io';
export const ownGroup = 'panoptes.io';
export const ownVersion = 'v1alpha1';

/** One object of an own kind: its resource (`clusters`, `multiclusterservices`), namespace ('' for cluster-scoped) and name. */
export interface OwnObjectRef {
  resource: string;
  namespace: string;
  name: string;
}

/** A stored own object as a writer sees it. */
export interface OwnObjectState extends OwnObjectRef {
  uid: string;
  /** The rv of its last change (= metadata.resourceVersion). */
  rv: number;
  /** The object as served (metadata.resourceVersion set). */
  object: KubeObject;
}

/** What a writer decides, given the current state (undefined: no object of that name). */
export type OwnObjectWrite =
  | { action: 'none' }
  /** The whole object to store (its metadata.resourceVersion is set by storage). */
  | { action: 'put'; object: KubeObject }
  | { action: 'delete' };

export interface OwnObjectResult {
  /** The change written, if any. */
  change?: { rv: number; type: EventType };
  /** The object after the write (as served), or before it for a delete or 'none'. */
  object?: string;
  watermark: number;
}

/** An own object's stored row. */
export interface OwnRow {
  id: number | string;
  uid: string;
  rv: number | string;
  object: string;
}

const rowsOf = (db: Knex | Knex.Transaction, resource: string) => db('objects').where({ cluster: ownObjectsCluster, grp: ownGroup, resource });

function stamp(obj: KubeObject, rv: number): KubeObject {
  return { ...obj, metadata: { ...obj.metadata, resourceVersion: String(rv) } };
}

const stateOf = (ref: OwnObjectRef, row: OwnRow): OwnObjectState => ({ ...ref, uid: row.uid, rv: Number(row.rv), object: JSON.parse(row.object) as KubeObject });

/** The row of `ref`, if stored. */
export async function readOwnRow(db: Knex | Knex.Transaction, ref: OwnObjectRef): Promise<OwnRow | undefined> {
  return rowsOf(db, ref.resource).where({ namespace: ref.namespace, name: ref.name }).first('id', 'uid', 'rv', 'object');
}

/**
 * Applies a put or delete of `ref` at rv `changeRv` (the caller holds the rv lock and moves the
 * watermark): the row, its label rows, the object counts, and the change. Returns the change
 * type and the object as served.
 */
export async function applyOwnWrite(
  trx: Knex.Transaction,
  dialect: Dialect,
  ref: OwnObjectRef,
  row: OwnRow | undefined,
  decision: Exclude<OwnObjectWrite, { action: 'none' }>,
  changeRv: number,
  ts: number,
  fence: Fence | undefined,
  /** false: the change row is returned, for the caller to publish with others (one statement). */
  publish = true,
): Promise<OwnWriteResult> {
  const counts = (n: number) => addCounts(trx, dialect, [{ cluster: ownObjectsCluster, grp: ownGroup, resource: ref.resource, namespace: ref.namespace, n }]);
  let result: OwnWriteResult;
  if (decision.action === 'delete') {
    const current = JSON.parse(row!.object) as KubeObject;
    const json = JSON.stringify(stamp(current, changeRv));
    result = { type: 'DELETED', json, uid: row!.uid, change: changeRow(ref, 'DELETED', row!.uid, json, row, changeRv, ts, fence) };
    await trx('object_labels').where({ obj_id: Number(row!.id) }).delete();
    await trx('objects').where({ id: Number(row!.id) }).delete();
    await counts(-1);
  } else {
    const put = stampedPut(ref, decision.object, changeRv);
    const { md, values } = put;
    result = { type: row ? 'MODIFIED' : 'ADDED', json: put.json, uid: put.uid, change: changeRow(ref, row ? 'MODIFIED' : 'ADDED', put.uid, put.json, row, changeRv, ts, fence) };
    let id: number;
    // The label rows change only with the labels (a status write leaves them: two statements
    // fewer under the rv lock).
    let relabel = true;
    if (row) {
      id = Number(row.id);
      await trx('objects').where({ id }).update(values);
      relabel = !sameLabels((JSON.parse(row.object) as KubeObject).metadata?.labels, md.labels);
      if (relabel) await trx('object_labels').where({ obj_id: id }).delete();
    } else {
      const [inserted] = await insertRows<Record<string, unknown>, { id: number | string }>(
        trx,
        dialect,
        'objects',
        [{ cluster: ownObjectsCluster, grp: ownGroup, resource: ref.resource, namespace: ref.namespace, name: ref.name, ...values }],
        { returning: ['id'] },
      );
      id = Number(inserted.id);
      await counts(1);
    }
    const labels = Object.entries(md.labels ?? {}).map(([key, value]) => ({ obj_id: id, key, value: String(value), num: labelNumber(String(value)) }));
    if (relabel) await insertRows(trx, dialect, 'object_labels', labels);
  }
  if (publish) await dialect.publishChanges(trx, [result.change], changeRv);
  return result;
}

/** What a put or delete of an own object wrote: the change type, the object as served, its uid and its change row. */
export interface OwnWriteResult {
  type: EventType;
  json: string;
  uid: string;
  change: ChangeRowValues;
}

/** A put's object stamped with its rv, checked against `ref`, and the values of its `objects` row. */
function stampedPut(ref: OwnObjectRef, object: KubeObject, changeRv: number) {
  const obj = stamp(object, changeRv);
  const md = obj.metadata ?? {};
  if (md.name !== ref.name) throw new Error(`applyOwnWrite: the object is named ${JSON.stringify(md.name)}, not ${JSON.stringify(ref.name)}`);
  if ((md.namespace ?? '') !== ref.namespace) throw new Error(`applyOwnWrite: the object's namespace is ${JSON.stringify(md.namespace ?? '')}, not ${JSON.stringify(ref.namespace)}`);
  const uid = md.uid ?? '';
  const json = JSON.stringify(obj);
  const values = { version: ownVersion, uid, rv: changeRv, upstream_rv: '', created_at: md.creationTimestamp ?? '', owner_uid: null, fields: null, object: json };
  return { md, uid, json, values };
}

function changeRow(ref: OwnObjectRef, type: EventType, uid: string, json: string, row: OwnRow | undefined, changeRv: number, ts: number, fence: Fence | undefined): ChangeRowValues {
  return {
    rv: changeRv,
    type,
    cluster: ownObjectsCluster,
    grp: ownGroup,
    version: ownVersion,
    resource: ref.resource,
    namespace: ref.namespace,
    name: ref.name,
    uid,
    object: json,
    prev_object: row?.object ?? null,
    ts,
    epoch: fence?.epoch ?? null,
  };
}

/**
 * A put of a stored object whose labels stay the same (a status write), planned for the caller
 * to write with others in one statement (`dialect.updateObjectRows`) and publish with them: what
 * applyOwnWrite would write, without writing it. Undefined when the write needs applyOwnWrite's
 * statements (a new object, new labels).
 */
export function planOwnUpdate(
  ref: OwnObjectRef,
  row: OwnRow | undefined,
  object: KubeObject,
  changeRv: number,
  ts: number,
  fence: Fence | undefined,
): (OwnWriteResult & { update: ObjectRowUpdate }) | undefined {
  if (!row || !sameLabels((JSON.parse(row.object) as KubeObject).metadata?.labels, object.metadata?.labels)) return undefined;
  const put = stampedPut(ref, object, changeRv);
  return { type: 'MODIFIED', json: put.json, uid: put.uid, change: changeRow(ref, 'MODIFIED', put.uid, put.json, row, changeRv, ts, fence), update: { id: Number(row.id), ...put.values } };
}

/** Whether two label maps are the same (order aside). */
function sameLabels(a: Record<string, string> | undefined, b: Record<string, string> | undefined): boolean {
  const x = Object.entries(a ?? {});
  const y = b ?? {};
  return x.length === Object.keys(y).length && x.every(([k, v]) => Object.hasOwn(y, k) && String(y[k]) === String(v));
}

/**
 * Reads own object `ref` and lets `decide` choose what to write, all in one transaction holding
 * the rv lock (with `fences`: only while their holders hold their leases, FencedError
 * otherwise; without: the apiserver's writes). A change gets the next rv; `decide` may throw
 * (a Status error) to write nothing.
 */
export async function writeOwnObject(
  knex: Knex,
  dialect: Dialect,
  ref: OwnObjectRef,
  decide: (current: OwnObjectState | undefined) => OwnObjectWrite,
  fences: readonly Fence[],
): Promise<OwnObjectResult> {
  return writeTransaction(knex, dialect, fences, 'rv', async (trx, locked) => {
    const row = await readOwnRow(trx, ref);
    const decision = decide(row ? stateOf(ref, row) : undefined);
    if (decision.action === 'none' || (decision.action === 'delete' && !row)) return { watermark: locked.rv, object: row?.object };
    const changeRv = locked.rv + 1;
    const { type, json } = await applyOwnWrite(trx, dialect, ref, row, decision, changeRv, locked.now, fences[0]);
    return { change: { rv: changeRv, type }, object: json, watermark: changeRv };
  });
}

/** One own object as served, or undefined. */
export async function getOwnObject(knex: Knex, ref: OwnObjectRef): Promise<OwnObjectState | undefined> {
  const row = await readOwnRow(knex, ref);
  return row ? stateOf(ref, row) : undefined;
}

/** Every object of an own resource, by namespace and name. */
export async function listOwnObjects(knex: Knex, resource: string): Promise<OwnObjectState[]> {
  const rows: Array<OwnRow & { namespace: string; name: string }> = await rowsOf(knex, resource).orderBy(['namespace', 'name']).select('id', 'uid', 'rv', 'object', 'namespace', 'name');
  return rows.map((r) => stateOf({ resource, namespace: r.namespace, name: r.name }, r));
}
