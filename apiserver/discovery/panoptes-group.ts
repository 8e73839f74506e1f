// Panoptes's own group, panoptes.io/v1alpha1: the resources its kinds register (apiserver/kinds.ts,
// the composition root), in the order they register, as kube-apiserver's discovery lists what
// its registry installs. The writable kinds are stored as Panoptes' own objects
// (storage/own-objects.ts) under a reserved cluster name; each has its folder under
// apiserver/registry/<kind>/ with its ResourceInfo (made by `ownInfo` here), strategy, Table and
// OpenAPI schema. They are written like a custom resource with a status subresource
// (apiserver/registry/generic/), their status by synchro alone. Reads are those of every served
// resource — list, get and watch from `objects` and the change log (apiserver/read/) — under
// the reserved cluster name; `.../status` answers the object too. The read-only resources
// (collections, synchro members) have handlers of their own.
import { clusterGroup, clusterObjectsCluster, clusterVersion } from '../../storage/cluster-objects.ts';
import type { GroupEntry, ResourceInfo } from './catalog.ts';

export const panoptesGroupName = clusterGroup;
export const panoptesVersion = clusterVersion;
export const panoptesApiVersion = `${panoptesGroupName}/${panoptesVersion}`;

/** The verbs of a writable kind (kube-apiserver lists a custom resource's in this order). */
export const ownVerbs = ['delete', 'get', 'list', 'patch', 'create', 'update', 'watch'];

/** The PATCH bodies accepted: JSON patch and merge patch (a custom resource takes no strategic merge patch; server-side apply is not served). */
export const ownPatchTypes = ['application/json-patch+json', 'application/merge-patch+json'];

/** The ResourceInfo of a writable kind of panoptes.io. */
export const ownInfo = (resource: string, kind: string, namespaced: boolean, shortNames?: string[]): ResourceInfo => ({
  group: panoptesGroupName,
  version: panoptesVersion,
  resource,
  kind,
  singularName: kind.toLowerCase(),
  namespaced,
  ...(shortNames ? { shortNames } : {}),
  // Reads go through the generic list/get/watch with the reserved cluster as the view.
  clusters: [clusterObjectsCluster],
  verbs: ownVerbs,
  subresources: [{ name: 'status', verbs: ['get'] }],
  patchTypes: ownPatchTypes,
});

/** How a resource of panoptes.io is served. */
export interface PanoptesResource {
  info: ResourceInfo;
  /** Written through the generic write path (a strategy is registered for it: registry/generic/kinds.ts). */
  writable: boolean;
  /** Its objects belong to the fleet, not to a member cluster: a view reads them without a per-cluster check. */
  fleet: boolean;
}

const resources: PanoptesResource[] = [];

/** Adds a resource to panoptes.io's discovery (once per resource; in the order discovery lists them). */
export function registerPanoptesResource(r: PanoptesResource): void {
  if (resources.some((x) => x.info.resource === r.info.resource)) throw new Error(`${r.info.resource}.${panoptesGroupName} is already registered`);
  resources.push(r);
}

/** The writable kinds of panoptes.io. */
export function ownInfos(): ResourceInfo[] {
  return resources.filter((r) => r.writable).map((r) => r.info);
}

/** The kinds whose objects belong to the fleet, not to a member cluster: a view reads them without a per-cluster check. */
export function fleetInfos(): ResourceInfo[] {
  return resources.filter((r) => r.fleet).map((r) => r.info);
}

/** panoptes.io/v1alpha1 with every registered resource. */
export function panoptesGroup(): GroupEntry {
  return { name: panoptesGroupName, versions: [{ version: panoptesVersion, resources: resources.map((r) => r.info) }] };
}

/** An own kind's path below /apis/panoptes.io/v1alpha1/. */
export interface OwnPath {
  info: ResourceInfo;
  /** A namespaced kind's namespace; undefined: every namespace (or a cluster-scoped kind). */
  namespace?: string;
  /** What follows the collection: [name[, subresource]] (the route checks it). */
  rest: string[];
  /** The legacy `/watch/` form. */
  legacyWatch: boolean;
}

/** The own kind a path below /apis/panoptes.io/v1alpha1/ names: [watch/][namespaces/<ns>/]<resource>[/<name>[/status]]. */
export function ownPath(segs: string[]): OwnPath | undefined {
  let s = segs;
  const legacyWatch = s[0] === 'watch';
  if (legacyWatch) s = s.slice(1);
  if (s[0] === 'namespaces' && s.length >= 3) {
    const info = ownInfos().find((i) => i.namespaced && i.resource === s[2]);
    return info ? { info, namespace: s[1], rest: s.slice(3), legacyWatch } : undefined;
  }
  const info = ownInfos().find((i) => i.resource === s[0]);
  return info ? { info, rest: s.slice(1), legacyWatch } : undefined;
}

function segments(path: string): string[] {
  return path
    .split('/')
    .slice(1)
    .map((s) => {
      try {
        return decodeURIComponent(s);
      } catch {
        return s;
      }
    });
}

/**
 * Whether a request path is an own kind where writes are served: at the server root, and in
 * the all-clusters view (the same collections, which a kubeconfig pointed at that view
 * reaches). One-cluster views and the legacy watch paths are read-only.
 */
export function isOwnWritePath(path: string): boolean {
  let s = segments(path);
  const ownGroup = (x: string[]) => x[0] === 'apis' && x[1] === panoptesGroupName && x[2] === panoptesVersion;
  if (!ownGroup(s)) return false;
  s = s.slice(3);
  if (s[0] === 'resources') {
    s = s.slice(1);
    if (!ownGroup(s)) return false; // a one-cluster view (resources/clusters/<c>/...), or a synced resource
    s = s.slice(3);
  }
  const p = ownPath(s);
  return p !== undefined && !p.legacyWatch;
}
