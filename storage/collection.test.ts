// Collections in storage: one list of several kinds, one snapshot rv, exact paging across kinds
// (a key equal in namespace, name and cluster in two kinds included), bare kinds, and the
// same selection from SQL and from objectMatches.
import t from 'tap';
import { parseLabelSelector } from '../kube/labels.ts';
import { objectMatches } from './filters.ts';
import { compareKeys } from './rows.ts';
import type { Store } from './store.ts';
import { backends, openTestStore, stopTestPostgres } from './testing.ts';
import type { CollectionKind, KubeObject, ListQuery, UpstreamEvent } from './types.ts';

t.teardown(stopTestPostgres);

const kinds: CollectionKind[] = [
  { group: 'apps', resource: 'deployments' },
  { group: 'apps', resource: 'replicasets', bare: true },
  { group: '', resource: 'pods', bare: true },
];
const collection = (q: Partial<ListQuery> = {}): ListQuery => ({ group: '', resource: '', kinds, ...q });

const kindNames: Record<string, string> = { deployments: 'Deployment', replicasets: 'ReplicaSet', pods: 'Pod', configmaps: 'ConfigMap' };
function event(group: string, resource: string, namespace: string, name: string, rv: string, opts: { owned?: boolean; labels?: Record<string, string>; type?: 'ADDED' | 'MODIFIED' | 'DELETED' } = {}): UpstreamEvent {
  const object: KubeObject = {
    apiVersion: group ? `${group}/v1` : 'v1',
    kind: kindNames[resource],
    metadata: {
      name,
      namespace,
      uid: `uid-${resource}-${namespace}-${name}`,
      resourceVersion: rv,
      creationTimestamp: '2026-01-01T00:00:00Z',
      ...(opts.labels ? { labels: opts.labels } : {}),
      ...(opts.owned ? { ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'x', uid: 'owner-uid', controller: true }] } : {}),
    },
  };
  return { type: opts.type ?? 'ADDED', group, version: 'v1', resource, object };
}

const id = (i: { cluster: string; group: string; resource: string; namespace: string; name: string }) => `${i.namespace}/${i.name}/${i.cluster}/${i.group}/${i.resource}`;

async function pageAll(store: Store, q: ListQuery, between?: () => Promise<void>) {
  const seen: string[] = [];
  const rvs = new Set<number>();
  let token: string | undefined;
  for (let page = 0; page < 500; page++) {
    const r = await store.list({ ...q, continue: token });
    rvs.add(r.resourceVersion);
    seen.push(...r.items.map(id));
    token = r.continue;
    if (!token) return { seen, rvs };
    if (between) await between();
  }
  throw new Error('more than 500 pages');
}

for (const backend of backends) {
  t.test(backend, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);

    // Two clusters; in each, one name that every kind has (a tie broken by the kind), owned
    // and bare ReplicaSets and Pods, and ConfigMaps outside the collection.
    const all: UpstreamEvent[] = [];
    for (const ns of ['a', 'b']) {
      for (let i = 0; i < 6; i++) {
        const labels = { app: i % 2 ? 'db' : 'web' };
        all.push(event('apps', 'deployments', ns, `w${i}`, String(10 + i), { labels }));
        all.push(event('apps', 'replicasets', ns, `w${i}`, String(20 + i), { labels, owned: i % 3 !== 0 }));
        all.push(event('', 'pods', ns, `w${i}`, String(30 + i), { labels, owned: i % 2 === 0 }));
        all.push(event('', 'pods', ns, `p${i}`, String(40 + i), { labels }));
        all.push(event('', 'configmaps', ns, `w${i}`, String(50 + i), { labels }));
      }
    }
    await store.applyBatch('east', all.filter((e) => e.resource !== 'pods'));
    await store.applyBatch('east', all.filter((e) => e.resource === 'pods'));
    await store.applyBatch('west', all);

    // What the collection holds, by objectMatches over every stored object, in list order.
    async function expected(q: ListQuery): Promise<string[]> {
      const every = [];
      for (const resource of ['deployments', 'replicasets', 'pods', 'configmaps']) {
        const group = resource === 'deployments' || resource === 'replicasets' ? 'apps' : '';
        every.push(...(await store.list({ group, resource })).items);
      }
      return every
        .filter((o) => objectMatches(q, o, JSON.parse(o.object) as KubeObject))
        .sort(compareKeys)
        .map(id);
    }

    t.test('one list of every kind, bare kinds without owned objects, in list order then kind', async (t) => {
      const want = await expected(collection());
      const r = await store.list(collection());
      t.same(r.items.map(id), want, 'SQL selects and orders what objectMatches does');
      // deployments 12 per cluster, bare replicasets 4, bare pods 6 + 12 = 18: 34 per cluster.
      t.equal(r.items.length, 68);
      t.notOk(r.items.some((i) => i.resource === 'configmaps'), 'no kind outside the collection');
      t.same(r.items.slice(0, 3).map(id), ['a/p0/east//pods', 'a/p0/west//pods', 'a/p1/east//pods']);
      const w0 = r.items.filter((i) => i.namespace === 'a' && i.name === 'w0').map(id);
      t.same(w0, ['a/w0/east/apps/deployments', 'a/w0/east/apps/replicasets', 'a/w0/west/apps/deployments', 'a/w0/west/apps/replicasets'], 'a tie in namespace, name and cluster is ordered by kind');
    });

    t.test('pages resume exactly across kinds, at every page size', async (t) => {
      const want = await expected(collection());
      for (const limit of [1, 2, 3, 7, 50]) {
        const { seen, rvs } = await pageAll(store, collection({ limit }));
        t.same(seen, want, `limit ${limit}: every object once, in order`);
        t.equal(rvs.size, 1, `limit ${limit}: one rv`);
      }
      const first = await store.list(collection({ limit: 10 }));
      t.equal(first.remainingItemCount, undefined, 'bare kinds are a selection: no remainingItemCount');
      const plain = await store.list({ group: '', resource: '', kinds: [kinds[0], { group: '', resource: 'configmaps' }], limit: 10 });
      t.equal(plain.remainingItemCount, 48 - 10, 'without bare kinds: counted over the kinds');
    });

    t.test('selectors, namespaces and clusters apply across kinds (several scans per kind)', async (t) => {
      for (const q of [
        collection({ labelSelector: parseLabelSelector('app=web') }),
        collection({ namespaces: ['a', 'b'], limit: 4 }),
        collection({ clusters: ['east', 'west'], namespaces: ['b'], limit: 5 }),
        collection({ names: ['w0', 'p1'], limit: 2 }),
      ]) {
        const want = await expected({ ...q, limit: undefined });
        const { seen, rvs } = await pageAll(store, q);
        t.same(seen, want, JSON.stringify({ ...q, kinds: undefined }));
        t.equal(rvs.size, 1);
        t.ok(seen.length > 0);
      }
    });

    t.test('paging under churn: no duplicates, no losses, one rv (the snapshot of the first page)', async (t) => {
      const q = collection({ limit: 5 });
      const want = await expected(collection());
      let n = 0;
      const { seen, rvs } = await pageAll(store, q, async () => {
        n++;
        // Deletes, adds and an owner taken away (a pod that becomes bare) between pages.
        await store.applyBatch('east', [
          event('', 'pods', 'a', `new${n}`, String(1000 + n)),
          event('apps', 'deployments', 'b', `w${n % 6}`, String(2000 + n), { type: 'DELETED' }),
          event('', 'pods', 'a', 'w0', String(3000 + n), { type: 'MODIFIED', owned: n % 2 === 0 }),
        ]);
      });
      t.same(seen, want, 'the snapshot of the first page, every object once');
      t.equal(rvs.size, 1);
      t.ok(n > 5, 'written between pages');
    });

    t.test('a fuzzy name applies to every kind; orderBy is refused (kinds merge in list order)', async (t) => {
      // The pods `new<n>` written by the churn above, and nothing of the other kinds.
      const q = collection({ nameContains: ['new'], limit: 2 });
      const want = await expected({ ...q, limit: undefined });
      const { seen, rvs } = await pageAll(store, q);
      t.same(seen, want, 'SQL and objectMatches agree, page by page');
      t.ok(seen.length > 2 && seen.every((k) => k.includes('/new')), 'only the matching names');
      t.equal(rvs.size, 1);
      await t.rejects(store.list(collection({ orderBy: [{ key: 'name', desc: false }] })), { code: 400, message: /orderBy cannot be combined with a collection/ });
    });

    t.test('a list at an older rv counts and rebuilds every kind', async (t) => {
      const plainKinds: CollectionKind[] = [{ group: 'apps', resource: 'deployments' }, { group: '', resource: 'configmaps' }];
      const q = { group: '', resource: '', kinds: plainKinds };
      const before = await store.list(q);
      const want = before.items.map(id);
      await store.applyBatch('west', [event('', 'configmaps', 'a', 'late', '9000'), event('apps', 'deployments', 'a', 'w1', '9001', { type: 'DELETED' }), event('', 'configmaps', 'b', 'w2', '9002', { type: 'MODIFIED', labels: { app: 'x' } })]);
      const first = await store.list({ ...q, exactRv: before.resourceVersion, limit: 10 });
      t.equal(first.resourceVersion, before.resourceVersion);
      t.equal(first.remainingItemCount, want.length - 10, 'counted at that rv, over both kinds');
      const { seen, rvs } = await pageAll(store, { ...q, exactRv: before.resourceVersion, limit: 7 });
      t.same(seen, want, 'the objects as they were, the deleted one included, the late one not');
      t.same([...rvs], [before.resourceVersion]);
    });

    t.test('a token resumes only the kind of list it came from', async (t) => {
      const pods = await store.list({ group: '', resource: 'pods', limit: 1 });
      await t.rejects(store.list(collection({ continue: pods.continue })), { code: 400 }, 'a token of one kind, for a collection');
      const coll = await store.list(collection({ limit: 1 }));
      await t.rejects(store.list({ group: '', resource: 'pods', continue: coll.continue }), { code: 400 }, 'a collection token for a single kind');
    });
  });
}
