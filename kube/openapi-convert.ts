// Schemas between the two OpenAPI forms kube-apiserver serves: Swagger 2.0 `definitions`
// (`#/definitions/NAME`) and OpenAPI 3.0 `components.schemas` (`#/components/schemas/NAME`),
// and the transitive closure of the definitions a schema refers to.
//
// v2 → v3 rewrites references; a `$ref` with sibling keys (a description) becomes
// `allOf: [{$ref}]` plus the siblings, as kube-apiserver's v3 documents have it.
// v3 → v2 follows kube-apiserver's publishing of CRD schemas in v2
// (apiextensions-apiserver ToStructuralOpenAPIV2): `oneOf`, `anyOf`, `not` are dropped, a
// single-reference `allOf` becomes the `$ref`, `nullable` fields lose their type (and items
// and properties) and leave `required`, `x-kubernetes-preserve-unknown-fields` schemas lose
// items and properties (kubectl would reject the unknown fields), arrays without items lose
// their type; keys Swagger 2.0 does not have are left out.

export type JsonObject = Record<string, unknown>;
export type OpenAPIForm = 'v2' | 'v3';

export const refPrefix: Record<OpenAPIForm, string> = { v2: '#/definitions/', v3: '#/components/schemas/' };

export const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The named schemas of a document: `definitions` (v2) or `components.schemas` (v3). */
export function namedSchemas(doc: JsonObject, form: OpenAPIForm): Record<string, JsonObject> {
  const holder = form === 'v2' ? doc.definitions : isObject(doc.components) ? doc.components.schemas : undefined;
  const out: Record<string, JsonObject> = {};
  if (isObject(holder)) for (const [k, v] of Object.entries(holder)) if (isObject(v)) out[k] = v;
  return out;
}

/** Every `$ref` string anywhere below a value. */
export function refsOf(value: unknown, out: Set<string> = new Set()): Set<string> {
  if (Array.isArray(value)) {
    for (const v of value) refsOf(v, out);
  } else if (isObject(value)) {
    for (const [k, v] of Object.entries(value)) {
      if (k === '$ref' && typeof v === 'string') out.add(v);
      else if (typeof v === 'object') refsOf(v, out);
    }
  }
  return out;
}

/** The names `roots` refer to, transitively (roots included), among `schemas`; refs to names not there are ignored. */
export function closure(schemas: Record<string, JsonObject>, roots: Iterable<string>, form: OpenAPIForm): string[] {
  const prefix = refPrefix[form];
  const seen = new Set<string>();
  const queue = [...roots];
  while (queue.length) {
    const name = queue.pop()!;
    if (seen.has(name) || !schemas[name]) continue;
    seen.add(name);
    for (const ref of refsOf(schemas[name])) if (ref.startsWith(prefix)) queue.push(ref.slice(prefix.length));
  }
  return [...seen].sort();
}

function mapRefs(value: unknown, from: string, to: string): unknown {
  if (Array.isArray(value)) return value.map((v) => mapRefs(v, from, to));
  if (!isObject(value)) return value;
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(value)) out[k] = k === '$ref' && typeof v === 'string' && v.startsWith(from) ? to + v.slice(from.length) : mapRefs(v, from, to);
  return out;
}

/** Subschema positions: where a nested schema (not a map of them) sits. */
const schemaKeys = ['items', 'additionalProperties', 'not'];
const schemaListKeys = ['allOf', 'oneOf', 'anyOf'];

function eachSubschema(s: JsonObject, fn: (child: JsonObject) => JsonObject): JsonObject {
  const out: JsonObject = { ...s };
  if (isObject(s.properties)) out.properties = Object.fromEntries(Object.entries(s.properties).map(([k, v]) => [k, isObject(v) ? fn(v) : v]));
  for (const k of schemaKeys) if (isObject(s[k])) out[k] = fn(s[k] as JsonObject);
  if (Array.isArray(s.items)) out.items = s.items.map((v) => (isObject(v) ? fn(v) : v));
  for (const k of schemaListKeys) if (Array.isArray(s[k])) out[k] = (s[k] as unknown[]).map((v) => (isObject(v) ? fn(v) : v));
  return out;
}

/** A v2 schema in v3 form. */
export function schemaV2toV3(s: JsonObject): JsonObject {
  const rec = (x: JsonObject): JsonObject => {
    const y = eachSubschema(x, rec);
    if (typeof y.$ref === 'string') {
      const ref = y.$ref.startsWith(refPrefix.v2) ? refPrefix.v3 + y.$ref.slice(refPrefix.v2.length) : y.$ref;
      const { $ref: _ignored, ...rest } = y;
      void _ignored;
      return Object.keys(rest).length === 0 ? { $ref: ref } : { ...rest, allOf: [{ $ref: ref }] };
    }
    return y;
  };
  return rec(s);
}

const v2SchemaKeys = new Set([
  '$ref', 'format', 'title', 'description', 'default', 'multipleOf', 'maximum', 'exclusiveMaximum', 'minimum', 'exclusiveMinimum',
  'maxLength', 'minLength', 'pattern', 'maxItems', 'minItems', 'uniqueItems', 'maxProperties', 'minProperties', 'required', 'enum',
  'additionalProperties', 'type', 'items', 'allOf', 'properties', 'discriminator', 'readOnly', 'xml', 'externalDocs', 'example',
]);

/** A v3 schema in v2 form (see the top of this file). */
export function schemaV3toV2(s: JsonObject): JsonObject {
  const rec = (x: JsonObject): JsonObject => {
    let y: JsonObject = {};
    for (const [k, v] of Object.entries(x)) if (v2SchemaKeys.has(k) || k.startsWith('x-')) y[k] = v;
    if (typeof y.discriminator !== 'string') delete y.discriminator;
    if (Array.isArray(y.allOf)) {
      const only = y.allOf.length === 1 && isObject(y.allOf[0]) && typeof y.allOf[0].$ref === 'string' && Object.keys(y.allOf[0]).length === 1 ? (y.allOf[0].$ref as string) : undefined;
      delete y.allOf;
      if (only && y.$ref === undefined) y = { $ref: only, ...y };
    }
    if (x.nullable === true) {
      delete y.type;
      delete y.items;
      delete y.properties;
    }
    if (x['x-kubernetes-preserve-unknown-fields'] === true) {
      delete y.items;
      delete y.properties;
    }
    if (y.type === 'array' && y.items === undefined) delete y.type;
    if (Array.isArray(y.required) && isObject(x.properties)) {
      const props = x.properties;
      const required = y.required.filter((f) => !(typeof f === 'string' && isObject(props[f]) && props[f].nullable === true));
      if (required.length) y.required = required;
      else delete y.required;
    }
    y = eachSubschema(y, rec);
    if (typeof y.$ref === 'string' && y.$ref.startsWith(refPrefix.v3)) y.$ref = refPrefix.v2 + y.$ref.slice(refPrefix.v3.length);
    return y;
  };
  return rec(s);
}

/** A schema from `from` form to `to` form. */
export function convertSchema(s: JsonObject, from: OpenAPIForm, to: OpenAPIForm): JsonObject {
  if (from === to) return s;
  return from === 'v2' ? schemaV2toV3(s) : schemaV3toV2(s);
}

/** Rewrites references of a value (a path item, a response) between forms, leaving the rest as is. */
export function convertRefs(value: unknown, from: OpenAPIForm, to: OpenAPIForm): unknown {
  return from === to ? value : mapRefs(value, refPrefix[from], refPrefix[to]);
}

/** `group/version/Kind` keys of a schema's x-kubernetes-group-version-kind. */
export function gvkKeys(s: JsonObject): string[] {
  const list = s['x-kubernetes-group-version-kind'];
  if (!Array.isArray(list)) return [];
  return list.filter(isObject).map((g) => `${String(g.group ?? '')}/${String(g.version ?? '')}/${String(g.kind ?? '')}`);
}
