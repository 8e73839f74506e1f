// Panoptes's own group, panoptes.io/v1alpha1, and its writable kinds, stored as Panoptes' own
// objects (storage/own-objects.ts) under a reserved cluster name:
//  - `Cluster` (clusters, cluster-scoped): one object per member cluster, registered through
//    this API or from clusters.yaml by synchro (`spec.source: file`);
//  - `MultiClusterService` (multiclusterservices, namespaced, short name mcs): a Service of
//    some member clusters exported to others (api/multicluster-service.ts);
//  - `ClusterSource` (clustersources, cluster-scoped): where on the host cluster synchro's
//    importer finds clusters to register by themselves (api/cluster-source.ts).
// They are written like a custom resource with a status subresource (apiserver/registry/generic/:
// own-writes.ts, own-object.ts, with each kind's strategy: apiserver/registry/<kind>/strategy.ts),
// their status by synchro alone. Reads are those of every served resource — list, get and watch
// from `objects` and the change log (apiserver/read/: list.ts, get.ts, watch.ts) — under the
// reserved cluster name; `.../status` answers the object too.
import { clusterSourceKind, clusterSourceResource } from '../../api/cluster-source.ts';
import { mcsKind, mcsResource } from '../../api/multicluster-service.ts';
import { clusterGroup, clusterObjectsCluster, clusterResource, clusterVersion } from '../../storage/cluster-objects.ts';
import type { GroupEntry, ResourceInfo } from './catalog.ts';

export const panoptesGroupName = clusterGroup;
export const panoptesVersion = clusterVersion;
export const panoptesApiVersion = `${panoptesGroupName}/${panoptesVersion}`;

/** The verbs of a writable kind (kube-apiserver lists a custom resource's in this order). */
export const ownVerbs = ['delete', 'get', 'list', 'patch', 'create', 'update', 'watch'];

/** The PATCH bodies accepted: JSON patch and merge patch (a custom resource takes no strategic merge patch; server-side apply is not served). */
export const ownPatchTypes = ['application/json-patch+json', 'application/merge-patch+json'];

const ownInfo = (resource: string, kind: string, namespaced: boolean, shortNames?: string[]): ResourceInfo => ({
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

export const clusterInfo: ResourceInfo = ownInfo(clusterResource, 'Cluster', false);
export const mcsInfo: ResourceInfo = ownInfo(mcsResource, mcsKind, true, ['mcs']);
export const clusterSourceInfo: ResourceInfo = ownInfo(clusterSourceResource, clusterSourceKind, false);

/** The writable kinds of panoptes.io. */
export const ownInfos: readonly ResourceInfo[] = [clusterInfo, mcsInfo, clusterSourceInfo];

/** Collections (apiserver/collections/): read-only, cluster-scoped, not stored. */
export const collectionResourcesInfo: ResourceInfo = {
  group: panoptesGroupName,
  version: panoptesVersion,
  resource: 'collectionresources',
  kind: 'CollectionResource',
  singularName: 'collectionresource',
  namespaced: false,
  clusters: [],
  verbs: ['get', 'list'],
};

/**
 * The synchro members (apiserver/registry/synchromembers/serve.ts): read-only, cluster-scoped, a view of
 * storage's member rows (not stored as objects). Short name `members` (no kube 1.28 resource
 * has it).
 */
export const synchroMembersInfo: ResourceInfo = {
  group: panoptesGroupName,
  version: panoptesVersion,
  resource: 'synchromembers',
  kind: 'SynchroMember',
  singularName: 'synchromember',
  namespaced: false,
  shortNames: ['members'],
  clusters: [],
  verbs: ['get', 'list'],
};

/** The kinds whose objects belong to the fleet, not to a member cluster: a view reads them without a per-cluster check. */
export const fleetInfos: readonly ResourceInfo[] = [...ownInfos, synchroMembersInfo];

export const panoptesGroup: GroupEntry = { name: panoptesGroupName, versions: [{ version: panoptesVersion, resources: [...ownInfos, collectionResourcesInfo, synchroMembersInfo] }] };

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
    const info = ownInfos.find((i) => i.namespaced && i.resource === s[2]);
    return info ? { info, namespace: s[1], rest: s.slice(3), legacyWatch } : undefined;
  }
  const info = ownInfos.find((i) => i.resource === s[0]);
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
