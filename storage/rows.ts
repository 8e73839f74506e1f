// Row shapes of the tables and their mapping to the storage types.
import type { Change, EventType, KubeObject, ObjectKey, StoredObject } from './types.ts';

export interface ObjectRow {
  id: number | string;
  cluster: string;
  grp: string;
  version: string;
  resource: string;
  namespace: string;
  name: string;
  uid: string;
  rv: number | string;
  upstream_rv: string;
  created_at: string;
  owner_uid: string | null;
  fields: string | null;
  /** The document SQL reads when it differs from `object` (storage/sql-values.ts sqlDocument). */
  json_doc?: string | null;
  object: string;
}

export interface ChangeRow {
  rv: number | string;
  type: string;
  cluster: string;
  grp: string;
  version: string;
  resource: string;
  namespace: string;
  name: string;
  uid: string;
  object: string;
  prev_object: string | null;
  ts: number | string;
  epoch?: number | string | null;
}

/** A change row as the write path appends it. */
export interface ChangeRowValues extends Omit<ChangeRow, 'rv' | 'ts' | 'epoch'> {
  rv: number;
  ts: number;
  epoch: number | null;
}

export const objectColumns = ['id', 'cluster', 'grp', 'version', 'resource', 'namespace', 'name', 'uid', 'rv', 'upstream_rv', 'object'];

export function toStored(r: ObjectRow): StoredObject {
  return {
    cluster: r.cluster,
    group: r.grp,
    version: r.version,
    resource: r.resource,
    namespace: r.namespace,
    name: r.name,
    uid: r.uid,
    rv: Number(r.rv),
    upstreamRv: r.upstream_rv,
    object: r.object,
  };
}

export function toChange(r: ChangeRow): Change {
  return {
    rv: Number(r.rv),
    type: r.type as EventType,
    cluster: r.cluster,
    group: r.grp,
    version: r.version,
    resource: r.resource,
    namespace: r.namespace,
    name: r.name,
    uid: r.uid,
    object: r.object,
    prevObject: r.prev_object,
    ts: Number(r.ts),
    epoch: r.epoch === undefined || r.epoch === null ? null : Number(r.epoch),
  };
}

/** Map key of an object within one cluster. */
export function keyOf(group: string, resource: string, namespace: string, name: string): string {
  return `${group}\u0000${resource}\u0000${namespace}\u0000${name}`;
}

/** Total order of list results: namespace, name, cluster (byte order, as the SQL columns), then the kind. */
export function compareKeys(a: ListKey, b: ListKey): number {
  return compareText(a.namespace, b.namespace) || compareText(a.name, b.name) || compareText(a.cluster, b.cluster) || compareKinds(a, b);
}

/** A key in list order; group and resource order the kinds of a collection (storage/collection.ts). */
export type ListKey = Pick<ObjectKey, 'namespace' | 'name' | 'cluster'> & { group?: string; resource?: string };

/** Order of two kinds (group, then resource); 0 when either has none (a single-kind list's key). */
export function compareKinds(a: { group?: string; resource?: string }, b: { group?: string; resource?: string }): number {
  if (a.group === undefined || b.group === undefined || a.resource === undefined || b.resource === undefined) return 0;
  return compareText(a.group, b.group) || compareText(a.resource, b.resource);
}

/**
 * Byte order of the texts' UTF-8 (code point order), as both engines compare the key columns
 * (PostgreSQL COLLATE "C", SQLite BINARY); JavaScript's `<` compares UTF-16 code units, which
 * puts U+10000 and above before U+E000–U+FFFF.
 */
export function compareText(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    // Surrogates (U+D800–U+DFFF) carry code points above U+FFFF: above U+E000–U+FFFF in code point order.
    if (x >= 0xd800 && y >= 0xd800) {
      x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
      y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
    }
    return x < y ? -1 : 1;
  }
  return a.length < b.length ? -1 : 1;
}

/** The uid of the object's controller (or first) owner, used by the ownerUID search. */
export function ownerUid(obj: KubeObject): string | null {
  const refs = obj.metadata?.ownerReferences;
  if (!Array.isArray(refs) || refs.length === 0) return null;
  const ref = refs.find((r) => r.controller) ?? refs[0];
  return typeof ref.uid === 'string' ? ref.uid : null;
}

/** Splits rows into chunks that stay under the engines' bound-parameter limits. */
export function chunk<T>(items: T[], columns: number, maxParams = 30_000): T[][] {
  const size = Math.max(1, Math.floor(maxParams / Math.max(1, columns)));
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** The rows of a raw query's result: better-sqlite3 answers an array, pg a result object. */
export const rowsOf = <T>(result: unknown): T[] => (Array.isArray(result) ? (result as T[]) : ((result as { rows?: T[] }).rows ?? []));
