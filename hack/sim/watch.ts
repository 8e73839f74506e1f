// Watch streams, as kube-apiserver serves them: 200, application/json, chunked, one
// `{"type","object"}` per line. From an rv: exactly the later events (from the store's
// history), or one ERROR 410 when that rv is compacted; unset or "0": synthetic ADDED first.
// Selector transitions become ADDED/DELETED. Bookmarks, timeoutSeconds, watch-list. Events
// are JSON objects, or Tables / PartialObjectMetadata when an encoder from output.ts is given.
import { stringifyJson } from '../../kube/json-text.ts';
import type { ServerResponse } from 'node:http';
import type { WatchLineEncoder } from './output.ts';
import { chunked } from './http.ts';
import type { ResourceInfo } from './resources.ts';
import type { Store, StoreEvent } from './store.ts';
import type { KObject } from './types.ts';

export interface WatchRequest {
  info: ResourceInfo;
  /** Version of the URL (objects are served with it). */
  version: string;
  namespace?: string;
  /** Label and field selectors. */
  match: (o: KObject) => boolean;
  /** Start point: undefined/"0" = current state as ADDED events, else exclusive rv. */
  resourceVersion?: number;
  allowBookmarks: boolean;
  timeoutSeconds: number;
  /** Watch-list: ADDED for every object, then the initial-events-end BOOKMARK. */
  sendInitialEvents: boolean;
  /** Table or PartialObjectMetadata events (output.ts); plain JSON objects when unset. */
  encode?: WatchLineEncoder;
}

export interface WatchHubOptions {
  /** Bookmark period (kube-apiserver: about a minute). */
  bookmarkIntervalMs?: number;
  /** A watcher with more unsent bytes than this is closed (default 16 MiB). */
  maxBufferBytes?: number;
}

interface ActiveWatch {
  close(abrupt: boolean): void;
}

/** The open watches of one cluster: fan-out from the store, and the drop-all fault. */
export class WatchHub {
  private readonly active = new Set<ActiveWatch>();
  readonly bookmarkIntervalMs: number;
  private readonly maxBuffer: number;

  constructor(private readonly store: Store, opts: WatchHubOptions = {}) {
    this.bookmarkIntervalMs = opts.bookmarkIntervalMs ?? 60_000;
    this.maxBuffer = opts.maxBufferBytes ?? 16 * 1024 * 1024;
  }

  get count(): number {
    return this.active.size;
  }

  /** Ends every open watch: cleanly (as at a timeout) or by resetting the connection. */
  dropAll(abrupt = false): number {
    const all = [...this.active];
    for (const w of all) w.close(abrupt);
    return all.length;
  }

  /** Serves one watch on `res` (headers not sent yet). The rv must have been checked as not in the future. */
  serve(res: ServerResponse, req: WatchRequest): void {
    const { info, store } = { info: req.info, store: this.store };
    const apiVersion = info.group ? `${info.group}/${req.version}` : req.version;
    const inNamespace = (o: KObject) => !req.namespace || o.metadata.namespace === req.namespace;
    const served = (o: KObject): KObject => (o.apiVersion === apiVersion ? o : { ...o, apiVersion });
    const encode = req.encode;
    const line = (type: string, o: KObject) => (encode ? encode(type, served(o)) : `{"type":${JSON.stringify(type)},"object":${stringifyJson(served(o))}}\n`);

    res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private', ...chunked(res) });
    res.flushHeaders();

    let backlog: StoreEvent[] | undefined;
    const initial = req.resourceVersion === undefined || req.sendInitialEvents;
    if (!initial) {
      backlog = store.eventsAfter(req.resourceVersion!, info.id);
      if (!backlog) {
        const status = store.tooOld(req.resourceVersion!).toStatus();
        res.end(`${JSON.stringify({ type: 'ERROR', object: status })}\n`);
        return;
      }
    }

    let closed = false;
    const timers: NodeJS.Timeout[] = [];
    let unsubscribe: (() => void) | undefined;
    const cleanup = () => {
      unsubscribe?.();
      for (const t of timers) clearTimeout(t);
      this.active.delete(watch);
    };
    const watch: ActiveWatch = {
      close: (abrupt) => {
        if (closed) return;
        closed = true;
        cleanup();
        if (abrupt) res.destroy();
        else res.end();
      },
    };
    const write = (chunk: string) => {
      if (closed) return;
      res.write(chunk);
      if (res.writableLength > this.maxBuffer) watch.close(true);
    };
    const bookmark = (extra?: Record<string, string>) => {
      const metadata: Record<string, unknown> = { resourceVersion: String(store.resourceVersion) };
      if (extra) metadata.annotations = extra;
      write(line('BOOKMARK', { kind: info.kind, apiVersion, metadata }));
    };

    const onEvent = (e: StoreEvent) => {
      if (!inNamespace(e.object)) return;
      const now = e.type !== 'DELETED' && req.match(e.object);
      const before = e.prev !== undefined && req.match(e.prev);
      if (e.type === 'DELETED') {
        if (before) write(plain(e));
      } else if (now && (e.type === 'ADDED' || before)) {
        write(plain(e));
      } else if (now) {
        write(line('ADDED', e.object));
      } else if (before) {
        // Stopped matching: its previous state, at the new rv.
        write(line('DELETED', { ...e.prev!, metadata: { ...e.prev!.metadata, resourceVersion: String(e.rv) } }));
      }
    };
    const plain = (e: StoreEvent): string => {
      // The JSON line is the same for every watcher of this version: made once per event.
      if (encode || e.object.apiVersion !== apiVersion) return line(e.type, e.object);
      e.line ??= line(e.type, e.object);
      return e.line;
    };

    if (initial) {
      for (const o of store.list(info.id, { namespace: req.namespace, match: req.match }).items) write(line('ADDED', o));
      if (req.sendInitialEvents) bookmark({ 'k8s.io/initial-events-end': 'true' });
    } else {
      for (const e of backlog!) onEvent(e);
    }
    if (closed) return;
    unsubscribe = store.subscribe(info.id, onEvent);
    this.active.add(watch);
    res.on('close', () => {
      if (!closed) {
        closed = true;
        cleanup();
      }
    });
    // A request answered late (the latency fault) whose connection is already gone, at the
    // cluster's close: 'close' came before, so nothing is kept for it.
    if (res.destroyed) {
      closed = true;
      cleanup();
      return;
    }

    const deadline = Date.now() + req.timeoutSeconds * 1000;
    timers.push(setTimeout(() => watch.close(false), req.timeoutSeconds * 1000));
    if (req.allowBookmarks) {
      // As kube-apiserver's cacher: periodically, and 2 s before the deadline.
      let preTimeoutSent = false;
      const schedule = () => {
        const now = Date.now();
        let at = now + this.bookmarkIntervalMs;
        const preTimeout = deadline - 2000 < at;
        if (preTimeout) {
          if (preTimeoutSent || deadline - 2000 < now) return;
          at = deadline - 2000;
        }
        timers.push(setTimeout(() => {
          if (preTimeout) preTimeoutSent = true;
          bookmark();
          schedule();
        }, at - now));
      };
      schedule();
    }
  }
}
