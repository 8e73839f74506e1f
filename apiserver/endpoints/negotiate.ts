// Content negotiation: Accept → plain JSON, Table, PartialObjectMetadata(List), or the
// aggregated discovery document. Protobuf offered first with a JSON fallback gets JSON;
// nothing producible → 406 NotAcceptable.
import { StatusError } from '../../kube/status.ts';
import type { OutputFormat, Verb } from './request.ts';

interface MediaRange {
  type: string;
  subtype: string;
  params: Record<string, string>;
  q: number;
  index: number;
}

export function parseAccept(accept: string): MediaRange[] {
  const out: MediaRange[] = [];
  accept.split(',').forEach((part, index) => {
    const [mt, ...ps] = part.split(';').map((s) => s.trim());
    if (!mt) return;
    const [type, subtype = ''] = mt.toLowerCase().split('/');
    const params: Record<string, string> = {};
    let q = 1;
    for (const p of ps) {
      const eq = p.indexOf('=');
      if (eq < 0) continue;
      const k = p.slice(0, eq).trim();
      const v = p.slice(eq + 1).trim().replace(/^"|"$/g, '');
      if (k === 'q') q = Number(v) || 0;
      else params[k] = v;
    }
    if (q > 0) out.push({ type, subtype, params, q, index });
  });
  return out.sort((a, b) => b.q - a.q || a.index - b.index);
}

const isJson = (m: MediaRange) => (m.type === 'application' && (m.subtype === 'json' || m.subtype === '*')) || (m.type === '*' && m.subtype === '*');

export function notAcceptable(what = 'application/json, application/json;as=Table;v=v1;g=meta.k8s.io, application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io'): StatusError {
  return new StatusError('NotAcceptable', `only the following media types are accepted: ${what}`);
}

/** The output of a list, get or watch. `includeObject` is the query parameter, if given. */
export function negotiateOutput(accept: string | undefined, verb: Verb, includeObject?: string): OutputFormat {
  let include: OutputFormat['includeObject'] = 'Metadata';
  if (includeObject !== undefined && includeObject !== '') {
    if (includeObject !== 'None' && includeObject !== 'Metadata' && includeObject !== 'Object') {
      throw new StatusError('BadRequest', `invalid includeObject ${JSON.stringify(includeObject)}: use None, Metadata or Object`);
    }
    include = includeObject;
  }
  if (!accept || accept.trim() === '') return { kind: 'json', metaVersion: 'v1', includeObject: include, contentType: 'application/json' };
  for (const m of parseAccept(accept)) {
    if (!isJson(m)) continue;
    const as = m.params.as;
    if (as === undefined) return { kind: 'json', metaVersion: 'v1', includeObject: include, contentType: 'application/json' };
    const v = m.params.v;
    if (m.params.g !== 'meta.k8s.io' || (v !== 'v1' && v !== 'v1beta1')) continue;
    if (as === 'Table') return { kind: 'table', metaVersion: v, includeObject: include, contentType: `application/json;as=Table;v=${v};g=meta.k8s.io` };
    const partial = verb === 'list' ? as === 'PartialObjectMetadataList' : verb === 'get' ? as === 'PartialObjectMetadata' : as === 'PartialObjectMetadata' || as === 'PartialObjectMetadataList';
    if (partial) return { kind: 'partial', metaVersion: v, includeObject: include, contentType: `application/json;as=${as};v=${v};g=meta.k8s.io` };
  }
  throw notAcceptable();
}

export type DiscoveryFormat = { aggregated: false } | { aggregated: true; version: 'v2' | 'v2beta1'; contentType: string };

/** /api and /apis: the aggregated APIGroupDiscoveryList when asked for, plain JSON otherwise. */
export function negotiateDiscovery(accept: string | undefined, aggregatedAllowed: boolean): DiscoveryFormat {
  if (!accept || accept.trim() === '') return { aggregated: false };
  for (const m of parseAccept(accept)) {
    if (!isJson(m)) continue;
    const as = m.params.as;
    if (as === undefined) return { aggregated: false };
    if (aggregatedAllowed && as === 'APIGroupDiscoveryList' && m.params.g === 'apidiscovery.k8s.io' && (m.params.v === 'v2' || m.params.v === 'v2beta1')) {
      return { aggregated: true, version: m.params.v, contentType: `application/json;g=apidiscovery.k8s.io;v=${m.params.v};as=APIGroupDiscoveryList` };
    }
  }
  throw notAcceptable('application/json');
}
