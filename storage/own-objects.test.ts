// Own objects of a namespaced kind (MultiClusterService) on both backends: every write a change
// of the one change log, read-decide-write under the rv lock, served by the generic list.
import t from 'tap';
import { ownObjectsCluster, type OwnObjectState, type OwnObjectWrite } from './own-objects.ts';
import { backends, openTestStore, stopTestPostgres, takeLease } from './testing.ts';
import { clusterLease, FencedError } from './leases.ts';
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

    // Several consumers' parts in one write, under all their leases: every fence must hold.
    const lab = await takeLease(store, clusterLease('lab'));
    const both = [{ cluster: 'west', fence }, { cluster: 'lab', fence: lab }];
    const parts = (n: number) => (cur: OwnObjectState | undefined): OwnObjectWrite => ({ action: 'put', object: { ...cur!.object, status: { consumers: [{ cluster: 'lab', n }, { cluster: 'west', n }] } } });
    const together = await store.writeOwnObjectUnder(ref, both, parts(1));
    t.equal(together.change?.type, 'MODIFIED', 'one change for both parts');
    t.same((await store.getOwnObject(ref))?.object.status, { consumers: [{ cluster: 'lab', n: 1 }, { cluster: 'west', n: 1 }] });
    const stale = { ...lab, epoch: lab.epoch - 1 };
    const refused = await store.writeOwnObjectUnder(ref, [{ cluster: 'west', fence }, { cluster: 'lab', fence: stale }], parts(2)).catch((e: unknown) => e);
    t.type(refused, FencedError, 'one lease no longer held: refused');
    t.equal((refused as FencedError).fence.lease, clusterLease('lab'), 'naming it');
    t.same((await store.getOwnObject(ref))?.object.status, { consumers: [{ cluster: 'lab', n: 1 }, { cluster: 'west', n: 1 }] }, 'nothing written');
    await t.rejects(store.writeOwnObjectUnder(ref, [{ cluster: 'north', fence }], parts(3)), /a write guarded by lease cluster\/north was given a fence of cluster\/west/, "a fence of another cluster's lease is refused");
    await t.rejects(store.writeOwnObjectUnder(ref, [], parts(3)), /needs their fences/);

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
      ['ADDED shop/web', 'ADDED other/web', 'MODIFIED shop/web', 'MODIFIED shop/web', 'DELETED shop/web'],
      'every write a change, in order',
    );
    t.equal(await store.getOwnObject(ref), undefined);
  });
}
