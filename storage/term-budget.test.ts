// The budget of terms and values (storage/term-budget.ts), on both engines: valid terms that
// overflowed an engine (too many SQL variables, a bind limit, an expression tree too deep) are
// served or refused with a 400 that names the budget, never a 500; and the count is an upper
// bound of what every statement of a list really binds, for random queries of every term.
import t from 'tap';
import { prng } from '../hack/testing/prng.ts';
import { parseLabelSelector } from '../kube/labels.ts';
import { StatusError } from '../kube/status.ts';
import { backends, openTestStore, podEvent, stopTestPostgres } from './testing.ts';
import { maxScans } from './list-scan.ts';
import { checkTermBudget, scanRoom, termBudget, valuesPerKind } from './term-budget.ts';
import type { CollectionKind, ListQuery, UpstreamEvent } from './types.ts';

t.teardown(stopTestPostgres);

const range = (n: number, f: (i: number) => string) => Array.from({ length: n }, (_, i) => f(i));

/** Pods in 32 namespaces, owned by replicasets, labelled, and the replicasets and deployments above them. */
function fleet(): UpstreamEvent[] {
  const out: UpstreamEvent[] = [];
  for (let k = 0; k < 8; k++) {
    out.push({ type: 'ADDED', group: 'apps', version: 'v1', resource: 'deployments', object: { metadata: { name: `app-${k}`, namespace: `ns-${k}`, uid: `dep-${k}`, resourceVersion: '1' } } });
    out.push({ type: 'ADDED', group: 'apps', version: 'v1', resource: 'replicasets', object: { metadata: { name: `app-${k}-1`, namespace: `ns-${k}`, uid: `rs-${k}`, resourceVersion: '1', ownerReferences: [{ uid: `dep-${k}`, controller: true }] } } });
  }
  for (let i = 0; i < 320; i++) out.push(podEvent('ADDED', `ns-${i % 32}`, `pod-${i}`, '1', { labels: { app: `a${i % 10}`, tier: i % 2 ? 'web' : 'db' }, owner: `rs-${i % 8}`, phase: i % 3 ? 'Running' : 'Pending' }));
  return out;
}

const pods = { group: '', resource: 'pods' };
const namespaces32 = range(32, (i) => `ns-${i}`);
const kinds32: CollectionKind[] = [pods, { group: 'apps', resource: 'deployments' }, { group: 'apps', resource: 'replicasets' }, ...range(29, (i) => `kind-${i}`).map((resource) => ({ group: 'example.com', resource }))];

for (const backend of backends) {
  t.test(`${backend}: valid terms never overflow the engine`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    await store.applyBatch('c', fleet());
    const names = (q: ListQuery) => store.list(q).then((r) => r.items.map((i) => i.name).sort());

    // 32 namespaces + 1,000 names + 1,000 ownerUIDs: SQLite's "too many SQL variables" (one
    // scan per namespace, each binding every name and uid) was a 500 that logged the statement.
    const manyNames = [...range(996, (i) => `nobody-${i}`), 'pod-0', 'pod-1', 'pod-42', 'pod-43'];
    const manyUids = [...range(999, (i) => `nobody-${i}`), 'rs-0'];
    t.same(await names({ ...pods, namespaces: namespaces32, names: manyNames, ownerUIDs: manyUids, limit: 500 }), ['pod-0'], 'served, within one statement’s budget');
    // A 1,000-value label `in` with them: PostgreSQL's 65,535 bind parameters were overflowed.
    const manyApps = parseLabelSelector(`app in (${[...range(999, (i) => `x${i}`), 'a2'].join(',')})`);
    const otherUids = [...range(999, (i) => `nobody-${i}`), 'rs-2'];
    t.same(await names({ ...pods, namespaces: namespaces32, names: manyNames, ownerUIDs: otherUids, labelSelector: manyApps, limit: 500 }), ['pod-42'], 'served, a label in of 1,000 values too');
    const page = await store.list({ ...pods, namespaces: namespaces32, labelSelector: manyApps, limit: 7 });
    t.equal(page.items.length, 7, 'paged');
    const rest = await store.list({ ...pods, namespaces: namespaces32, labelSelector: manyApps, limit: 100, continue: page.continue });
    t.equal(page.items.length + rest.items.length, 32, 'every page, each object once');

    // 500 fuzzyName terms: SQLite's "Expression tree is too large (maximum depth 1000)".
    await t.rejects(store.list({ ...pods, nameContains: range(500, () => 'pod'), limit: 500 }), { code: 400, reason: 'BadRequest', message: /^too many search terms: this request has 500 \(fuzzyName 500\), more than the 100 a request may have/ });
    t.equal((await store.list({ ...pods, nameContains: range(90, () => 'pod'), limit: 500 })).items.length, 320, '90 are served');

    // A collection binds each kind's values once per kind.
    await t.rejects(store.list({ ...pods, kinds: kinds32, names: manyNames, ownerUIDs: manyUids, limit: 500 }), {
      code: 400,
      message: /^too many search values: this request would bind 64,[0-9]{3} values into one SQL statement \(names 1,000, ownerUID 1,000, .*for each of its 32 kinds\), more than the 10,000 a request may; give fewer values or fewer kinds/,
    });
    t.same(await names({ ...pods, kinds: kinds32, names: [...manyNames.slice(-4), 'app-0-1'], ownerUIDs: ['rs-0', 'dep-0'], limit: 500 }), ['app-0-1', 'pod-0'], 'fewer values across the same kinds are served');
    await t.rejects(store.aggregate({ select: { ...pods, nameContains: range(101, () => 'pod') }, fn: 'count' }), { code: 400, message: /too many search terms/ }, 'aggregates have the same budget');
  });

  t.test(`${backend}: the count bounds the values every statement of a list binds`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    await store.applyBatch('c', fleet());
    let most = 0;
    store.conn.knex.on('query', (q: { bindings?: unknown[] }) => (most = Math.max(most, q.bindings?.length ?? 0)));
    const rnd = prng(20_261_202);
    const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)];
    const some = (n: number, f: (i: number) => string) => range(1 + Math.floor(rnd() * n), f);
    let checked = 0;
    for (let round = 0; round < 120; round++) {
      const q: ListQuery = { ...pods, limit: pick([undefined, 5, 50]) };
      if (rnd() < 0.3) q.kinds = kinds32.slice(0, 1 + Math.floor(rnd() * 32));
      if (rnd() < 0.5) q.namespaces = some(40, (i) => `ns-${i}`);
      if (rnd() < 0.3) q.clusters = some(5, (i) => (i ? `c${i}` : 'c'));
      if (rnd() < 0.4) q.names = some(300, (i) => `pod-${i}`);
      if (rnd() < 0.3) q.ownerUIDs = some(50, (i) => `rs-${i}`);
      else if (rnd() < 0.3) q.owners = rnd() < 0.5 ? { uids: some(20, (i) => `dep-${i}`), seniority: pick([1, 'any'] as const) } : { names: some(5, (i) => `app-${i}`), group: 'apps', resource: 'deployments', seniority: pick([1, 'any'] as const) };
      if (rnd() < 0.4) q.labelSelector = parseLabelSelector(pick(['tier=web', 'app in (a1,a2,a3)', '!gone,tier', `app notin (${some(200, (i) => `a${i}`).join(',')})`, 'replicas>3']));
      if (rnd() < 0.3) q.fieldSelector = [{ field: 'metadata.name', operator: '!=', value: 'pod-3' }, { field: 'spec.nodeName', operator: '=', value: 'node-1' }];
      if (rnd() < 0.4) q.jsonFields = [{ path: pick([['status', 'phase'], ['spec', 'containers', null, 'env', null, 'name'], ['metadata', 'labels', 'app']]), operator: pick(['in', 'notin', 'exists'] as const), values: some(30, (i) => `a${i}`) }];
      if (rnd() < 0.3) q.nameContains = some(3, () => pick(['pod', 'od-', 'app']));
      if (rnd() < 0.3) q.createdSince = '2020-01-01T00:00:00Z';
      if (rnd() < 0.2) q.createdBefore = '2030-01-01T00:00:00Z';
      if (!q.kinds && rnd() < 0.3) q.orderBy = some(4, () => '').map(() => pick([{ key: 'path', path: ['status', 'phase'], desc: rnd() < 0.5 }, { key: 'creationTimestamp', desc: true }, { key: 'cluster', desc: false }] as const));
      try {
        checkTermBudget(q);
      } catch {
        continue;
      }
      most = 0;
      let token: string | undefined;
      for (let p = 0; p < 3; p++) {
        const r = await store.list({ ...q, continue: token }).catch((err: unknown) => err);
        if (r instanceof StatusError && r.code === 400) break; // a budget of documents, or an orderBy's sort bound: not this count's
        if (r instanceof Error) throw r;
        token = (r as { continue?: string }).continue;
        if (!token) break;
      }
      // A page merges at most this many scans of each kind, each binding at most valuesPerKind.
      const kinds = q.kinds?.length ?? 1;
      const bound = valuesPerKind(q) * kinds * Math.max(1, Math.min(Math.floor(maxScans / kinds), scanRoom(q)));
      if (most > bound) t.fail(`${most} values bound, counted ${bound}: ${JSON.stringify(q).slice(0, 400)}`);
      if (most > termBudget.values) t.fail(`${most} values bound, past the budget: ${JSON.stringify(q).slice(0, 400)}`);
      checked++;
    }
    t.ok(checked > 60, `${checked} queries within the budget, every statement of each within its count`);
  });
}
