// The `Cluster` objects (clusters.panoptes.io): stored in `objects` under a reserved cluster
// name that no member cluster can have, and every change appended to `changes` under the rv
// lock, so lists, gets and watches of Clusters are those of any served resource and their
// `metadata.resourceVersion` is an rv of the one change log. The apiserver writes spec and
// metadata (create, update, patch, delete), synchro writes status and the objects of
// clusters.yaml; both through writeClusterObject, a read-decide-write under the rv lock, so
// each decision sees the latest committed object (optimistic concurrency holds across
// apiserver replicas). Inline credentials go to `cluster_credentials`, which synchro alone
// reads; the apiserver sees only their digest.
import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import type { Dialect } from './dialect.ts';
import { insertRows } from './insert.ts';
import { labelNumber } from './label-number.ts';
import { fenceOf, writeTransaction } from './fenced.ts';
import { clusterLease, type Fence } from './leases.ts';
import { addCounts } from './write.ts';
import type { EventType, KubeObject } from './types.ts';

/** The `cluster` column of Cluster objects: not a DNS label, so never a member cluster's name. */
export const clusterObjectsCluster = 'panoptes.io';
export const clusterGroup = 'panoptes.io';
export const clusterVersion = 'v1alpha1';
export const clusterResource = 'clusters';

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

interface Row {
  id: number | string;
  uid: string;
  rv: number | string;
  object: string;
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

function stamp(obj: KubeObject, rv: number): KubeObject {
  return { ...obj, metadata: { ...obj.metadata, resourceVersion: String(rv) } };
}

/**
 * Reads the Cluster `name` and lets `decide` choose what to write, all in one transaction
 * holding the rv lock (and, with a fence — synchro's writes, under the cluster's lease — only
 * while the writer holds its lease: FencedError otherwise; without one, the apiserver's).
 * A change gets the next rv and goes to `changes` as ADDED, MODIFIED or DELETED; `decide` may
 * throw (a Status error) to write nothing.
 */
export async function writeClusterObject(
  knex: Knex,
  dialect: Dialect,
  name: string,
  decide: (current: ClusterObjectState | undefined) => ClusterObjectWrite,
  fence: Fence | undefined,
): Promise<ClusterObjectResult> {
  const fences = fence ? [fenceOf(fence, clusterLease(name))] : [];
  return writeTransaction(knex, dialect, fences, 'rv', async (trx, locked) => {
    let rv = locked.rv;
    const row: Row | undefined = await objectsOf(trx).where({ name }).first('id', 'uid', 'rv', 'object');
    const cred: { digest: string } | undefined = row ? await trx('cluster_credentials').where({ name, uid: row.uid }).first('digest') : undefined;
    const current: ClusterObjectState | undefined = row
      ? { name, uid: row.uid, rv: Number(row.rv), object: JSON.parse(row.object) as KubeObject, ...(cred ? { credentialsDigest: cred.digest } : {}) }
      : undefined;
    const decision = decide(current);
    if (decision.action === 'none' || (decision.action === 'delete' && !row)) return { watermark: rv, object: row?.object };

    const changeRv = ++rv;
    const ts = locked.now;
    let type: EventType;
    let json: string;
    if (decision.action === 'delete') {
      type = 'DELETED';
      json = JSON.stringify(stamp(current!.object, changeRv));
      await trx('object_labels').where({ obj_id: Number(row!.id) }).delete();
      await trx('objects').where({ id: Number(row!.id) }).delete();
      await trx('cluster_credentials').where({ name }).delete();
      await addCounts(trx, dialect, [{ cluster: clusterObjectsCluster, grp: clusterGroup, resource: clusterResource, namespace: '', n: -1 }]);
    } else {
      const obj = stamp(decision.object, changeRv);
      const md = obj.metadata ?? {};
      if (md.name !== name) throw new Error(`writeClusterObject: the object is named ${JSON.stringify(md.name)}, not ${JSON.stringify(name)}`);
      const uid = md.uid ?? '';
      json = JSON.stringify(obj);
      type = row ? 'MODIFIED' : 'ADDED';
      const values = { version: clusterVersion, uid, rv: changeRv, upstream_rv: '', created_at: md.creationTimestamp ?? '', owner_uid: null, fields: null, object: json };
      let id: number;
      if (row) {
        id = Number(row.id);
        await trx('objects').where({ id }).update(values);
        await trx('object_labels').where({ obj_id: id }).delete();
      } else {
        const [inserted] = await insertRows<Record<string, unknown>, { id: number | string }>(
          trx,
          dialect,
          'objects',
          [{ cluster: clusterObjectsCluster, grp: clusterGroup, resource: clusterResource, namespace: '', name, ...values }],
          { returning: ['id'] },
        );
        id = Number(inserted.id);
        await addCounts(trx, dialect, [{ cluster: clusterObjectsCluster, grp: clusterGroup, resource: clusterResource, namespace: '', n: 1 }]);
      }
      const labels = Object.entries(md.labels ?? {}).map(([key, value]) => ({ obj_id: id, key, value: String(value), num: labelNumber(String(value)) }));
      await insertRows(trx, dialect, 'object_labels', labels);
      // Credentials belong to one object (uid): a new object never inherits its predecessor's.
      const replace = decision.credentials !== undefined || (row !== undefined && row.uid !== uid);
      if (replace) await trx('cluster_credentials').where({ name }).delete();
      if (decision.credentials && hasCredentials(decision.credentials)) {
        const c = decision.credentials;
        await trx('cluster_credentials').insert({ name, uid, data: JSON.stringify(c), digest: credentialsDigest(c), updated_at: new Date(ts).toISOString() });
      }
    }
    const change = {
      rv: changeRv,
      type,
      cluster: clusterObjectsCluster,
      grp: clusterGroup,
      version: clusterVersion,
      resource: clusterResource,
      namespace: '',
      name,
      uid: decision.action === 'delete' ? current!.uid : (decision.object.metadata?.uid ?? ''),
      object: json,
      prev_object: row?.object ?? null,
      ts,
      epoch: fence?.epoch ?? null,
    };
    await dialect.publishChanges(trx, [change], rv);
    return { change: { rv: changeRv, type }, object: json, watermark: rv };
  });
}

/** One Cluster object as served, or undefined. */
export async function getClusterObject(knex: Knex, name: string): Promise<ClusterObjectState | undefined> {
  const row: Row | undefined = await objectsOf(knex).where({ name }).first('id', 'uid', 'rv', 'object');
  return row ? { name, uid: row.uid, rv: Number(row.rv), object: JSON.parse(row.object) as KubeObject } : undefined;
}

/** Every Cluster object with its inline credentials (synchro's read, each reconcile pass). */
export async function listClusterRegistrations(knex: Knex): Promise<ClusterRegistration[]> {
  const rows: Array<Row & { name: string }> = await objectsOf(knex).orderBy('name').select('name', 'uid', 'rv', 'object');
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
