import t, { type Test } from 'tap';
import { parseFieldSelector } from '../kube/fields.ts';
import { parseLabelSelector } from '../kube/labels.ts';
import type { Store } from './store.ts';
import { backends, compactNow, openTestStore, podEvent, stopTestPostgres } from './testing.ts';
import type { ListQuery } from './types.ts';

t.teardown(stopTestPostgres);

const pods = (q: Partial<ListQuery> = {}): ListQuery => ({ group: '', resource: 'pods', ...q });
const ids = (items: Array<{ cluster: string; namespace: string; name: string }>) => items.map((i) => `${i.cluster}/${i.namespace}/${i.name}`);

/** Pages through a whole list, checking every page carries the first page's rv. */
async function pageAll(t: Test, store: Store, q: ListQuery, between?: (page: number) => Promise<void>) {
  const all: string[] = [];
  let token: string | undefined;
  let rv: number | undefined;
  const remaining: Array<number | undefined> = [];
  for (let page = 0; page < 1000; page++) {
    const r = await store.list({ ...q, continue: token });
    if (rv === undefined) rv = r.resourceVersion;
    t.equal(r.resourceVersion, rv, `page ${page} carries the first page's rv`);
    for (const item of r.items) t.ok(item.rv <= rv, 'every item is at or below the list rv');
    all.push(...ids(r.items));
    remaining.push(r.remainingItemCount);
    token = r.continue;
    if (!token) break;
    if (between) await between(page);
  }
  return { all, rv: rv!, remaining };
}

for (const backend of backends) {
  t.test(backend, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);

    // 3 clusters × 2 namespaces × 10 pods, labelled by index.
    for (const cluster of ['c1', 'c2', 'c3']) {
      const events = [];
      for (const ns of ['alpha', 'beta']) {
        for (let i = 0; i < 10; i++) {
          const labels: Record<string, string> = { app: i % 2 === 0 ? 'web' : 'db', idx: String(i) };
          if (i === 3) labels.canary = 'true';
          events.push(podEvent('ADDED', ns, `pod-${i}`, String(100 + i), { labels, nodeName: `node-${i % 3}`, phase: i === 9 ? 'Pending' : 'Running', owner: i < 5 ? 'rs-1' : undefined }));
        }
      }
      await store.applyBatch(cluster, events);
    }
    await store.applyBatch('c1', [{ type: 'ADDED', group: '', version: 'v1', resource: 'configmaps', object: { kind: 'ConfigMap', metadata: { name: 'cm', namespace: 'alpha', uid: 'cm1', resourceVersion: '1' } } }]);

    t.test('lists everything in namespace, name, cluster order', async (t) => {
      const r = await store.list(pods());
      t.equal(r.items.length, 60);
      const sorted = [...r.items].sort((a, b) => (a.namespace + '\0' + a.name + '\0' + a.cluster < b.namespace + '\0' + b.name + '\0' + b.cluster ? -1 : 1));
      t.same(ids(r.items), ids(sorted));
      t.same(ids(r.items.slice(0, 3)), ['c1/alpha/pod-0', 'c2/alpha/pod-0', 'c3/alpha/pod-0']);
      t.equal(r.resourceVersion, await store.watermark());
      t.equal(r.continue, undefined);
      t.equal(r.remainingItemCount, undefined);
      t.same(ids((await store.list({ group: '', resource: 'configmaps' })).items), ['c1/alpha/cm'], 'resources are separate');
    });

    t.test('label selectors: every operator, evaluated in SQL', async (t) => {
      const count = async (s: string) => (await store.list(pods({ labelSelector: parseLabelSelector(s) }))).items.length;
      t.equal(await count('app=web'), 30);
      t.equal(await count('app==db'), 30);
      t.equal(await count('app!=web'), 30);
      t.equal(await count('idx in (1,2,3)'), 18);
      t.equal(await count('idx notin (1,2,3)'), 42);
      t.equal(await count('canary'), 6);
      t.equal(await count('!canary'), 54);
      t.equal(await count('canary!=false'), 60, '!= matches objects without the key');
      t.equal(await count('canary notin (true)'), 54, 'notin matches objects without the key');
      t.equal(await count('idx>7'), 12);
      t.equal(await count('idx<2,app=web'), 6);
      t.equal(await count('app=web,canary'), 0);
      t.equal(await count('nosuch=x'), 0);
    });

    t.test('field selectors: name, namespace and per-kind fields', async (t) => {
      const count = async (s: string) => (await store.list(pods({ fieldSelector: parseFieldSelector(s) }))).items.length;
      t.equal(await count('metadata.name=pod-1'), 6);
      t.equal(await count('metadata.namespace=beta'), 30);
      t.equal(await count('metadata.namespace!=beta,metadata.name!=pod-1'), 27);
      t.equal(await count('spec.nodeName=node-0'), 24);
      t.equal(await count('status.phase!=Running'), 6);
      t.equal(await count('status.phase=Pending,spec.nodeName=node-0'), 6);
    });

    t.test('search: clusters, namespaces, names, owner uid', async (t) => {
      t.equal((await store.list(pods({ clusters: ['c2'] }))).items.length, 20);
      t.equal((await store.list(pods({ clusters: ['c1', 'c3'], namespaces: ['beta'] }))).items.length, 20);
      t.same(ids((await store.list(pods({ names: ['pod-7'], namespaces: ['alpha'] }))).items), ['c1/alpha/pod-7', 'c2/alpha/pod-7', 'c3/alpha/pod-7']);
      t.equal((await store.list(pods({ ownerUIDs: ['rs-1'] }))).items.length, 30);
      t.equal((await store.list(pods({ clusters: ['nope'] }))).items.length, 0);
    });

    t.test('paging: no item repeated or skipped, remainingItemCount exact', async (t) => {
      const whole = ids((await store.list(pods())).items);
      const { all, remaining } = await pageAll(t, store, pods({ limit: 7 }));
      t.same(all, whole);
      t.same(remaining, [53, 46, 39, 32, 25, 18, 11, 4, undefined]);
      const filtered = await pageAll(t, store, pods({ limit: 4, labelSelector: parseLabelSelector('app=web'), clusters: ['c1', 'c2'] }));
      t.same(filtered.all, ids((await store.list(pods({ labelSelector: parseLabelSelector('app=web'), clusters: ['c1', 'c2'] }))).items));
      t.equal(filtered.all.length, 20);
      t.same(new Set(filtered.remaining), new Set([undefined]), 'with a selector the count is unknown: unset, as kube-apiserver leaves it');
      const scoped = await pageAll(t, store, pods({ limit: 4, clusters: ['c1', 'c3'], namespaces: ['beta'] }));
      t.same(scoped.remaining, [16, 12, 8, 4, undefined], 'clusters and namespaces narrow the count');
      const exact = await store.list(pods({ limit: 60 }));
      t.equal(exact.continue, undefined, 'a page that holds everything has no continue');
    });

    t.test('later pages are read at the first page’s snapshot while writes go on', async (t) => {
      const first = await store.list(pods());
      const expected = ids(first.items);
      let n = 0;
      const { all, rv } = await pageAll(t, store, pods({ limit: 5 }), async (page) => {
        // Deletes, relabels, creations and modifications, in the middle and ahead of the cursor.
        await store.applyBatch('c1', [
          podEvent('DELETED', 'beta', `pod-${page % 10}`, String(1000 + n++)),
          podEvent('ADDED', 'alpha', `new-${page}`, String(1000 + n++)),
          podEvent('MODIFIED', 'beta', `pod-${(page + 5) % 10}`, String(1000 + n++), { labels: { app: 'changed' } }),
        ]);
      });
      t.equal(rv, first.resourceVersion);
      t.same(all, expected, 'the paged list equals the list at the first page’s rv');
      t.ok((await store.watermark()) > rv, 'writes happened while paging');
      // Selectors apply to the state at the snapshot, not to the current one.
      const { all: web } = await pageAll(t, store, pods({ limit: 3, labelSelector: parseLabelSelector('app=web'), exactRv: rv }));
      t.same(web, ids(first.items.filter((i) => JSON.parse(i.object).metadata.labels.app === 'web')));
    });

    t.test('exactRv reads an older snapshot', async (t) => {
      const before = await store.list(pods({ clusters: ['c2'] }));
      await store.applyBatch('c2', [podEvent('DELETED', 'alpha', 'pod-0', '5000'), podEvent('ADDED', 'alpha', 'zzz', '5001')]);
      const now = await store.list(pods({ clusters: ['c2'] }));
      t.not(ids(now.items).join(), ids(before.items).join());
      const then = await store.list(pods({ clusters: ['c2'], exactRv: before.resourceVersion }));
      t.same(ids(then.items), ids(before.items));
      t.equal(then.resourceVersion, before.resourceVersion);
      await t.rejects(store.list(pods({ exactRv: now.resourceVersion + 10 })), { reason: 'Timeout', code: 504 });
    });

    t.test('bad continue tokens are 400, tokens from the future 504', async (t) => {
      for (const bad of ['garbage!', 'eyJ2IjoyfQ', Buffer.from('{"v":1,"rv":-1,"k":["","",""],"s":0}').toString('base64url')]) {
        await t.rejects(store.list(pods({ limit: 5, continue: bad })), { code: 400, reason: 'BadRequest' }, bad);
      }
      const future = Buffer.from(JSON.stringify({ v: 1, rv: 999999, k: ['', '', ''], s: 0 })).toString('base64url');
      await t.rejects(store.list(pods({ limit: 5, continue: future })), { code: 504 });
    });

    t.test('after compaction, an older continue token or exact rv is 410 Expired', async (t) => {
      const page = await store.list(pods({ limit: 5 }));
      await store.applyBatch('c3', [podEvent('MODIFIED', 'alpha', 'pod-1', '9000', { labels: { x: 'y' } })]);
      await compactNow(store, { minAgeMs: 0, minCount: 0 });
      await t.rejects(store.list(pods({ limit: 5, continue: page.continue })), { code: 410, reason: 'Expired' });
      await t.rejects(store.list(pods({ exactRv: page.resourceVersion })), { code: 410, reason: 'Expired' });
      const fresh = await store.list(pods({ limit: 5 }));
      t.ok(fresh.continue, 'a new list works');
      t.ok((await store.list(pods({ limit: 5, continue: fresh.continue }))).items.length > 0);
    });
  });
}
