// The right a write needs that grants multi-cluster Service roles (api/mcs-roles.ts): `update`
// on the `multiclusterservices` subresource of the Cluster (or ClusterSource) written, reviewed
// by SubjectAccessReview besides the write's own verb (apiserver/registry/generic/own-writes.ts). Registering or
// importing a cluster is not granting it the right to provide its endpoints to the fleet, nor
// to have Panoptes write into it with its own identity: that is the operator's to grant,
// cluster by cluster (manifests/base/rbac.yaml panoptes:multicluster-services-grantor).
// Revoking a role needs nothing more than the write.
import { mcsGrantorRole, mcsGrantSubresource, mcsRolesField, widenedRoles, type McsRoles } from '../../../api/mcs-roles.ts';
import type { Privilege } from './own-object.ts';
import { panoptesGroupName, panoptesVersion } from '../../discovery/panoptes-group.ts';

/** What a write of `resource` `name` that moves its roles from `before` to `after` must be allowed (none when it grants nothing new). */
export function grantPrivileges(resource: string, name: string, before: McsRoles, after: McsRoles): Privilege[] {
  const widened = widenedRoles(before, after);
  if (widened.length === 0) return [];
  const field = resource === 'clustersources' ? `spec.defaults.${mcsRolesField}` : `spec.${mcsRolesField}`;
  return [
    {
      attrs: { verb: 'update', group: panoptesGroupName, version: panoptesVersion, resource, subresource: mcsGrantSubresource, name },
      why: `granting ${widened.map((r) => `${field}.${r}`).join(' and ')} needs update on ${resource}/${mcsGrantSubresource} (the role ${mcsGrantorRole}): who may provide and consume multi-cluster Services is the operator's to grant`,
    },
  ];
}
