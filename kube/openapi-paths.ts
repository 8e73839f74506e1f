// The OpenAPI paths of one resource as kube-apiserver writes them: a collection path (list,
// create, deletecollection), an item path (read, replace, patch, delete), the list of every
// namespace for namespaced resources, and the legacy /watch/ paths; every operation carries
// `x-kubernetes-action` and `x-kubernetes-group-version-kind` (kubectl explain finds a kind by
// them, kubectl's field-validation check looks for the PATCH operation's `fieldValidation`
// parameter). Only the operations of the verbs given are written. Swagger 2.0 or OpenAPI 3.0.
import { refPrefix, type JsonObject, type OpenAPIForm } from './openapi-convert.ts';

export interface ParamSpec {
  name: string;
  in: 'query' | 'path';
  type: 'string' | 'integer' | 'boolean';
  description: string;
  required?: boolean;
}

export interface PathResource {
  group: string;
  version: string;
  resource: string;
  kind: string;
  namespaced: boolean;
  /** Kubernetes verbs: get, list, watch, create, update, patch, delete, deletecollection. */
  verbs: string[];
  /** Schema names of the kind and of its list kind. */
  kindSchema: string;
  listSchema: string;
  /** The PATCH content types accepted (default: a custom resource's, JSON patch, merge patch and apply). */
  patchTypes?: string[];
}

export interface PathOptions {
  /** Query parameters of list and watch operations. */
  listParams: ParamSpec[];
  /** Query parameters of every operation (e.g. pretty). */
  commonParams?: ParamSpec[];
  /** Media types answered. */
  produces?: string[];
}

const namespaceParam: ParamSpec = { name: 'namespace', in: 'path', type: 'string', description: 'object name and auth scope, such as for teams and projects', required: true };
const nameParam = (kind: string): ParamSpec => ({ name: 'name', in: 'path', type: 'string', description: `name of the ${kind}`, required: true });
const writeParams: ParamSpec[] = [
  { name: 'dryRun', in: 'query', type: 'string', description: 'When present, indicates that modifications should not be persisted. Valid values are: - All: all dry run stages will be processed' },
  { name: 'fieldManager', in: 'query', type: 'string', description: 'fieldManager is a name associated with the actor or entity that is making these changes.' },
  {
    name: 'fieldValidation',
    in: 'query',
    type: 'string',
    description: 'fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: Ignore, Warn, Strict.',
  },
];

const camel = (s: string) => s.split(/[.-]/).filter(Boolean).map((w) => w[0].toUpperCase() + w.slice(1)).join('');

/** kube-apiserver's operation id stem of a group version: CoreV1, AppsV1, NetworkingV1, DemoPanoptesIoV1. */
export function operationStem(group: string, version: string): string {
  return `${camel(group === '' ? 'core' : group.replace(/\.k8s\.io$/, ''))}${camel(version)}`;
}

/** The tag kube-apiserver puts on a group version's operations: core_v1, apps_v1, networking_v1. */
function tag(group: string, version: string): string {
  return `${(group === '' ? 'core' : group.replace(/\.k8s\.io$/, '')).replace(/[.-]/g, '').toLowerCase()}_${version}`;
}

function param(p: ParamSpec, form: OpenAPIForm): JsonObject {
  const out: JsonObject = { name: p.name, in: p.in, description: p.description };
  if (p.required) out.required = true;
  if (form === 'v2') {
    out.type = p.type;
    out.uniqueItems = true;
  } else out.schema = { type: p.type, uniqueItems: true };
  return out;
}

const ref = (name: string, form: OpenAPIForm) => ({ $ref: refPrefix[form] + name });

function responses(codes: Array<[string, string, string | undefined]>, form: OpenAPIForm, produces: string[]): JsonObject {
  const out: JsonObject = {};
  for (const [code, description, schema] of codes) {
    if (!schema) out[code] = { description };
    else if (form === 'v2') out[code] = { description, schema: ref(schema, form) };
    else out[code] = { description, content: Object.fromEntries(produces.map((t) => [t, { schema: ref(schema, form) }])) };
  }
  out['401'] = { description: 'Unauthorized' };
  return out;
}

interface Op {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  action: string;
  id: string;
  description: string;
  params: ParamSpec[];
  body?: { schema: string; patch?: string[] };
  codes: Array<[string, string, string | undefined]>;
}

function operation(r: PathResource, op: Op, form: OpenAPIForm, opts: PathOptions): JsonObject {
  const produces = opts.produces ?? ['application/json'];
  const out: JsonObject = { description: op.description, operationId: op.id, tags: [tag(r.group, r.version)] };
  const params = [...op.params, ...(opts.commonParams ?? [])].map((p) => param(p, form));
  if (op.body) {
    const consumes = op.body.patch ?? ['*/*'];
    const bodySchema = op.body.patch ? { type: 'object', description: 'Patch is provided to give a concrete name and type to the Kubernetes PATCH request body.' } : ref(op.body.schema, form);
    if (form === 'v2') {
      params.unshift({ name: 'body', in: 'body', required: true, schema: bodySchema });
      out.consumes = consumes;
    } else out.requestBody = { content: Object.fromEntries(consumes.map((t) => [t, { schema: bodySchema }])), required: true };
  }
  if (form === 'v2') {
    out.produces = produces;
    out.schemes = ['https'];
  }
  if (params.length) out.parameters = params;
  out.responses = responses(op.codes, form, produces);
  out['x-kubernetes-action'] = op.action;
  out['x-kubernetes-group-version-kind'] = { group: r.group, kind: r.kind, version: r.version };
  return out;
}

/** The path items of one resource, keyed by path (relative to the server: /api/v1/..., /apis/G/V/...). */
export function resourcePaths(r: PathResource, form: OpenAPIForm, opts: PathOptions): Record<string, JsonObject> {
  const base = r.group ? `/apis/${r.group}/${r.version}` : `/api/${r.version}`;
  const stem = operationStem(r.group, r.version);
  const has = (v: string) => r.verbs.includes(v);
  const ns = r.namespaced ? 'Namespaced' : '';
  const scope = r.namespaced ? [namespaceParam] : [];
  const collection = r.namespaced ? `${base}/namespaces/{namespace}/${r.resource}` : `${base}/${r.resource}`;
  const item = `${collection}/{name}`;
  const items: Record<string, JsonObject> = {};
  const add = (path: string, op: Op) => {
    items[path] ??= {};
    items[path][op.method] = operation(r, op, form, opts);
  };
  const list: Array<[string, string, string | undefined]> = [['200', 'OK', r.listSchema]];
  const one: Array<[string, string, string | undefined]> = [['200', 'OK', r.kindSchema]];

  if (has('list')) {
    add(collection, { method: 'get', action: 'list', id: `list${stem}${ns}${r.kind}`, description: `list or watch objects of kind ${r.kind}`, params: [...scope, ...opts.listParams], codes: list });
    if (r.namespaced) add(`${base}/${r.resource}`, { method: 'get', action: 'list', id: `list${stem}${r.kind}ForAllNamespaces`, description: `list or watch objects of kind ${r.kind}`, params: opts.listParams, codes: list });
  }
  if (has('create')) add(collection, { method: 'post', action: 'post', id: `create${stem}${ns}${r.kind}`, description: `create a ${r.kind}`, params: [...scope, ...writeParams], body: { schema: r.kindSchema }, codes: [['200', 'OK', r.kindSchema], ['201', 'Created', r.kindSchema], ['202', 'Accepted', r.kindSchema]] });
  if (has('deletecollection')) add(collection, { method: 'delete', action: 'deletecollection', id: `deletecollection${stem}${ns}${r.kind}`, description: `delete collection of ${r.kind}`, params: [...scope, ...opts.listParams.filter((p) => p.name !== 'watch')], codes: [['200', 'OK', undefined]] });
  if (has('get')) add(item, { method: 'get', action: 'get', id: `read${stem}${ns}${r.kind}`, description: `read the specified ${r.kind}`, params: [nameParam(r.kind), ...scope], codes: one });
  if (has('update')) add(item, { method: 'put', action: 'put', id: `replace${stem}${ns}${r.kind}`, description: `replace the specified ${r.kind}`, params: [nameParam(r.kind), ...scope, ...writeParams], body: { schema: r.kindSchema }, codes: [['200', 'OK', r.kindSchema], ['201', 'Created', r.kindSchema]] });
  if (has('patch')) add(item, { method: 'patch', action: 'patch', id: `patch${stem}${ns}${r.kind}`, description: `partially update the specified ${r.kind}`, params: [nameParam(r.kind), ...scope, ...writeParams, { name: 'force', in: 'query', type: 'boolean', description: 'Force is going to "force" Apply requests.' }], body: { schema: r.kindSchema, patch: r.patchTypes ?? ['application/json-patch+json', 'application/merge-patch+json', 'application/apply-patch+yaml'] }, codes: [['200', 'OK', r.kindSchema], ['201', 'Created', r.kindSchema]] });
  if (has('delete')) add(item, { method: 'delete', action: 'delete', id: `delete${stem}${ns}${r.kind}`, description: `delete a ${r.kind}`, params: [nameParam(r.kind), ...scope, { name: 'dryRun', in: 'query', type: 'string', description: writeParams[0].description }], codes: [['200', 'OK', r.kindSchema], ['202', 'Accepted', r.kindSchema]] });
  if (has('watch')) {
    const watchBase = r.namespaced ? `${base}/watch/namespaces/{namespace}/${r.resource}` : `${base}/watch/${r.resource}`;
    const event: Array<[string, string, string | undefined]> = [['200', 'OK', 'io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent']];
    const watchParams = opts.listParams.filter((p) => p.name !== 'watch');
    add(watchBase, { method: 'get', action: 'watchlist', id: `watch${stem}${ns}${r.kind}List`, description: `watch individual changes to a list of ${r.kind}. deprecated: use the 'watch' parameter with a list operation instead.`, params: [...scope, ...watchParams], codes: event });
    if (r.namespaced) add(`${base}/watch/${r.resource}`, { method: 'get', action: 'watchlist', id: `watch${stem}${r.kind}ListForAllNamespaces`, description: `watch individual changes to a list of ${r.kind}. deprecated: use the 'watch' parameter with a list operation instead.`, params: watchParams, codes: event });
    add(`${watchBase}/{name}`, { method: 'get', action: 'watch', id: `watch${stem}${ns}${r.kind}`, description: `watch changes to an object of kind ${r.kind}. deprecated: use the 'watch' parameter with a list operation instead, filtered to a single item with the 'fieldSelector' parameter.`, params: [nameParam(r.kind), ...scope, ...watchParams], codes: event });
  }
  return items;
}

/** kube-apiserver's list and watch query parameters. */
export const kubeListParams: ParamSpec[] = [
  { name: 'allowWatchBookmarks', in: 'query', type: 'boolean', description: 'allowWatchBookmarks requests watch events with type "BOOKMARK".' },
  { name: 'continue', in: 'query', type: 'string', description: 'The continue option should be set when retrieving more results from the server.' },
  { name: 'fieldSelector', in: 'query', type: 'string', description: 'A selector to restrict the list of returned objects by their fields. Defaults to everything.' },
  { name: 'labelSelector', in: 'query', type: 'string', description: 'A selector to restrict the list of returned objects by their labels. Defaults to everything.' },
  { name: 'limit', in: 'query', type: 'integer', description: 'limit is a maximum number of responses to return for a list call.' },
  { name: 'resourceVersion', in: 'query', type: 'string', description: 'resourceVersion sets a constraint on what resource versions a request may be served from.' },
  { name: 'resourceVersionMatch', in: 'query', type: 'string', description: 'resourceVersionMatch determines how resourceVersion is applied to list calls.' },
  { name: 'sendInitialEvents', in: 'query', type: 'boolean', description: '`sendInitialEvents=true` may be set together with `watch=true`: the stream begins with synthetic events for every object.' },
  { name: 'timeoutSeconds', in: 'query', type: 'integer', description: 'Timeout for the list/watch call.' },
  { name: 'watch', in: 'query', type: 'boolean', description: 'Watch for changes to the described resources and return them as a stream of add, update, and remove notifications.' },
];

export const prettyParam: ParamSpec = { name: 'pretty', in: 'query', type: 'string', description: "If 'true', then the output is pretty printed." };
