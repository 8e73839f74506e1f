// collectionresources.panoptes.io: read-only, cluster-scoped, not stored (apiserver/collections/).
import type { ResourceInfo } from '../discovery/catalog.ts';
import { panoptesGroupName, panoptesVersion } from '../discovery/panoptes-group.ts';

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
