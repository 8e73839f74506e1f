// The Secrets of the HOST cluster that API-registered Clusters name as their credentials
// (spec.credentials.secretRef): one list+watch per synchro process, of the Secrets in its
// namespace labelled `panoptes.io/cluster` (the label names the cluster a Secret is for;
// synchro reads no other), kept in memory and followed as they rotate. A change calls
// onChange, so the clusters using it restart with the new credentials within a reconcile
// pass. The host is just another cluster to this client (member/client.ts); the list+watch
// is member/list-watch.ts, as for synchro's importer's source objects. The apiserver's proxy
// reads them the same way when it is given the host cluster (cli/commands/proxy-credentials.ts).
import type { Logger } from '../lib/log.ts';
import type { ClusterClient } from './client.ts';
import { ListWatch } from './list-watch.ts';
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
  /** Resolves once the first list of the Secrets has an outcome (read, or failed); absent: lookups are never pending. */
  listed?(): Promise<void>;
}

export interface HostSecretsOptions {
  client: ClusterClient;
  namespace: string;
  log: Logger;
  /** A Secret came, changed or went (or the host became readable or unreadable). */
  onChange: () => void;
  /** Full relist this often even when the watch is quiet (default 10 minutes). */
  resyncMs?: number;
}

export class HostSecrets implements SecretSource {
  private watch?: ListWatch;

  constructor(private readonly opts: HostSecretsOptions) {}

  get namespace(): string {
    return this.opts.namespace;
  }

  /** Starts listing and watching (once). */
  start(): void {
    this.watch ??= new ListWatch({
      client: this.opts.client,
      path: `/api/v1/namespaces/${encodeURIComponent(this.opts.namespace)}/secrets`,
      labelSelector: secretClusterLabel,
      log: this.opts.log,
      onChange: this.opts.onChange,
      resyncMs: this.opts.resyncMs ?? 600_000,
    });
  }

  /** Once started: resolves when the first list has an outcome, read (whatever it held) or failed (ListWatch.listed). */
  listed(): Promise<void> {
    return this.watch?.listed() ?? Promise.resolve();
  }

  async stop(): Promise<void> {
    await this.watch?.stop();
    this.opts.client.close();
  }

  /** A Secret by name: as last read (also while the host is away after a first successful list). */
  lookup(name: string): SecretLookup {
    const s = this.watch?.state() ?? { state: 'pending' as const };
    if (s.state !== 'known') return s;
    const found = s.items.find((o) => o.metadata.name === name);
    const secret = found && toSecret(found);
    return secret ? { state: 'known', secret } : { state: 'known' };
  }
}
