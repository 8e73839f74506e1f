// How kube-apiserver reads a written object against its schema, before any validation:
// - built-in kinds are decoded into Go structs (the captured v1.28 /openapi/v2 gives their
//   fields and types): a value of the wrong JSON type is 400 BadRequest (`Deployment in
//   version "v1" cannot be handled as a Deployment: json: cannot unmarshal string into Go
//   struct field DeploymentSpec.spec.replicas of type int32`), null leaves a field unset;
// - custom resources are pruned to their CRD version's structural schema, and later (once a
//   create has dropped the status) validated against it (type, enum, required, items,
//   lengths, pattern, bounds, list-map keys): 422.
// Fields the schema does not know are dropped, reported as warnings (fieldValidation Warn,
// kube's default since v1.27), or refused with fieldValidation=Strict (as kubectl sends it).
// Go type names in messages are approximate (a named string type is shown as string).
import { fieldInvalid, fieldNotSupported, fieldRequired, fieldTooMany, GoSyntax, type FieldError } from '../../kube/field-errors.ts';
import { StatusError } from '../../kube/status.ts';
import { builtinOpenAPIV2 } from './openapi.ts';
import type { ResourceInfo } from './resources.ts';
import { isObject, stable, type JsonObject, type KObject } from './types.ts';

/** metav1.FieldValidation: Ignore, Warn (the default) or Strict. */
export type FieldValidation = 'Ignore' | 'Warn' | 'Strict';

export interface DecodeResult {
  object: KObject;
  /** `unknown field "spec.foo"`, for the Warning header under Warn. */
  warnings: string[];
}

const objectMetaDef = 'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta';
const quantityDef = 'io.k8s.apimachinery.pkg.api.resource.Quantity';

let byGVK: Map<string, string> | undefined;
function definitions(): Record<string, JsonObject> {
  return builtinOpenAPIV2().definitions as Record<string, JsonObject>;
}

/** The definition of a built-in kind (x-kubernetes-group-version-kind), if the document has one. */
function definitionOf(group: string, version: string, kind: string): string | undefined {
  if (!byGVK) {
    byGVK = new Map();
    for (const [name, def] of Object.entries(definitions())) {
      for (const g of Array.isArray(def['x-kubernetes-group-version-kind']) ? def['x-kubernetes-group-version-kind'] : []) {
        if (isObject(g)) byGVK.set(`${String(g.group)}/${String(g.version)}/${String(g.kind)}`, name);
      }
    }
  }
  return byGVK.get(`${group}/${version}/${kind}`);
}

const refName = (s: JsonObject): string | undefined => (typeof s.$ref === 'string' ? s.$ref.replace('#/definitions/', '') : undefined);
/** The Go type a definition decodes into, as reflect prints it: `v1.EndpointConditions`. */
const goTypeOfDef = (def: string) => def.split('.').slice(-2).join('.');
const jsonKind = (v: unknown): string =>
  typeof v === 'string' ? 'string' : typeof v === 'boolean' ? 'bool' : typeof v === 'number' ? 'number' : Array.isArray(v) ? 'array' : 'object';

function goType(s: JsonObject): string {
  const ref = refName(s);
  if (ref) return goTypeOfDef(ref);
  switch (s.type) {
    case 'integer': return s.format === 'int64' ? 'int64' : 'int32';
    case 'number': return 'float64';
    case 'boolean': return 'bool';
    case 'array': return `[]${goType(isObject(s.items) ? s.items : {})}`;
    case 'object': return isObject(s.additionalProperties) ? `map[string]${goType(s.additionalProperties)}` : 'map[string]interface {}';
    default: return 'string';
  }
}

class TypeMismatch extends Error {
  constructor(readonly value: unknown, readonly struct: string, readonly path: string, readonly type: string) {
    super('type mismatch');
  }

  text(): string {
    const v = typeof this.value === 'number' && !Number.isInteger(this.value) ? `number ${this.value}` : jsonKind(this.value);
    return `json: cannot unmarshal ${v} into Go struct field ${this.struct}.${this.path} of type ${this.type}`;
  }
}

/** Reads a built-in kind's value into its Go type: the value with unknown fields dropped (their paths pushed to `unknown`). */
function decodeBuiltinValue(v: unknown, schema: JsonObject, at: { struct: string; json: string[]; path: string }, unknown: string[]): unknown {
  const ref = refName(schema);
  const s = ref ? (definitions()[ref] ?? {}) : schema;
  if (v === null) return null;
  const mismatch = () => new TypeMismatch(v, at.struct, at.json.join('.'), goType(schema));
  if (ref === quantityDef) {
    if (typeof v !== 'string' && typeof v !== 'number') throw mismatch();
    return v;
  }
  if (s.format === 'int-or-string') {
    if (typeof v !== 'string' && !Number.isInteger(v)) throw mismatch();
    return v;
  }
  switch (s.type) {
    case 'string':
      if (typeof v !== 'string') throw mismatch();
      return v;
    case 'integer':
      if (!Number.isInteger(v)) throw mismatch();
      return v;
    case 'number':
      if (typeof v !== 'number') throw mismatch();
      return v;
    case 'boolean':
      if (typeof v !== 'boolean') throw mismatch();
      return v;
    case 'array': {
      if (!Array.isArray(v)) throw mismatch();
      const items = isObject(s.items) ? s.items : {};
      return v.map((x, i) => decodeBuiltinValue(x, items, { ...at, path: `${at.path}[${i}]` }, unknown));
    }
  }
  const props = isObject(s.properties) ? s.properties : undefined;
  const additional = isObject(s.additionalProperties) ? s.additionalProperties : undefined;
  if (!props && !additional) return v; // RawExtension, FieldsV1, JSON: anything
  if (!isObject(v)) throw mismatch();
  const struct = ref ? ref.split('.').pop()! : at.struct;
  const out: JsonObject = {};
  for (const [k, x] of Object.entries(v)) {
    if (x === undefined) continue;
    const path = at.path ? `${at.path}.${k}` : k;
    const sub = props ? props[k] : additional;
    if (!isObject(sub)) {
      unknown.push(path);
      continue;
    }
    if (x === null && props) continue; // null leaves the field unset
    out[k] = decodeBuiltinValue(x, sub, { struct: props ? struct : at.struct, json: [...at.json, k], path }, unknown);
  }
  return out;
}

/** Reads a built-in object as kube-apiserver decodes it: 400 on a wrong type; unknown fields dropped. */
function decodeBuiltin(info: ResourceInfo, version: string, obj: KObject, unknown: string[]): KObject {
  const def = definitionOf(info.group, version, info.kind);
  if (!def) return obj;
  try {
    return decodeBuiltinValue(obj, { $ref: `#/definitions/${def}` }, { struct: info.kind, json: [], path: '' }, unknown) as KObject;
  } catch (err) {
    if (!(err instanceof TypeMismatch)) throw err;
    throw new StatusError('BadRequest', `${info.kind} in version "${version}" cannot be handled as a ${info.kind}: ${err.text()}`);
  }
}

// ---- custom resources

/** The JSON type name the schema validator reports a value as. */
const schemaType = (v: unknown): string =>
  v === null ? 'null' : Array.isArray(v) ? 'array' : Number.isInteger(v) ? 'integer' : typeof v === 'number' ? 'number' : typeof v === 'boolean' ? 'boolean' : typeof v;

function typeMatches(v: unknown, type: unknown): boolean {
  switch (type) {
    case 'object': return isObject(v);
    case 'array': return Array.isArray(v);
    case 'string': return typeof v === 'string';
    case 'integer': return Number.isInteger(v);
    case 'number': return typeof v === 'number';
    case 'boolean': return typeof v === 'boolean';
    default: return true;
  }
}

/** Structural pruning: fields a schema does not declare are dropped (unless it preserves unknown fields). */
function prune(v: unknown, s: JsonObject, path: string, unknown: string[]): unknown {
  if (s['x-kubernetes-preserve-unknown-fields'] === true && !isObject(s.properties)) return v;
  if (Array.isArray(v) && isObject(s.items)) return v.map((x, i) => prune(x, s.items as JsonObject, `${path}[${i}]`, unknown));
  if (!isObject(v)) return v;
  const props = isObject(s.properties) ? s.properties : undefined;
  const additional = isObject(s.additionalProperties) ? s.additionalProperties : undefined;
  if (!props && !additional) {
    if (s['x-kubernetes-preserve-unknown-fields'] === true || s.type === undefined) return v;
    // An object schema without properties keeps nothing.
    unknown.push(...Object.keys(v).map((k) => (path ? `${path}.${k}` : k)));
    return {};
  }
  const out: JsonObject = {};
  for (const [k, x] of Object.entries(v)) {
    if (x === undefined) continue;
    const p = path ? `${path}.${k}` : k;
    const sub = props?.[k] ?? additional;
    if (!isObject(sub)) {
      if (s['x-kubernetes-preserve-unknown-fields'] === true) out[k] = x;
      else unknown.push(p);
      continue;
    }
    out[k] = prune(x, sub, p, unknown);
  }
  return out;
}

/** Go's %#v of a list-map key kube reports a duplicate item with: `map[string]interface {}{"cluster":"a"}`. */
const mapKey = (keys: string[], item: JsonObject) => new GoSyntax(`map[string]interface {}{${keys.map((k) => `${JSON.stringify(k)}:${JSON.stringify(item[k])}`).join(', ')}}`);

/** OpenAPI v3 schema validation of a custom resource's value (kube-openapi's validate, as apiextensions-apiserver words it). */
function validateSchema(v: unknown, s: JsonObject, path: string, errs: FieldError[]): void {
  if (v === null) {
    if (s.nullable !== true && s.type !== undefined) errs.push(fieldInvalid(path, 'null', `${path} in body must be of type ${String(s.type)}: "null"`));
    return;
  }
  if (s.type !== undefined && !(s['x-kubernetes-int-or-string'] === true && (typeof v === 'string' || Number.isInteger(v))) && !typeMatches(v, s.type)) {
    errs.push(fieldInvalid(path, schemaType(v), `${path} in body must be of type ${String(s.type)}: "${schemaType(v)}"`));
    return;
  }
  if (Array.isArray(s.enum) && !s.enum.some((e) => stable(e) === stable(v))) errs.push(fieldNotSupported(path, v, s.enum.map(String)));
  if (typeof v === 'string') {
    if (typeof s.maxLength === 'number' && [...v].length > s.maxLength) errs.push({ type: 'TooLong', field: path, detail: `may not be longer than ${s.maxLength}` });
    if (typeof s.minLength === 'number' && [...v].length < s.minLength) errs.push(fieldInvalid(path, v, `${path} in body should be at least ${s.minLength} chars long`));
    if (typeof s.pattern === 'string' && !new RegExp(s.pattern, 'u').test(v)) errs.push(fieldInvalid(path, v, `${path} in body should match '${s.pattern}'`));
  }
  if (typeof v === 'number') {
    if (typeof s.minimum === 'number' && v < s.minimum) errs.push(fieldInvalid(path, v, `${path} in body should be greater than or equal to ${s.minimum}`));
    if (typeof s.maximum === 'number' && v > s.maximum) errs.push(fieldInvalid(path, v, `${path} in body should be less than or equal to ${s.maximum}`));
  }
  if (Array.isArray(v)) {
    if (typeof s.maxItems === 'number' && v.length > s.maxItems) errs.push(fieldTooMany(path, v.length, s.maxItems));
    if (typeof s.minItems === 'number' && v.length < s.minItems) errs.push(fieldInvalid(path, v.length, `${path} in body should have at least ${s.minItems} items`));
    const items = isObject(s.items) ? s.items : {};
    v.forEach((x, i) => validateSchema(x, items, `${path}[${i}]`, errs));
    const keys = Array.isArray(s['x-kubernetes-list-map-keys']) ? s['x-kubernetes-list-map-keys'].map(String) : [];
    if (s['x-kubernetes-list-type'] === 'map' && keys.length) {
      const seen = new Set<string>();
      v.forEach((x, i) => {
        if (!isObject(x)) return;
        const key = stable(keys.map((k) => x[k]));
        if (seen.has(key)) errs.push({ type: 'Duplicate', field: `${path}[${i}]`, value: mapKey(keys, x) });
        seen.add(key);
      });
    } else if (s['x-kubernetes-list-type'] === 'set') {
      const seen = new Set<string>();
      v.forEach((x, i) => {
        if (seen.has(stable(x))) errs.push({ type: 'Duplicate', field: `${path}[${i}]`, value: x });
        seen.add(stable(x));
      });
    }
  }
  if (isObject(v)) {
    for (const r of Array.isArray(s.required) ? s.required.map(String) : []) {
      if (v[r] === undefined) errs.push(fieldRequired(path ? `${path}.${r}` : r));
    }
    const props = isObject(s.properties) ? s.properties : {};
    for (const [k, x] of Object.entries(v)) {
      const sub = isObject(props[k]) ? props[k] : isObject(s.additionalProperties) ? s.additionalProperties : undefined;
      if (sub) validateSchema(x, sub as JsonObject, path ? `${path}.${k}` : k, errs);
    }
  }
}

/** The openAPIV3Schema of a CRD's version, if it has one. */
function crdSchema(crd: KObject | undefined, version: string): JsonObject | undefined {
  const versions = isObject(crd?.spec) && Array.isArray(crd.spec.versions) ? crd.spec.versions.filter(isObject) : [];
  const v = versions.find((x) => x.name === version);
  const schema = isObject(v?.schema) ? v.schema.openAPIV3Schema : undefined;
  return isObject(schema) ? schema : undefined;
}

function decodeCustom(info: ResourceInfo, version: string, obj: KObject, crd: KObject | undefined, unknown: string[]): KObject {
  const schema = crdSchema(crd, version);
  if (!schema) return obj;
  const { apiVersion, kind, metadata, ...rest } = obj;
  const metaUnknown: string[] = [];
  const meta = decodeBuiltinValue(metadata, { $ref: `#/definitions/${objectMetaDef}` }, { struct: 'ObjectMeta', json: ['metadata'], path: 'metadata' }, metaUnknown);
  unknown.push(...metaUnknown);
  const props = isObject(schema.properties) ? schema.properties : {};
  const body = prune(rest, { ...schema, properties: withoutTypeMeta(props) }, '', unknown) as JsonObject;
  return { apiVersion, kind, metadata: meta as KObject['metadata'], ...body };
}

const typeMeta = ['apiVersion', 'kind', 'metadata'];
const withoutTypeMeta = (props: JsonObject) => Object.fromEntries(Object.entries(props).filter(([k]) => !typeMeta.includes(k)));

/** A custom resource against its CRD version's openAPIV3Schema (after pruning, and after a create drops the status): the field errors. */
export function validateCustomResource(version: string, obj: KObject, crd: KObject | undefined): FieldError[] {
  const schema = crdSchema(crd, version);
  if (!schema) return [];
  const { apiVersion: _a, kind: _k, metadata: _m, ...body } = obj;
  const props = isObject(schema.properties) ? schema.properties : {};
  const required = Array.isArray(schema.required) ? schema.required.filter((r) => !typeMeta.includes(String(r))) : undefined;
  const errs: FieldError[] = [];
  validateSchema(body, { ...schema, properties: withoutTypeMeta(props), required }, '', errs);
  return errs;
}

/**
 * An object as kube-apiserver reads it before validation: typed (built-ins) or pruned and
 * schema-checked (custom resources), unknown fields dropped and reported, or refused (Strict).
 */
export function decodeObject(info: ResourceInfo, version: string, obj: KObject, opts: { fieldValidation?: FieldValidation; crd?: KObject } = {}): DecodeResult {
  const unknown: string[] = [];
  const object = info.crd ? decodeCustom(info, version, obj, opts.crd, unknown) : decodeBuiltin(info, version, obj, unknown);
  const mode = opts.fieldValidation ?? 'Warn';
  if (unknown.length && mode === 'Strict') {
    const text = unknown.map((p) => `unknown field ${JSON.stringify(p)}`).join(', ');
    throw new StatusError('BadRequest', `${info.kind} in version "${version}" cannot be handled as a ${info.kind}: strict decoding error: ${text}`);
  }
  return { object, warnings: mode === 'Warn' ? unknown.map((p) => `unknown field ${JSON.stringify(p)}`) : [] };
}
