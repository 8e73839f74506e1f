// OpenAPI of a simulated cluster, as kube-apiserver v1.28 serves it:
// - /openapi/v2: the captured v1.28 document (reference/openapi-v2.json) plus the definitions
//   and paths of every established CRD; JSON, or gnostic protobuf for
//   `application/com.github.proto-openapi.spec.v2@v1.0+protobuf`; ETag and If-None-Match.
// - /openapi/v3: `{paths: {"api/v1": {serverRelativeURL: "/openapi/v3/api/v1?hash=…"}, …}}`
//   for every served group version; /openapi/v3/<gv> the document of one group version (its
//   paths and the schemas they reach), `?hash=` answered immutable, an old hash redirected
//   (301) to the current one, as kube-openapi's handler3.
// Built-in group versions are converted from the v2 document once per process and shared by
// every simulated cluster; CRD documents are built from each CRD's `openAPIV3Schema` as
// apiextensions-apiserver does (kind `io.<reversed group>.<version>.<Kind>`, apiVersion, kind
// and metadata added, x-kubernetes-group-version-kind). A cluster started with
// `openapiV3: false` answers 404 on /openapi/v3 (a member without v3, served v2 only).
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { StatusError } from '../../kube/status.ts';
import { closure, isObject, namedSchemas, refPrefix, refsOf, schemaV2toV3, schemaV3toV2, type JsonObject } from '../../kube/openapi-convert.ts';
import { kubeListParams, prettyParam, resourcePaths, type PathResource } from '../../kube/openapi-paths.ts';
import { encodeOpenAPIV2, openapiV2ProtobufSubtypes, openapiV2ProtobufType } from '../../kube/openapi-proto.ts';
import type { Registry, ResourceInfo } from './resources.ts';
import type { Store } from './store.ts';
import type { KObject } from './types.ts';

interface Served {
  json: string;
  /** sha512 of the JSON, upper-case hex (kube-openapi's ETag and ?hash=). */
  hash: string;
  protobuf?: Buffer;
}

const served = (doc: unknown): Served => {
  const json = JSON.stringify(doc);
  return { json, hash: createHash('sha512').update(json).digest('hex').toUpperCase() };
};

let builtinDoc: JsonObject | undefined;
/** The captured v1.28 /openapi/v2, parsed once per process (also the built-in kinds' schemas for decoding writes). */
export function builtinOpenAPIV2(): JsonObject {
  builtinDoc ??= JSON.parse(readFileSync(new URL('./reference/openapi-v2.json', import.meta.url), 'utf8')) as JsonObject;
  return builtinDoc;
}

const gvKey = (group: string, version: string) => (group ? `apis/${group}/${version}` : `api/${version}`);

/** A v2 parameter (after resolving #/parameters refs) in v3 form; undefined for a body parameter. */
function paramV3(p: JsonObject): JsonObject {
  const { type, uniqueItems, format, items, ...rest } = p;
  const schema: JsonObject = { type };
  if (uniqueItems !== undefined) schema.uniqueItems = uniqueItems;
  if (format !== undefined) schema.format = format;
  if (items !== undefined) schema.items = items;
  return { ...rest, schema };
}

function operationV3(op: JsonObject, shared: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(op)) {
    if (k === 'consumes' || k === 'produces' || k === 'schemes' || k === 'parameters' || k === 'responses') continue;
    out[k] = v;
  }
  const params: JsonObject[] = [];
  for (const raw of Array.isArray(op.parameters) ? op.parameters : []) {
    const p = isObject(raw) && typeof raw.$ref === 'string' ? shared[raw.$ref.replace('#/parameters/', '')] : raw;
    if (!isObject(p)) continue;
    if (p.in === 'body') {
      const consumes = Array.isArray(op.consumes) ? (op.consumes as string[]) : ['*/*'];
      out.requestBody = { content: Object.fromEntries(consumes.map((t) => [t, { schema: isObject(p.schema) ? schemaV2toV3(p.schema) : {} }])), required: p.required === true };
    } else params.push(paramV3(p));
  }
  if (params.length) out.parameters = params;
  const produces = Array.isArray(op.produces) ? (op.produces as string[]) : ['application/json'];
  const responses: JsonObject = {};
  for (const [code, r] of Object.entries(isObject(op.responses) ? op.responses : {})) {
    if (!isObject(r)) continue;
    responses[code] = isObject(r.schema) ? { description: r.description, content: Object.fromEntries(produces.map((t) => [t, { schema: schemaV2toV3(r.schema as JsonObject) }])) } : { description: r.description };
  }
  out.responses = responses;
  return out;
}

const builtinV3 = new Map<string, Served | null>();

/** The v3 document of one built-in group version, converted from the v2 document (once per process). */
function builtinGroupVersion(gv: string): Served | undefined {
  if (!builtinV3.has(gv)) {
    const v2 = builtinOpenAPIV2();
    const shared = isObject(v2.parameters) ? v2.parameters : {};
    const prefix = `/${gv}/`;
    const paths: JsonObject = {};
    const roots = new Set<string>();
    for (const [p, item] of Object.entries(isObject(v2.paths) ? v2.paths : {})) {
      if (!p.startsWith(prefix) || !isObject(item)) continue;
      const out: JsonObject = {};
      for (const [m, op] of Object.entries(item)) {
        if (m === 'parameters' && Array.isArray(op)) out.parameters = op.map((x) => (isObject(x) && typeof x.$ref === 'string' ? shared[x.$ref.replace('#/parameters/', '')] : x)).filter(isObject).map(paramV3);
        else if (isObject(op)) out[m] = operationV3(op, shared);
      }
      paths[p] = out;
      for (const r of refsOf(item)) if (r.startsWith(refPrefix.v2)) roots.add(r.slice(refPrefix.v2.length));
      for (const r of refsOf(Object.values(item).flatMap((op) => (isObject(op) && Array.isArray(op.parameters) ? op.parameters : [])).map((x) => (isObject(x) && typeof x.$ref === 'string' ? shared[x.$ref.replace('#/parameters/', '')] : x)))) {
        if (r.startsWith(refPrefix.v2)) roots.add(r.slice(refPrefix.v2.length));
      }
    }
    if (Object.keys(paths).length === 0) builtinV3.set(gv, null);
    else {
      const defs = namedSchemas(v2, 'v2');
      const schemas = Object.fromEntries(closure(defs, roots, 'v2').map((n) => [n, schemaV2toV3(defs[n])]));
      builtinV3.set(gv, served(v3Document(paths, schemas)));
    }
  }
  return builtinV3.get(gv) ?? undefined;
}

function v3Document(paths: JsonObject, schemas: JsonObject): JsonObject {
  return {
    openapi: '3.0.0',
    info: { title: 'Kubernetes', version: 'v1.28.0' },
    paths,
    components: { schemas, securitySchemes: { BearerToken: { type: 'apiKey', description: 'Bearer Token authentication', name: 'authorization', in: 'header' } } },
  };
}

/** apiextensions-apiserver's definition name: the group reversed, then version and kind. */
export function crdSchemaName(group: string, version: string, kind: string): string {
  return [...group.split('.').reverse(), version, kind].join('.');
}

interface CRDVersion {
  info: ResourceInfo;
  version: string;
  schema: JsonObject;
}

const objectMeta = 'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta';
const listMeta = 'io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta';
const typeMeta = {
  apiVersion: { type: 'string', description: 'APIVersion defines the versioned schema of this representation of an object.' },
  kind: { type: 'string', description: 'Kind is a string value representing the REST resource this object represents.' },
};

/** The kind and list schemas (v3 form) of one served CRD version. */
function crdSchemas(c: CRDVersion): JsonObject {
  const { group, kind } = c.info;
  const gvk = (k: string) => [{ group, kind: k, version: c.version }];
  const s = c.schema;
  const props = isObject(s.properties) ? s.properties : {};
  const kindSchema: JsonObject = {
    ...s,
    type: 'object',
    properties: { ...typeMeta, metadata: { allOf: [{ $ref: refPrefix.v3 + objectMeta }], description: "Standard object's metadata." }, ...Object.fromEntries(Object.entries(props).filter(([k]) => k !== 'apiVersion' && k !== 'kind' && k !== 'metadata')) },
    'x-kubernetes-group-version-kind': gvk(kind),
  };
  const listSchema: JsonObject = {
    description: `${c.info.listKind} is a list of ${kind}`,
    type: 'object',
    required: ['items'],
    properties: { ...typeMeta, items: { type: 'array', description: `List of ${c.info.resource}.`, items: { $ref: refPrefix.v3 + crdSchemaName(group, c.version, kind) } }, metadata: { allOf: [{ $ref: refPrefix.v3 + listMeta }], description: 'Standard list metadata.' } },
    'x-kubernetes-group-version-kind': gvk(c.info.listKind),
  };
  return { [crdSchemaName(group, c.version, kind)]: kindSchema, [crdSchemaName(group, c.version, c.info.listKind)]: listSchema };
}

function crdPathResource(c: CRDVersion): PathResource {
  const { group, kind } = c.info;
  return {
    group, version: c.version, resource: c.info.resource, kind, namespaced: c.info.namespaced, verbs: c.info.verbs,
    kindSchema: crdSchemaName(group, c.version, kind), listSchema: crdSchemaName(group, c.version, c.info.listKind),
  };
}

const pathOptions = { listParams: kubeListParams, commonParams: [prettyParam], produces: ['application/json', 'application/yaml'] };

/** Built-in definitions (v2 form) the CRD schemas refer to: ObjectMeta, ListMeta, WatchEvent and what they reach. */
function metaDefinitions(): Record<string, JsonObject> {
  const defs = namedSchemas(builtinOpenAPIV2(), 'v2');
  return Object.fromEntries(closure(defs, [objectMeta, listMeta, 'io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent'], 'v2').map((n) => [n, defs[n]]));
}

function crdGroupVersion(versions: CRDVersion[]): JsonObject {
  const schemas: JsonObject = Object.fromEntries(Object.entries(metaDefinitions()).map(([n, s]) => [n, schemaV2toV3(s)]));
  let paths: JsonObject = {};
  for (const c of versions) {
    Object.assign(schemas, crdSchemas(c));
    paths = { ...paths, ...resourcePaths(crdPathResource(c), 'v3', pathOptions) };
  }
  return v3Document(paths, schemas);
}

/** Served CRD versions with their schemas, from the CRD objects the registry serves. */
function crdVersions(store: Store, registry: Registry): CRDVersion[] {
  const out: CRDVersion[] = [];
  for (const info of registry.all()) {
    if (!info.crd) continue;
    const crd = store.get('apiextensions.k8s.io/customresourcedefinitions', undefined, info.crd) as KObject | undefined;
    const spec = crd && isObject(crd.spec) ? crd.spec : {};
    for (const v of Array.isArray(spec.versions) ? spec.versions : []) {
      if (!isObject(v) || typeof v.name !== 'string' || !info.versions.includes(v.name)) continue;
      const schema = isObject(v.schema) && isObject(v.schema.openAPIV3Schema) ? v.schema.openAPIV3Schema : { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };
      out.push({ info, version: v.name, schema });
    }
  }
  return out.sort((a, b) => a.info.id.localeCompare(b.info.id) || a.version.localeCompare(b.version));
}

/** What one cluster serves, rebuilt when its CRDs change (keyed by their resourceVersions). */
interface ClusterOpenAPI {
  signature: string;
  crdGroupVersions: Map<string, Served>;
  v2?: Served;
}

const perCluster = new WeakMap<Store, ClusterOpenAPI>();
/** v2 documents by CRD content, shared by clusters with the same CRDs (a few kept). */
const v2ByCrds = new Map<string, Served>();

function clusterState(store: Store, registry: Registry): { state: ClusterOpenAPI; crds: CRDVersion[] } {
  const crds = crdVersions(store, registry);
  const signature = createHash('sha256').update(JSON.stringify(crds.map((c) => [c.info.id, c.version, c.info.namespaced, c.info.verbs, c.schema]))).digest('hex');
  let state = perCluster.get(store);
  if (!state || state.signature !== signature) {
    const byGv = new Map<string, CRDVersion[]>();
    for (const c of crds) {
      const key = gvKey(c.info.group, c.version);
      byGv.set(key, [...(byGv.get(key) ?? []), c]);
    }
    state = { signature, crdGroupVersions: new Map([...byGv].map(([gv, list]) => [gv, served(crdGroupVersion(list))])) };
    perCluster.set(store, state);
  }
  return { state, crds };
}

function groupVersionDoc(store: Store, registry: Registry, gv: string): Served | undefined {
  const isServed = registry.groupList().some((g) => g.versions.some((v) => gvKey(g.name, v.version) === gv));
  if (!isServed) return undefined;
  return clusterState(store, registry).state.crdGroupVersions.get(gv) ?? builtinGroupVersion(gv);
}

function v2Document(store: Store, registry: Registry): Served {
  const { state, crds } = clusterState(store, registry);
  if (state.v2) return state.v2;
  let doc = v2ByCrds.get(state.signature);
  if (!doc) {
    const base = builtinOpenAPIV2();
    const definitions: JsonObject = { ...(base.definitions as JsonObject) };
    const paths: JsonObject = { ...(base.paths as JsonObject) };
    for (const c of crds) {
      for (const [n, s] of Object.entries(crdSchemas(c))) definitions[n] = schemaV3toV2(s as JsonObject);
      Object.assign(paths, resourcePaths(crdPathResource(c), 'v2', pathOptions));
    }
    doc = served({ ...base, paths, definitions });
    if (v2ByCrds.size >= 8) v2ByCrds.delete(v2ByCrds.keys().next().value!);
    v2ByCrds.set(state.signature, doc);
  }
  state.v2 = doc;
  return doc;
}

interface MediaRange {
  type: string;
  subtype: string;
  q: number;
}

function accepts(header: string | undefined): MediaRange[] {
  return (header && header.trim() ? header : '*/*')
    .split(',')
    .map((part, i) => {
      const [mt, ...ps] = part.split(';').map((s) => s.trim());
      const [type, subtype = ''] = mt.toLowerCase().split('/');
      const q = Number(ps.find((p) => p.startsWith('q='))?.slice(2) ?? 1);
      return { type, subtype, q: Number.isNaN(q) ? 1 : q, i };
    })
    .filter((m) => m.q > 0)
    .sort((a, b) => b.q - a.q || a.i - b.i);
}

function sendDoc(req: IncomingMessage, res: ServerResponse, doc: Served, type: 'json' | 'protobuf', extra: Record<string, string> = {}): void {
  const etag = `"${doc.hash}"`;
  const headers: Record<string, string | number> = { ETag: etag, Vary: 'Accept', ...extra };
  if (req.headers['if-none-match'] === etag) {
    res.writeHead(304, headers);
    return void res.end();
  }
  const body = type === 'json' ? Buffer.from(doc.json) : (doc.protobuf ??= encodeOpenAPIV2(JSON.parse(doc.json) as JsonObject));
  res.writeHead(200, { ...headers, 'Content-Type': type === 'json' ? 'application/json' : openapiV2ProtobufType, 'Content-Length': body.length });
  res.end(body);
}

const notAcceptable = () => new StatusError('NotAcceptable', 'only the following media types are accepted: application/json, application/com.github.proto-openapi.spec.v2.v1.0+protobuf');

/** Serves /openapi/v2, /openapi/v3 and /openapi/v3/<gv>; false when the path is none of them. */
export function serveOpenAPI(req: IncomingMessage, res: ServerResponse, url: URL, path: string, c: { store: Store; registry: Registry; openapiV3: boolean }): boolean {
  if (path === '/openapi/v2') {
    for (const m of accepts(req.headers.accept)) {
      if ((m.type === 'application' || m.type === '*') && (m.subtype === 'json' || m.subtype === '*')) return sendDoc(req, res, v2Document(c.store, c.registry), 'json'), true;
      if (m.type === 'application' && openapiV2ProtobufSubtypes.includes(m.subtype)) return sendDoc(req, res, v2Document(c.store, c.registry), 'protobuf'), true;
    }
    throw notAcceptable();
  }
  if (path !== '/openapi/v3' && !path.startsWith('/openapi/v3/')) return false;
  if (!c.openapiV3) throw new StatusError('NotFound', 'the server could not find the requested resource');
  if (path === '/openapi/v3') {
    const paths: Record<string, { serverRelativeURL: string }> = {};
    for (const g of c.registry.groupList()) {
      for (const v of g.versions) {
        const gv = gvKey(g.name, v.version);
        const doc = groupVersionDoc(c.store, c.registry, gv);
        if (doc) paths[gv] = { serverRelativeURL: `/openapi/v3/${gv}?hash=${doc.hash}` };
      }
    }
    const body = JSON.stringify({ paths });
    res.writeHead(200, { 'Content-Type': 'application/json', ETag: `"${createHash('sha512').update(body).digest('hex').toUpperCase()}"`, 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
    return true;
  }
  const gv = path.slice('/openapi/v3/'.length);
  const doc = groupVersionDoc(c.store, c.registry, gv);
  if (!doc) throw new StatusError('NotFound', 'the server could not find the requested resource');
  if (!accepts(req.headers.accept).some((m) => (m.type === 'application' || m.type === '*') && (m.subtype === 'json' || m.subtype === '*'))) throw notAcceptable();
  const hash = url.searchParams.get('hash');
  if (hash && hash !== doc.hash) {
    res.writeHead(301, { Location: `/openapi/v3/${gv}?hash=${doc.hash}`, 'Content-Length': 0 });
    res.end();
    return true;
  }
  sendDoc(req, res, doc, 'json', hash ? { 'Cache-Control': 'public, immutable', Expires: new Date(Date.now() + 365 * 86400_000).toUTCString() } : {});
  return true;
}
