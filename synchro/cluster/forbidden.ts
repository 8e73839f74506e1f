// A cluster's resources its credentials may not read (a 403 to their list or watch: the
// reflector's `forbidden` state), as one condition of the cluster's status: `ResourcesForbidden`,
// reason `Forbidden`, naming them. Each resource's own entry in `status.resources` carries the
// member's message (`forbidden: User "..." cannot list resource "..."`). They count as not
// wanted in `initialSync` (SYNCED n/n with the rest) and are listed again every
// forbiddenRecheckMs, at once when another of them became readable (the RBAC changed), and a
// second after a watch event of the member's Roles, ClusterRoles or bindings when the cluster
// syncs them (synchro/cluster/cluster.ts).
import { humanDuration } from '../../kube/printers.ts';
import type { ResourceStatus } from './reflector.ts';
import { resourceLabel } from './resources.ts';

export const forbiddenConditionType = 'ResourcesForbidden';

export interface ForbiddenCondition {
  type: typeof forbiddenConditionType;
  status: 'True';
  reason: 'Forbidden';
  message: string;
  lastTransitionTime: string;
}

/** The condition, while at least one resource is forbidden. */
export function forbiddenCondition(resources: readonly ResourceStatus[], recheckMs: number): ForbiddenCondition | undefined {
  const refused = resources.filter((r) => r.state === 'forbidden');
  if (refused.length === 0) return undefined;
  const named = refused.slice(0, 10).map(resourceLabel);
  const since = refused.map((r) => r.errorTime ?? '').filter(Boolean).sort()[0] ?? new Date().toISOString();
  return {
    type: forbiddenConditionType,
    status: 'True',
    reason: 'Forbidden',
    message:
      `the credentials may not list ${refused.length} selected resource(s), which are not synced (checked again every ${humanDuration(recheckMs)}): ` +
      `${named.join(', ')}${refused.length > named.length ? ', ...' : ''}; grant get, list and watch on them (manifests/member-cluster/reader.yaml) or leave them out of the resources`,
    lastTransitionTime: since,
  };
}
