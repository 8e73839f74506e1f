// Hostile member data on both backends (hack/hostile/objects.ts): values Kubernetes does not
// bound (300- and 10,000-character owner uids), NUL and lone surrogates in annotations,
// fields and labels, astral characters, label keys and values at kube's limits and beyond
// (a non-validating aggregated API server), objects of 1 MiB and near etcd's 1.5 MiB, and
// nesting to kube's own limit. Each is stored byte for byte, listed, selected and
// aggregated, and both backends answer the same.
import t from 'tap';
import { memberContent, servedContent } from '../hack/hostile/compare.ts';
import { blobResource, hostileBlobs, hostileConfigMaps, kubeLimits, labelsAtLimits, ownerReference } from '../hack/hostile/objects.ts';
import { parseLabelSelector } from '../kube/labels.ts';
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
