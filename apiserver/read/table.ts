// The Table of a Panoptes view: kube-apiserver's columns and cells (kube/table.ts), with a
// leading Cluster column in the all-clusters view. The same for list, get and every watch event.
import type { KubeObject } from '../../storage/types.ts';
import { tableDocument as kubeTableDocument, tableJson as kubeTableJson, tablePrinter, tableRowJson as kubeTableRowJson, type TableColumnDefinition, type TableOutput } from '../../kube/table.ts';
import type { JsonArrayText } from '../../kube/json-array.ts';
import { ownGroup } from '../../storage/own-objects.ts';
import type { ResourceInfo } from '../discovery/catalog.ts';
import type { View } from '../endpoints/request.ts';

export const clusterColumn: TableColumnDefinition = {
  name: 'Cluster',
  type: 'string',
  format: '',
  description: 'The member cluster the object is synced from (annotation panoptes.io/cluster).',
  priority: 0,
};

/** Renders objects of one resource in one view as Table rows. */
export interface TableRenderer {
  /** Every column (priority 1 ones are shown by kubectl -o wide only). */
  columns: TableColumnDefinition[];
  /** The cells of one object: [cluster,] then the kind's cells. `now` in ms since the epoch (ages). */
  cells(object: KubeObject, cluster: string, now: number): unknown[];
}

/**
 * The Tables of Panoptes's own kinds, by resource: each kind's table convertor, registered by
 * the composition root (apiserver/kinds.ts), as kube-apiserver's registry gives each kind's
 * storage its TableConvertor (a collection's: its objects, apiserver/collections/table.ts).
 */
const ownTables = new Map<string, TableRenderer>();

/** Registers the Table of an own resource of panoptes.io (once per resource). */
export function registerTable(resource: string, renderer: TableRenderer): void {
  if (ownTables.has(resource)) throw new Error(`a Table is already registered for ${resource}`);
  ownTables.set(resource, renderer);
}

/** The Table renderer of a resource in a view (Panoptes's own kinds: `kubectl get clusters`, `kubectl get mcs`). */
export function tableRenderer(info: ResourceInfo, view: View): TableRenderer {
  const own = info.group === ownGroup ? ownTables.get(info.resource) : undefined;
  if (own) return own;
  const p = tablePrinter(info);
  if (view.cluster !== undefined) return { columns: p.columns, cells: (o, _c, now) => p.cells(o, now) };
  return { columns: [clusterColumn, ...p.columns], cells: (o, cluster, now) => [cluster, ...p.cells(o, now)] };
}

/** One Table row as JSON text (see kube/table.ts tableRowJson). */
export function tableRowJson(r: TableRenderer, info: ResourceInfo, obj: KubeObject, objectText: string, cluster: string, out: TableOutput, now: number): string {
  return kubeTableRowJson(r.cells(obj, cluster, now), info, obj, objectText, out);
}

/** The Table envelope around rendered rows; `columnDefinitions` null when `withColumns` is false (watch events after the first). */
export function tableJson(r: TableRenderer, metaVersion: 'v1' | 'v1beta1', listMeta: Record<string, unknown>, rows: string[], withColumns = true): string {
  return kubeTableJson(withColumns ? r.columns : null, metaVersion, listMeta, rows);
}

/** The same Table with its rows apart, to be encoded row by row (kube/json-array.ts). */
export function tableDocument(r: TableRenderer, metaVersion: 'v1' | 'v1beta1', listMeta: Record<string, unknown>, rows: string[]): JsonArrayText {
  return kubeTableDocument(r.columns, metaVersion, listMeta, rows);
}
