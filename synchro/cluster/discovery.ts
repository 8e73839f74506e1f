// Discovery of what a member cluster serves. A member with aggregated discovery (kube 1.27+:
// `apidiscovery.k8s.io`, GA in 1.30) answers it in two requests, /api and /apis, and while
// nothing changed a rediscovery is two 304s (If-None-Match with the ETag of the last answer,
// as client-go's cache does): no document sent, none parsed. A member without it is read the
// legacy way: /api/v1, /apis and each group's preferred version. Custom resources appear here
// once their CRD is established and disappear with it.
// With `aggregation`, also which group versions the member does not serve itself: those whose
// APIService (GET /apis/apiregistration.k8s.io/v1/apiservices) names a Service — an aggregated
// API, e.g. metrics-server, Clusterpedia, or Panoptes itself on its host cluster. Built-in
// group versions and CRDs have Local APIServices (no `spec.service`).
import { HttpError, describeError, type ClusterClient } from '../../member/client.ts';
import type { ApiResource } from './resources.ts';

interface APIResourceList {
  groupVersion?: string;
  resources?: Array<{ name: string; kind: string; namespaced: boolean; verbs?: string[]; singularName?: string; shortNames?: string[]; categories?: string[] }>;
}

interface APIGroupList {
  groups?: Array<{ name: string; preferredVersion?: { version: string }; versions?: Array<{ version: string }> }>;
}

/** `apidiscovery.k8s.io` v2 and v2beta1 (the same shape): every group, its versions by preference, their resources. */
interface APIGroupDiscoveryList {
  kind?: string;
  items?: Array<{
    metadata?: { name?: string };
    versions?: Array<{
      version?: string;
      /** `Stale`: the group version's resources could not be read (an aggregated API that is down). */
      freshness?: string;
      resources?: Array<{ resource?: string; responseKind?: { kind?: string }; scope?: string; singularResource?: string; verbs?: string[]; shortNames?: string[]; categories?: string[] }>;
    }>;
  }>;
}

/** client-go's Accept for aggregated discovery: v2, then v2beta1 (kube 1.27–1.29), then the legacy documents. */
export const aggregatedDiscoveryAccept = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json';

export interface DiscoveryResult {
  /** Every listable and watchable resource, core group first. */
  resources: ApiResource[];
  /** Groups that exist but whose resource list failed (e.g. an unavailable aggregated API). */
  failedGroups: Map<string, string>;
  /** Every group the cluster listed, '' for core. */
  groups: Set<string>;
  /** With `aggregation`: the group versions (`group/version`) served by an aggregated API. */
  aggregated: Set<string>;
  /** With `aggregation`: why the APIServices could not be read (every group version then counts as the member's own). */
  aggregationUnknown?: string;
}

interface APIServiceList {
  items?: Array<{ spec?: { group?: string; version?: string; service?: unknown } }>;
}

const apiServicesPath = '/apis/apiregistration.k8s.io/v1/apiservices';

/**
 * The group versions whose APIService names a Service. No aggregator (404): none. Not allowed
 * (401, 403): unknown, with the reason. Anything else throws (discovery is retried).
 */
async function aggregatedGroupVersions(client: ClusterClient, req: { timeoutMs: number; signal?: AbortSignal }): Promise<{ aggregated: Set<string>; unknown?: string }> {
  try {
    const list = await client.get<APIServiceList>(apiServicesPath, req);
    const aggregated = new Set<string>();
    for (const a of list.items ?? []) {
      if (a.spec?.service != null && typeof a.spec.version === 'string') aggregated.add(`${a.spec.group ?? ''}/${a.spec.version}`);
    }
    return { aggregated };
  } catch (err) {
    if (err instanceof HttpError && err.status === 404) return { aggregated: new Set() };
    if (err instanceof HttpError && (err.status === 401 || err.status === 403)) return { aggregated: new Set(), unknown: `GET ${apiServicesPath}: ${err.statusMessage ?? describeError(err)}` };
    throw err;
  }
}

function listable(group: string, version: string, list: APIResourceList): ApiResource[] {
  const out: ApiResource[] = [];
  for (const r of list.resources ?? []) {
    if (r.name.includes('/')) continue;
    const verbs = r.verbs ?? [];
    if (!verbs.includes('list') || !verbs.includes('watch')) continue;
    const found: ApiResource = { group, version, resource: r.name, kind: r.kind, namespaced: r.namespaced };
    // Recorded for the apiserver's discovery (kubectl short names, categories such as `all`).
    if (r.singularName) found.singularName = r.singularName;
    if (r.shortNames?.length) found.shortNames = r.shortNames;
    if (r.categories?.length) found.categories = r.categories;
    out.push(found);
  }
  return out;
}

/** What one root (/api or /apis) of aggregated discovery said: its groups' preferred versions read. */
interface RootDiscovery {
  resources: ApiResource[];
  failedGroups: Map<string, string>;
  groups: string[];
}

function fromAggregated(list: APIGroupDiscoveryList): RootDiscovery {
  const out: RootDiscovery = { resources: [], failedGroups: new Map(), groups: [] };
  for (const g of list.items ?? []) {
    const group = g.metadata?.name ?? '';
    out.groups.push(group);
    // Versions come in order of preference: the first is the one the legacy discovery names preferred.
    const preferred = g.versions?.[0];
    if (!preferred?.version) continue;
    if (preferred.freshness === 'Stale') {
      out.failedGroups.set(group, `${group === '' ? '' : `${group}/`}${preferred.version}: stale in the member's aggregated discovery (its API is not available)`);
      continue;
    }
    const resources = (preferred.resources ?? []).flatMap((r) =>
      typeof r.resource === 'string' && typeof r.responseKind?.kind === 'string'
        ? [{ name: r.resource, kind: r.responseKind.kind, namespaced: r.scope === 'Namespaced', ...(r.verbs ? { verbs: r.verbs } : {}), ...(r.singularResource ? { singularName: r.singularResource } : {}), ...(r.shortNames ? { shortNames: r.shortNames } : {}), ...(r.categories ? { categories: r.categories } : {}) }]
        : [],
    );
    out.resources.push(...listable(group, preferred.version, { resources }));
  }
  return out;
}

/**
 * What a member's discovery said last, by root, with the ETag it came with; and whether the
 * member serves aggregated discovery at all (once it answered the legacy way, it is read the
 * legacy way). One per connection: a new connection starts from nothing.
 */
export class DiscoveryCache {
  legacy = false;
  readonly roots = new Map<'/api' | '/apis', { etag?: string; found: RootDiscovery }>();
  /** Requests answered 304 (the copy held was current), for tests and metrics. */
  notModified = 0;
}

/** How a root was answered: a new aggregated document, 304 (the copy held stands), or the legacy documents (a whole pass). */
export type DiscoveryAnswer = 'document' | 'not-modified' | 'legacy';

/** One root of aggregated discovery, from the cache when the member answers 304; undefined when the member does not serve it. */
async function aggregatedRoot(client: ClusterClient, root: '/api' | '/apis', cache: DiscoveryCache, req: { timeoutMs: number; signal?: AbortSignal }, onAnswer: (a: DiscoveryAnswer) => void): Promise<RootDiscovery | undefined> {
  const held = cache.roots.get(root);
  let a;
  try {
    a = await client.getConditional<APIGroupDiscoveryList>(root, { ...req, accept: aggregatedDiscoveryAccept, ...(held?.etag ? { etag: held.etag } : {}) });
  } catch (err) {
    // Something in front of the member that refuses the media types: read it the legacy way.
    if (err instanceof HttpError && err.status === 406) return undefined;
    throw err;
  }
  if (a.notModified) {
    if (!held) throw new Error(`GET ${root}: 304 without a copy held`);
    cache.notModified++;
    onAnswer('not-modified');
    return held.found;
  }
  if (!a.contentType.includes('g=apidiscovery.k8s.io') || a.body?.kind !== 'APIGroupDiscoveryList') return undefined;
  const found = fromAggregated(a.body);
  cache.roots.set(root, { ...(a.etag ? { etag: a.etag } : {}), found });
  onAnswer('document');
  return found;
}

/**
 * Runs discovery; throws when the cluster cannot be reached at all (/api and /apis, or /api/v1
 * and /apis, fail). `cache` (one per connection) makes a rediscovery of an unchanged member two
 * 304s.
 */
export async function discover(client: ClusterClient, opts: { timeoutMs?: number; signal?: AbortSignal; aggregation?: boolean; cache?: DiscoveryCache; onAnswer?: (a: DiscoveryAnswer) => void } = {}): Promise<DiscoveryResult> {
  const req = { timeoutMs: opts.timeoutMs ?? 10_000, signal: opts.signal };
  const cache = opts.cache ?? new DiscoveryCache();
  const onAnswer = opts.onAnswer ?? (() => undefined);
  if (!cache.legacy) {
    const [core, apis] = await Promise.all([aggregatedRoot(client, '/api', cache, req, onAnswer), aggregatedRoot(client, '/apis', cache, req, onAnswer)]);
    if (core && apis) {
      const result: DiscoveryResult = { resources: [...core.resources, ...apis.resources], failedGroups: new Map([...core.failedGroups, ...apis.failedGroups]), groups: new Set(['', ...apis.groups]), aggregated: new Set() };
      await withAggregation(client, result, opts.aggregation === true, req);
      return result;
    }
    cache.legacy = true;
    cache.roots.clear();
  }
  const result = await legacyDiscovery(client, opts.aggregation === true, req);
  onAnswer('legacy');
  return result;
}

/** With `aggregation` and an aggregator: which group versions APIServices hand to a Service. */
async function withAggregation(client: ClusterClient, result: DiscoveryResult, aggregation: boolean, req: { timeoutMs: number; signal?: AbortSignal }): Promise<void> {
  if (!aggregation || !result.groups.has('apiregistration.k8s.io')) return;
  const found = await aggregatedGroupVersions(client, req);
  result.aggregated = found.aggregated;
  if (found.unknown) result.aggregationUnknown = found.unknown;
}

/** Discovery without `apidiscovery.k8s.io`: /api/v1, /apis, then each group's preferred version. */
async function legacyDiscovery(client: ClusterClient, aggregation: boolean, req: { timeoutMs: number; signal?: AbortSignal }): Promise<DiscoveryResult> {
  const [core, apis] = await Promise.all([client.get<APIResourceList>('/api/v1', req), client.get<APIGroupList>('/apis', req)]);
  const result: DiscoveryResult = { resources: listable('', 'v1', core), failedGroups: new Map(), groups: new Set(['']), aggregated: new Set() };
  const groups = (apis.groups ?? []).filter((g) => g.name);
  for (const g of groups) result.groups.add(g.name);
  await withAggregation(client, result, aggregation, req);
  const lists = await Promise.all(
    groups.map(async (g) => {
      const version = g.preferredVersion?.version ?? g.versions?.[0]?.version;
      if (!version) return [];
      try {
        return listable(g.name, version, await client.get<APIResourceList>(`/apis/${g.name}/${version}`, req));
      } catch (err) {
        result.failedGroups.set(g.name, (err as Error).message);
        return [];
      }
    }),
  );
  for (const l of lists) result.resources.push(...l);
  return result;
}
