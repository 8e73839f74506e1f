// Resource selection: which of a cluster's discovered resources its patterns
// (api/resource-patterns.ts) pick for synchro to list and watch.
import type { ResourcePattern } from '../api/resource-patterns.ts';

/** One resource a cluster serves, from discovery. */
export interface ApiResource {
  group: string;
  /** The group's preferred version. */
  version: string;
  resource: string;
  kind: string;
  namespaced: boolean;
  /** As discovery reported them (recorded in the cluster status for the apiserver's discovery). */
  singularName?: string;
  shortNames?: string[];
  categories?: string[];
}

/** Resources only synced when named explicitly. */
const explicitOnly = new Set(['/secrets']);

export const resourceId = (r: { group: string; resource: string }): string => `${r.group}/${r.resource}`;

/** The resource as kubectl names it: `pods`, `deployments.apps`. */
export const resourceLabel = (r: { group: string; resource: string }): string => (r.group ? `${r.resource}.${r.group}` : r.resource);

function matches(p: ResourcePattern, r: ApiResource): boolean {
  if (p.group !== '*' && p.group !== r.group) return false;
  if (p.resource === '*') return !explicitOnly.has(resourceId(r));
  return p.resource === r.resource;
}

/** The discovered resources the patterns select, in discovery order, each once. */
export function selectResources(patterns: ResourcePattern[], discovered: ApiResource[]): ApiResource[] {
  const out: ApiResource[] = [];
  const seen = new Set<string>();
  for (const r of discovered) {
    const id = resourceId(r);
    if (seen.has(id)) continue;
    if (patterns.some((p) => matches(p, r))) {
      seen.add(id);
      out.push(r);
    }
  }
  return out;
}
