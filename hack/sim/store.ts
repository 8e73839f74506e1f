// The objects of one simulated cluster, its resourceVersion counter and its change history.
//
// Like etcd behind kube-apiserver: one counter for every resource of the cluster; every write
// gets the next value; objects of a resource are kept ordered by key (`namespace/name`, or
// `name` when cluster-scoped), which is the order lists are served in. The history keeps the
// last `historySize` events: watches resume from it, and list pages read the snapshot of their
// first page from it (current state with the newer events undone). Anything older is compacted:
// 410 Expired.
import { randomUUID } from 'node:crypto';
import { StatusError, expired } from '../../kube/status.ts';
import { kubeTime, type KObject } from './types.ts';

export type EventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface StoreEvent {
  rv: number;
  type: EventType;
  /** Collection id (`group/resource`). */
  id: string;
  key: string;
  /** The object after the change; for DELETED its last state, at the deletion's rv. */
  object: KObject;
  /** The object before the change (MODIFIED, DELETED). */
  prev?: KObject;
  /** The serialized `{"type","object"}` line, filled by the first watcher that sends it. */
  line?: string;
}

export type Listener = (event: StoreEvent) => void;

export interface ListOptions {
  /** Only objects of this namespace. */
  namespace?: string;
  /** Selector predicate; when given, remainingItemCount is not computed (as kube-apiserver). */
  match?: (object: KObject) => boolean;
  /** Page size; 0 or unset: everything. */
  limit?: number;
  /** Token from a previous page. */
  continue?: string;
  /** Read the state as of this resourceVersion (resourceVersionMatch=Exact); default: now. */
  atRv?: number;
}

export interface ListResult {
  items: KObject[];
  resourceVersion: number;
  continue?: string;
  remainingItemCount?: number;
}

export interface StoreOptions {
  /** Number of events kept for watch resumption and paging (default 10000). */
  historySize?: number;
  /** First resourceVersion handed out is initialRv + 1 (default 100). */
  initialRv?: number;
}

class Collection {
  readonly objects = new Map<string, KObject>();
  /** Every key, sorted (byte order, as etcd). */
  keys: string[] = [];
}

/** Index of the first element >= k. */
function lowerBound(keys: readonly string[], k: string): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (keys[mid] < k) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export function objectKey(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

interface ContinueToken {
  rv: number;
  start: string;
}

function encodeContinue(t: ContinueToken): string {
  return Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv: t.rv, start: `${t.start}\u0000` })).toString('base64url');
}

function decodeContinue(token: string): ContinueToken {
  try {
    const v = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as { v?: unknown; rv?: unknown; start?: unknown };
    if (v.v !== 'meta.k8s.io/v1' || typeof v.rv !== 'number' || typeof v.start !== 'string' || !v.start.endsWith('\u0000')) throw new Error('bad');
    return { rv: v.rv, start: v.start.slice(0, -1) };
  } catch {
    throw new StatusError('BadRequest', 'continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)');
  }
}

export class Store {
  private rv: number;
  private compacted: number;
  private readonly historySize: number;
  private history: StoreEvent[] = [];
  private head = 0;
  private readonly collections = new Map<string, Collection>();
  private readonly listeners = new Map<string, Set<Listener>>();
  private rvWaiters: { rv: number; resolve: () => void }[] = [];

  constructor(opts: StoreOptions = {}) {
    this.historySize = Math.max(1, opts.historySize ?? 10_000);
    this.rv = opts.initialRv ?? 100;
    this.compacted = this.rv;
  }

  /** The cluster's current resourceVersion (that of its last write). */
  get resourceVersion(): number {
    return this.rv;
  }

  /** Every rv at or above this one can be watched from; older ones get 410 Expired. */
  get compactedRv(): number {
    return this.compacted;
  }

  private collection(id: string): Collection {
    let c = this.collections.get(id);
    if (!c) {
      c = new Collection();
      this.collections.set(id, c);
    }
    return c;
  }

  get(id: string, namespace: string | undefined, name: string): KObject | undefined {
    return this.collections.get(id)?.objects.get(objectKey(namespace, name));
  }

  count(id: string): number {
    return this.collections.get(id)?.objects.size ?? 0;
  }

  /** Ids of collections holding objects. */
  ids(): string[] {
    return [...this.collections.keys()].filter((id) => this.count(id) > 0);
  }

  /** Stores a new state of an object (ADDED if absent, MODIFIED otherwise) at the next rv. */
  put(id: string, object: KObject): StoreEvent {
    const col = this.collection(id);
    const key = objectKey(object.metadata.namespace, object.metadata.name!);
    const prev = col.objects.get(key);
    const rv = ++this.rv;
    const stored: KObject = { ...object, metadata: { ...object.metadata, resourceVersion: String(rv) } };
    col.objects.set(key, stored);
    if (!prev) col.keys.splice(lowerBound(col.keys, key), 0, key);
    return this.record({ rv, type: prev ? 'MODIFIED' : 'ADDED', id, key, object: stored, prev });
  }

  /** Deletes an object at the next rv; undefined when absent. */
  remove(id: string, namespace: string | undefined, name: string): StoreEvent | undefined {
    const col = this.collections.get(id);
    const key = objectKey(namespace, name);
    const prev = col?.objects.get(key);
    if (!col || !prev) return undefined;
    const rv = ++this.rv;
    col.objects.delete(key);
    const i = lowerBound(col.keys, key);
    if (col.keys[i] === key) col.keys.splice(i, 1);
    const object: KObject = { ...prev, metadata: { ...prev.metadata, resourceVersion: String(rv) } };
    return this.record({ rv, type: 'DELETED', id, key, object, prev });
  }

  /**
   * Loads many objects at once without HTTP (benchmarks, demo): each gets a uid and
   * creationTimestamp when missing and its own rv, as separate creates would. Objects whose
   * key exists already replace the stored one. Watchers see the events.
   */
  bulkCreate(id: string, objects: KObject[]): number {
    const col = this.collection(id);
    const now = kubeTime();
    const added: string[] = [];
    for (const o of objects) {
      const key = objectKey(o.metadata.namespace, o.metadata.name!);
      const prev = col.objects.get(key);
      const rv = ++this.rv;
      const stored: KObject = {
        ...o,
        metadata: { ...o.metadata, uid: o.metadata.uid ?? randomUUID(), creationTimestamp: o.metadata.creationTimestamp ?? now, resourceVersion: String(rv) },
      };
      col.objects.set(key, stored);
      if (!prev) added.push(key);
      this.record({ rv, type: prev ? 'MODIFIED' : 'ADDED', id, key, object: stored, prev });
    }
    if (added.length > 0) {
      added.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      const merged: string[] = new Array(col.keys.length + added.length);
      let i = 0, j = 0, k = 0;
      while (i < col.keys.length && j < added.length) merged[k++] = col.keys[i] < added[j] ? col.keys[i++] : added[j++];
      while (i < col.keys.length) merged[k++] = col.keys[i++];
      while (j < added.length) merged[k++] = added[j++];
      col.keys = merged;
    }
    return objects.length;
  }

  private record(e: StoreEvent): StoreEvent {
    this.history.push(e);
    if (this.history.length - this.head > this.historySize) {
      this.head++;
      this.compacted = this.history[this.head].rv - 1;
      if (this.head > 4096 && this.head * 2 > this.history.length) {
        this.history = this.history.slice(this.head);
        this.head = 0;
      }
    }
    const ls = this.listeners.get(e.id);
    if (ls) for (const l of [...ls]) l(e);
    if (this.rvWaiters.length) {
      const ready = this.rvWaiters.filter((w) => w.rv <= this.rv);
      this.rvWaiters = this.rvWaiters.filter((w) => w.rv > this.rv);
      for (const w of ready) w.resolve();
    }
    return e;
  }

  /** Calls `listener` synchronously after every write to collection `id`. */
  subscribe(id: string, listener: Listener): () => void {
    let set = this.listeners.get(id);
    if (!set) {
      set = new Set();
      this.listeners.set(id, set);
    }
    set.add(listener);
    return () => {
      set.delete(listener);
    };
  }

  /** The events of collection `id` with rv > `rv`, oldest first; undefined if compacted. */
  eventsAfter(rv: number, id?: string): StoreEvent[] | undefined {
    if (rv < this.compacted) return undefined;
    const out: StoreEvent[] = [];
    for (let i = this.firstAfter(rv); i < this.history.length; i++) {
      const e = this.history[i];
      if (id === undefined || e.id === id) out.push(e);
    }
    return out;
  }

  private firstAfter(rv: number): number {
    let lo = this.head;
    let hi = this.history.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.history[mid].rv <= rv) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** The message kube-apiserver's watch cache gives for a compacted rv. */
  tooOld(rv: number): StatusError {
    return expired(`too old resource version: ${rv} (${this.compacted})`);
  }

  /**
   * Compacts the whole history, as if the cluster's watch window had passed: the rv advances
   * by one (as an unrelated write would), so a watch or continue token from any earlier rv
   * gets 410 Expired.
   */
  expireHistory(): void {
    this.rv++;
    this.compacted = this.rv;
    this.history = [];
    this.head = 0;
  }

  /** Resolves true once the store reached `rv`, false after `timeoutMs`. */
  waitForRv(rv: number, timeoutMs: number): Promise<boolean> {
    if (rv <= this.rv) return Promise.resolve(true);
    return new Promise((resolve) => {
      const w = { rv, resolve: () => { clearTimeout(timer); resolve(true); } };
      const timer = setTimeout(() => {
        this.rvWaiters = this.rvWaiters.filter((x) => x !== w);
        resolve(false);
      }, timeoutMs);
      this.rvWaiters.push(w);
    });
  }

  /**
   * One page of a collection, in key order. The first page reads the current state (or that at
   * `atRv`); later pages read the snapshot of the first page's rv, which the token carries.
   */
  list(id: string, opts: ListOptions = {}): ListResult {
    const col = this.collection(id);
    let at = opts.atRv ?? this.rv;
    let start: string | undefined;
    if (opts.continue) {
      const t = decodeContinue(opts.continue);
      at = t.rv;
      start = t.start;
      if (at < this.compacted) {
        throw expired('The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.');
      }
    } else if (at < this.compacted && at !== this.rv) {
      throw this.tooOld(at);
    }
    if (at > this.rv) throw new StatusError('Timeout', `Too large resource version: ${at}, current: ${this.rv}`);

    // The range of keys: one namespace, or all.
    const lo = opts.namespace ? `${opts.namespace}/` : '';
    const hi = opts.namespace ? `${opts.namespace}0` : undefined;
    const from = start !== undefined && start >= lo ? `${start}\u0000` : lo;

    // Objects changed since `at`: their state at `at` (null = absent then).
    const then = new Map<string, KObject | null>();
    if (at < this.rv) {
      for (const e of this.eventsAfter(at, id) ?? []) {
        if (!then.has(e.key)) then.set(e.key, e.prev ?? null);
      }
    }
    const changed = [...then.keys()].filter((k) => k >= from && (hi === undefined || k < hi)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

    const limit = opts.limit && opts.limit > 0 ? opts.limit : Infinity;
    const items: KObject[] = [];
    let i = lowerBound(col.keys, from);
    let j = 0;
    let last: string | undefined;
    let more = false;
    for (;;) {
      const ck = i < col.keys.length && (hi === undefined || col.keys[i] < hi) ? col.keys[i] : undefined;
      const hk = j < changed.length ? changed[j] : undefined;
      if (ck === undefined && hk === undefined) break;
      let key: string;
      let obj: KObject | null | undefined;
      if (hk !== undefined && (ck === undefined || hk <= ck)) {
        key = hk;
        obj = then.get(hk);
        j++;
        if (ck === hk) i++;
      } else {
        key = ck!;
        i++;
        if (then.has(key)) continue;
        obj = col.objects.get(key);
      }
      if (!obj) continue;
      if (items.length >= limit) {
        more = true;
        break;
      }
      last = key;
      if (!opts.match || opts.match(obj)) items.push(obj);
    }
    const result: ListResult = { items, resourceVersion: at };
    if (more && last !== undefined) {
      result.continue = encodeContinue({ rv: at, start: last });
      if (!opts.match) result.remainingItemCount = this.countAfter(col, last, hi, then);
    }
    return result;
  }

  private countAfter(col: Collection, after: string, hi: string | undefined, then: Map<string, KObject | null>): number {
    const a = lowerBound(col.keys, `${after}\u0000`);
    const b = hi === undefined ? col.keys.length : lowerBound(col.keys, hi);
    let n = b - a;
    for (const [k, old] of then) {
      if (k <= after || (hi !== undefined && k >= hi)) continue;
      if (col.objects.has(k)) n--;
      if (old) n++;
    }
    return n;
  }
}
