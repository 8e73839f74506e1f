// Test helpers for the watch engine: read a watcher's stream as parsed events.
import { Registry } from 'prom-client';
import type { Store } from '../../storage/store.ts';
import type { KubeObject, ListQuery } from '../../storage/types.ts';
import { jsonEncoder } from '../../apiserver/watch/encode.ts';
import { WatchHub, type HubOptions } from '../../apiserver/watch/hub.ts';
import type { Watcher, WatchOptions, WatchRequest } from '../../apiserver/watch/watcher.ts';

export interface StatusObject {
  kind?: string;
  code?: number;
  reason?: string;
  message?: string;
  details?: { causes?: Array<{ reason?: string }> };
}

export interface ReadEvent {
  type: string;
  object: KubeObject & StatusObject;
}

export const podsQuery: ListQuery = { group: '', resource: 'pods' };

export function podWatch(options: WatchOptions, query: Partial<ListQuery> = {}): WatchRequest {
  return { query: { ...podsQuery, ...query }, kind: 'Pod', apiVersion: 'v1', options, encoder: jsonEncoder };
}

export const rvOf = (e: ReadEvent) => Number(e.object.metadata?.resourceVersion ?? 0);

/** Collects a watcher's events; `until` waits for a condition with a bound. */
export class Reader {
  readonly events: ReadEvent[] = [];
  readonly chunks: Buffer[] = [];
  ended = false;
  private partial = '';
  private listeners = new Set<() => void>();

  constructor(readonly w: Watcher, opts: { keepChunks?: boolean } = {}) {
    w.on('data', (b: Buffer) => {
      if (opts.keepChunks) this.chunks.push(b);
      this.partial += b.toString('utf8');
      let nl: number;
      while ((nl = this.partial.indexOf('\n')) >= 0) {
        const line = this.partial.slice(0, nl);
        this.partial = this.partial.slice(nl + 1);
        this.events.push(JSON.parse(line) as ReadEvent);
      }
      this.notify();
    });
    w.on('end', () => {
      this.ended = true;
      this.notify();
    });
    w.on('close', () => this.notify());
  }

  private notify(): void {
    for (const l of [...this.listeners]) l();
  }

  /** Resolves when `cond` holds; rejects after `ms`. */
  until(cond: (r: Reader) => boolean, ms = 5000, what = 'condition'): Promise<void> {
    if (cond(this)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const check = () => {
        if (!cond(this)) return;
        cleanup();
        resolve();
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`timed out after ${ms} ms waiting for ${what}; got ${this.events.length} events: ${this.events.map((e) => `${e.type}@${rvOf(e)}`).slice(-10).join(' ')}`));
      }, ms);
      const cleanup = () => {
        clearTimeout(timer);
        this.listeners.delete(check);
      };
      this.listeners.add(check);
    });
  }

  count(n: number, ms?: number): Promise<void> {
    return this.until((r) => r.events.length >= n, ms, `${n} events`);
  }

  end(ms?: number): Promise<void> {
    return this.until((r) => r.ended, ms, 'end of stream');
  }

  /** Waits until an event with rv ≥ `rv` arrived. */
  reach(rv: number, ms?: number): Promise<void> {
    return this.until((r) => r.events.some((e) => rvOf(e) >= rv), ms, `rv ${rv}`);
  }

  get types(): string[] {
    return this.events.map((e) => e.type);
  }

  get names(): string[] {
    return this.events.map((e) => e.object.metadata?.name ?? '');
  }
}

/** A started hub with a registry of its own, stopped by the returned function. */
export async function startHub(store: Store, opts: HubOptions = {}): Promise<WatchHub> {
  const hub = new WatchHub(store, { registry: new Registry(), poll: { intervalMs: 20 }, ...opts });
  await hub.start();
  return hub;
}

export const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
