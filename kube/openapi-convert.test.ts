// Schema conversion between Swagger 2.0 and OpenAPI 3.0, and reference closures.
import t from 'tap';
import { closure, gvkKeys, schemaV2toV3, schemaV3toV2 } from './openapi-convert.ts';

t.test('v2 to v3: references, and a $ref with siblings becomes allOf', async (t) => {
  const s = schemaV2toV3({
    type: 'object',
    properties: {
      metadata: { $ref: '#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta', description: 'Standard metadata' },
      items: { type: 'array', items: { $ref: '#/definitions/io.example.Thing' } },
      labels: { type: 'object', additionalProperties: { $ref: '#/definitions/io.example.Label' } },
    },
  });
  t.same(s, {
    type: 'object',
    properties: {
      metadata: { description: 'Standard metadata', allOf: [{ $ref: '#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta' }] },
      items: { type: 'array', items: { $ref: '#/components/schemas/io.example.Thing' } },
      labels: { type: 'object', additionalProperties: { $ref: '#/components/schemas/io.example.Label' } },
    },
  });
});

t.test('v3 to v2 as kube publishes CRD schemas in v2', async (t) => {
  const s = schemaV3toV2({
    type: 'object',
    required: ['a', 'b'],
    properties: {
      a: { type: 'string', nullable: true },
      b: { type: 'integer' },
      meta: { allOf: [{ $ref: '#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta' }], description: 'm' },
      port: { 'x-kubernetes-int-or-string': true, anyOf: [{ type: 'integer' }, { type: 'string' }] },
      raw: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true, properties: { x: { type: 'string' } } },
      list: { type: 'array', 'x-kubernetes-preserve-unknown-fields': true, items: { type: 'string' } },
      d: { type: 'object', discriminator: { propertyName: 'kind' }, writeOnly: true, deprecated: true },
    },
  });
  t.same(s, {
    type: 'object',
    required: ['b'],
    properties: {
      a: {},
      b: { type: 'integer' },
      meta: { $ref: '#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta', description: 'm' },
      port: { 'x-kubernetes-int-or-string': true },
      raw: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
      list: { 'x-kubernetes-preserve-unknown-fields': true },
      d: { type: 'object' },
    },
  });
});

t.test('closure follows references transitively and ignores unknown names', async (t) => {
  const defs = {
    A: { properties: { b: { $ref: '#/definitions/B' }, x: { $ref: '#/definitions/Missing' } } },
    B: { items: { $ref: '#/definitions/C' } },
    C: { type: 'string' },
    D: { type: 'string' },
  };
  t.same(closure(defs, ['A'], 'v2'), ['A', 'B', 'C']);
  t.same(closure(defs, ['D', 'Nope'], 'v2'), ['D']);
  t.same(gvkKeys({ 'x-kubernetes-group-version-kind': [{ group: '', version: 'v1', kind: 'Pod' }] }), ['/v1/Pod']);
});
