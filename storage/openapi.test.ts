// OpenAPI documents in storage: one row per distinct document, references per cluster and
// group version, lookup by upstream hash, garbage collection, on both backends.
import t from 'tap';
import { clusterLease } from './leases.ts';
import { backends, openTestStore, stopTestPostgres, takeLease } from './testing.ts';

t.teardown(stopTestPostgres);

for (const backend of backends) {
  t.test(`${backend}: documents shared by hash, replaced and collected`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    const core = { groupVersion: 'api/v1', format: 'v3' as const, hash: 'h-core', upstreamHash: 'U-CORE', body: '{"openapi":"3.0.0"}' };
    const apps = { groupVersion: 'apis/apps/v1', format: 'v3' as const, hash: 'h-apps', upstreamHash: 'U-APPS', body: '{"openapi":"3.0.0","x":1}' };
    await store.replaceClusterOpenAPI('a', [core, apps], await takeLease(store, clusterLease('a')));
    await store.replaceClusterOpenAPI('b', [core, apps], await takeLease(store, clusterLease('b')));
    const rows = await store.clusterOpenAPI();
    t.same(rows.map((r) => `${r.cluster} ${r.groupVersion} ${r.hash} ${r.present}`), ['a api/v1 h-core true', 'a apis/apps/v1 h-apps true', 'b api/v1 h-core true', 'b apis/apps/v1 h-apps true']);
    const docs = await store.openAPIDocuments(['h-core', 'h-apps', 'h-none']);
    t.same([...docs.keys()].sort(), ['h-apps', 'h-core'], 'each document stored once');
    t.equal(docs.get('h-core')!.body, core.body);
    t.equal(await store.openAPIDocumentByUpstream('v3', 'U-APPS'), 'h-apps', 'found by the upstream hash');
    t.equal(await store.openAPIDocumentByUpstream('v2', 'U-APPS'), undefined, 'of the same format only');

    // b moves to a new apps document and drops core; a still uses both old ones.
    const apps2 = { ...apps, hash: 'h-apps2', upstreamHash: 'U-APPS2', body: '{"openapi":"3.0.0","x":2}' };
    await store.replaceClusterOpenAPI('b', [apps2], await takeLease(store, clusterLease('b')));
    t.same((await store.clusterOpenAPI('b')).map((r) => r.hash), ['h-apps2']);
    t.equal((await store.openAPIDocuments(['h-apps', 'h-core', 'h-apps2'])).size, 3, 'documents a uses are kept');

    // a goes to a whole v2 document: its v3 documents are no longer used by anyone.
    const v2 = { groupVersion: '', format: 'v2' as const, hash: 'h-v2', upstreamHash: 'h-v2', body: '{"swagger":"2.0"}' };
    await store.replaceClusterOpenAPI('a', [v2], await takeLease(store, clusterLease('a')));
    t.same([...(await store.openAPIDocuments(['h-apps', 'h-core', 'h-apps2', 'h-v2'])).keys()].sort(), ['h-apps2', 'h-v2'], 'unused documents collected');

    // Linking to a stored document without its body.
    await store.replaceClusterOpenAPI('c', [{ groupVersion: '', format: 'v2', hash: 'h-v2', upstreamHash: 'h-v2' }], await takeLease(store, clusterLease('c')));
    await store.deleteClusterOpenAPI('a', await takeLease(store, clusterLease('a')));
    t.equal((await store.openAPIDocuments(['h-v2'])).size, 1, 'still used by c');
    await store.deleteClusterOpenAPI('c', await takeLease(store, clusterLease('c')));
    t.equal((await store.openAPIDocuments(['h-v2'])).size, 0, 'gone with its last user');
    t.same((await store.clusterOpenAPI()).map((r) => r.cluster), ['b']);

    // A reference whose document vanished is reported as not present.
    await store.replaceClusterOpenAPI('d', [{ groupVersion: 'api/v1', format: 'v3', hash: 'h-missing', upstreamHash: 'U-X' }], await takeLease(store, clusterLease('d')));
    t.equal((await store.clusterOpenAPI('d'))[0].present, false);
  });
}
