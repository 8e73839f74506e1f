// Cluster objects on both backends: in `objects` and `changes` like any served object, in
// the one rv sequence; read-decide-write under the rv lock (concurrent writers never lose an
// update); inline credentials kept apart and never in a served row; fenced writes.
import t from 'tap';
import { clusterGroup, clusterObjectsCluster, clusterResource, type ClusterCredentials, type ClusterObjectState, type ClusterObjectWrite } from './cluster-objects.ts';
import { clusterLease, FencedError } from './leases.ts';
import { Store } from './store.ts';
import { backends, openTestStore, podEvent, stopTestPostgres } from './testing.ts';
import type { KubeObject } from './types.ts';

t.teardown(stopTestPostgres);

const cluster = (name: string, uid: string, spec: Record<string, unknown>, labels?: Record<string, string>): KubeObject => ({
  apiVersion: 'panoptes.io/v1alpha1',
  kind: 'Cluster',
  metadata: { name, uid, generation: 1, creationTimestamp: '2026-01-01T00:00:00Z', ...(labels ? { labels } : {}) },
  spec,
});
const put = (object: KubeObject, credentials?: ClusterCredentials | null): ClusterObjectWrite => ({ action: 'put', object, credentials });
const list = (store: Store, extra: Record<string, unknown> = {}) => store.list({ group: clusterGroup, resource: clusterResource, clusters: [clusterObjectsCluster], ...extra });

/** Every text column of every served row: objects and the change log. */
async function servedText(store: Store): Promise<string> {
  const k = store.conn.knex;
  const objects: Array<{ object: string }> = await k('objects').select('object');
  const changes: Array<{ object: string; prev_object: string | null }> = await k('changes').select('object', 'prev_object');
  return JSON.stringify([objects, changes]);
}

for (const backend of backends) {
  t.test(`${backend}: Cluster objects in the change log`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    await store.applyBatch('east', [podEvent('ADDED', 'n', 'p1', '1')]);
    const start = await store.watermark();

    let seen: ClusterObjectState | undefined | 'unset' = 'unset';
    const created = await store.writeClusterObjectWithoutLease('east', (cur) => ((seen = cur), put(cluster('east', 'u1', { server: 'https://east' }, { team: 'a' }))));
    t.equal(seen, undefined, 'decide sees no object');
    t.same(created.change, { rv: start + 1, type: 'ADDED' });
    t.equal(JSON.parse(created.object!).metadata.resourceVersion, String(start + 1), 'served with its rv');
    t.equal(await store.watermark(), start + 1);

    await store.applyBatch('east', [podEvent('ADDED', 'n', 'p2', '2')]);
    const updated = await store.writeClusterObjectWithoutLease('east', (cur) => {
      seen = cur;
      return put({ ...cur!.object, spec: { server: 'https://east2' } });
    });
    t.match(seen, { name: 'east', uid: 'u1', rv: start + 1, object: { spec: { server: 'https://east' } } });
    t.same(updated.change, { rv: start + 3, type: 'MODIFIED' }, 'one rv sequence with the member writes');

    const none = await store.writeClusterObjectWithoutLease('east', () => ({ action: 'none' }));
    t.equal(none.change, undefined);
    t.equal(await store.watermark(), start + 3, 'nothing written');
    await t.rejects(store.writeClusterObjectWithoutLease('east', () => {
      throw new Error('refused');
    }), /refused/);
    t.equal(await store.watermark(), start + 3, 'a refusal writes nothing');

    const changes = (await store.changesAfter(start, 10)).filter((c) => c.cluster === clusterObjectsCluster);
    t.same(changes.map((c) => [c.rv, c.type, c.group, c.resource, c.name]), [
      [start + 1, 'ADDED', 'panoptes.io', 'clusters', 'east'],
      [start + 3, 'MODIFIED', 'panoptes.io', 'clusters', 'east'],
    ]);
    t.equal(JSON.parse(changes[1].prevObject!).spec.server, 'https://east');

    await store.writeClusterObjectWithoutLease('west', () => put(cluster('west', 'u2', { server: 'https://west' }, { team: 'b' })));
    const all = await list(store);
    t.same(all.items.map((i) => [i.name, i.rv]), [['east', start + 3], ['west', start + 4]]);
    const byLabel = await list(store, { labelSelector: [{ key: 'team', operator: 'in', values: ['b'] }] });
    t.same(byLabel.items.map((i) => i.name), ['west'], 'label selectors from the index');
    t.same((await store.storedResources()).map((r) => r.cluster), ['east'], 'Cluster objects are no member cluster');
    t.match(await store.getClusterObject('west'), { uid: 'u2', rv: start + 4 });

    const deleted = await store.writeClusterObjectWithoutLease('west', () => ({ action: 'delete' }));
    t.same(deleted.change, { rv: start + 5, type: 'DELETED' });
    const last = (await store.changesAfter(start + 4, 10))[0];
    t.match(JSON.parse(last.object), { metadata: { name: 'west', resourceVersion: String(start + 5) } }, 'DELETED carries the last state at the new rv');
    t.equal(await store.getClusterObject('west'), undefined);
    t.same((await list(store, { labelSelector: [{ key: 'team', operator: 'exists', values: [] }] })).items.map((i) => i.name), ['east'], 'its label rows went with it');
    t.equal((await store.writeClusterObjectWithoutLease('west', () => ({ action: 'delete' }))).change, undefined, 'deleting nothing writes nothing');
  });

  t.test(`${backend}: inline credentials are kept apart`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    const secret = 'token-SECRET-1';
    await store.writeClusterObjectWithoutLease('c1', () => put(cluster('c1', 'u1', { server: 'https://c1' }), { token: secret, clientKeyData: 'KEY-SECRET' }));
    let digest: string | undefined;
    await store.writeClusterObjectWithoutLease('c1', (cur) => ((digest = cur!.credentialsDigest), { action: 'none' }));
    t.match(digest, /^[0-9a-f]{64}$/, 'writers see a digest');
    const [reg] = await store.listClusterRegistrations();
    t.same(reg.credentials, { token: secret, clientKeyData: 'KEY-SECRET' }, 'synchro reads them');

    await store.writeClusterObjectWithoutLease('c1', (cur) => put({ ...cur!.object, metadata: { ...cur!.object.metadata, labels: { x: 'y' } } }));
    t.same((await store.listClusterRegistrations())[0].credentials, { token: secret, clientKeyData: 'KEY-SECRET' }, 'kept when not given');
    await store.writeClusterObjectWithoutLease('c1', (cur) => put(cur!.object, { token: 'token-SECRET-2' }));
    t.same((await store.listClusterRegistrations())[0].credentials, { token: 'token-SECRET-2' }, 'replaced');
    t.notOk(/SECRET/.test(await servedText(store)), 'never in objects or the change log');

    await store.writeClusterObjectWithoutLease('c1', (cur) => put(cur!.object, null));
    t.equal((await store.listClusterRegistrations())[0].credentials, undefined, 'removed with null');
    await store.writeClusterObjectWithoutLease('c1', (cur) => put(cur!.object, { token: 'token-SECRET-3' }));
    await store.writeClusterObjectWithoutLease('c1', () => ({ action: 'delete' }));
    await store.writeClusterObjectWithoutLease('c1', () => put(cluster('c1', 'u9', { server: 'https://c1' })));
    t.equal((await store.listClusterRegistrations())[0].credentials, undefined, 'a new object of the same name inherits nothing');
    t.equal(await store.conn.knex('cluster_credentials').count({ n: '*' }).first().then((r) => Number(r?.n)), 0);
  });

  t.test(`${backend}: concurrent read-decide-writes lose no update`, async (t) => {
    const { store, url, close } = await openTestStore(backend);
    t.teardown(close);
    // PostgreSQL: a second Store, as another apiserver replica. SQLite: one Store per process
    // (better-sqlite3 waits for the file lock synchronously), its writes queue on one connection.
    const other = backend === 'postgres' ? await Store.open(url) : store;
    if (other !== store) t.teardown(() => other.close());
    await store.writeClusterObjectWithoutLease('n', () => put(cluster('n', 'u', { count: 0 })));
    const bump = (s: Store) => s.writeClusterObjectWithoutLease('n', (cur) => put({ ...cur!.object, spec: { count: Number((cur!.object.spec as { count: number }).count) + 1 } }));
    await Promise.all(Array.from({ length: 12 }, (_, i) => bump(i % 2 ? store : other)));
    const final = await store.getClusterObject('n');
    t.equal((final!.object.spec as { count: number }).count, 12, 'each writer saw the one before');
    const rvs = (await store.changesAfter(1, 100)).map((c) => c.rv);
    t.same(rvs, Array.from({ length: 13 }, (_, i) => 2 + i), 'gap-free rvs in commit order');
  });

  t.test(`${backend}: fenced status writes`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    const L = clusterLease('east');
    const epoch = (await store.acquireLease(L, 'a', 10_000))!;
    await store.writeClusterObject('east', () => put(cluster('east', 'u', {})), { lease: L, holder: 'a', epoch });
    await store.acquireLease(L, 'b', 10_000, ['a']);
    const before = await store.watermark();
    await t.rejects(store.writeClusterObject('east', (cur) => put({ ...cur!.object, status: { phase: 'Ready' } }), { lease: L, holder: 'a', epoch }), FencedError);
    t.equal(await store.watermark(), before, 'a writer that lost its lease writes nothing');
  });
}
