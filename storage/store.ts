// Storage: the one interface the rest of Panoptes uses, over SQLite or PostgreSQL.
//
// Writes come in two kinds, and the method says which. A lease holder's writes (synchro: a
// cluster's batches, its Cluster object and status, its clusters row and OpenAPI documents,
// its removal; the compactor's compaction and count repair) take a Fence, always, and write
// nothing unless it still holds (storage/fenced.ts): `fencedWrites` lists them. The few writes
// made without a lease say so (`unleasedWrites`): the apiserver's Cluster writes, serialized by
// resourceVersion under the rv lock, and single batches of tests and benchmarks.
import { enableParallelWrites, sawParallel, writeProtocol, type WriteProtocol } from './ordered-commits.ts';
import type { Knex } from 'knex';
import { connect, type Connection, type ConnectOptions } from './connect.ts';
import { RvTooLargeError } from './errors.ts';
import { aggregate, type AggregateQuery, type AggregateResult } from './aggregate.ts';
import { changesAfter, changesAfterInRecovery, changesOfResources } from './changes.ts';
import * as clusters from './clusters.ts';
import * as clusterObjects from './cluster-objects.ts';
import * as ownObjects from './own-objects.ts';
import type { OwnObjectRef, OwnObjectResult, OwnObjectState, OwnObjectWrite } from './own-objects.ts';
import type { ClusterObjectResult, ClusterObjectState, ClusterObjectWrite, ClusterObjectWriteRequest, ClusterRegistration } from './cluster-objects.ts';
import { compact } from './compact.ts';
import { repairCounts, type CountRepair } from './counts.ts';
import { list } from './list.ts';
import { memberRvAt } from './object-versions.ts';
import { installationId, readMeta, type Meta } from './meta.ts';
import * as openapi from './openapi.ts';
import { objectColumns, rowsOf, toStored, type ObjectRow } from './rows.ts';
import { migrate } from './schema.ts';
import { GrowthAnalyzer } from './statistics.ts';
import { applyBatchesCommitted, type BatchPart, type WriteOptions } from './write.ts';
import * as leases from './leases.ts';
import { fenceOf } from './fenced.ts';
import { clusterLease, importerLease, type Fence, type Lease } from './leases.ts';
import { logger } from '../lib/log.ts';
import { traceMark, tracing, wallNow } from '../lib/trace.ts';
import * as synchroMembers from './members.ts';
import type { HeartbeatResult, Member, MemberRecord } from './members.ts';
import type {
  BatchResult,
  Change,
  ClusterRecord,
  CompactResult,
  ListQuery,
  ListResult,
  ObjectKey,
  RetentionPolicy,
  StoredKey,
  StoredObject,
  UpstreamEvent,
} from './types.ts';

const log = logger('storage');

export type CommitListener = (watermark: number, changes: readonly Change[]) => void;

/** Trace mark of a group commit (lib/trace.ts; write.ts marks its rv lock). */
function traceCommit(results: BatchResult[]): void {
  const committed = wallNow();
  for (const { changes } of results) if (changes.length > 0) traceMark('committed', changes[0].rv, changes[changes.length - 1].rv, committed);
}

/** One cluster's share of a group commit, under the cluster's lease. */
export interface FencedBatchPart extends BatchPart {
  fence: Fence;
}

/**
 * The Store's writes a lease holder makes: each takes a Fence and writes nothing (FencedError)
 * unless the fence's holder still holds its lease at its epoch, unexpired, on the database's
 * clock. storage/fenced.test.ts drives each with every kind of stale fence, and fails when a
 * method that takes a Fence is missing here.
 */
export const fencedWrites = [
  'applyBatches',
  'writeClusterObject',
  'writeClusterObjects',
  'writeOwnObject',
  'writeOwnObjectUnder',
  'writeImportedClusterObject',
  'writeClusterSourceObject',
  'setClusterStatus',
  'setClusterStatuses',
  'upsertCluster',
  'deleteClusterRow',
  'replaceClusterOpenAPI',
  'deleteClusterOpenAPI',
  'compact',
  'repairCounts',
] as const satisfies ReadonlyArray<keyof Store>;
export type FencedWrite = (typeof fencedWrites)[number];

/** The Store's writes made without a lease: synchro calls none of them (storage/fenced.test.ts). */
export const unleasedWrites = ['applyBatch', 'writeClusterObjectWithoutLease', 'writeOwnObjectWithoutLease', 'enableParallelWrites'] as const satisfies ReadonlyArray<keyof Store>;

export class Store {
  readonly conn: Connection;
  private readonly listeners = new Set<CommitListener>();
  /** The Cluster objects as listClusterRegistrations last read them. */
  private readonly registrations = new clusterObjects.ClusterRegistrationReader();
  /** The planner's statistics refreshed as this Store's writes grow the tables (PostgreSQL). */
  private readonly growth?: GrowthAnalyzer;

  private constructor(conn: Connection) {
    this.conn = conn;
    if (conn.dialect.analyzeOnGrowth) this.growth = new GrowthAnalyzer(() => this.analyze());
  }

  /**
   * Connects to a database this process only reads (a PostgreSQL hot standby, which refuses
   * writes): no migration; the schema is the primary's, replayed. Nothing connects until the
   * first query, so a standby that is down does not stop a start (storage/read-pool.ts).
   */
  static openReader(url: string, opts: ConnectOptions = {}): Store {
    return new Store(connect(url, opts));
  }

  /**
   * A Store over a separate pool of `poolMax` connections to the same PostgreSQL database,
   * whose statements never wait for this Store's pool (the caller closes it); this Store itself
   * on SQLite. synchro's membership heartbeats and renews its leases through it: a member busy
   * writing hundreds of clusters must not miss its renewals waiting for a connection.
   */
  separatePool(poolMax: number): { store: Store; close: () => Promise<void> } {
    const conn = this.conn.separatePool?.(poolMax);
    if (!conn) return { store: this, close: async () => {} };
    const store = new Store(conn);
    return { store, close: () => store.close() };
  }

  /** Connects and applies pending migrations. */
  static async open(url: string, opts: ConnectOptions = {}): Promise<Store> {
    const store = new Store(connect(url, opts));
    try {
      await migrate(store.conn.knex, store.conn.dialect);
    } catch (err) {
      await store.close();
      throw err;
    }
    return store;
  }

  get dialect(): 'sqlite' | 'postgres' {
    return this.conn.dialect.name;
  }

  private installation?: Promise<string>;

  /**
   * The id of the installation this database is (storage/meta.ts): made once per database,
   * the same for every process that shares it. What Panoptes writes into member clusters
   * carries it (label panoptes.io/installation), so two installations never take each
   * other's objects for their own.
   */
  installationId(): Promise<string> {
    this.installation ??= installationId(this.conn.knex).catch((err: unknown) => {
      this.installation = undefined;
      throw err;
    });
    return this.installation;
  }

  /**
   * Writes one batch of a cluster's events in one transaction, without a lease (tests,
   * benchmarks); replays write nothing. synchro writes through applyBatches, fenced.
   */
  async applyBatch(cluster: string, events: UpstreamEvent[], opts?: WriteOptions): Promise<BatchResult> {
    const {
      results: [result],
      committed,
    } = await applyBatchesCommitted(this.conn.knex, this.conn.dialect, [{ cluster, events }], opts);
    this.growth?.wrote(result.changes.length);
    if (result.changes.length > 0) this.committed(result.watermark, committed);
    return result;
  }

  /**
   * Group commit: several clusters' batches in one transaction (one per cluster), each under
   * its cluster's lease. A fenced part (FencedError, naming its fence) writes nothing of any
   * part. `opts.beforeCommit` is a test hook.
   */
  async applyBatches(parts: FencedBatchPart[], opts?: WriteOptions): Promise<BatchResult[]> {
    const { results, committed } = await applyBatchesCommitted(this.conn.knex, this.conn.dialect, parts, opts);
    if (tracing) traceCommit(results);
    this.growth?.wrote(results.reduce((n, r) => n + r.changes.length, 0));
    if (committed.length > 0) this.committed(results[0].watermark, committed);
    return results;
  }

  /** Tells the listeners of a commit; one that throws is logged, never the write's failure (it committed). */
  private committed(watermark: number, changes: readonly Change[]): void {
    for (const l of this.listeners) {
      try {
        l(watermark, changes);
      } catch (err) {
        log.warn('a commit listener failed', { err: err as Error, watermark });
      }
    }
  }

  /**
   * Called after each commit of this process that wrote changes, with the watermark and the
   * changes committed, in rv order, as the change log holds them (synchro's batches; none for
   * the writes of Cluster and own objects): the in-process watch engine hands them on without
   * reading the log (apiserver/watch/hub.ts), as it does with what a PostgreSQL notification
   * carries.
   */
  onCommit(listener: CommitListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  changesAfter(rv: number, limit: number): Promise<Change[]> {
    return changesAfter(this.conn.knex, rv, limit);
  }

  /** changesAfter on a hot standby, with whether it was still in recovery when it read them (storage/changes.ts). */
  changesAfterInRecovery(rv: number, limit: number): Promise<{ changes: Change[]; recovery: boolean | undefined }> {
    return changesAfterInRecovery(this.conn.knex, this.conn.dialect.inRecovery, rv, limit);
  }

  /** The changes of a few resources with rv in (rv, upTo], oldest first (storage/changes.ts): a follower of those resources alone. */
  changesOfResources(rv: number, upTo: number, resources: ReadonlyArray<{ group: string; resource: string }>, limit: number): Promise<Change[]> {
    return changesOfResources(this.conn.knex, rv, upTo, resources, limit);
  }

  /** The newest rv; with `minRv`, RvTooLargeError below it (a standby behind: storage/read-pool.ts). */
  /**
   * The write protocol: serial (one lock taken first: SQLite, and a PostgreSQL database
   * created before parallel writes) or parallel (storage/ordered-commits.ts).
   */
  writeProtocol(): Promise<WriteProtocol> {
    return this.conn.dialect.name === 'postgres' ? writeProtocol(this.conn.knex) : Promise.resolve('serial');
  }

  /**
   * Switches a serial PostgreSQL database to parallel writes (`panoptes migrate
   * --parallel-writes`), once every process that writes to it runs a version that knows them.
   * Returns whether it switched (false: it was parallel already). SQLite has one writer: an error.
   */
  async enableParallelWrites(): Promise<boolean> {
    if (this.conn.dialect.name !== 'postgres') throw new Error('parallel writes are for PostgreSQL: SQLite has one writer');
    const switched = await enableParallelWrites(this.conn.knex);
    sawParallel(this.conn.knex);
    return switched;
  }

  async watermark(minRv?: number): Promise<number> {
    const { rv } = await readMeta(this.conn.knex);
    if (minRv !== undefined && rv < minRv) throw new RvTooLargeError(minRv, rv);
    return rv;
  }

  meta(): Promise<Meta> {
    return readMeta(this.conn.knex);
  }

  /** The rv this database has, and whether it is a standby still replaying a primary (storage/read-pool.ts). */
  async replicationStatus(): Promise<{ rv: number; recovery: boolean }> {
    const rows = rowsOf<{ rv: number | string | null; recovery: boolean | number }>(
      await this.conn.knex.raw(`SELECT (SELECT value FROM meta WHERE key = 'rv') AS rv, ${this.conn.dialect.inRecovery} AS recovery`),
    );
    return { rv: Number(rows[0]?.rv ?? 0), recovery: rows[0]?.recovery === true || rows[0]?.recovery === 1 };
  }

  /** One object; with `minRv`, read in a snapshot that has that rv (RvTooLargeError otherwise: a standby behind). */
  async get(key: ObjectKey, minRv?: number): Promise<StoredObject | undefined> {
    const one = (db: Knex | Knex.Transaction): Promise<ObjectRow | undefined> =>
      db('objects').where({ cluster: key.cluster, grp: key.group, resource: key.resource, namespace: key.namespace, name: key.name }).first(objectColumns);
    let row: ObjectRow | undefined;
    if (minRv === undefined) row = await one(this.conn.knex);
    else {
      const trx = await this.conn.dialect.snapshot(this.conn.knex);
      try {
        const meta = await readMeta(trx);
        if (meta.rv < minRv) throw new RvTooLargeError(minRv, meta.rv);
        row = await one(trx);
      } finally {
        await trx.commit();
      }
    }
    return row ? toStored(row) : undefined;
  }

  /** The member rv of the object's version at Panoptes rv `rv`, if that change is one of its versions (storage/object-versions.ts). */
  memberRvAt(key: ObjectKey, rv: number): Promise<string | undefined> {
    return memberRvAt(this.conn.knex, key, rv);
  }

  list(query: ListQuery): Promise<ListResult> {
    return list(this.conn.knex, this.conn.dialect, query);
  }

  /** count, sum, min, max or avg over the selected objects, from one snapshot (storage/aggregate.ts). */
  aggregate(query: AggregateQuery): Promise<AggregateResult> {
    return aggregate(this.conn.knex, this.conn.dialect, query);
  }

  /** Drops the changes outside the retention window (on the database's clock), under the compactor lease. */
  compact(policy: RetentionPolicy, fence: Fence): Promise<CompactResult> {
    return compact(this.conn.knex, this.conn.dialect, policy, fence);
  }

  /** Recounts object_counts from the objects, under the rv lock and the compactor lease (storage/counts.ts). */
  repairCounts(fence: Fence): Promise<CountRepair> {
    return repairCounts(this.conn.knex, this.conn.dialect, fence);
  }

  /** Registers a member cluster (its spec), under the cluster's lease. */
  upsertCluster(name: string, spec: Record<string, unknown>, fence: Fence): Promise<void> {
    return clusters.upsertCluster(this.conn.knex, this.conn.dialect, name, spec, fence);
  }

  /** Writes a cluster's status under its lease; returns whether the cluster is registered. */
  setClusterStatus(name: string, status: Record<string, unknown>, fence: Fence): Promise<boolean> {
    return clusters.setClusterStatus(this.conn.knex, this.conn.dialect, name, status, fence);
  }

  /** setClusterStatus for many clusters in one transaction (FencedError naming a fence that no longer holds: nothing written). */
  setClusterStatuses(writes: readonly clusters.ClusterStatusWrite[]): Promise<boolean[]> {
    return clusters.setClusterStatuses(this.conn.knex, this.conn.dialect, writes);
  }

  getCluster(name: string): Promise<ClusterRecord | undefined> {
    return clusters.getCluster(this.conn.knex, name);
  }

  listClusters(): Promise<ClusterRecord[]> {
    return clusters.listClusters(this.conn.knex);
  }

  /** The member cluster id each cluster's status records and when it was registered, by cluster name (those without an id are left out). */
  clusterIdentities(): Promise<Map<string, clusters.ClusterIdentityRecord>> {
    return clusters.clusterIdentities(this.conn.knex);
  }

  /** Removes a cluster's registration row (its objects are deleted first, as changes), under its lease. */
  deleteClusterRow(name: string, fence: Fence): Promise<void> {
    return clusters.deleteClusterRow(this.conn.knex, this.conn.dialect, name, fence);
  }

  // --- Cluster objects (storage/cluster-objects.ts)

  /**
   * Reads the Cluster `name` and writes what `decide` chooses, in one transaction under the rv
   * lock, while the writer holds the cluster's lease (synchro: status, file clusters' objects,
   * the end of a removal). Wakes this process's pollers after a commit that wrote a change.
   */
  writeClusterObject(name: string, decide: (current: ClusterObjectState | undefined) => ClusterObjectWrite, fence: Fence): Promise<ClusterObjectResult> {
    return this.clusterObjectWrite(name, decide, fence);
  }

  /**
   * writeClusterObject for many clusters in one transaction (one rv lock for all), each under
   * its cluster's lease: synchro's status writes, grouped per round (synchro/commit/cluster-object-committer.ts).
   * A stale fence throws FencedError naming it, and nothing is written.
   */
  async writeClusterObjects(writes: readonly ClusterObjectWriteRequest[]): Promise<ClusterObjectResult[]> {
    const results = await clusterObjects.writeClusterObjects(this.conn.knex, this.conn.dialect, writes);
    if (results.some((r) => r.change)) this.committed(results[0].watermark, []);
    return results;
  }

  /**
   * writeClusterObject without a lease: the apiserver's Cluster writes (create, update, patch,
   * delete), which optimistic concurrency on resourceVersion serializes under the rv lock.
   */
  writeClusterObjectWithoutLease(name: string, decide: (current: ClusterObjectState | undefined) => ClusterObjectWrite): Promise<ClusterObjectResult> {
    return this.clusterObjectWrite(name, decide, undefined);
  }

  /**
   * writeClusterObject as the holder of the importer's lease: synchro's importer creates,
   * changes and marks for deletion the Clusters a ClusterSource imports (synchro/import/).
   */
  writeImportedClusterObject(name: string, decide: (current: ClusterObjectState | undefined) => ClusterObjectWrite, fence: Fence): Promise<ClusterObjectResult> {
    return this.clusterObjectWrite(name, decide, fence, importerLease);
  }

  private async clusterObjectWrite(name: string, decide: (current: ClusterObjectState | undefined) => ClusterObjectWrite, fence: Fence | undefined, lease?: string): Promise<ClusterObjectResult> {
    const result = await clusterObjects.writeClusterObject(this.conn.knex, this.conn.dialect, name, decide, fence, lease);
    if (result.change) this.committed(result.watermark, []);
    return result;
  }

  /**
   * Reads own object `ref` (a MultiClusterService: storage/own-objects.ts) and writes what
   * `decide` chooses, in one transaction under the rv lock, as the holder of member cluster
   * `cluster`'s lease (`fence` must be of that lease, and still held): synchro writes the part
   * of a MultiClusterService's status that the cluster it holds guards.
   */
  async writeOwnObject(ref: OwnObjectRef, cluster: string, decide: (current: OwnObjectState | undefined) => OwnObjectWrite, fence: Fence): Promise<OwnObjectResult> {
    return this.ownObjectWrite(ref, decide, [fenceOf(fence, clusterLease(cluster))]);
  }

  /**
   * writeOwnObject under the leases of several member clusters at once (each with a fence of
   * its lease, every one still held, or nothing is written): synchro writes in one change the
   * parts of a MultiClusterService's status that the clusters it holds guard.
   */
  async writeOwnObjectUnder(ref: OwnObjectRef, under: ReadonlyArray<{ cluster: string; fence: Fence }>, decide: (current: OwnObjectState | undefined) => OwnObjectWrite): Promise<OwnObjectResult> {
    if (under.length === 0) throw new Error('writeOwnObjectUnder: a write under leases needs their fences');
    return this.ownObjectWrite(ref, decide, under.map((u) => fenceOf(u.fence, clusterLease(u.cluster))));
  }

  /** A ClusterSource (its status, its finalizer) written by the holder of the importer's lease. */
  async writeClusterSourceObject(name: string, decide: (current: OwnObjectState | undefined) => OwnObjectWrite, fence: Fence): Promise<OwnObjectResult> {
    return this.ownObjectWrite({ resource: 'clustersources', namespace: '', name }, decide, [fenceOf(fence, importerLease)]);
  }

  /** writeOwnObject without a lease: the apiserver's writes (create, update, patch, delete), serialized by the rv lock alone. */
  writeOwnObjectWithoutLease(ref: OwnObjectRef, decide: (current: OwnObjectState | undefined) => OwnObjectWrite): Promise<OwnObjectResult> {
    return this.ownObjectWrite(ref, decide, []);
  }

  private async ownObjectWrite(ref: OwnObjectRef, decide: (current: OwnObjectState | undefined) => OwnObjectWrite, fences: Fence[]): Promise<OwnObjectResult> {
    const result = await ownObjects.writeOwnObject(this.conn.knex, this.conn.dialect, ref, decide, fences);
    if (result.change) this.committed(result.watermark, []);
    return result;
  }

  getOwnObject(ref: OwnObjectRef): Promise<OwnObjectState | undefined> {
    return ownObjects.getOwnObject(this.conn.knex, ref);
  }

  /** Every object of an own resource (`multiclusterservices`), by namespace and name. */
  listOwnObjects(resource: string): Promise<OwnObjectState[]> {
    return ownObjects.listOwnObjects(this.conn.knex, resource);
  }

  getClusterObject(name: string): Promise<ClusterObjectState | undefined> {
    return clusterObjects.getClusterObject(this.conn.knex, name);
  }

  /**
   * Every Cluster object with its inline credentials: synchro's read, never served. Only the
   * objects that changed since this Store's last call are read again (ClusterRegistrationReader);
   * the objects are frozen, shared between calls.
   */
  listClusterRegistrations(): Promise<ClusterRegistration[]> {
    return this.registrations.read(this.conn.knex);
  }

  storedKeys(cluster: string, group: string, resource: string): Promise<StoredKey[]> {
    return clusters.storedKeys(this.conn.knex, cluster, group, resource);
  }

  /** Registered clusters and clusters that still hold objects. */
  knownClusterNames(): Promise<string[]> {
    return clusters.knownClusterNames(this.conn.knex);
  }

  storedResources(cluster?: string) {
    return clusters.storedResources(this.conn.knex, cluster);
  }

  // --- synchro members and leases (storage/leases.ts)

  /** This instance of a member is alive for ttlMs more, unless another live instance holds its identity (storage/members.ts). */
  heartbeat(member: MemberRecord, ttlMs: number, replacing?: string): Promise<HeartbeatResult> {
    return synchroMembers.heartbeat(this.conn.knex, this.conn.dialect, member, ttlMs, replacing);
  }

  /** Every member row, live or not; rows expired for more than `forgetAfterMs` (default an hour) are deleted. */
  members(forgetAfterMs?: number): Promise<{ now: number; members: Member[] }> {
    return synchroMembers.members(this.conn.knex, this.conn.dialect, forgetAfterMs);
  }

  /** Removes a member's row (with `instance`: only while that instance holds it). */
  removeMember(id: string, instance?: string): Promise<void> {
    return synchroMembers.removeMember(this.conn.knex, id, instance);
  }

  listLeases(): Promise<Lease[]> {
    return leases.listLeases(this.conn.knex);
  }

  listLeasesNamed(names: string[]): Promise<Lease[]> {
    return leases.listLeases(this.conn.knex, names);
  }

  acquireLease(name: string, holder: string, ttlMs: number, deadHolders?: string[]): Promise<number | undefined> {
    return leases.acquireLease(this.conn.knex, this.conn.dialect, name, holder, ttlMs, deadHolders);
  }

  renewLeases(holder: string, held: Array<{ name: string; epoch: number }>, ttlMs: number): Promise<Set<string>> {
    return leases.renewLeases(this.conn.knex, this.conn.dialect, holder, held, ttlMs);
  }

  releaseLease(name: string, holder: string, epoch: number): Promise<boolean> {
    return leases.releaseLease(this.conn.knex, name, holder, epoch);
  }

  deleteLease(name: string, holder: string, epoch: number): Promise<void> {
    return leases.deleteLease(this.conn.knex, name, holder, epoch);
  }

  // --- member OpenAPI documents (storage/openapi.ts)

  /** OpenAPI references of one cluster or of all (storage/openapi.ts). */
  clusterOpenAPI(cluster?: string): Promise<openapi.ClusterOpenAPIRow[]> {
    return openapi.clusterOpenAPI(this.conn.knex, cluster);
  }

  /** A stored OpenAPI document another cluster got under this upstream hash. */
  openAPIDocumentByUpstream(format: openapi.OpenAPIFormat, upstreamHash: string): Promise<string | undefined> {
    return openapi.documentByUpstream(this.conn.knex, format, upstreamHash);
  }

  /** Makes `entries` the cluster's complete set of OpenAPI references (storing new documents, dropping unused ones), under its lease. */
  replaceClusterOpenAPI(cluster: string, entries: openapi.OpenAPIEntry[], fence: Fence): Promise<void> {
    return openapi.replaceClusterOpenAPI(this.conn.knex, this.conn.dialect, cluster, entries, fence);
  }

  /** Drops a removed cluster's OpenAPI references, under its lease. */
  deleteClusterOpenAPI(cluster: string, fence: Fence): Promise<void> {
    return openapi.deleteClusterOpenAPI(this.conn.knex, this.conn.dialect, cluster, fence);
  }

  openAPIDocuments(hashes: string[]): Promise<Map<string, { format: openapi.OpenAPIFormat; body: string }>> {
    return openapi.openAPIDocuments(this.conn.knex, hashes);
  }

  /** Resolves when the database answers a trivial query (readiness). */
  async ping(): Promise<void> {
    await this.conn.knex.raw('select 1');
  }

  /** Refreshes the planner's statistics (after a large initial sync). */
  async analyze(): Promise<void> {
    await this.conn.dialect.analyze(this.conn.knex);
  }

  async close(): Promise<void> {
    this.listeners.clear();
    await this.growth?.idle();
    await this.conn.close();
  }
}
