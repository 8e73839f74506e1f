// Panoptes's own group, panoptes.io/v1alpha1, and its Cluster resource: one object per member
// cluster (storage/cluster-objects.ts), registered through this API (create, update, patch,
// delete: apiserver/cluster-writes.ts) or from clusters.yaml by synchro (`spec.source: file`),
// its status written by synchro alone. Reads are those of every served resource — list, get
// and watch from `objects` and the change log (apiserver/list.ts, get.ts, watch-route.ts) —
// under the reserved cluster name the Cluster objects are stored with; `.../status` answers
// the object too. A one-cluster view lists its own cluster.
import { clusterGroup, clusterObjectsCluster, clusterResource, clusterVersion } from '../storage/cluster-objects.ts';
import type { GroupEntry, ResourceInfo } from './catalog.ts';

export const panoptesGroupName = clusterGroup;
export const panoptesVersion = clusterVersion;
export const panoptesApiVersion = `${panoptesGroupName}/${panoptesVersion}`;

/** The verbs of clusters.panoptes.io (kube-apiserver lists a custom resource's in this order). */
export const clusterVerbs = ['delete', 'get', 'list', 'patch', 'create', 'update', 'watch'];

/** The PATCH bodies accepted: JSON patch and merge patch (a custom resource takes no strategic merge patch; server-side apply is not served). */
export const clusterPatchTypes = ['application/json-patch+json', 'application/merge-patch+json'];

export const clusterInfo: ResourceInfo = {
  group: panoptesGroupName,
  version: panoptesVersion,
  resource: clusterResource,
  kind: 'Cluster',
  singularName: 'cluster',
  namespaced: false,
  // Reads go through the generic list/get/watch with the reserved cluster as the view.
  clusters: [clusterObjectsCluster],
  verbs: clusterVerbs,
  subresources: [{ name: 'status', verbs: ['get'] }],
  patchTypes: clusterPatchTypes,
};

export const panoptesGroup: GroupEntry = { name: panoptesGroupName, versions: [{ version: panoptesVersion, resources: [clusterInfo] }] };

const ownPath = `/apis/${panoptesGroupName}/${panoptesVersion}/${clusterResource}`;
const viewPath = `/apis/${panoptesGroupName}/${panoptesVersion}/resources${ownPath}`;

/**
 * Whether a request path is the Cluster resource where writes are served: at the server root,
 * and in the all-clusters view (the same collection, which a kubeconfig pointed at that view
 * reaches). One-cluster views are read-only.
 */
export function isClusterPath(path: string): boolean {
  return [ownPath, viewPath].some((p) => path === p || path.startsWith(`${p}/`));
}
