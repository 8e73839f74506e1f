// The columns and cells of `kubectl get clusters` (the Table of clusters.panoptes.io): name,
// phase, ready, synced resources, objects and age; -o wide adds the server, the synchro
// process writing for the cluster, its lease epoch, its multi-cluster Service roles
// (api/mcs-roles.ts), the installation syncing it and the last health message.
import { describeRoles, mcsRolesOf } from '../../../api/mcs-roles.ts';
import { humanDuration } from '../../../kube/printers.ts';
import type { KubeObject } from '../../../storage/types.ts';
import type { TableRenderer } from '../../read/table.ts';

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The status message; a registration that syncs a member registered more than once says so too. */
function message(s: Record<string, unknown>): string {
  const text = typeof s.message === 'string' ? s.message : '';
  const dup = (Array.isArray(s.conditions) ? s.conditions : []).filter(isRecord).find((c) => c.type === 'Duplicate' && c.status === 'True');
  const extra = dup && typeof dup.message === 'string' && dup.message !== text ? dup.message : '';
  return text && extra ? `${text}; ${extra}` : text || extra;
}

export const clusterTable: TableRenderer = {
  columns: [
    { name: 'Name', type: 'string', format: 'name', description: 'The member cluster name', priority: 0 },
    { name: 'Phase', type: 'string', format: '', description: 'Pending, Ready, Unreachable, Unauthorized (the member refuses the credentials: 401), Forbidden (it accepts them but lets them read no health path: 403), Invalid or Duplicate (the member is synced under another name); Terminating while a deleted cluster\'s objects are removed', priority: 0 },
    { name: 'Ready', type: 'string', format: '', description: 'Whether its last readiness probe succeeded', priority: 0 },
    { name: 'Synced', type: 'string', format: '', description: 'Resources whose initial list is stored, of those selected that the credentials may list (a forbidden resource counts as not selected)', priority: 0 },
    { name: 'Objects', type: 'integer', format: '', description: 'Objects in sync', priority: 0 },
    { name: 'Age', type: 'string', format: '', description: 'Time since the cluster was registered', priority: 0 },
    { name: 'Server', type: 'string', format: '', description: 'The member API server', priority: 1 },
    { name: 'Owner', type: 'string', format: '', description: 'The synchro process writing for this cluster', priority: 1 },
    { name: 'Epoch', type: 'integer', format: '', description: 'The fencing epoch of its lease: grows with every handover', priority: 1 },
    { name: 'MCS', type: 'string', format: '', description: 'The multi-cluster Service roles the operator granted it: provider, consumer, both or none (spec.multiClusterServices)', priority: 1 },
    { name: 'Installation', type: 'string', format: '', description: 'The Panoptes installation syncing it: the panoptes.io/installation label of what it dispatches there', priority: 1 },
    { name: 'Message', type: 'string', format: '', description: 'The last health message, and the Duplicate condition\'s when the member is registered more than once', priority: 1 },
  ],
  cells(o: KubeObject, _cluster: string, now: number) {
    const s = isRecord(o.status) ? o.status : {};
    const spec = isRecord(o.spec) ? o.spec : {};
    const init = isRecord(s.initialSync) ? s.initialSync : {};
    const owner = isRecord(s.owner) ? s.owner : {};
    const created = o.metadata?.creationTimestamp ? Date.parse(o.metadata.creationTimestamp) : NaN;
    const phase = o.metadata?.deletionTimestamp ? 'Terminating' : typeof s.phase === 'string' ? s.phase : 'Pending';
    const server = typeof s.server === 'string' ? s.server : typeof spec.server === 'string' ? spec.server : '';
    return [
      o.metadata?.name ?? '',
      phase,
      s.ready === true ? 'True' : 'False',
      `${Number(init.resourcesSynced ?? 0)}/${Number(init.resourcesTotal ?? 0)}`,
      Number(init.objects ?? 0),
      Number.isNaN(created) ? '<unknown>' : humanDuration(now - created),
      server,
      typeof owner.member === 'string' ? owner.member : '<none>',
      typeof owner.epoch === 'number' ? owner.epoch : 0,
      describeRoles(mcsRolesOf(spec)),
      typeof s.installation === 'string' ? s.installation : '<none>',
      message(s),
    ];
  },
};
