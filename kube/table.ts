// kube-apiserver's meta.k8s.io Table and PartialObjectMetadata, per object, so list, get and
// every watch event render the same way, in Panoptes and in the simulated member clusters.
// Columns: kube-apiserver's for the built-in kinds that have printers (reference/
// table-columns.json, captured from v1.28, + printers.ts), a CRD's additionalPrinterColumns
// (or Age when it declares none), or Name / Created At (kube's default table convertor).
// Printing only: no HTTP, no Panoptes views (apiserver/read/table.ts adds the Cluster column).
import { readFileSync } from 'node:fs';
import { humanDuration, podRowConditions, printers, type Printer } from './printers.ts';
import { jsonArrayString, type JsonArrayText } from './json-array.ts';

type Obj = Record<string, unknown>;

/** What a Table row is printed from: a Kubernetes object as JSON. */
export interface PrintableObject {
  metadata?: Obj & { name?: string; creationTimestamp?: string };
  [key: string]: unknown;
}

export interface TableColumnDefinition {
  name: string;
  type: string;
  format: string;
  description: string;
  priority: number;
}

/** A CRD version's additionalPrinterColumns entry. */
export interface PrinterColumn {
  name: string;
  type: string;
  format?: string;
  description?: string;
  priority?: number;
  jsonPath: string;
}

/** The resource whose objects are printed; `printerColumns` set (possibly empty) for custom resources. */
export interface PrintedResource {
  group: string;
  resource: string;
  printerColumns?: PrinterColumn[];
}

/** The columns of a resource and the cells of one of its objects (`now` in ms, for ages). */
export interface TablePrinter {
  /** Every column (priority 1 ones are shown by kubectl -o wide only). */
  columns: TableColumnDefinition[];
  cells(object: PrintableObject, now: number): unknown[];
}

/** What `rows[].object` holds and which meta.k8s.io version is served. */
export interface TableOutput {
  includeObject: 'None' | 'Metadata' | 'Object';
  metaVersion: 'v1' | 'v1beta1';
}

const referenceColumns = JSON.parse(readFileSync(new URL('./reference/table-columns.json', import.meta.url), 'utf8')) as Record<string, TableColumnDefinition[]>;

const nameDescription = referenceColumns['/configmaps']?.[0]?.description ?? 'Name must be unique within a namespace.';
const creationDescription =
  referenceColumns['/configmaps']?.find((c) => c.name === 'Age')?.description ?? 'CreationTimestamp is a timestamp representing the server time when this object was created.';

const nameColumn: TableColumnDefinition = { name: 'Name', type: 'string', format: 'name', description: nameDescription, priority: 0 };

const isRecord = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A CRD version's additionalPrinterColumns (entries without a name or jsonPath dropped). */
export function crdPrinterColumns(crdVersion: unknown): PrinterColumn[] {
  const cols = isRecord(crdVersion) && Array.isArray(crdVersion.additionalPrinterColumns) ? crdVersion.additionalPrinterColumns.filter(isRecord) : [];
  return cols
    .filter((c) => typeof c.name === 'string' && typeof c.jsonPath === 'string')
    .map((c) => ({
      name: c.name as string,
      type: typeof c.type === 'string' ? c.type : 'string',
      format: typeof c.format === 'string' ? c.format : '',
      description: typeof c.description === 'string' ? c.description : '',
      priority: typeof c.priority === 'number' ? c.priority : 0,
      jsonPath: c.jsonPath as string,
    }));
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

/** A custom resource's cell, as apiextensions-apiserver's tableconvertor (cellForJSONValue) makes it. */
function crdCell(col: PrinterColumn, obj: PrintableObject, now: number): unknown {
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
    case 'date': {
      // A timestamp becomes its age ("5m"), as for the Age column kube adds to a CRD without columns.
      if (typeof v !== 'string') return null;
      if (v === '') return '<unknown>';
      const t = Date.parse(v);
      if (Number.isNaN(t)) return '<invalid>';
      return humanDuration(now - t);
    }
    default:
      return null;
  }
}

const createdAt = (obj: PrintableObject): string | null => {
  const ts = obj.metadata?.creationTimestamp;
  if (!ts) return null;
  const t = Date.parse(ts);
  return Number.isNaN(t) ? null : new Date(t).toISOString().replace(/\.\d{3}Z$/, 'Z');
};

/** The Table printer of a resource, as kube-apiserver (or apiextensions-apiserver) has it. */
export function tablePrinter(r: PrintedResource): TablePrinter {
  const key = `${r.group}/${r.resource}`;
  const printer: Printer | undefined = printers[key];
  if (printer && referenceColumns[key]) return { columns: referenceColumns[key], cells: (o, now) => printer(o, now) };
  if (r.printerColumns) {
    const crdCols = r.printerColumns.length
      ? r.printerColumns
      : [{ name: 'Age', type: 'date', format: '', description: creationDescription, priority: 0, jsonPath: '.metadata.creationTimestamp' }];
    return {
      columns: [nameColumn, ...crdCols.map((c) => ({ name: c.name, type: c.type, format: c.format ?? '', description: c.description ?? '', priority: c.priority ?? 0 }))],
      cells: (o, now) => [o.metadata?.name ?? '', ...crdCols.map((c) => crdCell(c, o, now))],
    };
  }
  return {
    columns: [nameColumn, { name: 'Created At', type: 'date', format: '', description: creationDescription, priority: 0 }],
    cells: (o) => [o.metadata?.name ?? '', createdAt(o)],
  };
}

export interface PartialObjectMetadata {
  kind: 'PartialObjectMetadata';
  apiVersion: string;
  metadata: Obj;
}

/** The object's metadata as a PartialObjectMetadata (meta.k8s.io/v1 or v1beta1). */
export function toPartialObjectMetadata(obj: PrintableObject, version: 'v1' | 'v1beta1' = 'v1'): PartialObjectMetadata {
  return { kind: 'PartialObjectMetadata', apiVersion: `meta.k8s.io/${version}`, metadata: obj.metadata ?? {} };
}

/** A PartialObjectMetadataList of objects, its items as JSON text. */
export function partialObjectMetadataListDocument(objects: PrintableObject[], version: 'v1' | 'v1beta1', listMeta: Obj): JsonArrayText {
  const items = objects.map((o) => JSON.stringify(toPartialObjectMetadata(o, version)));
  return { head: `{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/${version}","metadata":${JSON.stringify(listMeta)},"items":[`, items, tail: ']}' };
}

/** A PartialObjectMetadataList of objects as JSON text. */
export function partialObjectMetadataListJson(objects: PrintableObject[], version: 'v1' | 'v1beta1', listMeta: Obj): string {
  return jsonArrayString(partialObjectMetadataListDocument(objects, version, listMeta));
}

/**
 * One Table row as JSON text: the given cells, pod row conditions, and `object` as
 * includeObject says (Object splices the object's JSON text without re-serializing it).
 */
export function tableRowJson(cells: unknown[], r: PrintedResource, obj: PrintableObject, objectText: string, out: TableOutput): string {
  let row = `{"cells":${JSON.stringify(cells)}`;
  if (r.group === '' && r.resource === 'pods') {
    const conditions = podRowConditions(obj);
    if (conditions) row += `,"conditions":${JSON.stringify(conditions)}`;
  }
  if (out.includeObject === 'Object') row += `,"object":${objectText}`;
  else if (out.includeObject === 'Metadata') row += `,"object":${JSON.stringify(toPartialObjectMetadata(obj, out.metaVersion))}`;
  return row + '}';
}

/** The Table envelope around rendered rows; `columns` null in watch events after the first (kube's NoHeaders). */
export function tableDocument(columns: TableColumnDefinition[] | null, metaVersion: 'v1' | 'v1beta1', listMeta: Obj, rows: readonly string[]): JsonArrayText {
  return { head: `{"kind":"Table","apiVersion":"meta.k8s.io/${metaVersion}","metadata":${JSON.stringify(listMeta)},"columnDefinitions":${JSON.stringify(columns)},"rows":[`, items: rows, tail: ']}' };
}

/** The Table envelope around rendered rows as JSON text. */
export function tableJson(columns: TableColumnDefinition[] | null, metaVersion: 'v1' | 'v1beta1', listMeta: Obj, rows: readonly string[]): string {
  return jsonArrayString(tableDocument(columns, metaVersion, listMeta, rows));
}
