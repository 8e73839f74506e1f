// Hostile member data on both backends (hack/hostile/objects.ts): values Kubernetes does not
// bound (300- and 10,000-character owner uids), NUL and lone surrogates in annotations,
// fields and labels, astral characters, label keys and values at kube's limits and beyond
// (a non-validating aggregated API server), objects of 1 MiB and near etcd's 1.5 MiB, an
// array of 45,000 elements, and nesting to kube's own limit. Each is stored byte for byte,
// listed, selected and aggregated, and both backends answer the same. And hostile requests
// over them: forged continue tokens, names with NUL, huge term lists.
import t from 'tap';
import { memberContent, servedContent } from '../hack/hostile/compare.ts';
import { blobResource, hostileBlobs, hostileConfigMaps, hugeArrayEntries, kubeLimits, labelsAtLimits, ownerReference } from '../hack/hostile/objects.ts';
import { parseLabelSelector } from '../kube/labels.ts';
import { encodeContinue, type ContinueToken } from './continue.ts';
import { objectMatches } from './filters.ts';
import { backends, openTestStore, podEvent, stopTestPostgres } from './testing.ts';
import type { KubeObject, ListQuery, UpstreamEvent } from './types.ts';

t.teardown(stopTestPostgres);

const ns = 'h';
let nextRv = 100;
const added = (resource: { group: string; version: string; resource: string }, object: KubeObject): UpstreamEvent => ({
  type: 'ADDED',
  group: resource.group,
  version: resource.version,
  resource: resource.resource,
  object: { ...object, metadata: { ...object.metadata, uid: `uid-${object.metadata!.name!.slice(0, 40)}`, resourceVersion: String(++nextRv) } },
});
const configMaps = { group: '', version: 'v1', resource: 'configmaps' };

for (const backend of backends) {
  t.test(backend, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    const cms = hostileConfigMaps(ns).map((o) => added(configMaps, o));
    const blobs = hostileBlobs(ns).map((o) => added(blobResource, o));

    t.test('every hostile object is stored byte for byte', async (t) => {
      for (const e of [...cms, ...blobs]) {
        const md = e.object.metadata!;
        // One batch each, so a failure names its object.
        const r = await store.applyBatch('east', [e]).catch((err: Error) => err);
        if (r instanceof Error) t.fail(`${md.name!.slice(0, 60)}: ${r.message.slice(-200)}`);
        const got = await store.get({ cluster: 'east', group: e.group, resource: e.resource, namespace: ns, name: md.name! });
        if (!t.ok(got, `${md.name!.slice(0, 60)} is stored`)) continue;
        t.ok(servedContent(got!.object) === memberContent(e.object), `${md.name!.slice(0, 60)}: the content is the member's`);
      }
    });

    const q = (extra: Partial<ListQuery>, resource = configMaps): ListQuery => ({ group: resource.group, resource: resource.resource, namespaces: [ns], ...extra });
    const names = async (query: ListQuery) => (await store.list(query)).items.map((i) => i.name).sort();

    t.test('listed in pages, selected by labels at their limits and by 300- and 10,000-character owner uids', async (t) => {
      const seen: string[] = [];
      let cont: string | undefined;
      for (let page = 0; page < 20; page++) {
        const r = await store.list(q({ limit: 2, continue: cont }));
        seen.push(...r.items.map((i) => i.name));
        cont = r.continue;
        if (!cont) break;
      }
      t.same(seen.sort(), cms.map((e) => e.object.metadata!.name!).sort(), 'paging returns every object once');
      const [key, value] = Object.entries(labelsAtLimits())[0];
      t.same(await names(q({ labelSelector: parseLabelSelector(`${key}=${value}`) })), ['labels-at-limits'], 'a 253-character prefix, a 63-character name and value');
      t.same(await names(q({ labelSelector: parseLabelSelector('replicas>41') })), ['labels-at-limits'], 'a>N');
      t.same(await names(q({ ownerUIDs: [ownerReference(300).uid] })), ['owner-uid-300']);
      t.same(await names(q({ ownerUIDs: [ownerReference(10_000).uid] })), ['owner-uid-10000']);
      t.same(await names(q({ labelSelector: parseLabelSelector('nul-value') }, blobResource)), ['labels-beyond-kube'], 'labels no selector can name still say the key exists');
      t.same(await names(q({ labelSelector: parseLabelSelector('long-value=x') }, blobResource)), [], 'and match no value');
    });

    t.test('JSON paths over NUL, lone surrogates, deep nesting and 1.5 MiB objects aggregate', async (t) => {
      const count = async (match: Parameters<typeof store.aggregate>[0]['match'], resource = configMaps) =>
        (await store.aggregate({ select: { group: resource.group, resource: resource.resource, namespaces: [ns] }, match, fn: 'count' })).rows[0].value;
      t.equal(await count([{ path: ['metadata', 'annotations', 'example.com/nul'], operator: 'Exists', values: [] }]), 1, 'Exists over a NUL value');
      t.equal(await count([{ path: ['metadata', 'annotations', 'example.com/nul'], operator: 'In', values: ['before\u0000after'] }]), 1, 'In with the NUL value');
      t.equal(await count([{ path: ['metadata', 'annotations', 'example.com/esc'], operator: 'In', values: ['a\\u0000b'] }]), 1, 'an escaped backslash before u0000 is no NUL');
      t.equal(await count([{ path: ['metadata', 'annotations', 'example.com/high'], operator: 'In', values: ['x\ud800y'] }]), 1, 'In with a lone surrogate');
      t.equal(await count([{ path: ['data', 'k'], operator: 'In', values: ['emoji \u{1F600} and \u{10FFFF} and \u{1D11E}'] }]), 1, 'astral characters');
      t.equal(await count([{ path: ['metadata', 'name'], operator: 'NotIn', values: ['x'] }]), cms.length, 'every object reads');
      const sum = await store.aggregate({ select: { group: blobResource.group, resource: blobResource.resource, namespaces: [ns] }, fn: 'sum', path: ['status', 'ready'] });
      t.equal(sum.rows[0].value, blobs.length, 'a number read from each blob, the deepest and the largest included');
      t.equal(await count([{ path: ['spec', 'tree', 'd', 'd', 'd'], operator: 'Exists', values: [] }], blobResource), 2, 'a path into the nested trees');
    });

    t.test('field selectors over values with NUL and lone surrogates', async (t) => {
      await store.applyBatch('east', [
        podEvent('ADDED', ns, 'p-nul', '5000', { nodeName: 'node\u0000a' }),
        podEvent('ADDED', ns, 'p-lone', '5001', { nodeName: 'node\ud800' }),
        podEvent('ADDED', ns, 'p-plain', '5002', { nodeName: 'node-1' }),
      ]);
      const pods = { group: '', version: 'v1', resource: 'pods' };
      const sel = (field: string, value: string, operator: '=' | '!=' = '=') => names(q({ fieldSelector: [{ field, operator, value }] }, pods));
      t.same(await sel('spec.nodeName', 'node-1'), ['p-plain']);
      t.same(await sel('spec.nodeName', 'node\u0000a'), ['p-nul']);
      t.same(await sel('spec.nodeName', 'node\ud800'), ['p-lone']);
      t.same(await sel('spec.nodeName', 'node-1', '!='), ['p-lone', 'p-nul']);
      t.same(await sel('metadata.name', 'p\u0000nul'), [], 'a name with NUL names nothing');
      t.same(await sel('metadata.name', 'p\u0000nul', '!='), ['p-lone', 'p-nul', 'p-plain']);
      await t.rejects(store.list(q({ names: ['p-plain', 'p\u0000'] }, pods)), { code: 400, reason: 'BadRequest' }, 'names= with a NUL among them: a 400, as every value SQL cannot bind');
    });

    t.test(`a [*] over an array of ${hugeArrayEntries.toLocaleString('en')} elements walks it once, in SQL and in memory alike`, async (t) => {
      const env = (values: string[]): ListQuery => q({ jsonFields: [{ path: ['spec', 'containers', null, 'env', null, 'name'], operator: 'in', values }] }, blobResource);
      const last = `E${hugeArrayEntries - 1}`;
      t.same(await names(env([last])), ['huge-array'], 'its last element');
      t.same(await names(env(['nope'])), [], 'no element');
      const huge = blobs.find((e) => e.object.metadata!.name === 'huge-array')!;
      const key = { cluster: 'east', ...blobResource, namespace: ns, name: 'huge-array' };
      t.ok(objectMatches(env([last]), key, huge.object) && !objectMatches(env(['nope']), key, huge.object), 'objectMatches (watches, rebuilt rows) agrees');
    });

    t.test('request values with NUL or a lone surrogate are a 400 before the engine sees them: forged continue tokens, names, the rv translation, key lists', async (t) => {
      // UnboundValueError: refused by storage/bound-values.ts before the driver, never the engine's own error.
      const refused = async (what: string, run: () => Promise<unknown>, message = /a value of this request holds (a NUL character|an unpaired UTF-16 surrogate)/, name = 'UnboundValueError') => {
        await t.rejects(run(), { name, code: 400, reason: 'BadRequest', message }, what);
      };
      const key = (name: string) => ({ cluster: 'east', ...configMaps, namespace: ns, name });
      await refused('a get by a name with NUL', () => store.get(key('astral\u0000')));
      await refused('a get by a name with a lone surrogate', () => store.get(key('astral\ud800')));
      await refused('a get in a namespace with NUL', () => store.get({ ...key('astral'), namespace: 'h\u0000' }));
      await refused('the rv translation of a proxied write (Store.memberRvAt)', () => store.memberRvAt(key('astral\u0000'), 2));
      await refused('names= with NUL', () => store.list(q({ names: ['astral', 'a\u0000'] })));
      await refused('namespaces= with NUL', () => store.list(q({ namespaces: ['h\u0000'] })));
      await refused('an owner chain by a name with NUL', () => store.list(q({ owners: { names: ['d\u0000'], group: 'apps', resource: 'deployments', seniority: 1 } })));
      // Tokens as this server writes them, forged: every string of one is bound into SQL.
      const token = (t: Partial<ContinueToken>) => encodeContinue({ rv: 2, namespace: ns, name: 'astral', cluster: 'east', served: 1, ...t });
      const forged = /continue key is not valid: not a token issued by this server/;
      const bad = async (what: string, t: Partial<ContinueToken>, extra: Partial<ListQuery> = {}) => refused(what, () => store.list(q({ limit: 1, ...extra, continue: token(t) })), forged, 'StatusError');
      await bad('a continue token whose key holds NUL', { name: 'a\u0000' });
      await bad('a continue token whose cluster holds a lone surrogate', { cluster: 'e\udc00' });
      await bad('a continue token whose orderBy value holds NUL', { order: '[["name",null,false]]', sortValues: ['a\u0000'] }, { orderBy: [{ key: 'name', desc: false }] });
      await bad('a continue token whose creation range holds NUL', { created: ['2020\u0000', null] }, { createdSince: '2020-01-01T00:00:00Z' });
      await bad('a collection token whose kind holds NUL', { group: '', resource: 'config\u0000maps' }, { kinds: [configMaps] });
      t.ok(await store.get(key('astral')), 'the store serves on');
    });

    t.test('huge term lists: a 400 that names the budget, or served within one statement’s', async (t) => {
      await t.rejects(store.list(q({ nameContains: Array.from({ length: 500 }, () => 'ast') })), { code: 400, message: /^too many search terms: this request has 501 \(fuzzyName 500, namespaces 1\)/ });
      const many = (n: number, last: string) => [...Array.from({ length: n - 1 }, (_, i) => `x-${i}`), last];
      const namespaces = many(32, ns);
      t.same(await names(q({ namespaces, names: many(1000, 'astral'), ownerUIDs: many(1000, ownerReference(300).uid), limit: 500 })), [], '32 namespaces, 1,000 names, 1,000 ownerUIDs: served');
      t.same(await names(q({ namespaces, names: many(1000, 'owner-uid-300'), ownerUIDs: many(1000, ownerReference(300).uid), limit: 500 })), ['owner-uid-300']);
      const kinds = Array.from({ length: 32 }, (_, i) => ({ group: 'example.com', resource: `kind-${i}` }));
      await t.rejects(store.list(q({ kinds, names: many(1000, 'astral'), limit: 500 })), { code: 400, message: /^too many search values: this request would bind .* for each of its 32 kinds/ });
    });

    t.test('an identity storage cannot hold exactly is refused alike on both backends, naming the field and not the value', async (t) => {
      const before = await store.watermark();
      for (const name of ['bad\u0000name', 'bad\ud800name', 'x'.repeat(3000)]) {
        const e = added(configMaps, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns } });
        await t.rejects(store.applyBatch('east', [cms[0], e]), { name: 'UnstorableError', message: /^metadata\.name cannot be stored/ }, JSON.stringify(name.slice(0, 20)));
      }
      t.equal(await store.watermark(), before, 'nothing written');
    });

    t.test('opaque upstream rvs: a replayed batch writes nothing', async (t) => {
      const ev = (rv: string, v: string): UpstreamEvent => ({ ...added(configMaps, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'opaque', namespace: ns }, data: { v } }), type: 'MODIFIED' });
      const batch = [ev('rv-a', '1'), ev('rv-b', '2'), ev('rv-c', '3')].map((e, i) => ({ ...e, object: { ...e.object, metadata: { ...e.object.metadata, uid: 'opaque-uid', resourceVersion: ['rv-a', 'rv-b', 'rv-c'][i] } } }));
      t.equal((await store.applyBatch('east', batch)).changes.length, 3);
      t.same((await store.applyBatch('east', batch)).changes, [], 'the same batch again (a retry after a lost commit answer)');
      const got = await store.get({ cluster: 'east', group: '', resource: 'configmaps', namespace: ns, name: 'opaque' });
      t.equal(got?.upstreamRv, 'rv-c', 'the last state stays');
      t.equal((await store.applyBatch('east', [{ ...batch[0], object: { ...batch[0].object, metadata: { ...batch[0].object.metadata, resourceVersion: 'rv-d' } } }])).changes.length, 1, 'a new opaque rv is still written');
    });

    t.test('a 10,000-level object is served by depth, not by JSON.stringify', async (t) => {
      const deep = blobs.find((e) => e.object.metadata!.name === 'nested-max')!;
      const got = await store.get({ cluster: 'east', ...blobResource, namespace: ns, name: 'nested-max' });
      t.ok(got && got.object.length > kubeLimits.jsonDepth * 5, 'stored whole');
      t.ok(deep);
    });
  });
}

for (const backend of backends) {
  t.test(`${backend}: a delete of a key too long to store is no refusal`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    const name = 'x'.repeat(3000);
    const r = await store.applyBatch('east', [{ type: 'DELETED', group: '', version: 'v1', resource: 'configmaps', object: { metadata: { name, namespace: ns, uid: 'u' } } }]);
    t.same(r.changes, [], 'nothing to delete, nothing refused');
  });
}
