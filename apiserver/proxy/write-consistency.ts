// resourceVersions of writes proxied to a member cluster, and read-your-writes.
//
// Clients read through Panoptes (Panoptes' rv: the change log's) and write through the proxy
// to the member (whose rvs are its own). Before a write goes out, translateBody rewrites the
// rvs its body carries (apiserver/proxy/rv-fields.ts) from Panoptes' to the member's: a
// Panoptes rv R of one of the object's versions, the current one or an older one, becomes the
// member rv of that same version (the change log keeps each version with its member rv:
// storage/object-versions.ts). The member then judges it as kube does, after its own RBAC: a
// user it refuses gets its 403 and learns nothing of the object, one it allows gets its 409
// (a JSON patch `test` its 422) when R is not the current version. Panoptes never refuses a
// stale rv itself, since that would tell a user allowed on `clusters/proxy` but not on the
// object that it exists, and its current version.
//
// When R is no version of the object here (compacted from the log, another object's rv, or
// garbage), Panoptes cannot name the version it meant, and sends a member rv that cannot
// match: one below the stored version's member rv S. A member object's rv only grows (etcd's
// mod revision), so the member's current rv is S or above and the member refuses it as stale,
// again after its RBAC. Only when S is not an integer above 1 (no etcd member has one: etcd's
// first write is revision 2) is there no such rv, and the write is refused here with kube's
// 409 (it names no member rv). When storage is behind the member, the member's own check does
// the rest. A body without an rv is unconditional and left as it is.
//
// Panoptes' rvs and a member's are both integers. An rv equal to the stored object's member
// rv, and not one of the object's own Panoptes versions in the change log, is the member's: a
// client got it in the answer of a write that Panoptes had not synced yet (below), and it is
// sent on as it is. Only rvs of synced resources are Panoptes'; for a resource Panoptes does
// not sync, bodies go to the member untouched (but for the stamps: rv-fields.ts withoutStamps).
//
// After the member answered a write, settle waits (at most `waitMs`, --proxy-write-wait) until
// synchro has stored the object at the member rv of the answer or later (for a delete: until
// it is gone, or marked for deletion at that rv), woken by the process's watch hub as it
// dispatches each change (apiserver/watch/hub.ts onDispatch): no polling of its own. It then
// answers the object as Panoptes serves it (the stored JSON, as a get returns it: Panoptes' rv
// and cluster annotations), so a get or a watch from that rv right after the write shows it.
// When the wait runs out it answers the member's object with a Warning that it is not synced
// yet. Subresources: a write of `status` answers the parent object, so it is the stored one;
// other subresources answer their own kind (a `scale` answers a Scale, whose rv is the
// parent's): it is the member's, with the parent's Panoptes rv in place of the member's
// when the stored parent is at exactly that member version (else the member's rv stays, and a
// write with it is refused as stale or sent on as the member's, as above).
import { StatusError } from '../../kube/status.ts';
import { isNewer } from '../../storage/decide.ts';
import type { Store } from '../../storage/store.ts';
import type { Change, ObjectKey, StoredObject } from '../../storage/types.ts';
import { upstreamRvAnnotation } from '../../storage/write.ts';
import type { Catalog } from '../discovery/catalog.ts';
import type { ProxiedWrite, WriteConsistency } from './consistency.ts';
import { refuseCollectionPrecondition, rewriteRvs, withoutStamps, type BodyShape, type RvPlace } from './rv-fields.ts';

export type { ProxiedWrite, WriteConsistency };

/**
 * How long a proxied write waits for synchro by default: 5 s. Write → visible through Panoptes
 * measures 10 ms at p50 and at most about 220 ms at p99 on a loaded VM (docs/benchmarks.md, Watch), so a
 * healthy sync is well inside it; kube-apiserver itself waits up to 3 s for its watch cache to
 * reach a fresh rv (k8s.io/apiserver storage/cacher/watch_cache.go blockTimeout) before it answers, and the sync path here has the
 * member's own watch ahead of it. Longer would hold a kubectl for long when a member's sync is
 * away; the answer then is the member's object with a Warning instead.
 */
export const defaultProxyWriteWaitMs = 5000;

export interface WriteConsistencyOptions {
  store: Pick<Store, 'get' | 'memberRvAt'>;
  /** The process's watch hub: each dispatched change may end a wait. `wake` asks its poller to look at once. */
  changes: { onDispatch(listener: (changes: readonly Change[]) => void): () => void; wake?(): void };
  /** Whether Panoptes syncs this resource of this cluster: only then are its rvs Panoptes' and its writes waited for. */
  synced(cluster: string, group: string, resource: string): boolean;
  /** The longest wait of settle, ms (0: answer at once, from storage if it has the write already). */
  waitMs: number;
  /** Told how each wait ended and how long it took (metrics). */
  observe?(outcome: WaitOutcome, seconds: number): void;
}

/** How a wait of settle ended: storage had the write; the bound ran out; storage did not answer. */
export type WaitOutcome = 'synced' | 'timeout' | 'error';

/** Whether a cluster's view serves the resource from storage (at any version), by the catalog. */
export const syncedInCatalog =
  (catalog: Pick<Catalog, 'view'>) =>
  (cluster: string, group: string, resource: string): boolean =>
    catalog.view(cluster)?.group(group)?.versions.some((v) => v.resources.some((r) => r.resource === resource)) ?? false;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

const keyOf = (k: ObjectKey) => JSON.stringify([k.cluster, k.group, k.resource, k.namespace, k.name]);
const qualified = (w: ProxiedWrite) => (w.group ? `${w.resource}.${w.group}` : w.resource);
const details = (w: ProxiedWrite, name: string) => ({ name, ...(w.group ? { group: w.group } : {}), kind: w.resource });

/**
 * Whether a write asks for a dry run: `dryRun` in the query (create, update, patch options), or
 * in a DeleteOptions body (kubectl delete --dry-run=server sends it there). kube accepts only
 * `All`; any other value the member refuses, so any value counts here.
 */
export function dryRunOf(query: URLSearchParams, body: Buffer): boolean {
  if (query.getAll('dryRun').some((v) => v !== '')) return true;
  if (body.length === 0 || body.length > 64 * 1024) return false; // a DeleteOptions is a small JSON object
  try {
    const o = JSON.parse(body.toString('utf8')) as { dryRun?: unknown };
    return Array.isArray(o.dryRun) && o.dryRun.length > 0;
  } catch {
    return false;
  }
}

/** What the body of a write is, for the rvs it may carry; undefined: none (a create of a new object, most subresource creates). */
function shapeOf(w: ProxiedWrite): BodyShape | undefined {
  if (w.verb === 'update' || w.verb === 'patch') return 'object';
  if (w.verb === 'delete') return 'deleteOptions';
  if (w.verb === 'create' && w.subresource === 'eviction') return 'eviction';
  return undefined;
}

/** An object's state as the wait sees it: absent from storage, or a stored (or just dispatched) version. */
type Seen = { absent: true } | { absent: false; deleted: boolean; uid: string; upstreamRv: string; rv: number; object: string };

const fromStored = (s: StoredObject | undefined): Seen => (s ? { absent: false, deleted: false, uid: s.uid, upstreamRv: s.upstreamRv, rv: s.rv, object: s.object } : { absent: true });

function fromChange(c: Change): Seen {
  let upstreamRv = '';
  try {
    const md = (JSON.parse(c.object) as { metadata?: { annotations?: Record<string, unknown> } }).metadata;
    upstreamRv = str(md?.annotations?.[upstreamRvAnnotation]) ?? '';
  } catch {
    // the stored text is always JSON; an unreadable one settles nothing
  }
  return { absent: false, deleted: c.type === 'DELETED', uid: c.uid, upstreamRv, rv: c.rv, object: c.object };
}

/** What a write waits for: its object stored at the member's rv or later, or (a delete) gone. */
interface Target {
  key: ObjectKey;
  uid?: string;
  /** The member rv of the answer ('' for a delete answered with a Status). */
  rv: string;
  /** A delete whose object is gone in the member: wait until storage has it gone too. */
  gone: boolean;
}

function targetOf(w: ProxiedWrite, member: unknown): Target | undefined {
  if (!isObj(member) || w.verb === 'deletecollection' || w.verb === 'get' || w.verb === 'list') return undefined;
  const md = isObj(member.metadata) ? member.metadata : {};
  if (member.kind === 'Status') {
    // A delete answered with a Status (kube does for kinds that do not return the deleted object).
    if (w.verb !== 'delete' || member.status !== 'Success' || !w.name) return undefined;
    const d = isObj(member.details) ? member.details : {};
    return { key: keyFor(w, w.name), uid: str(d.uid), rv: '', gone: true };
  }
  const name = w.name ?? str(md.name);
  const rv = str(md.resourceVersion);
  if (!name || !rv) return undefined;
  // A deleted object is answered without a deletionTimestamp when it went at once; with one while it terminates (finalizers, grace).
  const gone = w.verb === 'delete' && !w.subresource && md.deletionTimestamp === undefined;
  return { key: keyFor(w, name, str(md.namespace)), uid: str(md.uid), rv, gone };
}

const keyFor = (w: ProxiedWrite, name: string, namespace?: string): ObjectKey => ({ cluster: w.cluster, group: w.group, resource: w.resource, namespace: w.namespace ?? namespace ?? '', name });

/** Whether storage reflects the write. */
function settles(t: Target, seen: Seen): boolean {
  if (seen.absent) return t.gone;
  const ours = t.uid === undefined || seen.uid === t.uid;
  // Deleted: what a delete waits for; any other write's object went after it (nothing more to wait for).
  if (seen.deleted) return ours;
  // Another object by that name: the deleted one is gone.
  if (t.gone) return !ours;
  return ours && !isNewer(t.rv, seen.upstreamRv);
}

/** The answer once storage reflects the write: the object as Panoptes serves it, where it is that object. */
function render(w: ProxiedWrite, t: Target, member: Obj, seen: Seen): unknown {
  if (seen.absent || seen.deleted || t.gone) return member; // not stored (any more): the member's word is all there is
  const stored = JSON.parse(seen.object) as Obj;
  if (stored.kind === member.kind && stored.apiVersion === member.apiVersion && (!t.uid || seen.uid === t.uid)) return stored;
  // Another kind (a Scale) or another version of the kind: the member's, with the parent's Panoptes rv when it names the same version.
  const md = isObj(member.metadata) ? member.metadata : undefined;
  if (md && seen.upstreamRv === t.rv && seen.uid === (t.uid ?? seen.uid)) return { ...member, metadata: { ...md, resourceVersion: String(seen.rv) } };
  return member;
}

class ProxyWriteConsistency implements WriteConsistency {
  private readonly waits = new Map<string, Set<(c: Change) => void>>();

  constructor(private readonly opts: WriteConsistencyOptions) {
    opts.changes.onDispatch((changes) => {
      if (this.waits.size === 0) return;
      for (const c of changes) for (const fn of this.waits.get(keyOf(c)) ?? []) fn(c);
    });
  }

  async translateBody(w: ProxiedWrite, body: Buffer, contentType: string): Promise<Buffer> {
    // Panoptes' stamps never reach a member, whatever the resource (rv-fields.ts withoutStamps).
    if (w.verb === 'create' || w.verb === 'update' || w.verb === 'patch') body = withoutStamps(body, contentType);
    if (body.length === 0 || !this.opts.synced(w.cluster, w.group, w.resource)) return body;
    if (w.verb === 'deletecollection') {
      await refuseCollectionPrecondition(body, contentType);
      return body;
    }
    const shape = shapeOf(w);
    if (!shape || !w.name) return body;
    const key = keyFor(w, w.name);
    let current: Promise<StoredObject | undefined> | undefined;
    return rewriteRvs(body, contentType, shape, (rv, place) => this.toMember(w, key, rv, place, () => (current ??= this.opts.store.get(key))));
  }

  /** One rv of a body, from Panoptes' space to the member's. */
  private async toMember(w: ProxiedWrite, key: ObjectKey, rv: string, place: RvPlace, current: () => Promise<StoredObject | undefined>): Promise<string> {
    if (rv === '' || rv === '0') return rv; // unconditional (kube: "" and "0" are no version); a "0" precondition fails at the member as in kube
    if (!/^\d+$/.test(rv) && place.kind === 'object') {
      // kube-apiserver fails to parse it in the update (APIObjectVersioner.ParseResourceVersion) and answers 500; a bad request is a 400 here.
      throw new StatusError('BadRequest', `metadata.resourceVersion: Invalid value: ${JSON.stringify(rv)}: a resourceVersion is an unsigned integer`, details(w, key.name));
    }
    const stored = await current();
    if (!stored) return rv; // not in storage: not a version Panoptes served; the member decides
    if (rv === String(stored.rv)) return stored.upstreamRv;
    // An older version: the member's rv of it, which the member refuses as stale (after its RBAC).
    const at = /^\d+$/.test(rv) ? await this.opts.store.memberRvAt(key, Number(rv)) : undefined;
    if (at) return at;
    if (rv === stored.upstreamRv) return rv; // the member's own rv, from a write's answer
    const below = belowMemberRv(stored.upstreamRv);
    if (below !== undefined) return below;
    throw stale(w, key.name, place);
  }

  async settle(w: ProxiedWrite, memberObject: unknown): Promise<{ object: unknown; warnings: string[] }> {
    // A dry run persisted nothing: its answer is the member's word alone.
    const t = !w.dryRun && this.opts.synced(w.cluster, w.group, w.resource) ? targetOf(w, memberObject) : undefined;
    if (!t) return { object: memberObject, warnings: [] };
    const member = memberObject as Obj;
    const k = keyOf(t.key);
    let done: (seen: Seen) => void = () => undefined;
    const dispatched = new Promise<Seen>((resolve) => (done = resolve));
    const listener = (c: Change) => {
      const seen = fromChange(c);
      if (settles(t, seen)) done(seen);
    };
    let set = this.waits.get(k);
    if (!set) this.waits.set(k, (set = new Set()));
    set.add(listener);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const started = performance.now();
    const end = (outcome: WaitOutcome, object: unknown, warnings: string[] = []) => {
      this.opts.observe?.(outcome, (performance.now() - started) / 1000);
      return { object, warnings };
    };
    try {
      // Listening first, then reading: a change committed in between is seen by one or the other.
      const now = fromStored(await this.opts.store.get(t.key));
      if (settles(t, now)) return end('synced', render(w, t, member, now));
      if (this.opts.waitMs > 0) {
        this.opts.changes.wake?.();
        const timeout = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), this.opts.waitMs)));
        const seen = await Promise.race([dispatched, timeout]);
        if (seen) return end('synced', render(w, t, member, seen));
        // Once more from storage: the hub may have skipped changes (it fell behind compaction).
        const last = fromStored(await this.opts.store.get(t.key));
        if (settles(t, last)) return end('synced', render(w, t, member, last));
      }
      return end('timeout', member, [this.notSynced(w, t, 'is not synced by Panoptes yet')]);
    } catch {
      // The member made the write: storage failing to answer must not turn it into an error.
      return end('error', member, [this.notSynced(w, t, 'could not be checked in storage')]);
    } finally {
      clearTimeout(timer);
      set.delete(listener);
      if (set.size === 0 && this.waits.get(k) === set) this.waits.delete(k);
    }
  }

  /** The Warning text (the forwarder makes it a `299 -` header value) of an answer that is the member's. */
  private notSynced(w: ProxiedWrite, t: Target, what: string): string {
    const waited = this.opts.waitMs > 0 ? ` after ${this.opts.waitMs / 1000}s` : '';
    return `${w.verb} of ${qualified(w)} "${t.key.name}" in cluster ${w.cluster} ${what}${waited}: this is the member's answer, with the member's resourceVersion`;
  }
}

/** A member rv below `memberRv` (an integer above 1), which no version the member object has now can be; undefined when there is none. */
function belowMemberRv(memberRv: string): string | undefined {
  if (!/^\d+$/.test(memberRv) || BigInt(memberRv) < 2n) return undefined;
  return String(BigInt(memberRv) - 1n);
}

/** A stale rv in a body that has no member rv to send, refused as kube-apiserver refuses it (naming no version). */
function stale(w: ProxiedWrite, name: string, place: RvPlace): StatusError {
  const on = `Operation cannot be fulfilled on ${qualified(w)} ${JSON.stringify(name)}`;
  switch (place.kind) {
    case 'object':
      // registry.Store.Update: errors.NewConflict(resource, name, fmt.Errorf(OptimisticLockErrorMsg)).
      return new StatusError('Conflict', `${on}: the object has been modified; please apply your changes to the latest version and try again`, details(w, name));
    case 'precondition':
      // storage.Preconditions.Check, answered as a Conflict by InterpretDeleteError (whose message also names both rvs).
      return new StatusError('Conflict', `${on}: Precondition failed: ResourceVersion in precondition does not match the object`, details(w, name));
    case 'test':
      // A JSON patch whose test fails: patch.go answers NewGenericServerResponse(422, ..., err.Error()), with
      // evanphx/json-patch's "testing value <path> failed: test failed" as the cause.
      return new StatusError('Invalid', 'the server rejected our request due to an error in our request', {
        causes: [{ reason: 'UnexpectedServerResponse', message: `testing value ${place.path} failed: test failed` }],
      });
  }
}

export function createWriteConsistency(opts: WriteConsistencyOptions): WriteConsistency {
  return new ProxyWriteConsistency(opts);
}
