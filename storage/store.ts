// Storage: the one interface the rest of Panoptes uses, over SQLite or PostgreSQL.
import { connect, type Connection, type ConnectOptions } from './connect.ts';
import { aggregate, type AggregateQuery, type AggregateResult } from './aggregate.ts';
import { changesAfter } from './changes.ts';
import * as clusters from './clusters.ts';
import { compact } from './compact.ts';
import { list } from './list.ts';
import { readMeta, type Meta } from './meta.ts';
import { objectColumns, toStored, type ObjectRow } from './rows.ts';
import { migrate } from './schema.ts';
import { applyBatch, type WriteHooks } from './write.ts';
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

export type CommitListener = (watermark: number) => void;

export class Store {
  readonly conn: Connection;
  private readonly listeners = new Set<CommitListener>();

  private constructor(conn: Connection) {
    this.conn = conn;
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

  /** Writes one batch of a cluster's events in one transaction; replays write nothing. */
  async applyBatch(cluster: string, events: UpstreamEvent[], hooks?: WriteHooks): Promise<BatchResult> {
    const result = await applyBatch(this.conn.knex, this.conn.dialect, cluster, events, hooks);
    if (result.changes.length > 0) for (const l of this.listeners) l(result.watermark);
    return result;
  }

  /** Called after each commit of this process that wrote changes (wakes the in-process poller). */
  onCommit(listener: CommitListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  changesAfter(rv: number, limit: number): Promise<Change[]> {
    return changesAfter(this.conn.knex, rv, limit);
  }

  async watermark(): Promise<number> {
    return (await readMeta(this.conn.knex)).rv;
  }

  meta(): Promise<Meta> {
    return readMeta(this.conn.knex);
  }

  async get(key: ObjectKey): Promise<StoredObject | undefined> {
    const row: ObjectRow | undefined = await this.conn
      .knex('objects')
      .where({ cluster: key.cluster, grp: key.group, resource: key.resource, namespace: key.namespace, name: key.name })
      .first(objectColumns);
    return row ? toStored(row) : undefined;
  }

  list(query: ListQuery): Promise<ListResult> {
    return list(this.conn.knex, this.conn.dialect, query);
  }

  /** count, sum, min, max or avg over the selected objects, from one snapshot (storage/aggregate.ts). */
  aggregate(query: AggregateQuery): Promise<AggregateResult> {
    return aggregate(this.conn.knex, this.conn.dialect, query);
  }

  compact(policy: RetentionPolicy, now?: number): Promise<CompactResult> {
    return compact(this.conn.knex, policy, now);
  }

  upsertCluster(name: string, spec: Record<string, unknown>): Promise<void> {
    return clusters.upsertCluster(this.conn.knex, name, spec);
  }

  setClusterStatus(name: string, status: Record<string, unknown>): Promise<void> {
    return clusters.setClusterStatus(this.conn.knex, name, status);
  }

  getCluster(name: string): Promise<ClusterRecord | undefined> {
    return clusters.getCluster(this.conn.knex, name);
  }

  listClusters(): Promise<ClusterRecord[]> {
    return clusters.listClusters(this.conn.knex);
  }

  deleteClusterRow(name: string): Promise<void> {
    return clusters.deleteClusterRow(this.conn.knex, name);
  }

  storedKeys(cluster: string, group: string, resource: string): Promise<StoredKey[]> {
    return clusters.storedKeys(this.conn.knex, cluster, group, resource);
  }

  storedResources(cluster?: string) {
    return clusters.storedResources(this.conn.knex, cluster);
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
    await this.conn.knex.destroy();
  }
}
