// The `clusters` table: registration (spec) and status of each member cluster, written by the
// synchro holding the cluster's lease (storage/fenced.ts), read by everyone.
import type { Knex } from 'knex';
import { clusterObjectsCluster } from './cluster-objects.ts';
import type { Dialect } from './dialect.ts';
import { fenceOf, writeTransaction } from './fenced.ts';
import { clusterLease, type Fence } from './leases.ts';
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

/** A write of cluster `name`'s row, under its lease; `at` is the database's clock as an ISO time. */
async function underClusterLease<T>(knex: Knex, dialect: Dialect, name: string, fence: Fence, write: (trx: Knex.Transaction, at: string) => Promise<T>): Promise<T> {
  return writeTransaction(knex, dialect, [fenceOf(fence, clusterLease(name))], 'leases', (trx, { now }) => write(trx, new Date(now).toISOString()));
}

export function upsertCluster(knex: Knex, dialect: Dialect, name: string, spec: Record<string, unknown>, fence: Fence): Promise<void> {
  return underClusterLease(knex, dialect, name, fence, async (trx, at) => {
    await trx('clusters')
      .insert({ name, spec: JSON.stringify(spec), status: '{}', created_at: at, updated_at: at })
      .onConflict('name')
      .merge(['spec', 'updated_at']);
  });
}

/** Writes the status of a registered cluster; returns whether its row exists. */
export async function setClusterStatus(knex: Knex, dialect: Dialect, name: string, status: Record<string, unknown>, fence: Fence): Promise<boolean> {
  return (await setClusterStatuses(knex, dialect, [{ name, status, fence }]))[0];
}

/** A status write of one registered cluster, under its lease. */
export interface ClusterStatusWrite {
  name: string;
  status: Record<string, unknown>;
  fence: Fence;
}

/**
 * The statuses of many registered clusters in one transaction, each under its lease (synchro's
 * status writes of every cluster it holds: one transaction per round instead of one per
 * cluster, one statement on PostgreSQL). Returns whether each one's row exists. A fence that no
 * longer holds throws FencedError (naming it) and nothing is written.
 */
export async function setClusterStatuses(knex: Knex, dialect: Dialect, writes: readonly ClusterStatusWrite[]): Promise<boolean[]> {
  if (new Set(writes.map((w) => w.name)).size !== writes.length) throw new Error('setClusterStatuses: one write per cluster');
  if (writes.length === 0) return [];
  const fences = writes.map((w) => fenceOf(w.fence, clusterLease(w.name)));
  return writeTransaction(knex, dialect, fences, 'leases', async (trx, { now }) => {
    const at = new Date(now).toISOString();
    const found = new Set(await dialect.updateClusterRows(trx, writes.map((w) => ({ name: w.name, status: JSON.stringify(w.status), cluster_id: clusterIdOf(w.status), updated_at: at }))));
    return writes.map((w) => found.has(w.name));
  });
}

export async function getCluster(knex: Knex, name: string): Promise<ClusterRecord | undefined> {
  const row: ClusterRow | undefined = await knex('clusters').where({ name }).first();
  return row ? toRecord(row) : undefined;
}

export async function listClusters(knex: Knex): Promise<ClusterRecord[]> {
  const rows: ClusterRow[] = await knex('clusters').orderBy('name').select('*');
  return rows.map(toRecord);
}

/**
 * The member cluster id each registered cluster's status records (`status.clusterID`, written by
 * the synchro syncing it), by cluster name: how registrations held by different synchro
 * processes find that they reach one member. Clusters without one are left out.
 */
/** A registration's recorded member id and when its row was first written (the database's clock). */
export interface ClusterIdentityRecord {
  clusterID: string;
  registeredAt: string;
}

export async function clusterIdentities(knex: Knex): Promise<Map<string, ClusterIdentityRecord>> {
  const rows: Array<{ name: string; cluster_id: string | null; created_at: string }> = await knex('clusters').whereNotNull('cluster_id').select('name', 'created_at', 'cluster_id');
  return new Map(rows.filter((r) => r.cluster_id).map((r) => [r.name, { clusterID: r.cluster_id!, registeredAt: r.created_at }]));
}

/** The member cluster id a status records (`status.clusterID`), as its column holds it: null without one. */
export function clusterIdOf(status: Record<string, unknown>): string | null {
  return typeof status.clusterID === 'string' && status.clusterID !== '' ? status.clusterID : null;
}

/** The names of the registered clusters and of every cluster that still has objects (cheap: no object is read). */
export async function knownClusterNames(knex: Knex): Promise<string[]> {
  const registered: Array<{ name: string }> = await knex('clusters').select('name');
  // The Cluster objects themselves are stored under a reserved cluster name: not a member.
  const stored: Array<{ cluster: string }> = await knex('object_counts').where('n', '>', 0).whereNot({ cluster: clusterObjectsCluster }).distinct('cluster');
  return [...new Set([...registered.map((r) => r.name), ...stored.map((r) => r.cluster)])].sort();
}

/** Removes the registration row only; the caller first deletes the cluster's objects as changes. */
export function deleteClusterRow(knex: Knex, dialect: Dialect, name: string, fence: Fence): Promise<void> {
  return underClusterLease(knex, dialect, name, fence, async (trx) => {
    await trx('clusters').where({ name }).delete();
  });
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
