// The clusters search (`clusters=`, search.panoptes.io/clusters) names known clusters only.
import { badRequest } from '../../kube/status.ts';
import type { Deps } from '../endpoints/deps.ts';

/** 400 naming the clusters of a clusters search that are not known (after one refresh of the catalog). */
export async function checkSearchClusters(deps: Deps, clusters: string[] | undefined): Promise<void> {
  if (!clusters) return;
  let unknown = clusters.filter((c) => !deps.catalog.hasCluster(c));
  if (unknown.length) {
    await deps.catalog.refreshOnMiss();
    unknown = clusters.filter((c) => !deps.catalog.hasCluster(c));
  }
  if (unknown.length) {
    throw badRequest(`unknown cluster${unknown.length > 1 ? 's' : ''} ${unknown.map((c) => JSON.stringify(c)).join(', ')} in the clusters search; known clusters: ${deps.catalog.clusterNames().join(', ') || '(none)'}`);
  }
}
