// The `clusters` table: registration (spec) and status of each member cluster.
import type { Knex } from 'knex';
import { clusterObjectsCluster } from './cluster-objects.ts';
import type { Fence } from './leases.ts';
import type { ClusterRecord, StoredKey } from './types.ts';

interface ClusterRow {
  name: string;
  spec: string;
  status: string;
  created_at: string;
  updated_at: string;
}

const toRecord = (r: ClusterRow): ClusterRecord => ({
  name: r.name,
  spec: JSON.parse(r.spec) as Record<string, unknown>,
  status: JSON.parse(r.status) as Record<string, unknown>,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export async function upsertCluster(knex: Knex, name: string, spec: Record<string, unknown>): Promise<void> {
  const now = new Date().toISOString();
  await knex('clusters')
    .insert({ name, spec: JSON.stringify(spec), status: '{}', created_at: now, updated_at: now })
    .onConflict('name')
    .merge(['spec', 'updated_at']);
}

export async function setClusterStatus(knex: Knex, name: string, status: Record<string, unknown>, fence?: Fence): Promise<boolean> {
  const q = knex('clusters').where({ name });
  // A writer that lost its lease must not overwrite its successor's status.
  if (fence) q.whereExists((sub) => sub.select(knex.raw('1')).from('leases').where({ name: fence.lease, holder: fence.holder, epoch: fence.epoch }));
  const n = await q.update({ status: JSON.stringify(status), updated_at: new Date().toISOString() });
  return Number(n) > 0;
}

export async function getCluster(knex: Knex, name: string): Promise<ClusterRecord | undefined> {
  const row: ClusterRow | undefined = await knex('clusters').where({ name }).first();
  return row ? toRecord(row) : undefined;
}

export async function listClusters(knex: Knex): Promise<ClusterRecord[]> {
  const rows: ClusterRow[] = await knex('clusters').orderBy('name').select('*');
  return rows.map(toRecord);
}

/** The names of the registered clusters and of every cluster that still has objects (cheap: no object is read). */
export async function knownClusterNames(knex: Knex): Promise<string[]> {
  const registered: Array<{ name: string }> = await knex('clusters').select('name');
  // The Cluster objects themselves are stored under a reserved cluster name: not a member.
  const stored: Array<{ cluster: string }> = await knex('object_counts').where('n', '>', 0).whereNot({ cluster: clusterObjectsCluster }).distinct('cluster');
  return [...new Set([...registered.map((r) => r.name), ...stored.map((r) => r.cluster)])].sort();
}

/** Removes the registration row only; the caller first deletes the cluster's objects as changes. */
export async function deleteClusterRow(knex: Knex, name: string): Promise<void> {
  await knex('clusters').where({ name }).delete();
}

/** What storage holds for one cluster and resource, for reconcile after a relist. */
export async function storedKeys(knex: Knex, cluster: string, group: string, resource: string): Promise<StoredKey[]> {
  const rows: Array<{ namespace: string; name: string; uid: string; upstream_rv: string; version: string }> = await knex('objects')
    .where({ cluster, grp: group, resource })
    .orderBy(['namespace', 'name'])
    .select('namespace', 'name', 'uid', 'upstream_rv', 'version');
  return rows.map((r) => ({ namespace: r.namespace, name: r.name, uid: r.uid, upstreamRv: r.upstream_rv, version: r.version }));
}

/** The (group, resource) pairs stored for a member cluster, for removal and discovery (Cluster objects are not a member's). */
export async function storedResources(knex: Knex, cluster?: string): Promise<Array<{ cluster: string; group: string; version: string; resource: string; count: number }>> {
  const qb = knex('objects').groupBy('cluster', 'grp', 'version', 'resource').select('cluster', 'grp', 'version', 'resource').count({ n: '*' });
  if (cluster !== undefined) qb.where({ cluster });
  else qb.whereNot({ cluster: clusterObjectsCluster });
  const rows = (await qb) as Array<{ cluster: string; grp: string; version: string; resource: string; n: number | string }>;
  return rows.map((r) => ({ cluster: r.cluster, group: r.grp, version: r.version, resource: r.resource, count: Number(r.n) }));
}
