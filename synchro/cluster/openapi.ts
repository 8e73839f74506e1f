// OpenAPI of one member cluster, kept in storage for every apiserver replica (storage/openapi.ts):
// - v3 (kube-apiserver ≥ 1.24 by default): GET /openapi/v3 lists each group version with a
//   `serverRelativeURL` carrying `?hash=`; the document of every synced group version is
//   fetched only when that hash differs from the one stored for the cluster, and not at all
//   when another cluster already stored a document under the same hash.
// - v2 (a member whose /openapi/v3 is 404): GET /openapi/v2, the whole document, when first
//   seen, when the set of synced group versions changed, when a CRD changed, and at the
//   latest every `v2RefreshMs`.
// Documents are stored by the sha256 of their JSON text, so identical clusters share one.
import { createHash } from 'node:crypto';
import type { Logger } from '../../lib/log.ts';
import { FencedError, type Fence } from '../../storage/leases.ts';
import type { Store } from '../../storage/store.ts';
import type { ClusterOpenAPIRow, OpenAPIEntry } from '../../storage/openapi.ts';
import { HttpError, describeError, type ClusterClient } from '../../member/client.ts';
import type { SynchroMetrics } from '../metrics/metrics.ts';

export interface OpenAPIFetcherOptions {
  cluster: string;
  client: ClusterClient;
  store: Store;
  /** The cluster's lease: the documents are written under its fence; a refused write reports it lost. */
  lease: { fence: Fence; onFenced(): void };
  metrics: SynchroMetrics;
  log: Logger;
  /** Longest time a v2-only member's document is kept without asking again (default 10 min). */
  v2RefreshMs?: number;
}

/** What the cluster's status says about its OpenAPI. */
export interface OpenAPIStatus {
  /** v3: one document per group version; v2: one whole document; none: not fetched yet. */
  format: 'v3' | 'v2' | 'none';
  /** Documents stored for the cluster. */
  documents: number;
  /** Group versions synced whose document the member does not list. */
  missing?: string[];
  lastSyncTime?: string;
  error?: string;
}

interface V3Root {
  paths?: Record<string, { serverRelativeURL?: string }>;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** 'api/v1' or 'apis/G/V', as the v3 root names group versions. */
export const groupVersionKey = (group: string, version: string) => (group ? `apis/${group}/${version}` : `api/${version}`);

export class OpenAPIFetcher {
  private v2FetchedAt = 0;
  private v2Signature = '';
  private st: OpenAPIStatus = { format: 'none', documents: 0 };

  constructor(private readonly o: OpenAPIFetcherOptions) {}

  status(): OpenAPIStatus {
    return { ...this.st };
  }

  /** Brings the stored documents of `groupVersions` up to date; `force` refetches a v2 document. Never throws. */
  async sync(groupVersions: string[], opts: { force?: boolean; signal?: AbortSignal } = {}): Promise<OpenAPIStatus> {
    const wanted = [...new Set(groupVersions)].sort();
    const started = Date.now();
    try {
      const known = new Map((await this.o.store.clusterOpenAPI(this.o.cluster)).map((r) => [r.groupVersion, r]));
      let root: V3Root | undefined;
      try {
        root = await this.o.client.get<V3Root>('/openapi/v3', { timeoutMs: 15_000, signal: opts.signal });
      } catch (err) {
        if (!(err instanceof HttpError && err.status === 404)) throw err;
      }
      const next = root ? await this.v3(root, wanted, known, opts.signal) : await this.v2(wanted, known, opts);
      if (changed(known, next.entries)) await this.o.store.replaceClusterOpenAPI(this.o.cluster, next.entries, this.o.lease.fence);
      this.st = { format: root ? 'v3' : 'v2', documents: next.entries.length, lastSyncTime: new Date().toISOString() };
      if (next.missing.length) this.st.missing = next.missing;
      if (next.errors.length) this.st.error = next.errors.join('; ');
      if (next.fetched) this.o.log.info('openapi documents fetched', { format: this.st.format, fetched: next.fetched, shared: next.shared, documents: next.entries.length, bytes: next.bytes, ms: Date.now() - started });
    } catch (err) {
      if (opts.signal?.aborted) return this.status();
      if (err instanceof FencedError) {
        this.o.lease.onFenced();
        return this.status();
      }
      this.o.metrics.errors.inc({ cluster: this.o.cluster, kind: 'openapi' });
      this.o.metrics.openapiFetches.inc({ cluster: this.o.cluster, format: this.st.format === 'none' ? 'v3' : this.st.format, result: 'failed' });
      const error = describeError(err);
      if (this.st.error !== error) this.o.log.warn('openapi fetch failed; served schemas stay as last stored', { error });
      this.st = { ...this.st, error };
    }
    return this.status();
  }

  private count(format: 'v2' | 'v3', result: 'fetched' | 'unchanged' | 'shared' | 'failed'): void {
    this.o.metrics.openapiFetches.inc({ cluster: this.o.cluster, format, result });
  }

  /** The member's path for a serverRelativeURL (the client prepends the server's own path prefix). */
  private memberPath(url: string): string {
    if (url.startsWith('/openapi/')) return url;
    const base = new URL(this.o.client.server).pathname.replace(/\/+$/, '');
    return base && url.startsWith(base + '/') ? url.slice(base.length) : url;
  }

  private async v3(root: V3Root, wanted: string[], known: Map<string, ClusterOpenAPIRow>, signal?: AbortSignal) {
    const entries: OpenAPIEntry[] = [];
    const missing: string[] = [];
    const errors: string[] = [];
    let fetched = 0;
    let shared = 0;
    let bytes = 0;
    for (const gv of wanted) {
      const url = root.paths?.[gv]?.serverRelativeURL;
      if (typeof url !== 'string' || !url) {
        missing.push(gv);
        continue;
      }
      const upstream = new URL(url, 'http://member').searchParams.get('hash') ?? '';
      const had = known.get(gv);
      if (upstream && had?.format === 'v3' && had.upstreamHash === upstream && had.present) {
        entries.push({ groupVersion: gv, format: 'v3', hash: had.hash, upstreamHash: upstream });
        this.count('v3', 'unchanged');
        continue;
      }
      const stored = upstream ? await this.o.store.openAPIDocumentByUpstream('v3', upstream) : undefined;
      if (stored) {
        entries.push({ groupVersion: gv, format: 'v3', hash: stored, upstreamHash: upstream });
        this.count('v3', 'shared');
        shared++;
        continue;
      }
      try {
        const body = JSON.stringify(await this.o.client.get<unknown>(this.memberPath(url), { timeoutMs: 60_000, signal }));
        const hash = sha256(body);
        entries.push({ groupVersion: gv, format: 'v3', hash, upstreamHash: upstream || hash, body: had?.hash === hash && had.present ? undefined : body });
        this.count('v3', 'fetched');
        fetched++;
        bytes += body.length;
      } catch (err) {
        if (signal?.aborted) throw err;
        this.count('v3', 'failed');
        this.o.metrics.errors.inc({ cluster: this.o.cluster, kind: 'openapi' });
        errors.push(`${gv}: ${describeError(err)}`);
        if (had?.present && had.format === 'v3') entries.push({ groupVersion: gv, format: 'v3', hash: had.hash, upstreamHash: had.upstreamHash });
      }
    }
    return { entries, missing, errors, fetched, shared, bytes };
  }

  private async v2(wanted: string[], known: Map<string, ClusterOpenAPIRow>, opts: { force?: boolean; signal?: AbortSignal }) {
    const had = known.get('');
    const signature = wanted.join(',');
    const fresh = Date.now() - this.v2FetchedAt < (this.o.v2RefreshMs ?? 600_000);
    if (had?.present && had.format === 'v2' && !opts.force && fresh && signature === this.v2Signature) {
      this.count('v2', 'unchanged');
      return { entries: [{ groupVersion: '', format: 'v2' as const, hash: had.hash, upstreamHash: had.upstreamHash }], missing: [], errors: [], fetched: 0, shared: 0, bytes: 0 };
    }
    const body = JSON.stringify(await this.o.client.get<unknown>('/openapi/v2', { timeoutMs: 120_000, signal: opts.signal }));
    const hash = sha256(body);
    this.v2FetchedAt = Date.now();
    this.v2Signature = signature;
    const same = had?.present && had.hash === hash;
    this.count('v2', same ? 'unchanged' : 'fetched');
    return { entries: [{ groupVersion: '', format: 'v2' as const, hash, upstreamHash: hash, body: same ? undefined : body }], missing: [], errors: [], fetched: same ? 0 : 1, shared: 0, bytes: same ? 0 : body.length };
  }
}

function changed(known: Map<string, ClusterOpenAPIRow>, entries: OpenAPIEntry[]): boolean {
  if (known.size !== entries.length) return true;
  return entries.some((e) => {
    const k = known.get(e.groupVersion);
    return !k || !k.present || k.hash !== e.hash || k.upstreamHash !== e.upstreamHash || k.format !== e.format;
  });
}
