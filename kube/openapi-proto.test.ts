// The gnostic protobuf encoding of Swagger 2.0 documents, checked with a plain wire-format
// decoder: field numbers, nested messages, oneofs, vendor extensions as YAML, doubles.
import t from 'tap';
import { encodeOpenAPIV2 } from './openapi-proto.ts';

interface Field {
  field: number;
  wire: number;
  value: bigint | Buffer;
}

function readVarint(b: Buffer, pos: number): [bigint, number] {
  let v = 0n;
  let shift = 0n;
  for (;;) {
    const byte = b[pos++];
    v |= BigInt(byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) return [v, pos];
    shift += 7n;
  }
}

function decode(b: Buffer): Field[] {
  const out: Field[] = [];
  let pos = 0;
  while (pos < b.length) {
    const [key, p1] = readVarint(b, pos);
    const field = Number(key >> 3n);
    const wire = Number(key & 7n);
    if (wire === 0) {
      const [v, p2] = readVarint(b, p1);
      out.push({ field, wire, value: v });
      pos = p2;
    } else if (wire === 2) {
      const [len, p2] = readVarint(b, p1);
      out.push({ field, wire, value: b.subarray(p2, p2 + Number(len)) });
      pos = p2 + Number(len);
    } else if (wire === 1) {
      out.push({ field, wire, value: b.subarray(p1, p1 + 8) });
      pos = p1 + 8;
    } else throw new Error(`unexpected wire type ${wire}`);
  }
  return out;
}

const fields = (b: Buffer, n: number) => decode(b).filter((f) => f.field === n).map((f) => f.value as Buffer);
const one = (b: Buffer, ...path: number[]): Buffer => path.reduce((cur, n) => fields(cur, n)[0], b);
const text = (b: Buffer, n: number) => fields(b, n).map((x) => x.toString('utf8'));
/** (name, value) entries of a repeated Named* field. */
const named = (b: Buffer, n: number) => new Map(fields(b, n).map((e) => [text(e, 1)[0], one(e, 2)]));

t.test('document, definitions and schema keywords', async (t) => {
  const doc = {
    swagger: '2.0',
    info: { title: 'Panoptes', version: 'v1' },
    paths: {},
    definitions: {
      'io.example.v1.Thing': {
        description: 'A thing',
        type: 'object',
        required: ['spec'],
        properties: {
          spec: { $ref: '#/definitions/io.example.v1.ThingSpec' },
          tags: { type: 'array', items: { type: 'string' } },
          labels: { type: 'object', additionalProperties: { type: 'string' } },
          open: { type: 'object', additionalProperties: true },
          size: { type: 'string', enum: ['S', 'M'] },
          ratio: { type: 'number', minimum: 0.5, maxLength: 3 },
        },
        'x-kubernetes-group-version-kind': [{ group: 'example.io', kind: 'Thing', version: 'v1' }],
      },
      'io.example.v1.Empty': { type: 'object', properties: {} },
    },
  };
  const b = encodeOpenAPIV2(doc);
  t.same(text(b, 1), ['2.0'], 'swagger');
  t.same(text(one(b, 2), 1), ['Panoptes'], 'info.title');
  t.equal(fields(b, 8).length, 1, 'an empty paths object is present');
  const defs = named(one(b, 9), 1);
  t.same([...defs.keys()], ['io.example.v1.Thing', 'io.example.v1.Empty'], 'definitions in order');
  const thing = defs.get('io.example.v1.Thing')!;
  t.same(text(thing, 4), ['A thing'], 'description');
  t.same(text(one(thing, 22), 1), ['object'], 'type is a TypeItem');
  t.same(text(thing, 19), ['spec'], 'required');
  const props = named(one(thing, 25), 1);
  t.same(text(props.get('spec')!, 1), ['#/definitions/io.example.v1.ThingSpec'], '$ref is _ref (1)');
  t.same(text(one(props.get('tags')!, 23, 1, 22), 1), ['string'], 'items is an ItemsItem of schemas');
  t.same(text(one(props.get('labels')!, 21, 1, 22), 1), ['string'], 'additionalProperties schema (oneof 1)');
  t.equal(decode(one(props.get('open')!, 21))[0].field, 2, 'additionalProperties boolean (oneof 2)');
  t.equal(decode(one(props.get('open')!, 21))[0].value, 1n);
  t.same(fields(props.get('size')!, 20).map((a) => text(a, 2)[0]), ['"S"', '"M"'], 'enum values as YAML');
  const ratio = decode(props.get('ratio')!);
  t.equal((ratio.find((f) => f.field === 9)!.value as Buffer).readDoubleLE(), 0.5, 'minimum is a double');
  t.equal(ratio.find((f) => f.field === 11)!.value, 3n, 'maxLength is an int64');
  const ext = named(thing, 31);
  t.same(JSON.parse(text(ext.get('x-kubernetes-group-version-kind')!, 2)[0]), doc.definitions['io.example.v1.Thing']['x-kubernetes-group-version-kind'], 'vendor extension as YAML text');
  t.equal(fields(defs.get('io.example.v1.Empty')!, 25).length, 1, 'empty properties stay present (a kind, not a map)');
});

t.test('paths, operations and parameters', async (t) => {
  const doc = {
    swagger: '2.0',
    paths: {
      '/api/v1/namespaces/{namespace}/configmaps/{name}': {
        parameters: [{ name: 'namespace', in: 'path', required: true, type: 'string', uniqueItems: true }, { $ref: '#/parameters/pretty' }],
        get: {
          operationId: 'readCoreV1NamespacedConfigMap',
          produces: ['application/json'],
          responses: { '200': { description: 'OK', schema: { $ref: '#/definitions/io.k8s.api.core.v1.ConfigMap' } }, '401': { description: 'Unauthorized' } },
          'x-kubernetes-action': 'get',
          'x-kubernetes-group-version-kind': { group: '', kind: 'ConfigMap', version: 'v1' },
        },
        patch: {
          parameters: [
            { name: 'body', in: 'body', required: true, schema: { type: 'object' } },
            { name: 'fieldValidation', in: 'query', type: 'string', uniqueItems: true },
          ],
          responses: {},
        },
      },
    },
    parameters: { pretty: { name: 'pretty', in: 'query', type: 'string', uniqueItems: true } },
    securityDefinitions: { BearerToken: { type: 'apiKey', name: 'authorization', in: 'header' } },
    security: [{ BearerToken: [] }],
  };
  const b = encodeOpenAPIV2(doc);
  const item = named(one(b, 8), 2).get('/api/v1/namespaces/{namespace}/configmaps/{name}')!;
  const pathParams = fields(item, 9);
  const ns = one(pathParams[0], 1, 2, 4);
  t.same(text(ns, 4), ['namespace'], 'path parameter: ParametersItem.parameter.non_body.path');
  t.equal(decode(ns).find((f) => f.field === 1)!.value, 1n, 'required');
  t.same(text(one(pathParams[1], 2), 1), ['#/parameters/pretty'], 'a parameter reference is a JsonReference');
  const get = one(item, 2);
  t.same(text(get, 5), ['readCoreV1NamespacedConfigMap']);
  const ok = named(one(get, 9), 1).get('200')!;
  t.same(text(one(ok, 1), 1), ['OK'], 'ResponseValue.response.description');
  t.same(text(one(ok, 1, 2, 1), 1), ['#/definitions/io.k8s.api.core.v1.ConfigMap'], 'response schema');
  t.same(JSON.parse(text(named(get, 13).get('x-kubernetes-group-version-kind')!, 2)[0]), { group: '', kind: 'ConfigMap', version: 'v1' });
  const patch = one(item, 8);
  const [body, fv] = fields(patch, 8);
  t.same(text(one(body, 1, 1), 2), ['body'], 'body parameter');
  t.same(text(one(fv, 1, 2, 3), 4), ['fieldValidation'], 'query parameter (kubectl looks for it on PATCH)');
  t.same(text(one(named(one(b, 10), 1).get('pretty')!, 2, 3), 4), ['pretty'], 'shared parameters');
  t.same(text(one(named(one(b, 13), 1).get('BearerToken')!, 2), 2), ['authorization'], 'apiKey security definition');
  t.same(text(one(b, 12, 1), 1), ['BearerToken'], 'security requirement');
});
