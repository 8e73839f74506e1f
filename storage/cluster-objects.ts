// The `Cluster` objects (clusters.panoptes.io): own objects (storage/own-objects.ts: stored in
// `objects` under a reserved cluster name, every change in the change log), with their inline
// credentials beside them. The apiserver writes spec and
// metadata (create, update, patch, delete), synchro writes status and the objects of
// clusters.yaml; both through writeClusterObject, a read-decide-write under the rv lock, so
// each decision sees the latest committed object (optimistic concurrency holds across
// apiserver replicas). Inline credentials go to `cluster_credentials`, which synchro alone
// reads; the apiserver sees only their digest.
import { readMeta } from './meta.ts';
import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import type { Dialect, ObjectRowUpdate } from './dialect.ts';
import { fenceOf, writeTransaction } from './fenced.ts';
import { clusterLease, type Fence } from './leases.ts';
import { applyOwnWrite, ownGroup, planOwnUpdate, ownObjectsCluster, ownVersion, type OwnObjectRef, type OwnRow } from './own-objects.ts';
import type { ChangeRowValues } from './rows.ts';
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
  return writeTransaction(knex, dialect, fences, 'rv', async (trx, locked) => {
    const r = await writeInTransaction(trx, dialect, name, decide, fence, locked.rv, locked.now);
    return { ...r, watermark: r.change?.rv ?? locked.rv };
  });
}

/** One Cluster object write of a group (writeClusterObjects), under the cluster's lease. */
export interface ClusterObjectWriteRequest {
  name: string;
  decide: (current: ClusterObjectState | undefined) => ClusterObjectWrite;
  fence: Fence;
}

/**
 * writeClusterObject for many clusters in one transaction, under each one's lease: the rv lock
 * is taken once for all of them (synchro's status writes of every cluster it holds: one lock
 * per round instead of one per cluster). Each write is decided against its own object and gets
 * the next rv in the order given; one write per cluster. A fence that no longer holds throws
 * FencedError (naming it) and nothing is written: the caller drops that write and retries the
 * rest. Every result's watermark is the transaction's last rv.
 */
export async function writeClusterObjects(knex: Knex, dialect: Dialect, writes: readonly ClusterObjectWriteRequest[]): Promise<ClusterObjectResult[]> {
  if (new Set(writes.map((w) => w.name)).size !== writes.length) throw new Error('writeClusterObjects: one write per cluster');
  if (writes.length === 0) return [];
  const fences = writes.map((w) => fenceOf(w.fence, clusterLease(w.name)));
  const names = writes.map((w) => w.name);
  // PostgreSQL: the rows are read before the rv lock, and under it only their rvs are checked
  // (a row the apiserver changed meanwhile is read again): the serialized section is one
  // statement per changed object and one for the change log, whatever the round's size. On a
  // parallel database a round of status writes runs beside other writers (ordered-commits.ts):
  // each Cluster object is its cluster's lease holder's, and the apiserver's writes run alone.
  // A round that creates or deletes an object runs alone too: the object count it changes is
  // one row that every such round shares.
  let preread: Map<string, Loaded> | undefined;
  const prelude = dialect.name === 'postgres' ? async (trx: Knex.Transaction) => void (preread = await loadRows(trx, names)) : undefined;
  const round = (lock: 'ordered-locked' | 'rv') =>
    writeTransaction(
      knex,
      dialect,
      fences,
      lock,
      async (trx, locked) => {
        const loaded = preread ? await recheck(trx, preread, names) : await loadRows(trx, names);
        const decided = writes.map((w) => decideOn(w.name, loaded.get(w.name) ?? {}, w.decide));
        const writing = decided.filter((d) => d.write !== undefined);
        if (!locked.movesWatermark && writing.some((d) => d.write!.action === 'delete' || !d.loaded.row)) throw new RunAlone();
        const first = writing.length > 0 ? await locked.allocate(writing.length) : Number.NaN;
        const results: Array<Omit<ClusterObjectResult, 'watermark'>> = [];
        const changes: ChangeRowValues[] = [];
        // Status writes (the object stored, its labels and credentials unchanged) go out in one
        // statement after the loop: a round holds its rvs, which writers after it wait for to
        // publish, for a round trip rather than one per Cluster.
        const updates: ObjectRowUpdate[] = [];
        for (const [i, d] of decided.entries()) {
          if (!d.write) {
            results.push({ object: d.loaded.row?.object });
            continue;
          }
          const rv = first + changes.length;
          // The same object (its uid) with its credentials as they are: nothing but the row changes.
          const sameObject = d.write.action === 'put' && d.write.credentials === undefined && d.loaded.row !== undefined && (d.write.object.metadata?.uid ?? '') === d.loaded.row.uid;
          const planned = sameObject && d.write.action === 'put' ? planOwnUpdate(clusterRef(d.name), d.loaded.row, d.write.object, rv, locked.now, writes[i].fence) : undefined;
          if (planned) {
            updates.push(planned.update);
            changes.push(planned.change);
            results.push({ change: { rv, type: planned.type }, object: planned.json });
            continue;
          }
          const r = await applyDecided(trx, dialect, d, writes[i].fence, rv, locked.now, false);
          changes.push(r.row);
          results.push(r.result);
        }
        await dialect.updateObjectRows(trx, updates);
        const last = first + changes.length - 1;
        if (changes.length > 0) await dialect.publishChanges(trx, changes, locked.movesWatermark ? last : null);
        const watermark = changes.length > 0 ? last : locked.movesWatermark ? locked.rv : (await readMeta(trx)).rv;
        return results.map((r) => ({ ...r, watermark }));
      },
      prelude,
    );
  try {
    return await round('ordered-locked');
  } catch (err) {
    if (!(err instanceof RunAlone)) throw err;
    return round('rv');
  }
}

/** A parallel round found it creates or deletes an object: it starts again, alone. */
class RunAlone extends Error {}

/** A Cluster object's row and the digest of its inline credentials, as read. */
interface Loaded {
  row?: OwnRow;
  digest?: string;
}

/** The rows of Clusters `names` and their credentials' digests: two statements. */
async function loadRows(db: Knex | Knex.Transaction, names: string[]): Promise<Map<string, Loaded>> {
  const rows: Array<OwnRow & { name: string }> = await objectsOf(db).whereIn('name', names).select('name', 'id', 'uid', 'rv', 'object');
  const creds: Array<{ name: string; uid: string; digest: string }> = rows.length ? await db('cluster_credentials').whereIn('name', rows.map((r) => r.name)).select('name', 'uid', 'digest') : [];
  const out = new Map<string, Loaded>();
  for (const { name, ...row } of rows) {
    const digest = creds.find((c) => c.name === name && c.uid === row.uid)?.digest;
    out.set(name, digest ? { row, digest } : { row });
  }
  return out;
}

/** Under the rv lock: the rows read before it, with those whose rv (or existence) changed since read again. */
async function recheck(trx: Knex.Transaction, preread: Map<string, Loaded>, names: string[]): Promise<Map<string, Loaded>> {
  const now: Array<{ name: string; rv: number | string }> = await objectsOf(trx).whereIn('name', names).select('name', 'rv');
  const rvNow = new Map(now.map((r) => [r.name, Number(r.rv)]));
  const stale = names.filter((n) => rvNow.get(n) !== (preread.get(n)?.row ? Number(preread.get(n)!.row!.rv) : undefined));
  if (stale.length === 0) return preread;
  const again = await loadRows(trx, stale);
  const out = new Map(preread);
  for (const n of stale) {
    const l = again.get(n);
    if (l) out.set(n, l);
    else out.delete(n);
  }
  return out;
}

/** Reads, decides and writes Cluster `name` in a transaction holding the rv lock, whose last allocated rv is `rv`. */
async function writeInTransaction(
  trx: Knex.Transaction,
  dialect: Dialect,
  name: string,
  decide: (current: ClusterObjectState | undefined) => ClusterObjectWrite,
  fence: Fence | undefined,
  rv: number,
  now: number,
): Promise<Omit<ClusterObjectResult, 'watermark'>> {
  return (await applyDecision(trx, dialect, name, (await loadRows(trx, [name])).get(name) ?? {}, decide, fence, rv, now, true)).result;
}

/** What a write decided on Cluster `name`, as `loaded` holds it: nothing to write (`write` undefined), a put or a delete. */
interface Decided {
  name: string;
  loaded: Loaded;
  write?: Exclude<ClusterObjectWrite, { action: 'none' }>;
}

function decideOn(name: string, loaded: Loaded, decide: (current: ClusterObjectState | undefined) => ClusterObjectWrite): Decided {
  const { row, digest } = loaded;
  const current: ClusterObjectState | undefined = row
    ? { name, uid: row.uid, rv: Number(row.rv), object: JSON.parse(row.object) as KubeObject, ...(digest ? { credentialsDigest: digest } : {}) }
    : undefined;
  const decision = decide(current);
  if (decision.action === 'none' || (decision.action === 'delete' && !row)) return { name, loaded };
  return { name, loaded, write: decision };
}

/**
 * Decides on Cluster `name` as `loaded` holds it and writes the decision (the caller holds the
 * rv lock; `rv` is the last allocated). `publish`: the change row goes to the log here;
 * otherwise it is returned, for the caller to publish with others.
 */
async function applyDecision(
  trx: Knex.Transaction,
  dialect: Dialect,
  name: string,
  loaded: Loaded,
  decide: (current: ClusterObjectState | undefined) => ClusterObjectWrite,
  fence: Fence | undefined,
  rv: number,
  now: number,
  publish: boolean,
): Promise<{ result: Omit<ClusterObjectResult, 'watermark'>; row?: ChangeRowValues }> {
  const decided = decideOn(name, loaded, decide);
  if (!decided.write) return { result: { object: loaded.row?.object } };
  return applyDecided(trx, dialect, decided, fence, rv + 1, now, publish);
}

/** Writes a decision at rv `changeRv`: the object, its credentials, its change (published here, or returned for the caller to publish with others). */
async function applyDecided(
  trx: Knex.Transaction,
  dialect: Dialect,
  decided: Decided,
  fence: Fence | undefined,
  changeRv: number,
  now: number,
  publish: boolean,
): Promise<{ result: Omit<ClusterObjectResult, 'watermark'>; row: ChangeRowValues }> {
  const { name, loaded } = decided;
  const decision = decided.write!;
  const ref = clusterRef(name);
  const { row } = loaded;
  const { type, json, uid, change } = await applyOwnWrite(trx, dialect, ref, row, decision.action === 'delete' ? decision : { action: 'put', object: decision.object }, changeRv, now, fence, publish);
  if (decision.action === 'delete') await trx('cluster_credentials').where({ name }).delete();
  else {
    // Credentials belong to one object (uid): a new object never inherits its predecessor's.
    const replace = decision.credentials !== undefined || (row !== undefined && row.uid !== uid);
    if (replace) await trx('cluster_credentials').where({ name }).delete();
    if (decision.credentials && hasCredentials(decision.credentials)) {
      const c = decision.credentials;
      await trx('cluster_credentials').insert({ name, uid, data: JSON.stringify(c), digest: credentialsDigest(c), updated_at: new Date(now).toISOString() });
    }
  }
  return { result: { change: { rv: changeRv, type }, object: json }, row: change };
}

/** One Cluster object as served, or undefined. */
export async function getClusterObject(knex: Knex, name: string): Promise<ClusterObjectState | undefined> {
  const row: OwnRow | undefined = await objectsOf(knex).where({ name }).first('id', 'uid', 'rv', 'object');
  return row ? { name, uid: row.uid, rv: Number(row.rv), object: JSON.parse(row.object) as KubeObject } : undefined;
}

/**
 * listClusterRegistrations for a reader that asks every second (synchro's reconcile pass, in
 * every member): each read asks for the Cluster objects' names and rvs, and reads and parses
 * again only the objects whose rv moved (a Cluster object is ~10 KiB of status: at 1,000
 * clusters a full read was 10 MiB a second in each member). The objects it returns are
 * frozen: they are the same from one read to the next. Credentials are read each time.
 */
export class ClusterRegistrationReader {
  private readonly cached = new Map<string, { uid: string; rv: number; object: KubeObject }>();

  async read(knex: Knex): Promise<ClusterRegistration[]> {
    const heads: Array<{ name: string; rv: number | string }> = await objectsOf(knex).orderBy('name').select('name', 'rv');
    const fresh = new Map<string, { uid: string; rv: number; object: KubeObject }>();
    const moved = heads.filter((h) => this.cached.get(h.name)?.rv !== Number(h.rv)).map((h) => h.name);
    for (let i = 0; i < moved.length; i += 500) {
      const rows: Array<OwnRow & { name: string }> = await objectsOf(knex).whereIn('name', moved.slice(i, i + 500)).select('name', 'uid', 'rv', 'object');
      for (const r of rows) fresh.set(r.name, { uid: r.uid, rv: Number(r.rv), object: deepFreeze(JSON.parse(r.object) as KubeObject) });
    }
    for (const [name, entry] of fresh) this.cached.set(name, entry);
    const live = new Set(heads.map((h) => h.name));
    for (const name of [...this.cached.keys()]) if (!live.has(name)) this.cached.delete(name);
    // Each from what this read found (one deleted between its two statements is left out).
    const found = heads.flatMap((h) => {
      const e = fresh.get(h.name) ?? this.cached.get(h.name);
      return e ? [{ name: h.name, ...e }] : [];
    });
    return withCredentials(knex, found);
  }
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/** The registrations of `rows`, each with its inline credentials (bound to the object's uid). */
async function withCredentials(knex: Knex, rows: ReadonlyArray<{ name: string; uid: string; rv: number; object: KubeObject }>): Promise<ClusterRegistration[]> {
  const creds: Array<{ name: string; uid: string; data: string; digest: string }> = await knex('cluster_credentials').select('name', 'uid', 'data', 'digest');
  const byName = new Map(creds.map((c) => [c.name, c]));
  return rows.map((r) => {
    const c = byName.get(r.name);
    const reg: ClusterRegistration = { name: r.name, uid: r.uid, rv: r.rv, object: r.object };
    if (c && c.uid === r.uid) {
      reg.credentials = JSON.parse(c.data) as ClusterCredentials;
      reg.credentialsDigest = c.digest;
    }
    return reg;
  });
}

