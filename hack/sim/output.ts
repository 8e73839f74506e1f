// What a resource request of a simulated cluster answers, as kube-apiserver negotiates it
// from the Accept header: the object (or list) as JSON, a meta.k8s.io Table (v1 or v1beta1,
// includeObject None|Metadata|Object, the kind's columns or the CRD version's
// additionalPrinterColumns), or PartialObjectMetadata / PartialObjectMetadataList.
// Negotiation is Panoptes' (apiserver/endpoints/negotiate.ts) and printing kube/table.ts, so the
// simulator and Panoptes render one way. A single cluster's Table has no Cluster column.
// Every answer is `Content-Type: application/json`: kube-apiserver writes Tables and
// PartialObjectMetadata with the JSON serializer's own media type, without the `as=`
// parameters (WriteObjectNegotiated), and watches as application/json too.
import { stringifyJson } from '../../kube/json-text.ts';
import { negotiateOutput } from '../../apiserver/endpoints/negotiate.ts';
import type { OutputFormat, Verb } from '../../apiserver/endpoints/request.ts';
import { partialObjectMetadataListJson, tableJson, tablePrinter, tableRowJson, toPartialObjectMetadata, type PrintedResource, type TablePrinter } from '../../kube/table.ts';
import type { ResourceInfo } from './resources.ts';
import type { KObject } from './types.ts';

export interface Output {
  format: OutputFormat;
  /** What the Table is printed from. */
  resource: PrintedResource;
  printer?: TablePrinter;
}

/**
 * The output of a request from its Accept header (first acceptable media type wins;
 * protobuf is never produced; nothing acceptable: 406 NotAcceptable). `includeObject` is
 * read only for a Table, as kube-apiserver does. `printAs`: the Scale subresource prints
 * with the default columns.
 */
export function negotiate(accept: string | undefined, verb: Verb, includeObject: string | null, info: ResourceInfo, version: string, printAs?: 'scale'): Output {
  let format = negotiateOutput(accept, verb);
  if (format.kind === 'table' && includeObject !== null) format = negotiateOutput(accept, verb, includeObject);
  const resource: PrintedResource =
    printAs === 'scale' ? { group: 'autoscaling', resource: 'scale' } : { group: info.group, resource: info.resource, ...(info.crd ? { printerColumns: info.printerColumns?.[version] ?? [] } : {}) };
  return { format, resource, printer: format.kind === 'table' ? tablePrinter(resource) : undefined };
}

function tableRow(out: Output, obj: KObject, now: number): string {
  return tableRowJson(out.printer!.cells(obj, now), out.resource, obj, stringifyJson(obj), out.format);
}

/** One object (get, and the answers of writes); a Status passes through as it is. */
export function objectBody(out: Output, obj: KObject): string {
  if (out.format.kind === 'json' || obj.kind === 'Status') return stringifyJson(obj);
  if (out.format.kind === 'partial') return JSON.stringify(toPartialObjectMetadata(obj, out.format.metaVersion));
  const meta = obj.metadata.resourceVersion ? { resourceVersion: obj.metadata.resourceVersion } : {};
  return tableJson(out.printer!.columns, out.format.metaVersion, meta, [tableRow(out, obj, Date.now())]);
}

/** A list: `{kind: listKind, apiVersion, metadata, items}`, a Table, or a PartialObjectMetadataList. */
export function listBody(out: Output, listKind: string, apiVersion: string, listMeta: Record<string, unknown>, items: KObject[]): string {
  if (out.format.kind === 'partial') return partialObjectMetadataListJson(items, out.format.metaVersion, listMeta);
  if (out.format.kind === 'table') {
    const now = Date.now();
    return tableJson(out.printer!.columns, out.format.metaVersion, listMeta, items.map((o) => tableRow(out, o, now)));
  }
  const head = JSON.stringify({ kind: listKind, apiVersion, metadata: listMeta });
  return `${head.slice(0, -1)},"items":[${items.map((o) => stringifyJson(o)).join(',')}]}`;
}

/** Encodes `{"type","object"}` lines of one watch. */
export type WatchLineEncoder = (type: string, object: KObject) => string;

/**
 * The watch event encoder for a non-JSON output (undefined for JSON). As kube-apiserver's
 * watch encoder: every event's object is transformed, bookmarks too (a Table event carries
 * one row, a bookmark's from its nearly empty object), and only the first event's Table
 * carries columnDefinitions (TableOptions.NoHeaders is set after it). ERROR events carry a
 * Status, untransformed.
 */
export function watchLineEncoder(out: Output): WatchLineEncoder | undefined {
  const f = out.format;
  if (f.kind === 'json') return undefined;
  const line = (type: string, objectJson: string) => `{"type":${JSON.stringify(type)},"object":${objectJson}}\n`;
  if (f.kind === 'partial') return (type, o) => line(type, JSON.stringify(toPartialObjectMetadata(o, f.metaVersion)));
  let first = true;
  return (type, o) => {
    const columns = first ? out.printer!.columns : null;
    first = false;
    const meta = o.metadata.resourceVersion ? { resourceVersion: o.metadata.resourceVersion } : {};
    return line(type, tableJson(columns, f.metaVersion, meta, [tableRow(out, o, Date.now())]));
  };
}
