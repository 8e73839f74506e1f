// One collection of the host cluster listed and watched (a kind in one namespace, or a
// cluster-scoped kind, with a label selector), kept in memory: what the importer reads its
// source objects from. Level-triggered: every change calls onChange (the importer recomputes
// everything from what is held), a 410 relists, and a full relist runs every resyncMs even
// when the watch is quiet. A collection whose kind is not served (a CRD not installed) is
// known and empty, with a message saying so.
import type { Logger } from '../lib/log.ts';
import { describeError, HttpError, isExpired, type ClusterClient } from './client.ts';
import { Backoff, sleep } from '../lib/backoff.ts';
import { lines, maxEventBytes } from './answer-size.ts';

/** An object of the host cluster as the importer reads it. */
export interface HostObject {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; resourceVersion?: string; labels?: Record<string, string>; annotations?: Record<string, string>; deletionTimestamp?: string };
  type?: string;
  data?: Record<string, string>;
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
}

export interface ListWatchOptions {
  client: ClusterClient;
  /** The collection, e.g. /api/v1/namespaces/fleet/secrets. */
  path: string;
  labelSelector: string;
  log: Logger;
  onChange: () => void;
  resyncMs: number;
}

const keyOf = (o: HostObject) => `${o.metadata.namespace ?? ''}/${o.metadata.name}`;

export class ListWatch {
  private readonly items = new Map<string, HostObject>();
  private synced = false;
  private error?: string;
  /** The last list answered 404: the kind is not served (its CRD is not installed). */
  private notServed = false;
  private readonly abort = new AbortController();
  private readonly loop: Promise<void>;
  private answered!: () => void;
  /** Settles once the first list has an outcome: listed, or failed (see listed()). */
  private readonly firstAnswer = new Promise<void>((resolve) => (this.answered = resolve));

  constructor(private readonly opts: ListWatchOptions) {
    this.loop = this.run();
  }

  /**
   * Resolves once the first list has an outcome: the collection was read (whatever it held),
   * or reading it failed (state() then says why, and the list is retried with backoff). Bounded
   * by the list's timeout (30 s); also resolves on stop().
   */
  listed(): Promise<void> {
    return this.firstAnswer;
  }

  /** pending until the first list; error while it cannot be read (after a good list: what was read stays in use). */
  state(): { state: 'pending' } | { state: 'error'; message: string } | { state: 'known'; items: HostObject[]; note?: string; notServed?: true } {
    if (!this.synced) return this.error !== undefined ? { state: 'error', message: this.error } : { state: 'pending' };
    return { state: 'known', items: [...this.items.values()], ...(this.error !== undefined ? { note: this.error } : {}), ...(this.notServed ? { notServed: true as const } : {}) };
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
    this.answered();
  }

  private url(extra: string): string {
    const q = this.opts.labelSelector ? `labelSelector=${encodeURIComponent(this.opts.labelSelector)}` : '';
    return `${this.opts.path}?${[q, extra].filter(Boolean).join('&')}`;
  }

  private changed(): void {
    try {
      this.opts.onChange();
    } catch (err) {
      this.opts.log.warn('source change handler failed', { err: err as Error });
    }
  }

  private async run(): Promise<void> {
    const signal = this.abort.signal;
    const backoff = new Backoff({ initialMs: 500, maxMs: 30_000 });
    while (!signal.aborted) {
      try {
        let list: { metadata?: { resourceVersion?: string }; items?: HostObject[] };
        try {
          list = await this.opts.client.get(this.url(''), { timeoutMs: 30_000, signal });
          this.notServed = false;
        } catch (err) {
          // The kind is not served (its CRD is not installed): nothing of it to import.
          if (!(err instanceof HttpError) || err.status !== 404) throw err;
          list = { items: [] };
          this.notServed = true;
          this.error = `${this.opts.path} is not served by the host cluster (is its CRD installed?)`;
        }
        this.items.clear();
        for (const item of list.items ?? []) if (item.metadata?.name) this.items.set(keyOf(item), item);
        this.synced = true;
        if (list.metadata?.resourceVersion) this.error = undefined;
        this.changed();
        this.answered();
        backoff.reset();
        if (!list.metadata?.resourceVersion) await sleep(this.opts.resyncMs, signal);
        else await this.watch(list.metadata.resourceVersion, signal);
      } catch (err) {
        if (signal.aborted) break;
        if (isExpired(err)) continue;
        const message = `cannot read ${this.opts.path} of the host cluster: ${describeError(err)}`;
        if (message !== this.error) this.opts.log.warn('host cluster source objects are not readable', { error: message });
        this.error = message;
        if (!this.synced) this.changed();
        this.answered();
        await sleep(backoff.next(), signal);
      }
    }
  }

  /** Watches from `rv` until resyncMs has passed (then relists) or the stream fails. */
  private async watch(rv: string, signal: AbortSignal): Promise<void> {
    let from = rv;
    const resyncAt = Date.now() + this.opts.resyncMs;
    while (!signal.aborted && Date.now() < resyncAt) {
      const timeout = Math.max(1, Math.min(300, Math.ceil((resyncAt - Date.now()) / 1000)));
      const res = await this.opts.client.stream(this.url(`watch=1&allowWatchBookmarks=true&resourceVersion=${encodeURIComponent(from)}&timeoutSeconds=${timeout}`), { timeoutMs: 30_000, signal });
      const onAbort = () => res.destroy();
      signal.addEventListener('abort', onAbort, { once: true });
      try {
        for await (const raw of lines(res, maxEventBytes)) {
          const line = raw.trim();
          if (!line) continue;
          const e = JSON.parse(line) as { type: string; object: HostObject & { code?: number; reason?: string; message?: string } };
          if (e.type === 'ERROR') {
            if (e.object.code === 410 || e.object.reason === 'Expired' || e.object.reason === 'Gone') return;
            throw new Error(`watch error: ${e.object.message ?? JSON.stringify(e.object)}`);
          }
          if (e.object.metadata?.resourceVersion) from = e.object.metadata.resourceVersion;
          if (e.type === 'BOOKMARK' || !e.object.metadata?.name) continue;
          if (e.type === 'DELETED') this.items.delete(keyOf(e.object));
          else this.items.set(keyOf(e.object), e.object);
          this.changed();
        }
      } finally {
        signal.removeEventListener('abort', onAbort);
      }
    }
  }
}
