// The storage contract: what synchro writes and what the apiserver reads.
import type { LabelSelector } from '../kube/labels.ts';
import type { FieldSelector } from '../kube/fields.ts';
import type { JsonFieldRequirement, QueryBudget } from './json-fields.ts';

/** A Kubernetes object as JSON. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    creationTimestamp?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: Array<{ uid?: string; controller?: boolean; [k: string]: unknown }>;
    [k: string]: unknown;
  };
  [k: string]: unknown;
}

/** Which resource an event or query is about. `group` is '' for the core group. */
export interface ResourceRef {
  group: string;
  version: string;
  resource: string;
}

export type EventType = 'ADDED' | 'MODIFIED' | 'DELETED';

/** One event seen in a member cluster, as synchro hands it to storage. */
export interface UpstreamEvent extends ResourceRef {
  type: EventType;
  /**
   * The object as the member cluster served it; its metadata.resourceVersion is the
   * upstream one. For DELETED it may carry only metadata (namespace, name); storage then
   * serves the last stored state.
   */
  object: KubeObject;
}

/** The identity of one stored object. namespace is '' for cluster-scoped objects. */
export interface ObjectKey {
  cluster: string;
  group: string;
  resource: string;
  namespace: string;
  name: string;
}

/** One row of `objects`: the current state of an object. */
export interface StoredObject extends ObjectKey {
  version: string;
  uid: string;
  /** Panoptes resourceVersion: the rv of the object's last change. */
  rv: number;
  upstreamRv: string;
  /** The object as served (JSON text), metadata.resourceVersion = rv. */
  object: string;
}

/** One row of the change log. */
export interface Change extends ObjectKey {
  rv: number;
  type: EventType;
  version: string;
  uid: string;
  /** The object as served after the change (for DELETED: its last state, at this rv). */
  object: string;
  /** The object as served before the change; null for ADDED. */
  prevObject: string | null;
  /** When the change was committed, ms since the epoch. */
  ts: number;
  /** The lease epoch its writer held (null: written without a lease). */
  epoch: number | null;
}

/** One kind of a collection (storage/collection.ts). */
export interface CollectionKind {
  group: string;
  resource: string;
  /** Only its objects without an owner (no metadata.ownerReferences). */
  bare?: boolean;
}

export interface ListQuery {
  group: string;
  resource: string;
  /** A collection: the objects of these kinds, instead of group and resource, in one list. */
  kinds?: CollectionKind[];
  /** Only objects without an owner (no metadata.ownerReferences). */
  withoutOwner?: boolean;
  /** Only these clusters (search.panoptes.io/clusters, or the one-cluster view). */
  clusters?: string[];
  namespaces?: string[];
  names?: string[];
  ownerUIDs?: string[];
  /** Dependents of owners named by name and group-resource or uid, at some level of their chain (storage/owners.ts). */
  owners?: OwnerQuery;
  labelSelector?: LabelSelector;
  /** metadata.name, metadata.namespace and the kind's selectable fields (checked by the caller). */
  fieldSelector?: FieldSelector;
  /** Substrings every name holds, ASCII case-insensitively (storage/name-contains.ts). */
  nameContains?: string[];
  /** creationTimestamp at or after / before this, as kube writes it (storage/created-range.ts). */
  createdSince?: string;
  createdBefore?: string;
  /** Sort keys (storage/order-by.ts); unset: list order (namespace, name, cluster). */
  orderBy?: OrderKey[];
  /** Which way each term is read: set by storage (storage/term-plan.ts) unless given. Unset: through its index. */
  termPlan?: { names?: 'index' | 'scan'; created?: 'index' | 'scan' };
  /** Terms on any JSON path of the object (storage/json-fields.ts). */
  jsonFields?: JsonFieldRequirement[];
  /** What unindexed JSON terms may cost (default storage/json-fields.ts defaultQueryBudget). */
  budget?: QueryBudget;
  /** Page size; unset or 0 means everything. */
  limit?: number;
  /** Opaque token from a previous page; pins that page's snapshot rv. */
  continue?: string;
  /** Read the snapshot exactly at this rv (resourceVersionMatch=Exact). Default: the latest. */
  exactRv?: number;
  /**
   * The snapshot must have this rv already (RvTooLargeError otherwise): a standby that has not
   * replayed it yet is checked in the same snapshot that is read (storage/read-pool.ts).
   */
  minRv?: number;
}

/** One sort key: a column, or the scalar at a JSON path of the object (text, '' when absent). */
export interface OrderKey {
  key: 'name' | 'namespace' | 'cluster' | 'creationTimestamp' | 'path';
  /** For `path`: the keys from the object's root. */
  path?: string[];
  desc: boolean;
}

/** Owners named by `names` (with their group and resource) or `uids`, and how far down their chain the listed objects are. */
export interface OwnerQuery {
  names?: string[];
  uids?: string[];
  group?: string;
  resource?: string;
  /** 0: the owners' own dependents; n: n levels further down; 'any': any level (storage/owners.ts maxOwnerDepth). */
  seniority: number | 'any';
}

export interface ListResult {
  /** The watermark the snapshot was read at, the same on every page. */
  resourceVersion: number;
  items: StoredObject[];
  continue?: string;
  remainingItemCount?: number;
}

export interface BatchResult {
  /** The changes written, in rv order (empty when every event was a replay). */
  changes: Array<Pick<Change, 'rv' | 'type' | 'cluster' | 'group' | 'resource' | 'namespace' | 'name'>>;
  /** The watermark after the batch. */
  watermark: number;
  /** How long the batch waited for the rv counter's lock (other writers' batches ahead of it). */
  lockWaitMs: number;
  /**
   * How long its transaction held that lock, from taking it to the end of its commit: the
   * serialized section of the write path, which no other writer overlaps (the same for every
   * part of a group commit).
   */
  heldMs: number;
}

export interface ClusterRecord {
  name: string;
  /** Registration as configured (no secrets). */
  spec: Record<string, unknown>;
  /** Health and per-resource sync state, written by synchro. */
  status: Record<string, unknown>;
  createdAt: string;
  updatedAt: string;
}

export interface RetentionPolicy {
  /** Keep every change younger than this. */
  minAgeMs: number;
  /** Keep at least this many of the newest changes. */
  minCount: number;
}

export interface CompactResult {
  compactedRv: number;
  deleted: number;
}

/** What reconcile needs about each stored object of one cluster and resource. */
export interface StoredKey {
  namespace: string;
  name: string;
  uid: string;
  upstreamRv: string;
  /** The API version it is stored at. */
  version: string;
}
