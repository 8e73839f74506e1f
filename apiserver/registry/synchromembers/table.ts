// The columns and cells of `kubectl get synchromembers` (the Table of synchromembers.panoptes.io):
// name, state, the clusters it holds, the age of its last heartbeat and its configuration
// error; -o wide adds its host, pid and process instance.
import { since } from '../../../kube/printers.ts';
import type { KubeObject } from '../../../storage/types.ts';
import type { TableRenderer } from '../../read/table.ts';

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export const synchroMemberTable: TableRenderer = {
  columns: [
    { name: 'Name', type: 'string', format: 'name', description: 'The synchro process\'s identity (--identity)', priority: 0 },
    { name: 'State', type: 'string', format: '', description: 'Live (counted in the membership), Out (running, reporting that it cannot work) or Expired (no heartbeat since its TTL)', priority: 0 },
    { name: 'Clusters', type: 'integer', format: '', description: 'Member clusters whose lease it holds', priority: 0 },
    { name: 'Heartbeat', type: 'string', format: '', description: 'Time since its last heartbeat', priority: 0 },
    { name: 'Config Error', type: 'string', format: '', description: 'Its configuration problem as it last reported it (its clusters file does not load)', priority: 0 },
    { name: 'Host', type: 'string', format: '', description: 'The host name it runs on', priority: 1 },
    { name: 'PID', type: 'integer', format: '', description: 'Its process id', priority: 1 },
    { name: 'Instance', type: 'string', format: '', description: 'The process instance writing its heartbeat (random per process start)', priority: 1 },
  ],
  cells(o: KubeObject, _cluster: string, now: number) {
    const s = isRecord(o.status) ? o.status : {};
    const str = (v: unknown, none = '') => (typeof v === 'string' && v !== '' ? v : none);
    return [
      o.metadata?.name ?? '',
      str(s.state),
      Array.isArray(s.clusters) ? s.clusters.length : 0,
      since(s.heartbeatTime, now),
      str(s.configError, '<none>'),
      str(s.host),
      typeof s.pid === 'number' ? s.pid : 0,
      str(s.instance, '<none>'),
    ];
  },
};
