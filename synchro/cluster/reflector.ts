// One reflector per cluster and resource, as client-go's: list (in pages of 500), then
// watch from the list's resourceVersion with bookmarks; after a dropped watch, watch again
// from the last resourceVersion seen; on 410 Expired, list again and reconcile against
// what storage holds: objects that vanished get a DELETED change, unchanged ones are not
// written at all. Errors back off exponentially with jitter — except a 403: the credentials may
// not read the resource, which retrying soon does not change. The reflector is then
// `forbidden` (logged once, shown in the status with the member's message) and lists again
// every forbiddenRecheckMs, or sooner when kicked (the cluster does when another of its
// forbidden resources became readable: its RBAC changed).
import type { Logger } from '../../lib/log.ts';
import type { Store } from '../../storage/store.ts';
import type { KubeObject, UpstreamEvent } from '../../storage/types.ts';
import { Backoff, Waker, type BackoffOptions } from '../../lib/backoff.ts';
import type { Batcher } from '../commit/batcher.ts';
import { HttpError, describeError, isExpired, type ClusterClient } from '../../member/client.ts';
import type { MemberResponse } from '../../member/http2.ts';
import { AnswerTooLargeError, lines, maxEventBytes } from '../../member/answer-size.ts';
import type { NamespaceFilter } from '../../member/cluster-config.ts';
import type { SynchroMetrics } from '../metrics/metrics.ts';
import { resourceLabel, type ApiResource } from './resources.ts';
import { transform } from './transform.ts';

export type ResourceState = 'syncing' | 'synced' | 'error' | 'forbidden';

/** Per-resource part of a cluster's status. */
export interface ResourceStatus {
  group: string;
  version: string;
  resource: string;
  state: ResourceState;
  objects: number;
  lastEventTime?: string;
  lastSyncTime?: string;
  error?: string;
  errorTime?: string;
  /** `Forbidden` while the member refuses to let the credentials list or watch it (state `forbidden`). */
  reason?: string;
}

export interface ReflectorOptions {
  cluster: string;
  client: ClusterClient;
  store: Store;
  batcher: Batcher;
  resource: ApiResource;
  namespaces?: NamespaceFilter;
  metrics: SynchroMetrics;
  log: Logger;
  /** List page size (default 500, as kubectl and client-go). */
  pageSize?: number;
  /** Watch timeoutSeconds is drawn from [min, 2*min) (default 300, as client-go). */
  minWatchTimeoutSeconds?: number;
  backoff?: BackoffOptions;
  /** Time between two lists of a resource the credentials may not read (default 5 min). */
  forbiddenRecheckMs?: number;
  /** Called when it became forbidden (true) or readable again (false). */
  onForbidden?: (forbidden: boolean) => void;
  /** Called when the status changed (the cluster writes it, debounced). */
  onStatus?: () => void;
  /** Called after each upstream change event (the CRD reflector triggers rediscovery). */
  onEvent?: (type: string, object: KubeObject) => void;
}

interface WatchLine {
  type?: string;
  object?: KubeObject & { code?: number; reason?: string; message?: string };
}

class ExpiredError extends Error {
  override name = 'ExpiredError';
}

/** Fresh lists after an expired continue token, per relist, before backing off. */
const maxListRestarts = 5;

const objKey = (ns: string | undefined, name: string) => (ns ? `${ns}/${name}` : name);

export class Reflector {
  readonly resource: ApiResource;
  private readonly o: ReflectorOptions;
  private readonly abort = new AbortController();
  private readonly waker = new Waker();
  private readonly backoff: Backoff;
  private readonly path: string;
  private readonly label: string;
  private readonly apiVersion: string;
  private lastRv = '';
  private needList = true;
  private listReason = 'initial';
  private loop?: Promise<void>;
  private syncedOnce = false;
  private syncedWaiters: Array<() => void> = [];
  private settledWaiters: Array<() => void> = [];
  private st: ResourceStatus;
  private readonly allowNs: (obj: KubeObject) => boolean;

  constructor(o: ReflectorOptions) {
    this.o = o;
    this.resource = o.resource;
    const r = o.resource;
    this.path = r.group ? `/apis/${r.group}/${r.version}/${r.resource}` : `/api/${r.version}/${r.resource}`;
    this.label = resourceLabel(r);
    this.apiVersion = r.group ? `${r.group}/${r.version}` : r.version;
    this.backoff = new Backoff(o.backoff);
    this.st = { group: r.group, version: r.version, resource: r.resource, state: 'syncing', objects: 0 };
    const inc = o.namespaces?.include ? new Set(o.namespaces.include) : undefined;
    const exc = o.namespaces?.exclude ? new Set(o.namespaces.exclude) : undefined;
    const nsOf = (obj: KubeObject) => obj.metadata?.namespace || (r.group === '' && r.resource === 'namespaces' ? obj.metadata?.name : undefined);
    this.allowNs = !inc && !exc ? () => true : (obj) => {
      const ns = nsOf(obj);
      if (ns === undefined) return true;
      return (!inc || inc.has(ns)) && !exc?.has(ns);
    };
  }

  start(): void {
    this.loop ??= this.run();
  }

  /** Stops listing and watching; resolves when the loop has ended (queued events stay in the batcher). */
  async stop(): Promise<void> {
    this.abort.abort();
    this.waker.wake();
    await this.loop;
    for (const w of [...this.syncedWaiters.splice(0), ...this.settledWaiters.splice(0)]) w();
  }

  /** Cuts a backoff short (the cluster answered its probe again). */
  kick(): void {
    this.backoff.reset();
    this.waker.wake();
  }

  get hasSynced(): boolean {
    return this.syncedOnce;
  }

  /** Resolves after the first complete list was committed (or on stop). */
  synced(): Promise<void> {
    if (this.syncedOnce || this.abort.signal.aborted) return Promise.resolve();
    return new Promise((resolve) => this.syncedWaiters.push(resolve));
  }

  /** Resolves once the first complete list was committed, or the resource turned out forbidden (or on stop). */
  settled(): Promise<void> {
    if (this.syncedOnce || this.forbidden || this.abort.signal.aborted) return Promise.resolve();
    return new Promise((resolve) => this.settledWaiters.push(resolve));
  }

  /** The credentials may not list or watch it (a 403): not retried before forbiddenRecheckMs. */
  get forbidden(): boolean {
    return this.st.state === 'forbidden';
  }

  status(): ResourceStatus {
    return { ...this.st };
  }

  private setStatus(p: Partial<ResourceStatus>): void {
    Object.assign(this.st, p);
    this.o.onStatus?.();
  }

  private get stopped(): boolean {
    return this.abort.signal.aborted;
  }

  private async run(): Promise<void> {
    const { log, metrics, cluster } = this.o;
    while (!this.stopped) {
      try {
        if (this.needList) {
          await this.listAndReconcile();
          this.backoff.reset();
        }
        if (this.stopped) break;
        const started = Date.now();
        await this.watch();
        if (this.stopped) break;
        metrics.reconnects.inc({ cluster, resource: this.label });
        // A watch that ended at once (server closing early) must not become a hot loop.
        if (Date.now() - started < 1000) await this.waker.sleep(this.backoff.next(), this.abort.signal);
        else this.backoff.reset();
      } catch (err) {
        if (this.stopped) break;
        if (err instanceof ExpiredError || isExpired(err)) {
          log.info('resource version expired; listing again', { resource: this.label, resourceVersion: this.lastRv, reason: (err as Error).message });
          this.needList = true;
          this.listReason = 'expired';
          continue;
        }
        const kind = this.needList ? 'list' : 'watch';
        if (err instanceof HttpError && err.status === 403) {
          await this.refused(kind, err);
          continue;
        }
        const delay = this.backoff.next();
        metrics.errors.inc({ cluster, kind });
        const message = describeError(err);
        (this.backoff.attempts > 3 ? log.warn : log.info)(`${kind} failed; retrying`, { resource: this.label, error: message, retryInMs: delay, attempt: this.backoff.attempts });
        this.setStatus({ state: 'error', error: `${kind}: ${message}`, errorTime: new Date().toISOString() });
        await this.waker.sleep(delay, this.abort.signal);
        if (!this.needList) metrics.reconnects.inc({ cluster, resource: this.label });
      }
    }
  }

  /** A 403: forbidden (logged and reported the first time), listed again after forbiddenRecheckMs. */
  private async refused(kind: 'list' | 'watch', err: HttpError): Promise<void> {
    const { log, metrics, cluster } = this.o;
    const recheckMs = this.o.forbiddenRecheckMs ?? 300_000;
    // The recheck lists again: after a refused watch, what storage holds may be behind.
    this.needList = true;
    this.listReason = 'forbidden';
    if (!this.forbidden) {
      const message = err.statusMessage ?? describeError(err);
      metrics.errors.inc({ cluster, kind });
      log.warn(`${kind} forbidden: the credentials may not read this resource; not synced, rechecked now and then`, { resource: this.label, error: message, recheckInMs: recheckMs });
      this.setStatus({ state: 'forbidden', reason: 'Forbidden', error: `${kind}: ${message}`, errorTime: new Date().toISOString() });
      for (const w of this.settledWaiters.splice(0)) w();
      this.o.onForbidden?.(true);
    }
    await this.waker.sleep(recheckMs, this.abort.signal);
  }

  /**
   * Lists every page and writes what changed as pages arrive; then, once the list is
   * complete, reconciles: every object storage holds for this resource that the complete
   * list did not have gets a DELETED (client-go's DeltaFIFO.Replace). The deletion set is
   * read from storage after the list, so objects written from the pages of an abandoned
   * list (an expired continue token restarts it) are reconciled too. Returns with the
   * list's rv as the watch start.
   */
  private async listAndReconcile(): Promise<void> {
    const { store, batcher, cluster, metrics, log, resource: r } = this.o;
    const startedAt = Date.now();
    // A recheck of a forbidden resource stays forbidden until a list succeeds.
    if (!this.forbidden) this.setStatus({ state: 'syncing' });
    metrics.relists.inc({ cluster, resource: this.label, reason: this.listReason });
    // Storage must hold everything pushed before we compare with it.
    await batcher.flush();
    // What storage holds now: objects listed unchanged (uid, rv and version) are not written again.
    const unchanged = new Map<string, string>();
    for (const k of await store.storedKeys(cluster, r.group, r.resource)) unchanged.set(objKey(k.namespace, k.name), `${k.uid}@${k.upstreamRv}@${k.version}`);

    const listed = await this.listAll(unchanged);
    if (!listed) return;
    const { seen, written, listRv } = listed;
    await batcher.flush();
    let deleted = 0;
    for (const k of await store.storedKeys(cluster, r.group, r.resource)) {
      if (seen.has(objKey(k.namespace, k.name))) continue;
      const metadata = k.namespace ? { namespace: k.namespace, name: k.name, uid: k.uid } : { name: k.name, uid: k.uid };
      // No resourceVersion: a reconcile delete; storage serves the last stored state.
      const wait = batcher.push({ type: 'DELETED', group: r.group, version: k.version, resource: r.resource, object: { metadata } }, 256);
      deleted++;
      if (wait) await wait;
    }
    await batcher.flush();
    this.lastRv = listRv;
    this.needList = false;
    const now = new Date().toISOString();
    metrics.objects.set({ cluster, resource: this.label }, seen.size);
    (this.listReason === 'initial' ? log.debug : log.info)('listed', { resource: this.label, reason: this.listReason, objects: seen.size, written, deleted, resourceVersion: listRv, ms: Date.now() - startedAt });
    const wasForbidden = this.forbidden;
    this.setStatus({ state: 'synced', objects: seen.size, lastSyncTime: now, error: undefined, errorTime: undefined, reason: undefined });
    if (wasForbidden) {
      log.info('the credentials may read this resource again', { resource: this.label });
      this.o.onForbidden?.(false);
    }
    if (!this.syncedOnce) {
      this.syncedOnce = true;
      for (const w of [...this.syncedWaiters.splice(0), ...this.settledWaiters.splice(0)]) w();
    }
  }

  /**
   * Reads one complete list, page by page, pushing to the batcher every item not in
   * `unchanged` (key → uid@rv@version). An expired continue token starts over from a fresh
   * first page, as client-go does. Returns the keys of the complete list and its rv, or
   * undefined when stopped.
   */
  private async listAll(unchanged: Map<string, string>): Promise<{ seen: Set<string>; written: number; listRv: string } | undefined> {
    const { batcher, cluster, client, metrics, log, resource: r } = this.o;
    // A page larger than a member's answer may be (member/answer-size.ts) is asked for again,
    // smaller: objects that large are not kube's, but a list of them still syncs.
    let pageSize = this.o.pageSize ?? 500;
    const get = (cont?: string) => {
      const q = new URLSearchParams({ limit: String(pageSize) });
      if (cont) q.set('continue', cont);
      return client.get<{ metadata?: { resourceVersion?: string; continue?: string }; items?: KubeObject[] }>(`${this.path}?${q}`, { timeoutMs: 60_000, signal: this.abort.signal });
    };
    let seen = new Set<string>();
    let written = 0;
    let listRv = '';
    let next = get();
    let asked: string | undefined;
    let restarts = 0;
    for (let pages = 0; ; pages++) {
      let page: Awaited<ReturnType<typeof get>>;
      try {
        page = await next;
      } catch (err) {
        if (err instanceof AnswerTooLargeError && pageSize > 1) {
          pageSize = Math.max(1, Math.floor(pageSize / 8));
          log.warn('a list page is larger than Panoptes reads of one answer; asking for smaller pages', { resource: this.label, pageSize, limitBytes: err.limit });
          next = get(asked);
          continue;
        }
        if (isExpired(err) && pages > 0) {
          // A list slower than the member's history, again and again: back off instead of looping.
          if (++restarts > maxListRestarts) throw new Error(`list restarted ${maxListRestarts} times after its continue token expired`);
          log.info('list continue token expired; listing from the start', { resource: this.label });
          seen = new Set();
          asked = undefined;
          next = get();
          continue;
        }
        throw err;
      }
      if (this.stopped) return undefined;
      const cont = page.metadata?.continue;
      listRv = page.metadata?.resourceVersion ?? '';
      // Fetch the next page while this one is written.
      if (cont) {
        asked = cont;
        next = get(cont);
        next.catch(() => undefined);
      }
      const items = page.items ?? [];
      const receivedAt = performance.now();
      metrics.eventsReceived.inc({ cluster, resource: this.label }, items.length);
      for (const item of items) {
        const md = item.metadata;
        if (!md?.name || !this.allowNs(item)) continue;
        const key = objKey(md.namespace, md.name);
        seen.add(key);
        if (unchanged.get(key) === `${md.uid ?? ''}@${md.resourceVersion ?? ''}@${r.version}`) continue;
        transform(item, this.apiVersion, r.kind);
        written++;
        const wait = batcher.push({ type: 'ADDED', group: r.group, version: r.version, resource: r.resource, object: item }, 1024, receivedAt);
        if (wait) await wait;
        if (this.stopped) return undefined;
      }
      if (!cont) return { seen, written, listRv };
    }
  }

  /** One watch request, until the server ends it (resolve), it fails (throw) or history expired (ExpiredError). */
  private async watch(): Promise<void> {
    const { client } = this.o;
    const min = this.o.minWatchTimeoutSeconds ?? 300;
    const timeoutSeconds = Math.floor(min * (1 + Math.random()));
    const q = new URLSearchParams({ watch: '1', allowWatchBookmarks: 'true', resourceVersion: this.lastRv, timeoutSeconds: String(timeoutSeconds) });
    const res: MemberResponse = await client.stream(`${this.path}?${q}`, { timeoutMs: 30_000, signal: this.abort.signal });
    if (this.st.state !== 'synced') this.setStatus({ state: 'synced', error: undefined, errorTime: undefined });
    this.backoff.reset();
    // A stalled connection (no bytes, not even bookmarks) is given up after the timeout plus a minute.
    let idle = setTimeout(() => res.destroy(new Error('watch stalled')), (timeoutSeconds + 60) * 1000);
    const bump = () => {
      clearTimeout(idle);
      idle = setTimeout(() => res.destroy(new Error('watch stalled')), (timeoutSeconds + 60) * 1000);
    };
    const onAbort = () => res.destroy();
    this.abort.signal.addEventListener('abort', onAbort, { once: true });
    try {
      for await (const line of lines(res, maxEventBytes, bump)) {
        if (line.trim() === '') continue;
        const wait = this.handle(line, performance.now());
        if (wait) await wait;
        if (this.stopped) return;
      }
    } catch (err) {
      if (this.stopped) return;
      throw err;
    } finally {
      clearTimeout(idle);
      this.abort.signal.removeEventListener('abort', onAbort);
    }
  }

  /** Handles one watch line; returns a promise when the batcher asks us to wait. */
  private handle(line: string, receivedAt: number): Promise<void> | undefined {
    const { batcher, cluster, metrics, resource: r } = this.o;
    let ev: WatchLine;
    try {
      ev = JSON.parse(line) as WatchLine;
    } catch {
      // Never the line itself: whatever answered is not shown in a status (member/client.ts says why).
      throw new Error(`watch sent a line that is not JSON (${line.length} bytes)`);
    }
    const obj = ev.object;
    if (!obj || typeof obj !== 'object') throw new Error(`watch event without object (${line.length} bytes)`);
    switch (ev.type) {
      case 'BOOKMARK': {
        const rv = obj.metadata?.resourceVersion;
        if (rv) this.lastRv = rv;
        return undefined;
      }
      case 'ERROR': {
        const message = obj.message ?? 'watch error';
        if (obj.code === 410 || obj.reason === 'Expired' || obj.reason === 'Gone') throw new ExpiredError(message);
        const reason = typeof obj.reason === 'string' && /^[A-Z][A-Za-z]{0,63}$/.test(obj.reason) ? obj.reason : undefined;
        const code = typeof obj.code === 'number' ? obj.code : 500;
        throw new HttpError(code, `watch ERROR: HTTP ${code}${reason ? ` ${reason}` : ''}`, reason);
      }
      case 'ADDED':
      case 'MODIFIED':
      case 'DELETED': {
        const md = obj.metadata;
        if (!md?.name) throw new Error(`watch ${ev.type} event without metadata.name`);
        if (md.resourceVersion) this.lastRv = md.resourceVersion;
        metrics.eventsReceived.inc({ cluster, resource: this.label });
        this.o.onEvent?.(ev.type, obj);
        if (!this.allowNs(obj)) return undefined;
        transform(obj, this.apiVersion, r.kind);
        const objects = this.st.objects + (ev.type === 'ADDED' ? 1 : ev.type === 'DELETED' ? -1 : 0);
        this.st.objects = Math.max(0, objects);
        this.st.lastEventTime = new Date().toISOString();
        metrics.objects.set({ cluster, resource: this.label }, this.st.objects);
        this.o.onStatus?.();
        const event: UpstreamEvent = { type: ev.type, group: r.group, version: r.version, resource: r.resource, object: obj };
        return batcher.push(event, line.length, receivedAt);
      }
      default:
        throw new Error(`watch sent an unknown event type${typeof ev.type === 'string' && /^[A-Z]{1,20}$/.test(ev.type) ? ` ${ev.type}` : ''}`);
    }
  }
}
