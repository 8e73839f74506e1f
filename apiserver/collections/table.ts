// The Tables of collections: a collection's objects (`kubectl get collectionresources workloads`,
// the list form, and every event of `-w`): KIND (with its group after a dot, but for the core
// group), CLUSTER, NAMESPACE, NAME, AGE; and the list of collections: NAME, RESOURCES.
import { since } from '../../kube/printers.ts';
import type { TableColumnDefinition } from '../../kube/table.ts';
import type { KubeObject } from '../../storage/types.ts';
import type { TableRenderer } from '../read/table.ts';

const column = (name: string, description: string, format = ''): TableColumnDefinition => ({ name, type: 'string', format, description, priority: 0 });

/** `Deployment.apps`, `Pod`: the kind and the group of the object's apiVersion. */
function kindCell(obj: KubeObject): string {
  const api = typeof obj.apiVersion === 'string' ? obj.apiVersion : '';
  const group = api.includes('/') ? api.slice(0, api.indexOf('/')) : '';
  return `${obj.kind ?? ''}${group ? `.${group}` : ''}`;
}

/** The objects of a collection, whatever their kind. */
export const collectionObjectsTable: TableRenderer = {
  columns: [
    column('Kind', 'The kind of the object (its group after a dot, but for the core group).'),
    column('Cluster', 'The member cluster the object is synced from (annotation panoptes.io/cluster).'),
    column('Namespace', 'The namespace of the object.'),
    column('Name', 'The name of the object.', 'name'),
    column('Age', 'Since its creationTimestamp.'),
  ],
  cells: (obj, cluster, now) => [kindCell(obj), cluster, obj.metadata?.namespace ?? '', obj.metadata?.name ?? '', since(obj.metadata?.creationTimestamp, now)],
};

/** The columns of the list of collections. */
export const collectionListColumns: TableColumnDefinition[] = [column('Name', 'The collection.', 'name'), column('Resources', 'The kinds it reads (<resource>[.<group>]; bare: only objects without an owner).')];
