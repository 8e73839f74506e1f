// Own objects of a namespaced kind (MultiClusterService) on both backends: every write a change
// of the one change log, read-decide-write under the rv lock, served by the generic list.
import t from 'tap';
import { ownObjectsCluster } from './own-objects.ts';
import { backends, openTestStore, stopTestPostgres, takeLease } from './testing.ts';
import { clusterLease } from './leases.ts';
import type { KubeObject } from './types.ts';

t.teardown(stopTestPostgres);

const mcs = (namespace: string, name: string, extra: Record<string, unknown> = {}): KubeObject => ({
  apiVersion: 'panoptes.io/v1alpha1',
  kind: 'MultiClusterService',
  metadata: { name, namespace, uid: `uid-${namespace}-${name}`, labels: { tier: 'web' } },
  spec: {},
  ...extra,
});

for (const backend of backends) {
  t.test(`${backend}: own objects of a namespaced kind`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    const ref = { resource: 'multiclusterservices', namespace: 'shop', name: 'web' };
    const created = await store.writeOwnObjectWithoutLease(ref, (cur) => (cur ? { action: 'none' } : { action: 'put', object: mcs('shop', 'web') }));
    t.equal(created.change?.type, 'ADDED');
    await store.writeOwnObjectWithoutLease({ ...ref, namespace: 'other' }, () => ({ action: 'put', object: mcs('other', 'web') }));
    const again = await store.writeOwnObjectWithoutLease(ref, (cur) => (cur ? { action: 'none' } : { action: 'put', object: mcs('shop', 'web') }));
    t.equal(again.change, undefined, 'a decision of none writes nothing');

    // A status part, as the holder of a consumer cluster's lease.
    const fence = await takeLease(store, clusterLease('west'));
    const status = await store.writeOwnObject(ref, 'west', (cur) => ({ action: 'put', object: { ...cur!.object, status: { consumers: [{ cluster: 'west' }] } } }), fence);
    t.equal(status.change?.type, 'MODIFIED');
    t.same((await store.getOwnObject(ref))?.object.status, { consumers: [{ cluster: 'west' }] });
    t.equal((await store.getOwnObject(ref))?.object.metadata?.resourceVersion, String(status.change!.rv), 'metadata.resourceVersion is the change rv');

    t.same((await store.listOwnObjects('multiclusterservices')).map((o) => `${o.namespace}/${o.name}`), ['other/web', 'shop/web']);
    const listed = await store.list({ group: 'panoptes.io', resource: 'multiclusterservices', clusters: [ownObjectsCluster], namespaces: ['shop'], labelSelector: [{ key: 'tier', operator: 'in', values: ['web'] }] });
    t.same(listed.items.map((i) => i.name), ['web'], 'the generic list serves them, by namespace and label');

    await t.rejects(
      store.writeOwnObjectWithoutLease(ref, () => ({ action: 'put', object: mcs('elsewhere', 'web') })),
      /namespace/,
      'an object of another namespace is refused',
    );
    const deleted = await store.writeOwnObjectWithoutLease(ref, () => ({ action: 'delete' }));
    t.equal(deleted.change?.type, 'DELETED');
    const changes = await store.changesAfter(0, 100);
    t.same(
      changes.filter((c) => c.resource === 'multiclusterservices').map((c) => `${c.type} ${c.namespace}/${c.name}`),
      ['ADDED shop/web', 'ADDED other/web', 'MODIFIED shop/web', 'DELETED shop/web'],
      'every write a change, in order',
    );
    t.equal(await store.getOwnObject(ref), undefined);
  });
}
