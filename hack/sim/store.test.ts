import t from 'tap';
import { StatusError } from '../../kube/status.ts';
import { bestTimes, timed } from '../scaling.ts';
import { Store } from './store.ts';
import type { KObject } from './types.ts';

const cm = (ns: string, name: string, labels: Record<string, string> = {}): KObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns, labels } });
const names = (items: KObject[]) => items.map((o) => `${o.metadata.namespace}/${o.metadata.name}`);

t.test('rv counter, key order across namespaces, namespace ranges', async (t) => {
  const s = new Store({ initialRv: 10 });
  s.put('/configmaps', cm('b', 'x'));
  s.put('/configmaps', cm('a-b', 'y'));
  s.put('/configmaps', cm('a', 'z'));
  s.put('/configmaps', cm('a', 'a'));
  t.equal(s.resourceVersion, 14);
  const all = s.list('/configmaps');
  t.same(names(all.items), ['a-b/y', 'a/a', 'a/z', 'b/x'], 'etcd byte order of namespace/name');
  t.equal(all.resourceVersion, 14);
  t.same(names(s.list('/configmaps', { namespace: 'a' }).items), ['a/a', 'a/z']);
  t.equal(s.get('/configmaps', 'a', 'z')!.metadata.resourceVersion, '13');
});

t.test('paging: pinned to the first page rv, nothing repeated or skipped, remainingItemCount', async (t) => {
  const s = new Store();
  for (let i = 0; i < 10; i++) s.put('/configmaps', cm('ns', `c${i}`));
  const p1 = s.list('/configmaps', { limit: 4 });
  t.same(names(p1.items), ['ns/c0', 'ns/c1', 'ns/c2', 'ns/c3']);
  t.equal(p1.remainingItemCount, 6);
  t.ok(p1.continue);
  // Changes between pages: the later pages still show the first page's snapshot.
  s.remove('/configmaps', 'ns', 'c5');
  s.put('/configmaps', cm('ns', 'c45'));
  s.put('/configmaps', { ...cm('ns', 'c6'), data: { changed: 'yes' } });
  const p2 = s.list('/configmaps', { limit: 4, continue: p1.continue });
  t.equal(p2.resourceVersion, p1.resourceVersion);
  t.same(names(p2.items), ['ns/c4', 'ns/c5', 'ns/c6', 'ns/c7']);
  t.equal(p2.items[2].data, undefined, 'c6 as of the snapshot');
  t.equal(p2.remainingItemCount, 2);
  const p3 = s.list('/configmaps', { limit: 4, continue: p2.continue });
  t.same(names(p3.items), ['ns/c8', 'ns/c9']);
  t.notOk(p3.continue);
  // A fresh list sees the current state.
  t.same(names(s.list('/configmaps').items), ['ns/c0', 'ns/c1', 'ns/c2', 'ns/c3', 'ns/c4', 'ns/c45', 'ns/c6', 'ns/c7', 'ns/c8', 'ns/c9']);
});

t.test('paging with a selector: limit counts matches, no remainingItemCount', async (t) => {
  const s = new Store();
  for (let i = 0; i < 10; i++) s.put('/configmaps', cm('ns', `c${i}`, { even: String(i % 2 === 0) }));
  const match = (o: KObject) => o.metadata.labels?.even === 'true';
  const p1 = s.list('/configmaps', { limit: 2, match });
  t.same(names(p1.items), ['ns/c0', 'ns/c2']);
  t.equal(p1.remainingItemCount, undefined);
  const p2 = s.list('/configmaps', { limit: 2, match, continue: p1.continue });
  t.same(names(p2.items), ['ns/c4', 'ns/c6']);
  const p3 = s.list('/configmaps', { limit: 2, match, continue: p2.continue });
  t.same(names(p3.items), ['ns/c8']);
});

t.test('exact rv reads, compaction and 410', async (t) => {
  const s = new Store({ historySize: 5 });
  s.put('/configmaps', cm('ns', 'a'));
  const rvA = s.resourceVersion;
  s.put('/configmaps', cm('ns', 'b'));
  t.same(names(s.list('/configmaps', { atRv: rvA }).items), ['ns/a']);
  const p1 = s.list('/configmaps', { limit: 1 });
  for (let i = 0; i < 10; i++) s.put('/configmaps', cm('ns', `z${i}`));
  t.ok(s.compactedRv > rvA);
  t.throws(() => s.list('/configmaps', { atRv: rvA }), { reason: 'Expired', code: 410 });
  try {
    s.list('/configmaps', { limit: 1, continue: p1.continue });
    t.fail('expected 410');
  } catch (err) {
    t.ok(err instanceof StatusError && err.code === 410 && err.reason === 'Expired');
  }
  t.equal(s.eventsAfter(rvA), undefined, 'watch from a compacted rv: nothing to resume from');
  const inWindow = s.resourceVersion - 3;
  t.same(s.eventsAfter(inWindow)!.map((e) => e.rv), [inWindow + 1, inWindow + 2, inWindow + 3]);
  t.throws(() => s.list('/configmaps', { continue: 'bogus' }), { code: 400 });
});

t.test('expireHistory: every earlier rv is too old', async (t) => {
  const s = new Store();
  s.put('/configmaps', cm('ns', 'a'));
  const rv = s.resourceVersion;
  s.expireHistory();
  t.equal(s.resourceVersion, rv + 1);
  t.equal(s.eventsAfter(rv), undefined);
  t.same(s.eventsAfter(rv + 1), []);
  t.equal(s.tooOld(rv).message, `too old resource version: ${rv} (${rv + 1})`);
});

/** `n` pods in reverse name order (the worst order for a sorted load). */
const reversePods = (n: number): KObject[] => Array.from({ length: n }, (_, i) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name: `p${String(n - 1 - i).padStart(6, '0')}`, namespace: 'ns' } }));

t.test('bulkCreate and paging: ten times the objects cost about ten times more, not a hundred', async (t) => {
  // n log n: 13 times (up to 30 measured, with the collector's work); quadratic: 100 times.
  const load = (n: number) => timed(() => ({ s: new Store(), pods: reversePods(n) }), ({ s, pods }) => s.bulkCreate('/pods', pods));
  const loaded = (n: number) => {
    const s = new Store();
    s.bulkCreate('/pods', reversePods(n));
    return s;
  };
  const page = (n: number) =>
    timed(
      () => loaded(n),
      (s) => {
        let cont: string | undefined;
        do cont = s.list('/pods', { limit: 500, continue: cont }).continue;
        while (cont);
      },
    );
  const [load2k, load20k, page2k, page20k] = bestTimes([load(2_000), load(20_000), page(2_000), page(20_000)], 5);
  t.ok(load20k / load2k < 60, `bulkCreate of 20,000 against 2,000: ${(load20k / load2k).toFixed(1)} times (${load2k.toFixed(1)} vs ${load20k.toFixed(1)} ms)`);
  t.ok(page20k / page2k < 60, `paging through 20,000 against 2,000: ${(page20k / page2k).toFixed(1)} times (${page2k.toFixed(1)} vs ${page20k.toFixed(1)} ms)`);
});

t.test('bulkCreate: sorted, each object its own rv, listeners see it', async (t) => {
  const s = new Store();
  const seen: number[] = [];
  s.subscribe('/pods', (e) => seen.push(e.rv));
  s.put('/pods', { metadata: { name: 'm', namespace: 'ns' } });
  const n = 20_000;
  s.bulkCreate('/pods', reversePods(n));
  t.equal(s.count('/pods'), n + 1);
  t.equal(seen.length, n + 1);
  const page = s.list('/pods', { limit: 500 });
  t.equal(page.items.length, 500);
  t.equal(page.items[0].metadata.name, 'm');
  t.equal(page.items[1].metadata.name, 'p000000');
  t.ok(page.items[1].metadata.uid && page.items[1].metadata.creationTimestamp);
  t.equal(page.remainingItemCount, n + 1 - 500);
  let total = 0;
  let cont: string | undefined;
  do {
    const p = s.list('/pods', { limit: 500, continue: cont });
    total += p.items.length;
    cont = p.continue;
  } while (cont);
  t.equal(total, n + 1);
});

t.test('waitForRv', async (t) => {
  const s = new Store();
  const target = s.resourceVersion + 1;
  const p = s.waitForRv(target, 2000);
  s.put('/configmaps', cm('ns', 'a'));
  t.equal(await p, true);
  t.equal(await s.waitForRv(s.resourceVersion + 5, 50), false);
});
