// Resource selection: which of a cluster's discovered resources its patterns
// (api/resource-patterns.ts) pick for synchro to list and watch. `*` leaves out Secrets, the
// resources of aggregated APIs and Panoptes' own groups; a pattern naming their group does not.
import { ownGroups, type ResourcePattern } from '../../api/resource-patterns.ts';

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

const own = new Set(ownGroups);

/** Whether a pattern is the bare `*` (the only one that needs to know which APIs are aggregated). */
export const isWildcard = (p: ResourcePattern): boolean => p.group === '*';

function matches(p: ResourcePattern, r: ApiResource, aggregated: ReadonlySet<string>): boolean {
  if (p.group === '*' && (own.has(r.group) || aggregated.has(`${r.group}/${r.version}`))) return false;
  if (p.group !== '*' && p.group !== r.group) return false;
  if (p.resource === '*') return !explicitOnly.has(resourceId(r));
  return p.resource === r.resource;
}

/**
 * The discovered resources the patterns select, in discovery order, each once. `aggregated`:
 * the group versions (`group/version`) an aggregated API serves, which `*` leaves out.
 */
export function selectResources(patterns: ResourcePattern[], discovered: ApiResource[], aggregated: ReadonlySet<string> = new Set()): ApiResource[] {
  const out: ApiResource[] = [];
  const seen = new Set<string>();
  for (const r of discovered) {
    const id = resourceId(r);
    if (seen.has(id)) continue;
    if (patterns.some((p) => matches(p, r, aggregated))) {
      seen.add(id);
      out.push(r);
    }
  }
  return out;
}
