// Table output (meta.k8s.io Table) and PartialObjectMetadata, per object, so list, get and
// the watch serializer all render the same way. Columns: kube-apiserver's for the common
// built-in kinds (reference/table-columns.json + printers.ts), a CRD's
// additionalPrinterColumns, or Name / Created At; the all-clusters view adds a leading
// Cluster column.
import { readFileSync } from 'node:fs';
import type { KubeObject } from '../storage/types.ts';
import type { PrinterColumn, ResourceInfo } from './catalog.ts';
import { podRowConditions, printers, type Printer } from './printers.ts';
import type { OutputFormat, View } from './request.ts';

export interface TableColumnDefinition {
  name: string;
  type: string;
  format: string;
  description: string;
  priority: number;
}

const referenceColumns = JSON.parse(readFileSync(new URL('./reference/table-columns.json', import.meta.url), 'utf8')) as Record<string, TableColumnDefinition[]>;

const nameDescription = referenceColumns['/configmaps']?.[0]?.description ?? 'Name must be unique within a namespace.';
const creationDescription =
  referenceColumns['/configmaps']?.find((c) => c.name === 'Age')?.description ?? 'CreationTimestamp is a timestamp representing the server time when this object was created.';

export const clusterColumn: TableColumnDefinition = {
  name: 'Cluster',
  type: 'string',
  format: '',
  description: 'The member cluster the object is synced from (annotation panoptes.io/cluster).',
  priority: 0,
};

const nameColumn: TableColumnDefinition = { name: 'Name', type: 'string', format: 'name', description: nameDescription, priority: 0 };

/** Renders objects of one resource as Table rows; the same for list, get and every watch event. */
export interface TableRenderer {
  /** Every column (priority 1 ones are shown by kubectl -o wide only). */
  columns: TableColumnDefinition[];
  /** The cells of one object: [cluster,] then the kind's cells. `now` in ms since the epoch (ages). */
  cells(object: KubeObject, cluster: string, now: number): unknown[];
}

/** A small JSONPath subset as CRD printer columns use it: `.a.b`, `.a[0]`, `.a['x.y']`, `.a[?(@.k=="v")].b`. */
export function evalJsonPath(path: string, root: unknown): unknown {
  let p = path.trim();
  if (p.startsWith('{') && p.endsWith('}')) p = p.slice(1, -1);
  if (p.startsWith('$')) p = p.slice(1);
  let cur: unknown[] = [root];
  let i = 0;
  const step = (f: (v: unknown) => unknown[]) => {
    cur = cur.flatMap(f);
  };
  while (i < p.length) {
    if (p[i] === '.') {
      i++;
      let j = i;
      while (j < p.length && p[j] !== '.' && p[j] !== '[') {
        if (p[j] === '\\') j++;
        j++;
      }
      const key = p.slice(i, j).replace(/\\(.)/g, '$1');
      i = j;
      if (key === '') continue;
      step((v) => (v && typeof v === 'object' && !Array.isArray(v) && key in (v as object) ? [(v as Record<string, unknown>)[key]] : []));
    } else if (p[i] === '[') {
      const end = p.indexOf(']', i);
      if (end < 0) return undefined;
      const inner = p.slice(i + 1, end).trim();
      i = end + 1;
      const filter = /^\?\(@\.([\w.-]+)\s*==\s*(?:"([^"]*)"|'([^']*)'|(\S+))\)$/.exec(inner);
      if (filter) {
        const [, field, a, b, c] = filter;
        const want = a ?? b ?? c;
        step((v) => (Array.isArray(v) ? v.filter((x) => String(evalJsonPath('.' + field, x)) === want) : []));
      } else if (/^-?\d+$/.test(inner)) {
        const n = Number(inner);
        step((v) => (Array.isArray(v) ? [v[n < 0 ? v.length + n : n]].filter((x) => x !== undefined) : []));
      } else if (inner === '*') {
        step((v) => (Array.isArray(v) ? v : v && typeof v === 'object' ? Object.values(v) : []));
      } else {
        const key = inner.replace(/^['"]|['"]$/g, '');
        step((v) => (v && typeof v === 'object' && !Array.isArray(v) && key in (v as object) ? [(v as Record<string, unknown>)[key]] : []));
      }
    } else return undefined;
  }
  return cur.length ? cur[0] : undefined;
}

function crdCell(col: PrinterColumn, obj: KubeObject): unknown {
  const v = evalJsonPath(col.jsonPath, obj);
  if (v === undefined || v === null) return null;
  switch (col.type) {
    case 'string':
      return typeof v === 'string' ? v : JSON.stringify(v);
    case 'integer':
      return typeof v === 'number' ? Math.trunc(v) : null;
    case 'number':
      return typeof v === 'number' ? v : null;
    case 'boolean':
      return typeof v === 'boolean' ? v : null;
    case 'date':
      return typeof v === 'string' ? v : null;
    default:
      return typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? v : JSON.stringify(v);
  }
}

const createdAt = (obj: KubeObject): string | null => {
  const ts = obj.metadata?.creationTimestamp;
  if (!ts) return null;
  const t = Date.parse(ts);
  return Number.isNaN(t) ? null : new Date(t).toISOString().replace(/\.\d{3}Z$/, 'Z');
};

/** The Table renderer of a resource in a view. */
export function tableRenderer(info: ResourceInfo, view: View): TableRenderer {
  const key = `${info.group}/${info.resource}`;
  const printer: Printer | undefined = printers[key];
  let columns: TableColumnDefinition[];
  let cells: (o: KubeObject, now: number) => unknown[];
  if (printer && referenceColumns[key]) {
    columns = referenceColumns[key];
    cells = (o, now) => printer(o, now);
  } else if (info.printerColumns) {
    const crdCols = info.printerColumns.length
      ? info.printerColumns
      : [{ name: 'Age', type: 'date', format: '', description: creationDescription, priority: 0, jsonPath: '.metadata.creationTimestamp' }];
    columns = [nameColumn, ...crdCols.map((c) => ({ name: c.name, type: c.type, format: c.format ?? '', description: c.description ?? '', priority: c.priority ?? 0 }))];
    cells = (o) => [o.metadata?.name ?? '', ...crdCols.map((c) => crdCell(c, o))];
  } else {
    columns = [nameColumn, { name: 'Created At', type: 'date', format: '', description: creationDescription, priority: 0 }];
    cells = (o) => [o.metadata?.name ?? '', createdAt(o)];
  }
  if (view.cluster !== undefined) return { columns, cells: (o, _c, now) => cells(o, now) };
  return { columns: [clusterColumn, ...columns], cells: (o, cluster, now) => [cluster, ...cells(o, now)] };
}

export interface PartialObjectMetadata {
  kind: 'PartialObjectMetadata';
  apiVersion: string;
  metadata: KubeObject['metadata'];
}

/** The object's metadata as a PartialObjectMetadata (meta.k8s.io/v1 or v1beta1). */
export function toPartialObjectMetadata(obj: KubeObject, version: 'v1' | 'v1beta1' = 'v1'): PartialObjectMetadata {
  return { kind: 'PartialObjectMetadata', apiVersion: `meta.k8s.io/${version}`, metadata: obj.metadata ?? {} };
}

/**
 * One Table row as JSON text: cells, pod row conditions, and `object` as includeObject says
 * (Object splices the stored JSON text without re-serializing it).
 */
export function tableRowJson(r: TableRenderer, info: ResourceInfo, obj: KubeObject, objectText: string, cluster: string, out: Pick<OutputFormat, 'includeObject' | 'metaVersion'>, now: number): string {
  let row = `{"cells":${JSON.stringify(r.cells(obj, cluster, now))}`;
  if (info.group === '' && info.resource === 'pods') {
    const conditions = podRowConditions(obj);
    if (conditions) row += `,"conditions":${JSON.stringify(conditions)}`;
  }
  if (out.includeObject === 'Object') row += `,"object":${objectText}`;
  else if (out.includeObject === 'Metadata') row += `,"object":${JSON.stringify(toPartialObjectMetadata(obj, out.metaVersion))}`;
  return row + '}';
}

/** The Table envelope around rendered rows; `columnDefinitions` omitted when `withColumns` is false (watch events after the first). */
export function tableJson(r: TableRenderer, metaVersion: 'v1' | 'v1beta1', listMeta: Record<string, unknown>, rows: string[], withColumns = true): string {
  const cols = withColumns ? JSON.stringify(r.columns) : 'null';
  return `{"kind":"Table","apiVersion":"meta.k8s.io/${metaVersion}","metadata":${JSON.stringify(listMeta)},"columnDefinitions":${cols},"rows":[${rows.join(',')}]}`;
}
