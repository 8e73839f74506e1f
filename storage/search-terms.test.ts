// Search terms in storage, on both backends: substring search of names, creationTimestamp
// ranges, and orderBy with exact paging (also under churn, and at an older snapshot whose
// rows are rebuilt from the change log).
import t, { type Test } from 'tap';
import { maxSortedObjects, servedByIndex } from './order-by.ts';
import type { Store } from './store.ts';
import { backends, openTestStore, podEvent, stopTestPostgres } from './testing.ts';
import type { ListQuery, UpstreamEvent } from './types.ts';

t.teardown(stopTestPostgres);

const pods = (q: Partial<ListQuery> = {}): ListQuery => ({ group: '', resource: 'pods', ...q });
const ids = (items: Array<{ cluster: string; namespace: string; name: string }>) => items.map((i) => `${i.cluster}/${i.namespace}/${i.name}`);

function pod(type: UpstreamEvent['type'], ns: string, name: string, urv: string, created: string, phase = 'Running'): UpstreamEvent {
  const e = podEvent(type, ns, name, urv, { phase });
  e.object.metadata!.creationTimestamp = created;
  return e;
}

/** Pages through a whole list; every page has the first page's rv. */
async function pageAll(t: Test, store: Store, q: ListQuery, between?: (page: number) => Promise<void>): Promise<{ all: string[]; rv: number }> {
  const all: string[] = [];
  let token: string | undefined;
  let rv: number | undefined;
  for (let page = 0; page < 200; page++) {
    const r = await store.list({ ...q, continue: token });
    rv ??= r.resourceVersion;
    t.equal(r.resourceVersion, rv, `page ${page} has the first page's rv`);
    all.push(...ids(r.items));
    token = r.continue;
    if (!token) break;
    if (between) await between(page);
  }
  return { all, rv: rv! };
}

const at = (minute: number) => `2026-03-01T10:${String(minute).padStart(2, '0')}:00Z`;

t.test('which orders an index reads', async (t) => {
  const k = (key: 'name' | 'namespace' | 'cluster' | 'creationTimestamp', desc = false) => ({ key, desc });
  t.ok(servedByIndex([k('creationTimestamp', true)]));
  t.ok(servedByIndex([k('name')]));
  t.ok(servedByIndex([k('namespace', true), k('name', true)]));
  t.ok(servedByIndex([k('name'), k('namespace')]));
  t.notOk(servedByIndex([k('cluster')]), 'no index is led by cluster');
  t.notOk(servedByIndex([k('creationTimestamp', true), k('name')]), 'two directions');
  t.notOk(servedByIndex([k('name'), k('cluster')]));
  t.notOk(servedByIndex([{ key: 'path', path: ['status', 'phase'], desc: false }]));
});

for (const backend of backends) {
  t.test(backend, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    // Names that tell substring, case and LIKE wildcards apart; creation minutes 0..11.
    const names = ['web-1', 'Web-2', 'webserver', 'api-web', 'db-0', 'dbx', 'a_b', 'axb', 'cache', 'WEBHOOK', 'w-e-b', 'web-3'];
    await store.applyBatch('c1', names.map((n, i) => pod('ADDED', i % 2 ? 'beta' : 'alpha', n, String(10 + i), at(i), i % 3 ? 'Running' : 'Pending')));
    await store.applyBatch('c2', [pod('ADDED', 'alpha', 'web-1', '5', at(5)), pod('ADDED', 'alpha', 'nameless-time', '6', '')]);

    t.test('nameContains: ASCII case-insensitive substrings, every one, `_` literal', async (t) => {
      const names = async (q: Partial<ListQuery>) => (await store.list(pods(q))).items.map((i) => `${i.cluster}/${i.name}`).sort();
      t.same(await names({ nameContains: ['web'] }), ['c1/Web-2', 'c1/WEBHOOK', 'c1/api-web', 'c1/web-1', 'c1/web-3', 'c1/webserver', 'c2/web-1'].sort());
      t.same(await names({ nameContains: ['WEB', 'server'] }), ['c1/webserver']);
      t.same(await names({ nameContains: ['a_b'] }), ['c1/a_b'], 'an underscore is itself, not a wildcard');
      t.same(await names({ nameContains: ['b-1'] }), ['c1/web-1', 'c2/web-1']);
      t.same(await names({ nameContains: ['zzz'] }), []);
      t.same(await names({ nameContains: ['web'], clusters: ['c2'] }), ['c2/web-1'], 'with other filters');
    });

    t.test('created ranges: since inclusive, before exclusive, no timestamp in none', async (t) => {
      const names = async (q: Partial<ListQuery>) => (await store.list(pods({ clusters: ['c1'], ...q }))).items.map((i) => i.name).sort();
      t.same(await names({ createdSince: at(10) }), ['w-e-b', 'web-3']);
      t.same(await names({ createdBefore: at(2) }), ['Web-2', 'web-1'].sort());
      t.same(await names({ createdSince: at(3), createdBefore: at(5) }), ['api-web', 'db-0'].sort());
      const c2 = (await store.list(pods({ clusters: ['c2'], createdBefore: at(59) }))).items.map((i) => i.name);
      t.same(c2, ['web-1'], 'an object without creationTimestamp is before nothing');
      const r = await store.list(pods({ createdSince: at(0), limit: 2 }));
      t.equal(r.remainingItemCount, undefined, 'a range is a selector: no remainingItemCount');
    });

    t.test('orderBy: keys, directions, paging exact', async (t) => {
      const full = async (q: Partial<ListQuery>) => ids((await store.list(pods(q))).items);
      const desc = await full({ orderBy: [{ key: 'creationTimestamp', desc: true }] });
      t.same(desc.slice(0, 3), ['c1/beta/web-3', 'c1/alpha/w-e-b', 'c1/beta/WEBHOOK'], 'newest first');
      t.equal(desc.at(-1), 'c2/alpha/nameless-time', "no creationTimestamp sorts as '' (last when descending)");
      t.same(desc.slice(6, 8), ['c1/beta/dbx', 'c2/alpha/web-1'], 'ties broken by namespace, name, cluster in the last key’s direction');
      for (const orderBy of [
        [{ key: 'creationTimestamp' as const, desc: true }],
        [{ key: 'creationTimestamp' as const, desc: false }],
        [{ key: 'name' as const, desc: false }],
        [{ key: 'cluster' as const, desc: true }, { key: 'name' as const, desc: false }],
        [{ key: 'path' as const, path: ['status', 'phase'], desc: false }, { key: 'creationTimestamp' as const, desc: true }],
        [{ key: 'namespace' as const, desc: true }],
      ]) {
        const all = await full({ orderBy });
        t.equal(all.length, 14, `${JSON.stringify(orderBy)}: everything`);
        const { all: paged } = await pageAll(t, store, pods({ orderBy, limit: 3 }));
        t.same(paged, all, `${JSON.stringify(orderBy)}: pages of 3 = one list`);
      }
      const byPhase = await full({ orderBy: [{ key: 'path', path: ['status', 'phase'], desc: false }, { key: 'creationTimestamp', desc: true }] });
      t.same(byPhase.slice(0, 4), ['c1/beta/WEBHOOK', 'c1/alpha/a_b', 'c1/beta/api-web', 'c1/alpha/web-1'], 'Pending first, newest first among them');
      const byName = await full({ orderBy: [{ key: 'name', desc: false }], clusters: ['c1'] });
      t.same(byName.slice(0, 3), ['c1/beta/WEBHOOK', 'c1/beta/Web-2', 'c1/alpha/a_b'], 'byte order: capitals first');
    });

    t.test('a continue token goes on only in its own order', async (t) => {
      const first = await store.list(pods({ orderBy: [{ key: 'name', desc: true }], limit: 2 }));
      await t.rejects(store.list(pods({ orderBy: [{ key: 'name', desc: false }], continue: first.continue })), { code: 400, reason: 'BadRequest' });
      await t.rejects(store.list(pods({ continue: first.continue })), { code: 400, reason: 'BadRequest' });
      const plain = await store.list(pods({ limit: 2 }));
      await t.rejects(store.list(pods({ orderBy: [{ key: 'name', desc: true }], continue: plain.continue })), { code: 400 });
    });

    t.test('a created range is the first page’s on every page', async (t) => {
      const first = await store.list(pods({ createdSince: at(6), limit: 2 }));
      const next = await store.list(pods({ createdSince: at(0), continue: first.continue }));
      for (const i of next.items) t.ok(JSON.parse(i.object).metadata.creationTimestamp >= at(6), `${i.name} is in the first page's range`);
      await t.rejects(store.list(pods({ continue: first.continue })), { code: 400 });
    });

    t.test('orderBy paging under churn: no duplicates, no losses, one rv', async (t) => {
      const orderBy = [{ key: 'creationTimestamp' as const, desc: true }];
      const before = ids((await store.list(pods({ orderBy }))).items);
      let n = 0;
      const { all, rv } = await pageAll(t, store, pods({ orderBy, limit: 4 }), async () => {
        n++;
        // Move one object to the front, delete one, add one, every page.
        await store.applyBatch('c1', [
          pod('MODIFIED', 'alpha', 'db-0', String(100 + n), at(50 + n)),
          pod('DELETED', n % 2 ? 'beta' : 'alpha', names[n], String(100 + n), at(n)),
          pod('ADDED', 'gamma', `new-${n}`, String(100 + n), at(30 + n)),
        ]);
      });
      t.ok(n > 0, 'objects changed between pages');
      t.same(all, before, 'the pages are the snapshot of the first page, in its order');
      const later = await store.list(pods({ orderBy, limit: 4, exactRv: rv }));
      t.same(ids(later.items), before.slice(0, 4), 'a later list at that rv rebuilds the same first page');
      const { all: again } = await pageAll(t, store, pods({ orderBy, limit: 4, exactRv: rv }));
      t.same(again, before, 'and the same pages');
    });

    t.test('an order no index reads sorts at most maxSortedObjects objects', async (t) => {
      for (let from = 0; from <= maxSortedObjects; from += 2000) {
        const events = [];
        for (let i = from; i < Math.min(from + 2000, maxSortedObjects + 1); i++) events.push(pod('ADDED', 'bulk', `bulk-${i}`, '1', at(i % 60)));
        await store.applyBatch('c3', events);
      }
      await t.rejects(store.list(pods({ orderBy: [{ key: 'path', path: ['status', 'phase'], desc: false }], limit: 10 })), { code: 400, reason: 'BadRequest', message: /orderBy "status.phase" sorts every matching object and this list matches more than 10000/ });
      await t.rejects(store.list(pods({ orderBy: [{ key: 'cluster', desc: true }], limit: 10 })), { code: 400 });
      const narrowed = await store.list(pods({ orderBy: [{ key: 'path', path: ['status', 'phase'], desc: false }], namespaces: ['alpha', 'beta'], limit: 10 }));
      t.equal(narrowed.items.length, 10, 'narrowed below the bound, it sorts');
      for (const orderBy of [[{ key: 'creationTimestamp' as const, desc: true }], [{ key: 'name' as const, desc: false }], [{ key: 'namespace' as const, desc: true }, { key: 'name' as const, desc: true }]]) {
        t.equal((await store.list(pods({ orderBy, limit: 10 }))).items.length, 10, `${JSON.stringify(orderBy)} reads an index: no bound`);
      }
    });
  });
}
