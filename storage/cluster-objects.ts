// The `Cluster` objects (clusters.panoptes.io): own objects (storage/own-objects.ts: stored in
// `objects` under a reserved cluster name, every change in the change log), with their inline
// credentials beside them. The apiserver writes spec and
// metadata (create, update, patch, delete), synchro writes status and the objects of
// clusters.yaml; both through writeClusterObject, a read-decide-write under the rv lock, so
// each decision sees the latest committed object (optimistic concurrency holds across
// apiserver replicas). Inline credentials go to `cluster_credentials`, which synchro alone
// reads; the apiserver sees only their digest.
import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import type { Dialect } from './dialect.ts';
import { fenceOf, writeTransaction } from './fenced.ts';
import { clusterLease, type Fence } from './leases.ts';
import { applyOwnWrite, ownGroup, ownObjectsCluster, ownVersion, readOwnRow, type OwnObjectRef, type OwnRow } from './own-objects.ts';
import type { EventType, KubeObject } from './types.ts';

/** The `cluster` column of Cluster objects (and every own kind's): not a DNS label, so never a member cluster's name. */
export const clusterObjectsCluster = ownObjectsCluster;
export const clusterGroup = ownGroup;
export const clusterVersion = ownVersion;
export const clusterResource = 'clusters';

const clusterRef = (name: string): OwnObjectRef => ({ resource: clusterResource, namespace: '', name });

/** Inline credentials of an API-registered cluster: write-only, read by synchro alone. */
export interface ClusterCredentials {
  token?: string;
  /** Base64 PEM, as kubeconfig's client-certificate-data. */
  clientCertData?: string;
  clientKeyData?: string;
  /**
   * The endpoint they were given for (the spec's server, caData, insecureSkipTLSVerify and
   * tlsServerName when they were written): synchro uses them there only. Absent on
   * credentials stored before endpoints were recorded.
   */
  endpoint?: { server: string; caData?: string; insecureSkipTLSVerify?: boolean; tlsServerName?: string };
}

/** A stored Cluster object as a writer sees it. */
export interface ClusterObjectState {
  name: string;
  uid: string;
  /** The rv of its last change (= metadata.resourceVersion). */
  rv: number;
  /** The object as served (metadata.resourceVersion set). */
  object: KubeObject;
  /** sha256 of the stored inline credentials, when there are some. */
  credentialsDigest?: string;
}

/** What a writer decides, given the current state (undefined: no object of that name). */
export type ClusterObjectWrite =
  | { action: 'none' }
  | {
      action: 'put';
      /** The whole object to store (its metadata.resourceVersion is set by storage). */
      object: KubeObject;
      /** New inline credentials; `null` removes them; undefined keeps what is stored. */
      credentials?: ClusterCredentials | null;
    }
  | { action: 'delete' };

export interface ClusterObjectResult {
  /** The change written, if any. */
  change?: { rv: number; type: EventType };
  /** The object after the write (as served), or before it for a delete or 'none'. */
  object?: string;
  watermark: number;
}

/** An API-registered or file cluster's object with its inline credentials: what synchro reads each pass. */
export interface ClusterRegistration extends ClusterObjectState {
  credentials?: ClusterCredentials;
}


/** sha256 of credentials in a canonical form (the apiserver compares digests, never values). */
export function credentialsDigest(c: ClusterCredentials): string {
  const e = c.endpoint;
  const endpoint = e ? [[e.server, e.caData ?? null, e.insecureSkipTLSVerify === true, e.tlsServerName ?? null]] : [];
  const canonical = JSON.stringify([c.token ?? null, c.clientCertData ?? null, c.clientKeyData ?? null, ...endpoint]);
  return createHash('sha256').update(canonical).digest('hex');
}

const hasCredentials = (c: ClusterCredentials): boolean => Boolean(c.token || c.clientCertData || c.clientKeyData);

const objectsOf = (db: Knex | Knex.Transaction) => db('objects').where({ cluster: clusterObjectsCluster, grp: clusterGroup, resource: clusterResource, namespace: '' });

/**
 * Reads the Cluster `name` and lets `decide` choose what to write, all in one transaction
 * holding the rv lock (and, with a fence — synchro's writes, under the cluster's lease — only
 * while the writer holds its lease: FencedError otherwise; without one, the apiserver's).
 * A change gets the next rv and goes to `changes` as ADDED, MODIFIED or DELETED
 * (storage/own-objects.ts); the inline credentials change with it. `decide` may throw (a
 * Status error) to write nothing.
 */
export async function writeClusterObject(
  knex: Knex,
  dialect: Dialect,
  name: string,
  decide: (current: ClusterObjectState | undefined) => ClusterObjectWrite,
  fence: Fence | undefined,
  /** The lease the fence must be of: the cluster's, or the importer's (imported Clusters' specs). */
  lease = clusterLease(name),
): Promise<ClusterObjectResult> {
  const fences = fence ? [fenceOf(fence, lease)] : [];
  const ref = clusterRef(name);
  return writeTransaction(knex, dialect, fences, 'rv', async (trx, locked) => {
    const row = await readOwnRow(trx, ref);
    const cred: { digest: string } | undefined = row ? await trx('cluster_credentials').where({ name, uid: row.uid }).first('digest') : undefined;
    const current: ClusterObjectState | undefined = row
      ? { name, uid: row.uid, rv: Number(row.rv), object: JSON.parse(row.object) as KubeObject, ...(cred ? { credentialsDigest: cred.digest } : {}) }
      : undefined;
    const decision = decide(current);
    if (decision.action === 'none' || (decision.action === 'delete' && !row)) return { watermark: locked.rv, object: row?.object };

    const changeRv = locked.rv + 1;
    const { type, json, uid } = await applyOwnWrite(trx, dialect, ref, row, decision.action === 'delete' ? decision : { action: 'put', object: decision.object }, changeRv, locked.now, fence);
    if (decision.action === 'delete') await trx('cluster_credentials').where({ name }).delete();
    else {
      // Credentials belong to one object (uid): a new object never inherits its predecessor's.
      const replace = decision.credentials !== undefined || (row !== undefined && row.uid !== uid);
      if (replace) await trx('cluster_credentials').where({ name }).delete();
      if (decision.credentials && hasCredentials(decision.credentials)) {
        const c = decision.credentials;
        await trx('cluster_credentials').insert({ name, uid, data: JSON.stringify(c), digest: credentialsDigest(c), updated_at: new Date(locked.now).toISOString() });
      }
    }
    return { change: { rv: changeRv, type }, object: json, watermark: changeRv };
  });
}

/** One Cluster object as served, or undefined. */
export async function getClusterObject(knex: Knex, name: string): Promise<ClusterObjectState | undefined> {
  const row: OwnRow | undefined = await objectsOf(knex).where({ name }).first('id', 'uid', 'rv', 'object');
  return row ? { name, uid: row.uid, rv: Number(row.rv), object: JSON.parse(row.object) as KubeObject } : undefined;
}

/** Every Cluster object with its inline credentials (synchro's read, each reconcile pass). */
export async function listClusterRegistrations(knex: Knex): Promise<ClusterRegistration[]> {
  const rows: Array<OwnRow & { name: string }> = await objectsOf(knex).orderBy('name').select('name', 'uid', 'rv', 'object');
  const creds: Array<{ name: string; uid: string; data: string; digest: string }> = await knex('cluster_credentials').select('name', 'uid', 'data', 'digest');
  const byName = new Map(creds.map((c) => [c.name, c]));
  return rows.map((r) => {
    const c = byName.get(r.name);
    const reg: ClusterRegistration = { name: r.name, uid: r.uid, rv: Number(r.rv), object: JSON.parse(r.object) as KubeObject };
    if (c && c.uid === r.uid) {
      reg.credentials = JSON.parse(c.data) as ClusterCredentials;
      reg.credentialsDigest = c.digest;
    }
    return reg;
  });
}
