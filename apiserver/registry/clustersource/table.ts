// The columns and cells of `kubectl get clustersources`: name, source type, the Clusters it
// imported, those it could not import, and age; -o wide adds the namespaces read and the first
// failure (or the Ready condition's message).
import type { ClusterSourceFailure } from '../../../api/cluster-source.ts';
import { since } from '../../../kube/printers.ts';
import type { KubeObject } from '../../../storage/types.ts';
import type { TableRenderer } from '../../read/table.ts';

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function message(o: KubeObject, s: Record<string, unknown>): string {
  if (o.metadata?.deletionTimestamp) return 'Terminating: its Clusters are removed';
  const failures = (Array.isArray(s.failures) ? s.failures : []).filter(isRecord) as unknown as ClusterSourceFailure[];
  if (failures.length) return `${failures[0].object}: ${failures[0].message}${failures.length > 1 ? ` (and ${failures.length - 1} more)` : ''}`;
  const ready = (Array.isArray(s.conditions) ? s.conditions : []).filter(isRecord).find((c) => c.type === 'Ready');
  return ready && typeof ready.message === 'string' ? ready.message : '';
}

export const clusterSourceTable: TableRenderer = {
  columns: [
    { name: 'Name', type: 'string', format: 'name', description: 'The ClusterSource name (imported Clusters say clustersource/<name> in spec.source)', priority: 0 },
    { name: 'Type', type: 'string', format: '', description: 'clusterAPI, argoCD, karmada or kubeconfigSecrets', priority: 0 },
    { name: 'Clusters', type: 'integer', format: '', description: 'Clusters imported', priority: 0 },
    { name: 'Failed', type: 'integer', format: '', description: 'Source objects that could not be imported (status.failures says why)', priority: 0 },
    { name: 'Age', type: 'string', format: '', description: 'Time since the ClusterSource was created', priority: 0 },
    { name: 'Namespaces', type: 'string', format: '', description: 'The namespaces of the host cluster read', priority: 1 },
    { name: 'Message', type: 'string', format: '', description: 'Terminating; else the first failure, or the Ready condition', priority: 1 },
  ],
  cells(o: KubeObject, _cluster: string, now: number) {
    const spec = isRecord(o.spec) ? o.spec : {};
    const s = isRecord(o.status) ? o.status : {};
    return [
      o.metadata?.name ?? '',
      typeof spec.type === 'string' ? spec.type : '',
      typeof s.imported === 'number' ? s.imported : 0,
      typeof s.failed === 'number' ? s.failed : 0,
      since(o.metadata?.creationTimestamp, now),
      Array.isArray(spec.namespaces) ? spec.namespaces.join(',') : '',
      message(o, s),
    ];
  },
};
