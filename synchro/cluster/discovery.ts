// Discovery of what a member cluster serves: /api/v1, /apis and each group's preferred
// version. Custom resources appear here once their CRD is established and disappear with it.
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

/** Runs discovery; throws when the cluster cannot be reached at all (/api/v1 or /apis fails). */
export async function discover(client: ClusterClient, opts: { timeoutMs?: number; signal?: AbortSignal; aggregation?: boolean } = {}): Promise<DiscoveryResult> {
  const req = { timeoutMs: opts.timeoutMs ?? 10_000, signal: opts.signal };
  const [core, apis] = await Promise.all([client.get<APIResourceList>('/api/v1', req), client.get<APIGroupList>('/apis', req)]);
  const result: DiscoveryResult = { resources: listable('', 'v1', core), failedGroups: new Map(), groups: new Set(['']), aggregated: new Set() };
  const groups = (apis.groups ?? []).filter((g) => g.name);
  if (opts.aggregation && groups.some((g) => g.name === 'apiregistration.k8s.io')) {
    const found = await aggregatedGroupVersions(client, req);
    result.aggregated = found.aggregated;
    if (found.unknown) result.aggregationUnknown = found.unknown;
  }
  const lists = await Promise.all(
    groups.map(async (g) => {
      result.groups.add(g.name);
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
