// Discovery of what a member cluster serves: /api/v1, /apis and each group's preferred
// version. Custom resources appear here once their CRD is established and disappear with it.
import type { ClusterClient } from '../member/client.ts';
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
export async function discover(client: ClusterClient, opts: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<DiscoveryResult> {
  const req = { timeoutMs: opts.timeoutMs ?? 10_000, signal: opts.signal };
  const [core, apis] = await Promise.all([client.get<APIResourceList>('/api/v1', req), client.get<APIGroupList>('/apis', req)]);
  const result: DiscoveryResult = { resources: listable('', 'v1', core), failedGroups: new Map(), groups: new Set(['']) };
  const groups = (apis.groups ?? []).filter((g) => g.name);
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
