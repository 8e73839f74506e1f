// The write path: one synchro batch becomes one transaction that updates `objects`,
// their label and field index rows, and appends `changes` with rvs in commit order.
import type { Knex } from 'knex';
import { kindFieldNames, kindFieldValues } from '../kube/fields.ts';
import type { Dialect } from './dialect.ts';
import { insertRows } from './insert.ts';
import { chunk, keyOf, ownerUid, type ObjectRow } from './rows.ts';
import type { BatchResult, EventType, KubeObject, UpstreamEvent } from './types.ts';

export const clusterAnnotation = 'panoptes.io/cluster';
export const upstreamRvAnnotation = 'panoptes.io/upstream-resource-version';

export interface WriteHooks {
  /** Runs inside the transaction after all rows are written, just before commit (tests). */
  beforeCommit?: () => Promise<void>;
}

/** Whether upstream resourceVersion `incoming` is newer than `stored`. */
export function isNewer(incoming: string, stored: string): boolean {
  if (incoming === '' || stored === '') return incoming !== stored || incoming === '';
  if (/^\d+$/.test(incoming) && /^\d+$/.test(stored)) return BigInt(incoming) > BigInt(stored);
  return incoming !== stored;
}

interface Current {
  id: number | null;
  uid: string;
  upstreamRv: string;
  object: string;
  parsed: KubeObject;
  version: string;
  labels: Record<string, string>;
}

interface PendingChange {
  type: EventType;
  group: string;
  version: string;
  resource: string;
  namespace: string;
  name: string;
  uid: string;
  upstreamRv: string;
  parsed: KubeObject;
  prev: string | null;
  /** Set once the rv is known. */
  object?: string;
  rv?: number;
}

function stamp(obj: KubeObject, rv: number, cluster: string, upstreamRv: string): KubeObject {
  const md = obj.metadata ?? {};
  return {
    ...obj,
    metadata: {
      ...md,
      resourceVersion: String(rv),
      annotations: { ...md.annotations, [clusterAnnotation]: cluster, [upstreamRvAnnotation]: upstreamRv },
    },
  };
}

/** The kind's selectable fields as JSON, or null for kinds without any. */
function fieldsJson(group: string, resource: string, obj: KubeObject): string | null {
  if (kindFieldNames(group, resource).length === 0) return null;
  return JSON.stringify(kindFieldValues(group, resource, obj));
}

function sameRecord(a: Record<string, string>, b: Record<string, string>): boolean {
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  return ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && a[k] === b[k]);
}

function describe(e: UpstreamEvent): { namespace: string; name: string; uid: string; upstreamRv: string } {
  const md = e.object.metadata ?? {};
  if (!md.name) throw new Error(`event ${e.type} ${e.group}/${e.resource} has no metadata.name`);
  return { namespace: md.namespace ?? '', name: md.name, uid: md.uid ?? '', upstreamRv: md.resourceVersion ?? '' };
}

/**
 * The stored rows of the keys a batch touches: per resource one query over the by-cluster
 * index with the batch's (namespace, name) pairs, written so that each engine probes the
 * index once per key (`namespace IN … AND name IN …` would probe their cross product).
 */
async function loadStored(
  trx: Knex.Transaction,
  dialect: Dialect,
  cluster: string,
  keys: Array<{ e: { group: string; resource: string }; namespace: string; name: string }>,
): Promise<ObjectRow[]> {
  const byResource = new Map<string, { group: string; resource: string; pairs: Map<string, [string, string]> }>();
  for (const k of keys) {
    const id = `${k.e.group}/${k.e.resource}`;
    let r = byResource.get(id);
    if (!r) byResource.set(id, (r = { group: k.e.group, resource: k.e.resource, pairs: new Map() }));
    r.pairs.set(`${k.namespace}\u0000${k.name}`, [k.namespace, k.name]);
  }
  const out: ObjectRow[] = [];
  for (const r of byResource.values()) {
    for (const pairs of chunk([...r.pairs.values()], 2, 20_000)) {
      const [sql, bindings] = dialect.selectObjectsByNames(
        'o.id, o.grp, o.version, o.resource, o.namespace, o.name, o.uid, o.upstream_rv, o.object',
        'o.cluster = ? AND o.grp = ? AND o.resource = ?',
        [cluster, r.group, r.resource],
        pairs,
      );
      const result: unknown = await trx.raw(sql, bindings as Knex.ValueDict[keyof Knex.ValueDict][]);
      out.push(...(Array.isArray(result) ? result : (result as { rows: ObjectRow[] }).rows));
    }
  }
  return out;
}

export async function applyBatch(
  knex: Knex,
  dialect: Dialect,
  cluster: string,
  events: UpstreamEvent[],
  hooks: WriteHooks = {},
): Promise<BatchResult> {
  const described = events.map((e) => ({ e, ...describe(e) }));
  return knex.transaction(async (trx) => {
    let rv = await dialect.lockRv(trx);

    // The stored state of every key the batch touches, then the batch applied in order.
    const state = new Map<string, Current | null>();
    for (const r of await loadStored(trx, dialect, cluster, described)) {
      const parsed = JSON.parse(r.object) as KubeObject;
      state.set(keyOf(r.grp, r.resource, r.namespace, r.name), {
        id: Number(r.id),
        uid: r.uid,
        upstreamRv: r.upstream_rv,
        object: r.object,
        parsed,
        version: r.version,
        labels: parsed.metadata?.labels ?? {},
      });
    }
    const original = new Map(state);

    const pending: PendingChange[] = [];
    const touched = new Map<string, { group: string; resource: string; namespace: string; name: string }>();
    for (const { e, namespace, name, uid, upstreamRv } of described) {
      const key = keyOf(e.group, e.resource, namespace, name);
      const cur = state.get(key) ?? null;
      const base = { group: e.group, resource: e.resource, namespace, name };
      if (e.type === 'DELETED') {
        if (!cur) continue;
        if (upstreamRv !== '' && !isNewer(upstreamRv, cur.upstreamRv)) continue;
        // A delete found by reconcile carries no state of its own: serve the last stored one.
        const last = upstreamRv === '' ? cur.parsed : e.object;
        pending.push({ ...base, type: 'DELETED', version: cur.version, uid: cur.uid, upstreamRv: upstreamRv || cur.upstreamRv, parsed: last, prev: cur.object });
        state.set(key, null);
        touched.set(key, base);
        continue;
      }
      if (cur && !isNewer(upstreamRv, cur.upstreamRv) && cur.uid === uid) continue;
      let prev = cur;
      if (cur && cur.uid !== uid) {
        // Deleted and created again under the same name while we were not watching.
        pending.push({ ...base, type: 'DELETED', version: cur.version, uid: cur.uid, upstreamRv: cur.upstreamRv, parsed: cur.parsed, prev: cur.object });
        prev = null;
      }
      pending.push({ ...base, type: prev ? 'MODIFIED' : 'ADDED', version: e.version, uid, upstreamRv, parsed: e.object, prev: prev?.object ?? null });
      state.set(key, {
        id: cur?.id ?? null,
        uid,
        upstreamRv,
        object: '', // set once the rv is known
        parsed: e.object,
        version: e.version,
        labels: e.object.metadata?.labels ?? {},
      });
      touched.set(key, base);
    }

    if (pending.length === 0) return { changes: [], watermark: rv };

    // rvs in batch order; each change's object is served with its own rv.
    const ts = Date.now();
    const finalObject = new Map<string, { object: string; rv: number }>();
    for (const p of pending) {
      p.rv = ++rv;
      p.object = JSON.stringify(stamp(p.parsed, p.rv, cluster, p.upstreamRv));
      finalObject.set(keyOf(p.group, p.resource, p.namespace, p.name), { object: p.object, rv: p.rv });
    }
    // A later change's prev is the earlier change's object, as served.
    const lastServed = new Map<string, string>();
    for (const p of pending) {
      const key = keyOf(p.group, p.resource, p.namespace, p.name);
      if (p.prev !== null && lastServed.has(key)) p.prev = lastServed.get(key)!;
      lastServed.set(key, p.object!);
      if (p.type === 'DELETED') lastServed.delete(key);
    }

    const upserts: Array<Omit<ObjectRow, 'id'>> = [];
    const deleteIds: number[] = [];
    const reindex: Array<{ key: string; cur: Current }> = [];
    const dropIndexIds: number[] = [];
    for (const [key, ref] of touched) {
      const before = original.get(key) ?? null;
      const after = state.get(key) ?? null;
      if (!after) {
        if (before?.id != null) deleteIds.push(before.id);
        continue;
      }
      const { object: obj, rv: lastRv } = finalObject.get(key)!;
      after.object = obj;
      const md = after.parsed.metadata ?? {};
      upserts.push({
        cluster,
        grp: ref.group,
        version: after.version,
        resource: ref.resource,
        namespace: ref.namespace,
        name: ref.name,
        uid: after.uid,
        rv: lastRv,
        upstream_rv: after.upstreamRv,
        created_at: md.creationTimestamp ?? '',
        owner_uid: ownerUid(after.parsed),
        fields: fieldsJson(ref.group, ref.resource, after.parsed),
        object: obj,
      });
      const indexUnchanged = before?.id != null && sameRecord(before.labels, after.labels);
      if (!indexUnchanged) {
        reindex.push({ key, cur: after });
        if (before?.id != null) dropIndexIds.push(before.id);
      }
    }

    const ids = new Map<string, number>();
    const upserted = await insertRows<Omit<ObjectRow, 'id'>, Pick<ObjectRow, 'id' | 'grp' | 'resource' | 'namespace' | 'name'>>(trx, dialect, 'objects', upserts, {
      conflict: ['grp', 'resource', 'namespace', 'name', 'cluster'],
      update: ['version', 'uid', 'rv', 'upstream_rv', 'created_at', 'owner_uid', 'fields', 'object'],
      returning: ['id', 'grp', 'resource', 'namespace', 'name'],
    });
    for (const r of upserted) ids.set(keyOf(r.grp, r.resource, r.namespace, r.name), Number(r.id));
    const dropIds = [...deleteIds, ...dropIndexIds];
    for (const part of chunk(dropIds, 1)) await trx('object_labels').whereIn('obj_id', part).delete();
    for (const part of chunk(deleteIds, 1)) await trx('objects').whereIn('id', part).delete();
    const labelRows: Array<{ obj_id: number; key: string; value: string }> = [];
    for (const { key, cur } of reindex) {
      const id = ids.get(key)!;
      for (const [k, v] of Object.entries(cur.labels)) labelRows.push({ obj_id: id, key: k, value: String(v) });
    }
    await insertRows(trx, dialect, 'object_labels', labelRows);

    const changeRows = pending.map((p) => ({
      rv: p.rv!,
      type: p.type,
      cluster,
      grp: p.group,
      version: p.version,
      resource: p.resource,
      namespace: p.namespace,
      name: p.name,
      uid: p.uid,
      object: p.object!,
      prev_object: p.prev,
      ts,
    }));
    await insertRows(trx, dialect, 'changes', changeRows);
    await trx('meta').where({ key: 'rv' }).update({ value: rv });
    await dialect.notifyCommit(trx, rv);
    if (hooks.beforeCommit) await hooks.beforeCommit();

    return {
      changes: pending.map((p) => ({ rv: p.rv!, type: p.type, cluster, group: p.group, resource: p.resource, namespace: p.namespace, name: p.name })),
      watermark: rv,
    };
  });
}
