// synchromembers.panoptes.io (serve.ts): read-only, cluster-scoped, a view of storage's member
// rows (not stored as objects). Short name `members` (no kube 1.28 resource has it).
import type { ResourceInfo } from '../../discovery/catalog.ts';
import { panoptesGroupName, panoptesVersion } from '../../discovery/panoptes-group.ts';

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
