import t from 'tap';
import { objectMatches } from './filters.ts';
import { connect } from './connect.ts';
import { sqlite } from './dialect.ts';
import { budgetTimeout, defaultQueryBudget, type JsonFieldRequirement } from './json-fields.ts';
import { backends, openTestStore, podEvent, stopTestPostgres } from './testing.ts';
import type { KubeObject, ListQuery, UpstreamEvent } from './types.ts';

t.teardown(stopTestPostgres);

/** Pods with containers, annotations and values of every JSON type at the paths the terms read. */
function pods(): UpstreamEvent[] {
  const shapes: Array<Record<string, unknown>> = [
    { containers: [{ name: 'a', image: 'nginx:1' }, { name: 'b', image: 'redis' }], annotations: { 'example.com/tier': 'front' }, replicas: 3 },
    { containers: [{ name: 'a', image: 'nginx:2' }], annotations: { 'example.com/tier': 'back' }, replicas: 3.5 },
    { containers: [], annotations: {}, replicas: true },
    { containers: ['nginx:1', { image: null }], replicas: null },
    { containers: { image: 'nginx:1' }, replicas: { n: 3 } },
    { containers: [{ image: 'x\u0000y' }], annotations: { 'example.com/tier': '' }, replicas: '3' },
    {},
    { containers: ['sidecar', { image: 'mixed' }] },
    // Arrays of arrays, scalars of each type among them, and arrays where objects are expected.
    { containers: [[{ image: 'deep' }, 7], [true, null, 'nginx:1'], 2.5, { image: ['in-array'] }] },
  ];
  return shapes.map((s, i) => {
    const e = podEvent('ADDED', `ns-${i % 2}`, `p-${i}`, String(10 + i), { phase: i % 3 === 0 ? 'Pending' : 'Running' });
    const md = e.object.metadata!;
    if (s.annotations) md.annotations = s.annotations as Record<string, string>;
    const spec = e.object.spec as Record<string, unknown>;
    if ('containers' in s) spec.containers = s.containers;
    if ('replicas' in s) spec.replicas = s.replicas;
    if (i === 6) delete (e.object as { status?: unknown }).status;
    return e;
  });
}

const term = (path: Array<string | null>, operator: JsonFieldRequirement['operator'], ...values: string[]): JsonFieldRequirement => ({ path, operator, values });
const image = ['spec', 'containers', null, 'image'];
const cases: Array<[string, JsonFieldRequirement, string[]]> = [
  ['[*] in', term(image, 'in', 'nginx:1'), ['p-0']],
  ['[*] in, several values', term(image, 'in', 'nginx:2', 'redis'), ['p-0', 'p-1']],
  ['[*] notin holds where absent', term(image, 'notin', 'nginx:1'), ['p-1', 'p-2', 'p-3', 'p-4', 'p-5', 'p-6', 'p-7', 'p-8']],
  ['[*] exists skips null', term(image, 'exists'), ['p-0', 'p-1', 'p-5', 'p-7', 'p-8']],
  ['[*] !', term(image, '!'), ['p-2', 'p-3', 'p-4', 'p-6']],
  ['[*] of an array is no object', term(image, 'in', 'in-array'), []],
  ['[*][*] then a key', term(['spec', 'containers', null, null, 'image'], 'in', 'deep'), ['p-8']],
  ['[*][*] of scalars: a string', term(['spec', 'containers', null, null], 'in', 'nginx:1'), ['p-8']],
  ['[*][*] of scalars: a number and a boolean', term(['spec', 'containers', null, null], 'in', '7', 'true'), ['p-8']],
  ['[*][*] exists skips null', term(['spec', 'containers', null, null], 'exists'), ['p-8']],
  ['[*] of scalars: a decimal', term(['spec', 'containers', null], 'in', '2.5'), ['p-8']],
  ['[*] of objects and arrays: exists', term(['spec', 'containers', null], 'exists'), ['p-0', 'p-1', 'p-3', 'p-5', 'p-7', 'p-8']],
  ['[*] over strings and objects', term(image, 'in', 'mixed'), ['p-7']],
  ['[*] of strings', term(['spec', 'containers', null], 'in', 'nginx:1'), ['p-3']],
  ['NUL compares as U+FFFD', term(image, 'in', 'x\u0000y'), ['p-5']],
  ['bracketed key', term(['metadata', 'annotations', 'example.com/tier'], 'in', 'front', ''), ['p-0', 'p-5']],
  ['number as JSON writes it', term(['spec', 'replicas'], 'in', '3'), ['p-0', 'p-5']],
  ['decimal', term(['spec', 'replicas'], 'in', '3.5'), ['p-1']],
  ['boolean', term(['spec', 'replicas'], 'in', 'true'), ['p-2']],
  ['exists: not null, objects too', term(['spec', 'replicas'], 'exists'), ['p-0', 'p-1', 'p-2', 'p-4', 'p-5']],
  ['an object is no scalar', term(['spec', 'replicas'], 'notin', '3'), ['p-1', 'p-2', 'p-3', 'p-4', 'p-6', 'p-7', 'p-8']],
  ['status.phase, through its index', term(['status', 'phase'], 'in', 'Pending'), ['p-0', 'p-3']],
  ['status.phase notin', term(['status', 'phase'], 'notin', 'Pending'), ['p-1', 'p-2', 'p-4', 'p-5', 'p-6', 'p-7', 'p-8']],
];

for (const backend of backends) {
  t.test(`${backend}: JSON path terms in SQL and in memory`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    await store.applyBatch('c', pods());
    const objects = (await store.list({ group: '', resource: 'pods' })).items.map((o) => ({ key: o, obj: JSON.parse(o.object) as KubeObject }));
    for (const [what, r, want] of cases) {
      const q: ListQuery = { group: '', resource: 'pods', jsonFields: [r] };
      const sql = (await store.list(q)).items.map((i) => i.name).sort();
      t.same(sql, want, `${what}: SQL`);
      t.same(objects.filter(({ key, obj }) => objectMatches(q, key, obj)).map(({ key }) => key.name).sort(), want, `${what}: in memory`);
    }
  });

  t.test(`${backend}: unindexed terms are bounded`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    await store.applyBatch('c', pods());
    const q: ListQuery = { group: '', resource: 'pods', jsonFields: [term(image, 'in', 'nginx:1')], budget: { rows: 5, bytes: Infinity, ms: 2000 } };
    await t.rejects(store.list(q), { code: 400, reason: 'BadRequest', message: /\.spec\.containers\[\*\]\.image in \(nginx:1\)\) are not indexed and would read more than 5 objects; narrow/ });
    t.same((await store.list({ ...q, namespaces: ['ns-0'] })).items.map((i) => i.name), ['p-0'], 'narrowed under the budget, it is served');
    t.same((await store.list({ ...q, jsonFields: [...q.jsonFields!, term(['status', 'phase'], 'in', 'Pending')] })).items.map((i) => i.name), ['p-0'], 'an indexed term bounds it');
  });
}

for (const backend of backends) {
  t.test(`${backend}: the documents a list reads are bounded in bytes, counted before it reads any`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    const big = (i: number) => {
      const e = podEvent('ADDED', i < 2 ? 'small' : 'big', `p${i}`, String(10 + i), { phase: 'Running' });
      e.object.metadata!.annotations = { pad: 'x'.repeat(100_000) };
      (e.object.spec as Record<string, unknown>).containers = [{ name: 'a', image: `nginx:${i}` }];
      return e;
    };
    await store.applyBatch('c', Array.from({ length: 6 }, (_, i) => big(i)));
    const budget = { rows: 100, bytes: 250_000, ms: 2000 };
    const q: ListQuery = { group: '', resource: 'pods', jsonFields: [term(image, 'in', 'nginx:1')], budget };
    await t.rejects(store.list(q), { code: 400, reason: 'BadRequest', message: /\.spec\.containers\[\*\]\.image in \(nginx:1\)\) are not indexed and would read 0\.6 MiB of documents, more than the 0\.2 MiB a list may; narrow/ });
    t.same((await store.list({ ...q, namespaces: ['small'] })).items.map((i) => i.name), ['p1'], 'two documents are within it');
    // An indexed term narrows what the others read, and is no way around the bound.
    const indexed: ListQuery = { ...q, jsonFields: [term(['status', 'phase'], 'in', 'Running'), term(image, 'in', 'nginx:1')] };
    await t.rejects(store.list(indexed), { code: 400, message: /the JSON path terms \(\.spec\.containers\[\*\]\.image in \(nginx:1\)\) are not indexed and would read/ }, 'with an indexed term that selects every pod');
    await t.rejects(store.list({ ...indexed, budget: { ...budget, rows: 3, bytes: Infinity } }), { code: 400, message: /would read more than 3 objects/ }, 'its objects too');
    t.same((await store.list({ ...indexed, jsonFields: [term(['status', 'phase'], 'in', 'Pending'), term(image, 'in', 'nginx:1')] })).items, [], 'an indexed term that selects none');
    // An orderBy on a JSON path reads what it sorts.
    const ordered: ListQuery = { group: '', resource: 'pods', orderBy: [{ key: 'path', path: ['spec', 'nodeName'], desc: false }], budget };
    await t.rejects(store.list(ordered), { code: 400, message: /^orderBy: the orderBy on a JSON path reads every matching document, and it would read 0\.6 MiB of documents/ });
    t.equal((await store.list({ ...ordered, namespaces: ['small'] })).items.length, 2);
    t.equal((await store.list({ ...ordered, orderBy: [{ key: 'name', desc: true }] })).items.length, 6, 'an order the index reads reads no document');
  });
}

t.test('in memory, a [*] over an array of 300,000 elements is walked one element at a time', async (t) => {
  const obj: KubeObject = { metadata: { name: 'p' }, spec: { values: Array.from({ length: 300_000 }, (_, i) => i) } };
  const key = { cluster: 'c', group: '', resource: 'pods', namespace: 'ns', name: 'p' };
  const q = (values: string[]): ListQuery => ({ group: '', resource: 'pods', jsonFields: [term(['spec', 'values', null], 'in', ...values)] });
  t.ok(objectMatches(q(['299999']), key, obj), 'the last element');
  t.notOk(objectMatches(q(['-1', ...Array.from({ length: 99 }, (_, i) => `x${i}`)]), key, obj), 'none of 100 values');
});

t.test('sqlite: a [*] reads each element from the value of its parent, never the document again by the element\'s key', async (t) => {
  // Looking an element up in the document by its fullkey (`$.spec.containers[0].env[49999]`)
  // walks the array to its index: n²/2 steps over an array of n (13 s for 50,000 env entries).
  const [sql] = sqlite.jsonAnyAt(['spec', 'containers', null, 'env', null, 'name'], 'in', ['x']);
  t.notMatch(sql, /fullkey/, sql);
  t.equal(sql.split('COALESCE(o.json_doc, o.object)').length - 1, 2, 'the document is read once, by the first level (its array test and its json_each)');
  const [ends] = sqlite.jsonAnyAt(['spec', 'values', null], 'exists', []);
  t.notMatch(ends, /json_type\(\(CASE/, 'a path ending in [*] tests the element itself');
});

t.test('sqlite: a walk over arrays stops at its deadline (a 504), counted in elements walked', async (t) => {
  const { store, close } = await openTestStore('sqlite');
  t.teardown(close);
  const e = podEvent('ADDED', 'ns', 'big', '10');
  (e.object.spec as Record<string, unknown>).containers = [{ name: 'a', env: Array.from({ length: 10_000 }, (_, i) => ({ name: `E${i}` })) }];
  await store.applyBatch('c', [e]);
  const q: ListQuery = { group: '', resource: 'pods', jsonFields: [term(['spec', 'containers', null, 'env', null, 'name'], 'in', 'E9999')] };
  // A deadline that has passed when the walk starts: the clock is read every 64 elements, so
  // the walk stops there, long before its 10,000 elements are walked.
  await t.rejects(store.list({ ...q, budget: { ...defaultQueryBudget, ms: 0 } }), { code: 504, reason: 'Timeout', message: /\.spec\.containers\[\*\]\.env\[\*\]\.name in \(E9999\)\) are not indexed and the list ran past its 0 ms budget/ });
  t.same((await store.list(q)).items.map((i) => i.name), ['big'], 'within its deadline, the same walk finds the last element');
  t.equal(sqlite.walkMs, 250, 'a walk holds the event loop at most 250 ms, whatever --field-path-timeout');
});

t.test('postgres: a statement past its budget is a 504 Timeout', async (t) => {
  const { url, close } = await openTestStore('postgres');
  t.teardown(close);
  const conn = connect(url);
  t.teardown(() => conn.knex.destroy());
  const q: ListQuery = { group: '', resource: 'pods', jsonFields: [term(image, 'exists')] };
  const err = await conn.knex
    .transaction(async (trx) => {
      await conn.dialect.boundStatements(trx, 20);
      await trx.raw('SELECT pg_sleep(2)');
    })
    .catch((e: unknown) => budgetTimeout(e, q, conn.dialect));
  t.match(err, { code: 504, reason: 'Timeout', message: /ran past its 2000 ms budget/ });
});

for (const backend of backends) {
  t.test(`${backend}: paging a JSON path term under churn: one rv, no duplicates, no losses`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    const withImage = (type: 'ADDED' | 'MODIFIED', i: number, image: string, rv: number) => {
      const e = podEvent(type, `ns-${i % 3}`, `p-${String(i).padStart(2, '0')}`, String(rv));
      (e.object.spec as Record<string, unknown>).containers = [{ name: 'a', image }, { name: 'b', image: 'envoy' }];
      return e;
    };
    await store.applyBatch('c', Array.from({ length: 30 }, (_, i) => withImage('ADDED', i, i % 2 ? 'nginx' : 'redis', 10 + i)));
    const q: ListQuery = { group: '', resource: 'pods', limit: 4, jsonFields: [term(image, 'in', 'nginx')] };
    const first = await store.list(q);
    const whole = (await store.list({ ...q, limit: undefined, exactRv: first.resourceVersion })).items.map((i) => `${i.namespace}/${i.name}`);
    t.equal(whole.length, 15);
    const seen = first.items.map((i) => `${i.namespace}/${i.name}`);
    let token = first.continue;
    for (let page = 1, rv = 100; token && page < 20; page++) {
      // Images flip both ways, pods are deleted and added, ahead of the cursor and behind it.
      await store.applyBatch('c', [
        withImage('MODIFIED', (page * 7) % 30, page % 2 ? 'redis' : 'nginx', rv++),
        withImage('MODIFIED', (page * 11) % 30, 'nginx', rv++),
        podEvent('DELETED', `ns-${(page * 5) % 3}`, `p-${String((page * 5) % 30).padStart(2, '0')}`, String(rv++)),
        withImage('ADDED', 100 + page, 'nginx', rv++),
      ]);
      const r = await store.list({ ...q, continue: token });
      t.equal(r.resourceVersion, first.resourceVersion, `page ${page} at the first page’s rv`);
      seen.push(...r.items.map((i) => `${i.namespace}/${i.name}`));
      token = r.continue;
    }
    t.same(seen, whole, 'the pages hold the list at the first page’s rv, once each');
  });
}
