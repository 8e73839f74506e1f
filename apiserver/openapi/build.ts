// The OpenAPI documents a view serves, built from the kinds it serves: for each kind, its
// schema and list schema as the member document it comes from has them (with every schema
// they refer to), converted to the served form; the paths and operations Panoptes serves for
// it (list, get, watch, and writes only where the resource's verbs have them), each with
// x-kubernetes-group-version-kind. A kind no member document describes gets an open schema
// (any fields) with its group-version-kind, so kubectl neither rejects nor misses it.
import type { OpenAPIV2, OpenAPIV3 } from 'openapi-types';
import { closure, convertSchema, refPrefix, type JsonObject, type OpenAPIForm } from '../../kube/openapi-convert.ts';
import { kubeListParams, prettyParam, resourcePaths, type ParamSpec } from '../../kube/openapi-paths.ts';
import { servedVerbs, type ResourceInfo } from '../discovery/catalog.ts';
import { panoptesVersion } from '../discovery/documents.ts';
import { listMetaName, metaDefinitions, objectMetaName, watchEventName } from './own-schema.ts';
import { sourceDoc, type SourceDoc } from './sources.ts';

export interface ServedKind {
  info: ResourceInfo;
  /** The document its schema comes from; undefined: none describes it. */
  source?: SourceDoc;
}

export interface ServedGroupVersion {
  group: string;
  version: string;
  kinds: ServedKind[];
}

/** The definitions of Panoptes's own kinds, each registered by its kind (apiserver/kinds.ts, the composition root). */
const ownDefinitions: Record<string, JsonObject> = {};
let panoptesDoc: SourceDoc | undefined;

/** Registers the OpenAPI v2 definitions of an own kind of panoptes.io (its kind, its list, what they refer to). */
export function registerDefinitions(definitions: Record<string, JsonObject>): void {
  for (const name of Object.keys(definitions)) if (name in ownDefinitions) throw new Error(`the OpenAPI definition ${name} is already registered`);
  Object.assign(ownDefinitions, definitions);
  panoptesDoc = undefined;
}

/** Panoptes's own definitions: the registered kinds (Cluster, MultiClusterService, ClusterSource, CollectionResource, SynchroMember) and the metadata kinds, as one source document. */
export function panoptesSource(): SourceDoc {
  return (panoptesDoc ??= sourceDoc('panoptes.io/v1alpha1', 'v2', { definitions: { ...metaDefinitions, ...ownDefinitions } }, 0));
}

/** The query parameters of Panoptes's list and watch (apiserver/read/params.ts). */
const panoptesListParams: ParamSpec[] = [
  ...kubeListParams,
  { name: 'includeObject', in: 'query', type: 'string', description: 'With a Table answer: what rows[].object holds: None, Metadata (default) or Object.' },
  { name: 'timeout', in: 'query', type: 'string', description: 'Shortens the request timeout (e.g. 30s).' },
  { name: 'clusters', in: 'query', type: 'string', description: 'Panoptes search: only objects of these member clusters (comma-separated, repeatable).' },
  { name: 'namespaces', in: 'query', type: 'string', description: 'Panoptes search: only objects in these namespaces (comma-separated, repeatable).' },
  { name: 'names', in: 'query', type: 'string', description: 'Panoptes search: only objects with these names (comma-separated, repeatable).' },
  { name: 'ownerUID', in: 'query', type: 'string', description: 'Panoptes search: only objects owned by these uids (comma-separated, repeatable).' },
];

const pathOptions = { listParams: panoptesListParams, commonParams: [prettyParam], produces: ['application/json'] };

const gvkOf = (r: ResourceInfo, kind: string) => [{ group: r.group, kind, version: r.version }];
const fallbackName = (r: ResourceInfo, kind: string) => `${r.group || 'core'}.${r.version}.${kind}`;

function openKindSchema(r: ResourceInfo): JsonObject {
  return {
    description: `${r.kind} as served by the member clusters (no member published its schema).`,
    type: 'object',
    'x-kubernetes-preserve-unknown-fields': true,
    'x-kubernetes-group-version-kind': gvkOf(r, r.kind),
  };
}

function listSchema(r: ResourceInfo, kindName: string, form: OpenAPIForm): JsonObject {
  return {
    description: `${r.kind}List is a list of ${r.kind}.`,
    type: 'object',
    required: ['items'],
    properties: {
      apiVersion: { type: 'string', description: 'APIVersion defines the versioned schema of this representation of an object.' },
      kind: { type: 'string', description: 'Kind is a string value representing the REST resource this object represents.' },
      items: { type: 'array', description: `List of ${r.resource}.`, items: { $ref: refPrefix[form] + kindName } },
      metadata: { $ref: refPrefix[form] + listMetaName, description: 'Standard list metadata.' },
    },
    'x-kubernetes-group-version-kind': gvkOf(r, `${r.kind}List`),
  };
}

interface Collected {
  schemas: Record<string, JsonObject>;
  names: Map<ServedKind, { kind: string; list: string }>;
}

function collect(kinds: ServedKind[], form: OpenAPIForm): Collected {
  const schemas: Record<string, JsonObject> = {};
  const names = new Map<ServedKind, { kind: string; list: string }>();
  const add = (src: SourceDoc, roots: string[]) => {
    for (const n of closure(src.schemas, roots, src.form)) if (!(n in schemas)) schemas[n] = convertSchema(src.schemas[n], src.form, form);
  };
  for (const k of kinds) {
    const { info, source } = k;
    const key = `${info.group}/${info.version}/${info.kind}`;
    let kind = source?.byGvk.get(key);
    let list = source?.byGvk.get(`${key}List`);
    if (source && kind) add(source, list ? [kind, list] : [kind]);
    else {
      kind = fallbackName(info, info.kind);
      list = undefined;
      schemas[kind] ??= form === 'v2' ? openKindSchema(info) : convertSchema(openKindSchema(info), 'v2', 'v3');
    }
    if (!list) {
      list = fallbackName(info, `${info.kind}List`);
      schemas[list] ??= listSchema(info, kind, form);
    }
    names.set(k, { kind, list });
  }
  add(panoptesSource(), [objectMetaName, listMetaName, watchEventName]);
  return { schemas: sortKeys(schemas), names };
}

function sortKeys<T>(o: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

function paths(kinds: ServedKind[], names: Collected['names'], form: OpenAPIForm): Record<string, JsonObject> {
  const out: Record<string, JsonObject> = {};
  for (const k of kinds) {
    const { info } = k;
    const n = names.get(k)!;
    const items = resourcePaths(
      { group: info.group, version: info.version, resource: info.resource, kind: info.kind, namespaced: info.namespaced, verbs: info.verbs ?? servedVerbs, kindSchema: n.kind, listSchema: n.list, patchTypes: info.patchTypes },
      form,
      pathOptions,
    );
    Object.assign(out, items);
  }
  return sortKeys(out);
}

const info = (): OpenAPIV2.InfoObject & OpenAPIV3.InfoObject => ({ title: 'Panoptes', version: `v${panoptesVersion}` });

/** The OpenAPI 3.0 document of one group version. */
export function buildGroupVersionV3(gv: ServedGroupVersion): OpenAPIV3.Document {
  const c = collect(gv.kinds, 'v3');
  // The paths and schemas are kube's, converted from the member documents as JSON (kube/openapi-convert.ts): typed here, where the document is assembled.
  return { openapi: '3.0.0', info: info(), paths: paths(gv.kinds, c.names, 'v3') as OpenAPIV3.PathsObject, components: { schemas: c.schemas as Record<string, OpenAPIV3.SchemaObject> } };
}

/** The Swagger 2.0 document of every group version of a view. */
export function buildV2(gvs: ServedGroupVersion[]): OpenAPIV2.Document {
  const kinds = gvs.flatMap((g) => g.kinds);
  const c = collect(kinds, 'v2');
  return { swagger: '2.0', info: info(), paths: paths(kinds, c.names, 'v2') as OpenAPIV2.PathsObject, definitions: c.schemas as OpenAPIV2.DefinitionsObject };
}

