// The protobuf form of an OpenAPI v2 (Swagger 2.0) document that kube-apiserver serves at
// /openapi/v2 for `Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf`: the
// `openapi.v2.Document` message of google/gnostic (OpenAPIv2.proto), as gnostic's
// ParseDocument builds it from the JSON (kube-openapi's ToProtoBinary). kubectl parses it for
// client-side validation and `kubectl explain --output plaintext-openapiv2`.
//
// Mapping rules of gnostic: `$ref` is `_ref`; `x-*` keys become `vendor_extension` entries
// whose value is an `Any` holding the value as YAML text (JSON is YAML); `type` is a
// `TypeItem` (a string or a list), `items` an `ItemsItem` (one schema or a list),
// `additionalProperties` a boolean or a schema; maps (`paths`, `definitions`, `properties`,
// `responses`, ...) are repeated (name, value) pairs in document order; a parameter is a
// JSON reference, a body parameter or a header/formData/query/path parameter by its `in`.
// Keys that gnostic does not know are left out.

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

/** One protobuf message being written: fields appended in order. */
class Message {
  private readonly parts: Buffer[] = [];
  private size = 0;

  private push(b: Buffer): void {
    this.parts.push(b);
    this.size += b.length;
  }

  private tag(field: number, wire: number): void {
    this.push(varint(field * 8 + wire));
  }

  string(field: number, v: unknown): this {
    if (typeof v !== 'string' || v === '') return this;
    const b = Buffer.from(v, 'utf8');
    this.tag(field, 2);
    this.push(varint(b.length));
    this.push(b);
    return this;
  }

  strings(field: number, v: unknown): this {
    for (const s of strings(v)) {
      const b = Buffer.from(s, 'utf8');
      this.tag(field, 2);
      this.push(varint(b.length));
      this.push(b);
    }
    return this;
  }

  bool(field: number, v: unknown): this {
    if (v !== true) return this;
    this.tag(field, 0);
    this.push(varint(1));
    return this;
  }

  int64(field: number, v: unknown): this {
    if (typeof v !== 'number' || !Number.isInteger(v) || v === 0) return this;
    this.tag(field, 0);
    this.push(v < 0 ? varint(BigInt.asUintN(64, BigInt(v))) : varint(v));
    return this;
  }

  double(field: number, v: unknown): this {
    if (typeof v !== 'number' || v === 0) return this;
    const b = Buffer.alloc(8);
    b.writeDoubleLE(v);
    this.tag(field, 1);
    this.push(b);
    return this;
  }

  /** A nested message; written also when empty (a present but empty JSON object stays present). */
  message(field: number, m: Message | undefined): this {
    if (!m) return this;
    const b = m.bytes();
    this.tag(field, 2);
    this.push(varint(b.length));
    this.push(b);
    return this;
  }

  bytes(): Buffer {
    return Buffer.concat(this.parts, this.size);
  }
}

function varint(n: number | bigint): Buffer {
  let v = BigInt(n);
  const out: number[] = [];
  while (v > 0x7fn) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
  return Buffer.from(out);
}

/** gnostic's Any: the value as YAML text (JSON text is valid YAML). */
function any(v: unknown): Message {
  return new Message().string(2, JSON.stringify(v));
}

/** `x-*` keys as NamedAny entries. */
function extensions(m: Message, field: number, o: Obj): void {
  for (const [k, v] of Object.entries(o)) {
    if (k.startsWith('x-')) m.message(field, new Message().string(1, k).message(2, any(v)));
  }
}

function anyList(m: Message, field: number, v: unknown): void {
  if (Array.isArray(v)) for (const x of v) m.message(field, any(x));
}

function externalDocs(v: unknown): Message | undefined {
  if (!isObj(v)) return undefined;
  const m = new Message().string(1, v.description).string(2, v.url);
  extensions(m, 3, v);
  return m;
}

function xml(v: unknown): Message | undefined {
  if (!isObj(v)) return undefined;
  const m = new Message().string(1, v.name).string(2, v.namespace).string(3, v.prefix).bool(4, v.attribute).bool(5, v.wrapped);
  extensions(m, 6, v);
  return m;
}

function schema(s: Obj): Message {
  const m = new Message()
    .string(1, s.$ref)
    .string(2, s.format)
    .string(3, s.title)
    .string(4, s.description)
    .message(5, s.default === undefined ? undefined : any(s.default))
    .double(6, s.multipleOf)
    .double(7, s.maximum)
    .bool(8, s.exclusiveMaximum)
    .double(9, s.minimum)
    .bool(10, s.exclusiveMinimum)
    .int64(11, s.maxLength)
    .int64(12, s.minLength)
    .string(13, s.pattern)
    .int64(14, s.maxItems)
    .int64(15, s.minItems)
    .bool(16, s.uniqueItems)
    .int64(17, s.maxProperties)
    .int64(18, s.minProperties)
    .strings(19, s.required);
  anyList(m, 20, s.enum);
  const ap = s.additionalProperties;
  if (typeof ap === 'boolean') m.message(21, new Message().bool(2, ap));
  else if (isObj(ap)) m.message(21, new Message().message(1, schema(ap)));
  if (typeof s.type === 'string' || Array.isArray(s.type)) m.message(22, new Message().strings(1, typeof s.type === 'string' ? [s.type] : s.type));
  if (isObj(s.items) || Array.isArray(s.items)) {
    const items = new Message();
    for (const i of Array.isArray(s.items) ? s.items : [s.items]) if (isObj(i)) items.message(1, schema(i));
    m.message(23, items);
  }
  if (Array.isArray(s.allOf)) for (const a of s.allOf) if (isObj(a)) m.message(24, schema(a));
  if (isObj(s.properties)) m.message(25, namedSchemas(s.properties));
  m.string(26, s.discriminator).bool(27, s.readOnly).message(28, xml(s.xml)).message(29, externalDocs(s.externalDocs));
  if (s.example !== undefined) m.message(30, any(s.example));
  extensions(m, 31, s);
  return m;
}

/** Properties / Definitions: repeated NamedSchema in field 1. */
function namedSchemas(o: Obj): Message {
  const m = new Message();
  for (const [k, v] of Object.entries(o)) if (isObj(v)) m.message(1, new Message().string(1, k).message(2, schema(v)));
  return m;
}

function primitivesItems(p: Obj): Message {
  const m = new Message()
    .string(1, p.type)
    .string(2, p.format)
    .message(3, isObj(p.items) ? primitivesItems(p.items) : undefined)
    .string(4, p.collectionFormat)
    .message(5, p.default === undefined ? undefined : any(p.default))
    .double(6, p.maximum)
    .bool(7, p.exclusiveMaximum)
    .double(8, p.minimum)
    .bool(9, p.exclusiveMinimum)
    .int64(10, p.maxLength)
    .int64(11, p.minLength)
    .string(12, p.pattern)
    .int64(13, p.maxItems)
    .int64(14, p.minItems)
    .bool(15, p.uniqueItems);
  anyList(m, 16, p.enum);
  m.double(17, p.multipleOf);
  extensions(m, 18, p);
  return m;
}

/** The validation keywords shared by the non-body parameter kinds, from field `first` on (type, format, items, ...). */
function primitiveFields(m: Message, p: Obj, first: number): void {
  m.string(first, p.type)
    .string(first + 1, p.format)
    .message(first + 2, isObj(p.items) ? primitivesItems(p.items) : undefined)
    .string(first + 3, p.collectionFormat)
    .message(first + 4, p.default === undefined ? undefined : any(p.default))
    .double(first + 5, p.maximum)
    .bool(first + 6, p.exclusiveMaximum)
    .double(first + 7, p.minimum)
    .bool(first + 8, p.exclusiveMinimum)
    .int64(first + 9, p.maxLength)
    .int64(first + 10, p.minLength)
    .string(first + 11, p.pattern)
    .int64(first + 12, p.maxItems)
    .int64(first + 13, p.minItems)
    .bool(first + 14, p.uniqueItems);
  anyList(m, first + 15, p.enum);
  m.double(first + 16, p.multipleOf);
  extensions(m, first + 17, p);
}

function parameter(p: Obj): Message {
  if (p.in === 'body') {
    const b = new Message().string(1, p.description).string(2, p.name).string(3, p.in).bool(4, p.required).message(5, isObj(p.schema) ? schema(p.schema) : undefined);
    extensions(b, 6, p);
    return new Message().message(1, b);
  }
  // header: 1, formData: 2, query: 3, path: 4. query and formData have allowEmptyValue (5) before type.
  const sub = new Message().bool(1, p.required).string(2, p.in).string(3, p.description).string(4, p.name);
  let field: number;
  if (p.in === 'query' || p.in === 'formData') {
    sub.bool(5, p.allowEmptyValue);
    primitiveFields(sub, p, 6);
    field = p.in === 'query' ? 3 : 2;
  } else {
    primitiveFields(sub, p, 5);
    field = p.in === 'header' ? 1 : 4;
  }
  return new Message().message(2, new Message().message(field, sub));
}

function jsonReference(o: Obj): Message {
  return new Message().string(1, o.$ref).string(2, o.description);
}

/** ParametersItem: a JSON reference or a parameter. */
function parametersItem(p: Obj): Message {
  return typeof p.$ref === 'string' ? new Message().message(2, jsonReference(p)) : new Message().message(1, parameter(p));
}

function response(r: Obj): Message {
  const m = new Message().string(1, r.description);
  if (isObj(r.schema)) {
    m.message(2, r.schema.type === 'file' ? new Message().message(2, fileSchema(r.schema)) : new Message().message(1, schema(r.schema)));
  }
  if (isObj(r.headers)) {
    const h = new Message();
    for (const [k, v] of Object.entries(r.headers)) if (isObj(v)) h.message(1, new Message().string(1, k).message(2, header(v)));
    m.message(3, h);
  }
  if (isObj(r.examples)) {
    const e = new Message();
    for (const [k, v] of Object.entries(r.examples)) e.message(1, new Message().string(1, k).message(2, any(v)));
    m.message(4, e);
  }
  extensions(m, 5, r);
  return m;
}

function fileSchema(s: Obj): Message {
  const m = new Message()
    .string(1, s.format)
    .string(2, s.title)
    .string(3, s.description)
    .message(4, s.default === undefined ? undefined : any(s.default))
    .strings(5, s.required)
    .string(6, s.type)
    .bool(7, s.readOnly)
    .message(8, externalDocs(s.externalDocs))
    .message(9, s.example === undefined ? undefined : any(s.example));
  extensions(m, 10, s);
  return m;
}

/** Header: the primitive keywords (1-17), then description (18) and extensions (19). */
function header(h: Obj): Message {
  const m = new Message()
    .string(1, h.type)
    .string(2, h.format)
    .message(3, isObj(h.items) ? primitivesItems(h.items) : undefined)
    .string(4, h.collectionFormat)
    .message(5, h.default === undefined ? undefined : any(h.default))
    .double(6, h.maximum)
    .bool(7, h.exclusiveMaximum)
    .double(8, h.minimum)
    .bool(9, h.exclusiveMinimum)
    .int64(10, h.maxLength)
    .int64(11, h.minLength)
    .string(12, h.pattern)
    .int64(13, h.maxItems)
    .int64(14, h.minItems)
    .bool(15, h.uniqueItems);
  anyList(m, 16, h.enum);
  m.double(17, h.multipleOf).string(18, h.description);
  extensions(m, 19, h);
  return m;
}

function responses(r: Obj): Message {
  const m = new Message();
  for (const [code, v] of Object.entries(r)) {
    if (code.startsWith('x-') || !isObj(v)) continue;
    const value = typeof v.$ref === 'string' ? new Message().message(2, jsonReference(v)) : new Message().message(1, response(v));
    m.message(1, new Message().string(1, code).message(2, value));
  }
  extensions(m, 2, r);
  return m;
}

function operation(o: Obj): Message {
  const m = new Message().strings(1, o.tags).string(2, o.summary).string(3, o.description).message(4, externalDocs(o.externalDocs)).string(5, o.operationId).strings(6, o.produces).strings(7, o.consumes);
  if (Array.isArray(o.parameters)) for (const p of o.parameters) if (isObj(p)) m.message(8, parametersItem(p));
  if (isObj(o.responses)) m.message(9, responses(o.responses));
  m.strings(10, o.schemes).bool(11, o.deprecated);
  if (Array.isArray(o.security)) for (const s of o.security) if (isObj(s)) m.message(12, securityRequirement(s));
  extensions(m, 13, o);
  return m;
}

const methods: Array<[string, number]> = [['get', 2], ['put', 3], ['post', 4], ['delete', 5], ['options', 6], ['head', 7], ['patch', 8]];

function pathItem(p: Obj): Message {
  const m = new Message().string(1, p.$ref);
  for (const [name, field] of methods) if (isObj(p[name])) m.message(field, operation(p[name] as Obj));
  if (Array.isArray(p.parameters)) for (const x of p.parameters) if (isObj(x)) m.message(9, parametersItem(x));
  extensions(m, 10, p);
  return m;
}

function securityRequirement(s: Obj): Message {
  const m = new Message();
  for (const [k, v] of Object.entries(s)) m.message(1, new Message().string(1, k).message(2, new Message().strings(1, v)));
  return m;
}

function securityDefinition(s: Obj): Message {
  const ext = (m: Message, field: number) => (extensions(m, field, s), m);
  switch (s.type) {
    case 'basic':
      return new Message().message(1, ext(new Message().string(1, s.type).string(2, s.description), 3));
    case 'apiKey':
      return new Message().message(2, ext(new Message().string(1, s.type).string(2, s.name).string(3, s.in).string(4, s.description), 5));
    case 'oauth2': {
      const scopes = new Message();
      if (isObj(s.scopes)) for (const [k, v] of Object.entries(s.scopes)) scopes.message(1, new Message().string(1, k).string(2, str(v)));
      const base = () => new Message().string(1, s.type).string(2, s.flow).message(3, scopes);
      if (s.flow === 'implicit') return new Message().message(3, ext(base().string(4, s.authorizationUrl).string(5, s.description), 6));
      if (s.flow === 'password') return new Message().message(4, ext(base().string(4, s.tokenUrl).string(5, s.description), 6));
      if (s.flow === 'application') return new Message().message(5, ext(base().string(4, s.tokenUrl).string(5, s.description), 6));
      return new Message().message(6, ext(base().string(4, s.authorizationUrl).string(5, s.tokenUrl).string(6, s.description), 7));
    }
    default:
      return new Message();
  }
}

function info(i: Obj): Message {
  const m = new Message().string(1, i.title).string(2, i.version).string(3, i.description).string(4, i.termsOfService);
  if (isObj(i.contact)) {
    const c = new Message().string(1, i.contact.name).string(2, i.contact.url).string(3, i.contact.email);
    extensions(c, 4, i.contact);
    m.message(5, c);
  }
  if (isObj(i.license)) {
    const l = new Message().string(1, i.license.name).string(2, i.license.url);
    extensions(l, 3, i.license);
    m.message(6, l);
  }
  extensions(m, 7, i);
  return m;
}

/** Encodes a Swagger 2.0 document (parsed JSON) as gnostic's openapi.v2.Document message. */
export function encodeOpenAPIV2(doc: Obj): Buffer {
  const m = new Message().string(1, doc.swagger).message(2, isObj(doc.info) ? info(doc.info) : undefined).string(3, doc.host).string(4, doc.basePath).strings(5, doc.schemes).strings(6, doc.consumes).strings(7, doc.produces);
  if (isObj(doc.paths)) {
    const paths = new Message();
    extensions(paths, 1, doc.paths);
    for (const [k, v] of Object.entries(doc.paths)) if (k.startsWith('/') && isObj(v)) paths.message(2, new Message().string(1, k).message(2, pathItem(v)));
    m.message(8, paths);
  }
  if (isObj(doc.definitions)) m.message(9, namedSchemas(doc.definitions));
  if (isObj(doc.parameters)) {
    const p = new Message();
    for (const [k, v] of Object.entries(doc.parameters)) if (isObj(v)) p.message(1, new Message().string(1, k).message(2, parameter(v)));
    m.message(10, p);
  }
  if (isObj(doc.responses)) {
    const r = new Message();
    for (const [k, v] of Object.entries(doc.responses)) if (isObj(v)) r.message(1, new Message().string(1, k).message(2, response(v)));
    m.message(11, r);
  }
  if (Array.isArray(doc.security)) for (const s of doc.security) if (isObj(s)) m.message(12, securityRequirement(s));
  if (isObj(doc.securityDefinitions)) {
    const sd = new Message();
    for (const [k, v] of Object.entries(doc.securityDefinitions)) if (isObj(v)) sd.message(1, new Message().string(1, k).message(2, securityDefinition(v)));
    m.message(13, sd);
  }
  if (Array.isArray(doc.tags)) {
    for (const t of doc.tags) {
      if (!isObj(t)) continue;
      const tag = new Message().string(1, t.name).string(2, t.description).message(3, externalDocs(t.externalDocs));
      extensions(tag, 4, t);
      m.message(14, tag);
    }
  }
  m.message(15, externalDocs(doc.externalDocs));
  extensions(m, 16, doc);
  return m.bytes();
}

/** The media type kube-apiserver answers the protobuf form with. */
export const openapiV2ProtobufType = 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf';
/** The two subtypes clients ask for it with (kubectl sends the first). */
export const openapiV2ProtobufSubtypes = ['com.github.proto-openapi.spec.v2@v1.0+protobuf', 'com.github.proto-openapi.spec.v2.v1.0+protobuf'];
