// JSON merge patch and JSON patch as kube-apiserver applies them to custom resources, with
// its answers to bad patches; field errors worded as apimachinery's.
import t from 'tap';
import { aggregateText, fieldInvalid, fieldNotSupported, fieldRequired, invalidObject } from './field-errors.ts';
import { deepJson, patchBombs } from '../hack/testing/patch-bombs.ts';
import { jsonBytes, maxJsonDepth } from './json-limits.ts';
import { applyJsonPatch, applyMergePatch, applyPatch, defaultPatchLimits, maxJSONPatchOperations, type JsonValue } from './patch.ts';
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

t.test('bounded as kube bounds a patch: copies, the result, depth', async (t) => {
  const MiB = 1024 * 1024;
  const invalid = { name: 'StatusError', reason: 'Invalid', code: 422, message: 'the server rejected our request due to an error in our request' };
  const ops = (...o: object[]) => JSON.stringify(o);
  const value = (bytes: number) => 'a'.repeat(bytes - 2); // a JSON string of `bytes` bytes
  const copies = (n: number, bytes: number) => ops({ op: 'add', path: '/x', value: value(bytes) }, ...Array.from({ length: n }, (_, i) => ({ op: 'copy', from: '/x', path: `/y${i}` })));
  t.equal(Object.keys(applyJsonPatch({}, copies(3, MiB), { ...defaultPatchLimits, maxResultBytes: Infinity }) as object).length, 4, 'copies adding exactly 3 MiB are applied');
  t.throws(() => applyJsonPatch({}, copies(4, 0.8 * MiB)), { ...invalid, details: { causes: [{ message: /^Unable to complete the copy, the accumulated size increase of copy is at least \d+, exceeding the limit 3145728$/ }] } }, 'one byte more: 422');
  t.ok(defaultPatchLimits.maxCopyBytes === 3 * MiB && defaultPatchLimits.maxResultBytes === 3 * MiB, "kube's JSONPatchMaxCopyBytes; the body limit for the result");

  // Counted before copying: a copy over the budget allocates nothing. 40 doublings of a small
  // array would be 2^40 times its size; the budget stops it after ~17 with the heap untouched.
  // Refused fast: the heap shows its copies were not built (all of them would be 2^40 times the array).
  const before = process.memoryUsage().heapUsed;
  t.throws(() => applyJsonPatch({}, ops({ op: 'add', path: '/x', value: ['x'.repeat(40)] }, ...Array.from({ length: 40 }, () => ({ op: 'copy', from: '/x', path: '/x/-' })))), invalid, 'the doubling bomb is refused');
  t.ok(process.memoryUsage().heapUsed - before < 64 * MiB, 'without building its copies');

  t.throws(() => applyJsonPatch({}, ops({ op: 'add', path: '/x', value: value(1.2 * MiB) }, { op: 'copy', from: '/x', path: '/y' }, { op: 'copy', from: '/x', path: '/z' })), {
    name: 'StatusError',
    reason: 'RequestEntityTooLarge',
    code: 413,
    message: 'Request entity too large: the patched object is larger than the limit of 3145728 bytes',
  });
  t.throws(() => applyMergePatch({ x: value(2 * MiB) }, JSON.stringify({ y: value(1.5 * MiB) })), { reason: 'RequestEntityTooLarge', code: 413 }, 'a merge patch too');

  const deep = (n: number) => JSON.parse(deepJson(n, 'object', '{}')) as JsonValue;
  t.throws(() => applyJsonPatch({}, ops({ op: 'add', path: '/x', value: deep(300) }, { op: 'copy', from: '/x', path: `/x${'/a'.repeat(300)}/b` })), {
    reason: 'Invalid',
    code: 422,
    message: ` "" is invalid: patch: Invalid value: "<the patched object, nested deeper than ${maxJsonDepth} levels>": exceeded max depth of ${maxJsonDepth}`,
  }, 'a copy that nests the result too deep');
  t.throws(() => applyMergePatch({}, `{"x":${deepJson(maxJsonDepth)}}`), { reason: 'BadRequest', code: 400, message: "error decoding patch: invalid character '{' exceeded max depth" });
  t.throws(() => applyJsonPatch({}, `[{"op":"add","path":"/x","value":${deepJson(maxJsonDepth)}}]`), { reason: 'BadRequest', code: 400, message: "error decoding patch: invalid character '{' exceeded max depth" });
  t.throws(() => applyJsonPatch({}, ops({ op: 'add', path: '/x', value: new Array(1_000_000).fill(0) }, ...Array.from({ length: 300 }, () => ({ op: 'add', path: '/x/0', value: 1 })))), {
    ...invalid,
    details: { causes: [{ message: 'the operations shift more than 200000000 array elements (inserts and removals before the end of large arrays)' }] },
  }, 'inserts at the front of a large array are bounded in work');
});

t.test('every operation walks values without recursion', async (t) => {
  // Values far deeper than a stack (copies can build them); the depth bound lifted to see the operations themselves.
  const limits = { ...defaultPatchLimits, maxDepth: Infinity, maxResultBytes: Infinity };
  const deep = JSON.parse(deepJson(100_000, 'object', '{}')) as JsonValue;
  const inner = `/x${'/a'.repeat(100_000)}`;
  const out = applyJsonPatch({ x: deep }, JSON.stringify([{ op: 'copy', from: '/x', path: '/y' }]), limits) as { x: JsonValue; y: JsonValue };
  t.not(out.y, out.x, 'copied');
  t.equal(jsonBytes(out.y), jsonBytes(deep), 'whole');
  t.throws(() => applyJsonPatch({ x: deep }, JSON.stringify([{ op: 'test', path: '/x', value: { a: { a: 0 } } }]), limits), { code: 422 }, 'test compares');
  t.same(Object.keys(applyJsonPatch({ x: deep }, JSON.stringify([{ op: 'add', path: `${inner}/b`, value: 1 }, { op: 'move', from: '/x', path: '/z' }]), limits) as object), ['z'], 'add at the bottom, move the whole');
  t.same(applyMergePatch({ x: deep }, '{"x":null,"y":1}', limits), { y: 1 }, 'merge');
  t.throws(() => applyMergePatch({ x: deep }, '{"z":1}'), { reason: 'Invalid', code: 422 }, 'a stored document too deep: 422, no stack overflow');
});

t.test('"__proto__" is a key like any other', async (t) => {
  const j = applyJsonPatch({}, '[{"op":"add","path":"/__proto__","value":{"polluted":true}}]') as Record<string, unknown>;
  t.same(Object.keys(j), ['__proto__']);
  t.equal(Object.getPrototypeOf(j), Object.prototype);
  const m = applyMergePatch({}, '{"__proto__":{"polluted":true}}') as Record<string, unknown>;
  t.same(Object.keys(m), ['__proto__']);
  t.equal(({} as Record<string, unknown>).polluted, undefined);
});

t.test('the patch bombs: each answered as expected', async (t) => {
  // How long each took is reported, not asserted (a busy machine stretches it): the work is
  // bounded by the budgets (copy bytes, shifted elements, depth, result size) that refuse them.
  const doc = { apiVersion: 'panoptes.io/v1alpha1', kind: 'Cluster', metadata: { name: 'east' }, spec: { server: 'https://east' } };
  for (const b of patchBombs()) {
    if (Buffer.byteLength(b.body) > defaultPatchLimits.maxResultBytes) continue; // refused as a body, before any patch
    const started = Date.now();
    let code = 200;
    try {
      applyPatch(b.contentType === 'application/json-patch+json' ? 'json' : 'merge', doc, b.body);
    } catch (err) {
      if (!(err instanceof StatusError)) throw err;
      code = err.code;
    }
    t.equal(code, b.expect.code, `${b.name}: ${code} in ${Date.now() - started} ms`);
  }
});

t.test('a merge patch that is a large array of objects replaces the document', async (t) => {
  const patch = JSON.stringify(Array.from({ length: 300_000 }, () => ({ a: null, b: 1 })));
  const out = applyMergePatch({}, patch) as Array<Record<string, unknown>>;
  t.equal(out.length, 300_000);
  t.same(out[299_999], { b: 1 }, 'nulls dropped from its objects');
});
