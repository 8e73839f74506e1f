// What one upstream event does to one stored key: a pure function of (what storage holds,
// the event) → the changes to write, in order. applyBatch threads each key's state through
// its events and only executes the result; every rule of idempotence lives here.
//
// The rules, by upstream resourceVersion (a member cluster's rvs are one increasing
// sequence over all its objects, so they order events across uids too):
// - An event not newer than what is stored writes nothing, whatever its uid: a replay of a
//   batch that re-created an object (A deleted, B created) must not bring A back.
// - The one exception: the same object (uid, rv) arriving at another API version (a CRD's
//   served version moved): it is served again at the new version, as MODIFIED.
// - A newer event for another uid is a re-creation missed while not watching: DELETED of
//   the stored object, then ADDED.
// - A reconcile delete (no rv: the object vanished from a complete relist) deletes what is
//   stored, unless storage meanwhile holds another uid under the name.
import type { EventType, KubeObject } from './types.ts';

/** What storage holds for one key. */
export interface StoredState {
  uid: string;
  upstreamRv: string;
  version: string;
  /** The object as last served. */
  object: KubeObject;
}

/** One upstream event, as applyBatch has described it. */
export interface IncomingEvent {
  type: EventType;
  version: string;
  uid: string;
  /** '' for a reconcile delete: the object vanished from a relist, no event of its own. */
  upstreamRv: string;
  object: KubeObject;
}

/** One change to write: its type, the identity and version it is served at, and the object to serve. */
export interface Decision {
  type: EventType;
  uid: string;
  upstreamRv: string;
  version: string;
  object: KubeObject;
}

/**
 * Whether upstream resourceVersion `incoming` is newer than `stored`. Kubernetes calls
 * resourceVersions opaque, but every kube-apiserver's are etcd revisions (integers, compared
 * as such). A server of another kind (an aggregated API server) may send anything: then a
 * different value is taken as newer, the one order-free answer; replays of a committed run
 * are recognized by alreadyApplied instead.
 */
export function isNewer(incoming: string, stored: string): boolean {
  if (incoming === '' || stored === '') return incoming !== stored || incoming === '';
  if (/^\d+$/.test(incoming) && /^\d+$/.test(stored)) return BigInt(incoming) > BigInt(stored);
  return incoming !== stored;
}

/**
 * The events of a batch that storage already reflects, by index: for each key, the events up
 * to (and including) the last one whose upstream rv, uid and version are what storage holds. A batch
 * retried after a commit whose answer was lost (the connection broke at COMMIT) replays
 * them; with integer rvs decide() refuses each anyway, but with opaque ones every event but
 * the stored one looks newer and watchers would see the object go back through its
 * intermediate states. Events without an rv (reconcile deletes, servers that send none) are
 * never taken for replays.
 */
export function alreadyApplied(events: Array<{ key: string; incoming: IncomingEvent }>, stored: (key: string) => StoredState | null): Set<number> {
  const last = new Map<string, number>();
  for (const [i, { key, incoming }] of events.entries()) {
    const s = stored(key);
    if (!s || s.upstreamRv === '' || incoming.type === 'DELETED') continue;
    if (incoming.upstreamRv === s.upstreamRv && incoming.uid === s.uid && incoming.version === s.version) last.set(key, i);
  }
  const skip = new Set<number>();
  if (last.size === 0) return skip;
  for (const [i, { key }] of events.entries()) if (i <= (last.get(key) ?? -1)) skip.add(i);
  return skip;
}

/** The stored object as a change of `type` (a delete serves its last state). */
const fromStored = (type: EventType, s: StoredState): Decision => ({ type, uid: s.uid, upstreamRv: s.upstreamRv, version: s.version, object: s.object });

const fromEvent = (type: EventType, e: IncomingEvent): Decision => ({ type, uid: e.uid, upstreamRv: e.upstreamRv, version: e.version, object: e.object });

/** The changes one event makes to one key, given what storage holds for it (null: nothing). */
export function decide(stored: StoredState | null, e: IncomingEvent): Decision[] {
  if (e.type === 'DELETED') {
    if (!stored) return [];
    if (e.upstreamRv === '') {
      // Reconcile: delete what the relist no longer has, unless the name now holds another object.
      return e.uid !== '' && e.uid !== stored.uid ? [] : [fromStored('DELETED', stored)];
    }
    if (!isNewer(e.upstreamRv, stored.upstreamRv)) return [];
    // A delete of another uid at a newer rv: the stored object cannot exist any more either.
    return [e.uid === stored.uid ? fromEvent('DELETED', e) : fromStored('DELETED', stored)];
  }
  if (!stored) return [fromEvent('ADDED', e)];
  if (!isNewer(e.upstreamRv, stored.upstreamRv)) {
    const sameObject = e.uid === stored.uid && e.upstreamRv === stored.upstreamRv;
    return sameObject && e.version !== stored.version ? [fromEvent('MODIFIED', e)] : [];
  }
  if (e.uid !== stored.uid) return [fromStored('DELETED', stored), fromEvent('ADDED', e)];
  return [fromEvent('MODIFIED', e)];
}

/** What storage holds for the key after `d` (null after a delete). */
export function stateAfter(d: Decision, served: KubeObject): StoredState | null {
  return d.type === 'DELETED' ? null : { uid: d.uid, upstreamRv: d.upstreamRv, version: d.version, object: served };
}
