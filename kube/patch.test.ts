// JSON merge patch and JSON patch as kube-apiserver applies them to custom resources, with
// its answers to bad patches; field errors worded as apimachinery's.
import t from 'tap';
import { aggregateText, fieldInvalid, fieldNotSupported, fieldRequired, invalidObject } from './field-errors.ts';
import { applyJsonPatch, applyMergePatch, maxJSONPatchOperations } from './patch.ts';
import { StatusError } from './status.ts';

const doc = { metadata: { name: 'a', labels: { x: '1', y: '2' } }, spec: { resources: ['pods', 'services'], server: 'https://a' } };

t.test('merge patch (RFC 7386)', async (t) => {
  t.same(applyMergePatch(doc, '{"metadata":{"labels":{"x":null,"z":"3"}},"spec":{"resources":["nodes"]}}'), {
    metadata: { name: 'a', labels: { y: '2', z: '3' } },
    spec: { resources: ['nodes'], server: 'https://a' },
  });
  t.same(doc.metadata.labels, { x: '1', y: '2' }, 'the document is not changed');
  t.same(applyMergePatch(doc, '{"spec":null}'), { metadata: doc.metadata });
  t.same(applyMergePatch(doc, '[{"a":null,"b":1}]'), [{ b: 1 }], 'an array patch replaces the document');
  for (const bad of ['{', 'null', '5', '"x"']) {
    t.throws(() => applyMergePatch(doc, bad), { reason: 'BadRequest', code: 400, message: 'Invalid JSON Patch' }, bad);
  }
});

t.test('JSON patch (RFC 6902)', async (t) => {
  const out = applyJsonPatch(doc, JSON.stringify([
    { op: 'add', path: '/spec/resources/-', value: 'nodes' },
    { op: 'add', path: '/spec/resources/0', value: 'configmaps' },
    { op: 'replace', path: '/spec/server', value: 'https://b' },
    { op: 'remove', path: '/metadata/labels/x' },
    { op: 'copy', from: '/metadata/name', path: '/metadata/labels/name' },
    { op: 'move', from: '/metadata/labels/y', path: '/metadata/labels/w' },
    { op: 'test', path: '/spec/resources/1', value: 'pods' },
    { op: 'add', path: '/metadata/annotations', value: { 'a~b/c': 'v' } },
    { op: 'replace', path: '/metadata/annotations/a~0b~1c', value: 'w' },
  ]));
  t.same(out, {
    metadata: { name: 'a', labels: { name: 'a', w: '2' }, annotations: { 'a~b/c': 'w' } },
    spec: { resources: ['configmaps', 'pods', 'services', 'nodes'], server: 'https://b' },
  });
  t.same(doc.spec.resources, ['pods', 'services'], 'the document is not changed');

  const doesNotApply = { reason: 'Invalid', code: 422, message: 'the server rejected our request due to an error in our request' };
  for (const ops of [
    [{ op: 'remove', path: '/spec/nope' }],
    [{ op: 'replace', path: '/spec/nope', value: 1 }],
    [{ op: 'add', path: '/nope/deeper', value: 1 }],
    [{ op: 'add', path: '/spec/resources/7', value: 'x' }],
    [{ op: 'add', path: '/spec/resources/01', value: 'x' }],
    [{ op: 'test', path: '/spec/server', value: 'https://other' }],
    [{ op: 'move', from: '/spec', path: '/spec/inner' }],
    [{ op: 'frobnicate', path: '/spec' }],
    [{ op: 'add', path: 'spec' , value: 1 }],
    [{ op: 'add', path: '/spec/x' }],
  ]) {
    t.throws(() => applyJsonPatch(doc, JSON.stringify(ops)), doesNotApply, JSON.stringify(ops));
  }
  t.throws(() => applyJsonPatch(doc, JSON.stringify([{ op: 'replace', path: '/spec/server', value: 'x' }, { op: 'remove', path: '/nope' }])), doesNotApply, 'all or nothing');
  t.throws(() => applyJsonPatch(doc, '{"op":"add"}'), { reason: 'BadRequest', message: 'json: cannot unmarshal object into Go value of type jsonpatch.Patch' });
  t.throws(() => applyJsonPatch(doc, '[1]'), { name: 'StatusError', reason: 'BadRequest' });
  t.throws(() => applyJsonPatch(doc, 'nope'), { name: 'StatusError', reason: 'BadRequest' });
  const many = JSON.stringify(new Array(maxJSONPatchOperations + 1).fill({ op: 'test', path: '/spec/server', value: 'https://a' }));
  t.throws(() => applyJsonPatch(doc, many), { reason: 'RequestEntityTooLarge', code: 413, message: /maximum operations in a JSON patch is 10000, got 10001/ });
});

t.test('field errors as errors.NewInvalid words them', async (t) => {
  const one = invalidObject({ group: 'panoptes.io', kind: 'Cluster' }, 'x', [fieldInvalid('spec.server', 'nope', 'must be an http:// or https:// URL')]);
  t.ok(one instanceof StatusError);
  t.match(one.toStatus(), {
    kind: 'Status',
    code: 422,
    reason: 'Invalid',
    message: 'Cluster.panoptes.io "x" is invalid: spec.server: Invalid value: "nope": must be an http:// or https:// URL',
    details: { name: 'x', group: 'panoptes.io', kind: 'Cluster', causes: [{ reason: 'FieldValueInvalid', field: 'spec.server', message: 'Invalid value: "nope": must be an http:// or https:// URL' }] },
  });
  const two = invalidObject({ group: 'panoptes.io', kind: 'Cluster' }, '', [fieldRequired('metadata.name', 'name or generateName is required'), fieldNotSupported('spec.source', 'file', ['api'])]);
  t.equal(two.message, 'Cluster.panoptes.io "" is invalid: [metadata.name: Required value: name or generateName is required, spec.source: Unsupported value: "file": supported values: "api"]');
  t.same(two.details?.causes?.map((c) => c.reason), ['FieldValueRequired', 'FieldValueNotSupported']);
  t.notOk(two.details && 'name' in two.details, 'an empty name is omitted from details');
  t.equal(aggregateText(['a', 'a']), 'a', 'duplicates are dropped');
  t.equal(invalidObject({ group: 'meta.k8s.io', kind: 'CreateOptions' }, '', [fieldNotSupported('dryRun', ['x'], ['All'])]).message, 'CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"x"}: supported values: "All"');
});
