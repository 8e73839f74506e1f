// Owner search beyond one owner uid: the owner named by name and group-resource (or by uid),
// and objects further down its chain (ownerSeniority, as Clusterpedia names it: 0 the
// owner's own dependents, 1 theirs, ...; `any` every level). "Pods whose owner chain reaches
// Deployment web" is one query: a recursive CTE that starts at the named owners and walks
// down `objects.owner_uid` (objects_by_owner) level by level, at most maxOwnerDepth levels.
//
// A chain follows what the owner_uid column holds: each object's controller reference (or its
// first reference), in the owner's own cluster, and from a namespaced owner only to
// dependents of its namespace: kube's garbage collector treats a reference to a namespaced
// owner in another namespace as absent (https://kubernetes.io/docs/concepts/overview/working-with-objects/owners-dependents/).
//
// The owners of the chain are read as they are stored now; the listed objects themselves as
// the snapshot has them (a later page of a list reads its rows at the first page's rv, and
// rebuilt rows are tested against the same owners, read once in that snapshot).
import type { Knex } from 'knex';
import { ownerUid, rowsOf } from './rows.ts';
import { sqlText } from './sql-values.ts';
import type { KubeObject, ObjectKey, OwnerQuery } from './types.ts';

/** Levels of owners a chain walks at most (Deployment → ReplicaSet → Pod is 2; CronJob → Job → Pod too). */
export const maxOwnerDepth = 5;

/** The levels whose objects are the parents of the listed objects: exactly `seniority`, or every one. */
function parentDepths(o: OwnerQuery): { from: number; to: number } {
  return o.seniority === 'any' ? { from: 0, to: maxOwnerDepth - 1 } : { from: o.seniority, to: o.seniority };
}

/** The chain's SQL: a recursive CTE `chain(cluster, uid, namespace, depth)` from the named owners down to the deepest parent level. */
function chainCte(o: OwnerQuery, clusters: string[] | undefined): { sql: string; bindings: Knex.RawBinding[] } {
  const where: string[] = [];
  const bindings: Knex.RawBinding[] = [];
  const list = (column: string, values: string[]) => {
    if (values.length === 0) {
      where.push('1 = 0');
      return;
    }
    where.push(`${column} IN (${values.map(() => '?').join(', ')})`);
    bindings.push(...values);
  };
  if (o.group !== undefined && o.resource !== undefined) {
    where.push('p.grp = ?', 'p.resource = ?');
    bindings.push(o.group, o.resource);
  }
  if (o.names) list('p.name', o.names);
  if (o.uids) list('p.uid', o.uids);
  if (clusters) list('p.cluster', clusters);
  const deepest = parentDepths(o).to;
  bindings.push(deepest);
  const sql =
    `WITH RECURSIVE chain(cluster, uid, namespace, depth) AS (` +
    `SELECT p.cluster, p.uid, p.namespace, 0 FROM objects p WHERE ${where.join(' AND ')} ` +
    `UNION ALL SELECT c.cluster, c.uid, c.namespace, chain.depth + 1 FROM chain CROSS JOIN objects c WHERE ${dependentOf('c')} AND chain.depth < ?)`;
  return { sql, bindings };
}

/**
 * The join of a dependent `alias` to its parent in `chain`: same cluster, owner uid, and a
 * namespace the reference holds in. Written as `chain CROSS JOIN objects ... WHERE` so that
 * SQLite reads the chain first and each parent's dependents through objects_by_owner (CROSS
 * JOIN fixes its join order; left to itself it scanned every object against an automatic
 * index on the chain); PostgreSQL plans it as any join.
 */
const dependentOf = (alias: string) => `${alias}.owner_uid = chain.uid AND ${alias}.cluster = chain.cluster AND (chain.namespace = '' OR ${alias}.namespace = chain.namespace)`;

/** Restricts a query over `objects o` of one resource to the dependents the owner query names. */
export function whereOwnedBy(qb: Knex.QueryBuilder, o: OwnerQuery, target: { group: string; resource: string; clusters?: string[] }): void {
  const cte = chainCte(o, target.clusters);
  const { from, to } = parentDepths(o);
  const sql = `${cte.sql} SELECT d.id FROM chain CROSS JOIN objects d WHERE ${dependentOf('d')} AND d.grp = ? AND d.resource = ? AND chain.depth >= ? AND chain.depth <= ?`;
  qb.whereRaw(`o.id IN (${sql})`, [...cte.bindings, target.group, target.resource, from, to]);
}

/** The parents of the objects an owner query selects, read once per snapshot for rows tested outside SQL. */
export interface ResolvedOwners {
  /** `cluster NUL uid` → the parent's namespace ('' for a cluster-scoped owner). */
  parents: Map<string, string[]>;
}

/** Reads the parents an owner query reaches (in the caller's transaction). */
export async function resolveOwners(knex: Knex, o: OwnerQuery, clusters: string[] | undefined): Promise<ResolvedOwners> {
  const cte = chainCte(o, clusters);
  const { from, to } = parentDepths(o);
  const rows = rowsOf<{ cluster: string; uid: string; namespace: string }>(await knex.raw(`${cte.sql} SELECT cluster, uid, namespace FROM chain WHERE depth >= ? AND depth <= ?`, [...cte.bindings, from, to]));
  const parents = new Map<string, string[]>();
  for (const r of rows) {
    const k = `${r.cluster}\u0000${r.uid}`;
    parents.set(k, [...(parents.get(k) ?? []), r.namespace]);
  }
  return { parents };
}

/** Whether one object is a dependent the resolved owners select, as the SQL join decides it. */
export function ownedBy(resolved: ResolvedOwners, key: ObjectKey, obj: KubeObject): boolean {
  const owner = ownerUid(obj);
  if (owner === null) return false;
  const namespaces = resolved.parents.get(`${key.cluster}\u0000${sqlText(owner)}`);
  return namespaces !== undefined && namespaces.some((ns) => ns === '' || ns === key.namespace);
}
