// The Secrets of the HOST cluster that API-registered Clusters name as their credentials
// (spec.credentials.secretRef): one list+watch per synchro process, of the Secrets in its
// namespace labelled `panoptes.io/cluster` (the label names the cluster a Secret is for;
// synchro reads no other), kept in memory and followed as they rotate. A change calls
// onChange, so the clusters using it restart with the new credentials within a reconcile
// pass. The host is just another cluster to this client (member/client.ts).
import type { Logger } from '../lib/log.ts';
import { Backoff, sleep } from './backoff.ts';
import { describeError, isExpired, type ClusterClient } from '../member/client.ts';
import { secretClusterLabel } from '../api/cluster.ts';

export interface HostSecret {
  name: string;
  namespace: string;
  resourceVersion: string;
  labels: Record<string, string>;
  /** The panoptes.io/server annotation says which server its credentials are for. */
  annotations: Record<string, string>;
  /** Base64 values, as the Secret API serves them. */
  data: Record<string, string>;
}

/** What is known of one Secret: not yet (the first list is not done), known (present or absent), or the host cannot be read. */
export type SecretLookup = { state: 'pending' } | { state: 'known'; secret?: HostSecret } | { state: 'error'; message: string };

interface SecretObject {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  data?: Record<string, string>;
}

const toSecret = (o: SecretObject): HostSecret | undefined =>
  o.metadata?.name
    ? {
        name: o.metadata.name,
        namespace: o.metadata.namespace ?? '',
        resourceVersion: o.metadata.resourceVersion ?? '',
        labels: o.metadata.labels ?? {},
        annotations: o.metadata.annotations ?? {},
        data: o.data ?? {},
      }
    : undefined;

/** Where API clusters' Secrets are looked up (HostSecrets; a fixed set in tests). */
export interface SecretSource {
  readonly namespace: string;
  lookup(name: string): SecretLookup;
}

export interface HostSecretsOptions {
  client: ClusterClient;
  namespace: string;
  log: Logger;
  /** A Secret came, changed or went (or the host became readable or unreadable). */
  onChange: () => void;
  backoff?: { initialMs: number; maxMs: number };
}

export class HostSecrets implements SecretSource {
  private readonly secrets = new Map<string, HostSecret>();
  private synced = false;
  private error?: string;
  private readonly abort = new AbortController();
  private loop?: Promise<void>;

  constructor(private readonly opts: HostSecretsOptions) {}

  get namespace(): string {
    return this.opts.namespace;
  }

  /** Starts listing and watching (once). */
  start(): void {
    this.loop ??= this.run();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
    this.opts.client.close();
  }

  /** A Secret by name: as last read (also while the host is away after a first successful list). */
  lookup(name: string): SecretLookup {
    if (this.error !== undefined && !this.synced) return { state: 'error', message: this.error };
    if (!this.synced) return { state: 'pending' };
    const secret = this.secrets.get(name);
    return secret ? { state: 'known', secret } : { state: 'known' };
  }

  private path(extra: string): string {
    const selector = encodeURIComponent(secretClusterLabel);
    return `/api/v1/namespaces/${encodeURIComponent(this.opts.namespace)}/secrets?labelSelector=${selector}${extra}`;
  }

  private changed(): void {
    try {
      this.opts.onChange();
    } catch (err) {
      this.opts.log.warn('host secret change handler failed', { err: err as Error });
    }
  }

  private async run(): Promise<void> {
    const signal = this.abort.signal;
    const backoff = new Backoff(this.opts.backoff ?? { initialMs: 500, maxMs: 30_000 });
    while (!signal.aborted) {
      try {
        const list = await this.opts.client.get<{ metadata?: { resourceVersion?: string }; items?: SecretObject[] }>(this.path(''), { timeoutMs: 30_000, signal });
        this.secrets.clear();
        for (const item of list.items ?? []) {
          const s = toSecret(item);
          if (s) this.secrets.set(s.name, s);
        }
        const recovered = this.error !== undefined;
        this.synced = true;
        this.error = undefined;
        if (recovered) this.opts.log.info('host cluster secrets are readable again', { namespace: this.opts.namespace });
        this.changed();
        backoff.reset();
        await this.watch(list.metadata?.resourceVersion ?? '0', signal);
      } catch (err) {
        if (signal.aborted) break;
        if (isExpired(err)) continue; // relist
        const message = `cannot read Secrets in namespace ${this.opts.namespace} of the host cluster: ${describeError(err)}`;
        if (message !== this.error) this.opts.log.warn('host cluster secrets are not readable', { error: message });
        // What was read before stays in use: a host cluster that is away stops no member's sync.
        this.error = message;
        if (!this.synced) this.changed();
        await sleep(backoff.next(), signal);
      }
    }
  }

  /** Watches from `rv` until the stream ends for good (410: throws to relist). */
  private async watch(rv: string, signal: AbortSignal): Promise<void> {
    let from = rv;
    while (!signal.aborted) {
      const timeout = 240 + Math.floor(Math.random() * 120);
      const res = await this.opts.client.stream(this.path(`&watch=1&allowWatchBookmarks=true&resourceVersion=${encodeURIComponent(from)}&timeoutSeconds=${timeout}`), { timeoutMs: 30_000, signal });
      res.setEncoding('utf8');
      const onAbort = () => res.destroy();
      signal.addEventListener('abort', onAbort, { once: true });
      let buf = '';
      try {
        for await (const chunk of res as AsyncIterable<string>) {
          buf += chunk;
          let i: number;
          while ((i = buf.indexOf('\n')) >= 0) {
            const line = buf.slice(0, i).trim();
            buf = buf.slice(i + 1);
            if (!line) continue;
            const e = JSON.parse(line) as { type: string; object: SecretObject & { code?: number; reason?: string; message?: string } };
            if (e.type === 'ERROR') {
              if (e.object.code === 410 || e.object.reason === 'Expired' || e.object.reason === 'Gone') throw Object.assign(new Error(e.object.message ?? 'expired'), { expired: true });
              throw new Error(`watch error: ${e.object.message ?? JSON.stringify(e.object)}`);
            }
            const next = e.object.metadata?.resourceVersion;
            if (next) from = next;
            if (e.type === 'BOOKMARK') continue;
            const s = toSecret(e.object);
            if (!s) continue;
            if (e.type === 'DELETED') this.secrets.delete(s.name);
            else this.secrets.set(s.name, s);
            this.changed();
          }
        }
      } catch (err) {
        if ((err as { expired?: boolean }).expired) return; // relist
        throw err;
      } finally {
        signal.removeEventListener('abort', onAbort);
      }
    }
  }
}
