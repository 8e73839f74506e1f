// Structural checks of served OpenAPI documents, for tests: the Swagger 2.0 shape (what
// gnostic and kubectl accept), every $ref resolving, and every served kind findable the way
// kubectl finds it (x-kubernetes-group-version-kind on a schema, and on an operation of one of
// the paths kubectl explain searches).
import { isObject, refsOf, type JsonObject } from '../../kube/openapi-convert.ts';

export interface Kind {
  group: string;
  version: string;
  kind: string;
  resource: string;
  namespaced: boolean;
}

const methods = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch']);
const v2SchemaKeys = new Set([
  '$ref', 'format', 'title', 'description', 'default', 'multipleOf', 'maximum', 'exclusiveMaximum', 'minimum', 'exclusiveMinimum',
  'maxLength', 'minLength', 'pattern', 'maxItems', 'minItems', 'uniqueItems', 'maxProperties', 'minProperties', 'required', 'enum',
  'additionalProperties', 'type', 'items', 'allOf', 'properties', 'discriminator', 'readOnly', 'xml', 'externalDocs', 'example',
]);
const v2Types = new Set(['object', 'array', 'string', 'integer', 'number', 'boolean', 'null', 'file']);

function checkV2Schema(s: unknown, at: string, out: string[]): void {
  if (!isObject(s)) return void out.push(`${at}: not a schema object`);
  for (const k of Object.keys(s)) if (!v2SchemaKeys.has(k) && !k.startsWith('x-')) out.push(`${at}: ${k} is not a Swagger 2.0 schema keyword`);
  if (s.type !== undefined && !(typeof s.type === 'string' && v2Types.has(s.type))) out.push(`${at}: bad type ${JSON.stringify(s.type)}`);
  if (s.required !== undefined && !(Array.isArray(s.required) && s.required.every((x) => typeof x === 'string'))) out.push(`${at}: required must list names`);
  if (isObject(s.properties)) for (const [k, v] of Object.entries(s.properties)) checkV2Schema(v, `${at}.properties.${k}`, out);
  else if (s.properties !== undefined) out.push(`${at}: properties must be an object`);
  if (s.items !== undefined) checkV2Schema(s.items, `${at}.items`, out);
  if (isObject(s.additionalProperties)) checkV2Schema(s.additionalProperties, `${at}.additionalProperties`, out);
  else if (s.additionalProperties !== undefined && typeof s.additionalProperties !== 'boolean') out.push(`${at}: additionalProperties must be a schema or a boolean`);
  if (Array.isArray(s.allOf)) s.allOf.forEach((x, i) => checkV2Schema(x, `${at}.allOf[${i}]`, out));
}

const gvkMatches = (v: unknown, k: Kind, kind = k.kind) => isObject(v) && v.group === k.group && v.version === k.version && v.kind === kind;
const hasGvk = (s: unknown, k: Kind, kind = k.kind) => isObject(s) && Array.isArray(s['x-kubernetes-group-version-kind']) && s['x-kubernetes-group-version-kind'].some((g) => gvkMatches(g, k, kind));

/** The paths kubectl explain looks a resource's kind up by. */
function explainPaths(k: Kind): string[] {
  const base = k.group ? `/apis/${k.group}/${k.version}` : `/api/${k.version}`;
  return [`${base}/${k.resource}`, `${base}/${k.resource}/{name}`, `${base}/namespaces/{namespace}/${k.resource}`, `${base}/namespaces/{namespace}/${k.resource}/{name}`];
}

function kindByPaths(paths: JsonObject, k: Kind, out: string[]): void {
  const found = explainPaths(k).some((p) => isObject(paths[p]) && Object.entries(paths[p] as JsonObject).some(([m, op]) => methods.has(m) && isObject(op) && gvkMatches(op['x-kubernetes-group-version-kind'], k)));
  if (!found) out.push(`${k.group}/${k.version} ${k.kind}: no operation with its x-kubernetes-group-version-kind on ${explainPaths(k).join(' or ')}`);
}

/** Problems of a Swagger 2.0 document serving `kinds`; [] when it is valid. */
export function swaggerProblems(doc: JsonObject, kinds: Kind[]): string[] {
  const out: string[] = [];
  if (doc.swagger !== '2.0') out.push('swagger is not "2.0"');
  if (!isObject(doc.info) || typeof doc.info.title !== 'string' || typeof doc.info.version !== 'string') out.push('info needs title and version');
  const paths = isObject(doc.paths) ? doc.paths : (out.push('paths must be an object'), {});
  const defs = isObject(doc.definitions) ? doc.definitions : (out.push('definitions must be an object'), {});
  const ids = new Set<string>();
  for (const [p, item] of Object.entries(paths)) {
    if (!p.startsWith('/')) out.push(`path ${p} must start with /`);
    if (!isObject(item)) continue;
    for (const [m, op] of Object.entries(item)) {
      if (m === 'parameters' || m.startsWith('x-')) continue;
      if (!methods.has(m) || !isObject(op)) {
        out.push(`${p}: ${m} is not an operation`);
        continue;
      }
      if (typeof op.operationId === 'string') {
        if (ids.has(op.operationId)) out.push(`${p} ${m}: duplicate operationId ${op.operationId}`);
        ids.add(op.operationId);
      }
      if (!isObject(op.responses) || Object.keys(op.responses).length === 0) out.push(`${p} ${m}: no responses`);
      for (const r of Object.values(isObject(op.responses) ? op.responses : {})) if (!isObject(r) || typeof r.description !== 'string') out.push(`${p} ${m}: a response needs a description`);
      if (!isObject(op['x-kubernetes-group-version-kind']) || typeof op['x-kubernetes-action'] !== 'string') out.push(`${p} ${m}: no x-kubernetes-group-version-kind / x-kubernetes-action`);
      for (const prm of Array.isArray(op.parameters) ? op.parameters : []) {
        if (!isObject(prm) || typeof prm.name !== 'string' || !['query', 'header', 'path', 'formData', 'body'].includes(String(prm.in))) out.push(`${p} ${m}: bad parameter ${JSON.stringify(prm)}`);
        else if (prm.in === 'body' ? !isObject(prm.schema) : typeof prm.type !== 'string') out.push(`${p} ${m}: parameter ${prm.name} lacks ${prm.in === 'body' ? 'schema' : 'type'}`);
        else if (prm.in === 'path' && (prm.required !== true || !p.includes(`{${prm.name}}`))) out.push(`${p} ${m}: path parameter ${prm.name} must be required and in the path`);
      }
    }
  }
  for (const [n, s] of Object.entries(defs)) checkV2Schema(s, `definitions.${n}`, out);
  for (const r of refsOf(doc)) {
    if (!r.startsWith('#/definitions/')) out.push(`$ref ${r} does not point into definitions`);
    else if (!(r.slice('#/definitions/'.length) in defs)) out.push(`$ref ${r} does not resolve`);
  }
  for (const k of kinds) {
    if (!Object.values(defs).some((s) => hasGvk(s, k))) out.push(`${k.group}/${k.version} ${k.kind}: no definition with its x-kubernetes-group-version-kind`);
    kindByPaths(paths, k, out);
  }
  return out;
}

/** Problems of an OpenAPI 3.0 group-version document serving `kinds`; [] when kubectl can use it. */
export function openapiV3Problems(doc: JsonObject, kinds: Kind[]): string[] {
  const out: string[] = [];
  if (doc.openapi !== '3.0.0') out.push('openapi is not "3.0.0"');
  const paths = isObject(doc.paths) ? doc.paths : (out.push('paths must be an object'), {});
  const schemas = isObject(doc.components) && isObject(doc.components.schemas) ? doc.components.schemas : (out.push('components.schemas must be an object'), {});
  for (const r of refsOf(doc)) {
    if (!r.startsWith('#/components/schemas/')) out.push(`$ref ${r} does not point into components.schemas`);
    else if (!(r.slice('#/components/schemas/'.length) in schemas)) out.push(`$ref ${r} does not resolve`);
  }
  for (const k of kinds) {
    if (!Object.values(schemas).some((s) => hasGvk(s, k))) out.push(`${k.group}/${k.version} ${k.kind}: no schema with its x-kubernetes-group-version-kind`);
    kindByPaths(paths, k, out);
  }
  return out;
}
