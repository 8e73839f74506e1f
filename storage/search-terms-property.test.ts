// SQL and in-memory evaluation of the search terms agree (as storage/selectors.test.ts checks
// for selectors): random name substrings and creationTimestamp ranges over random names (case,
// `_`, non-ASCII letters that Unicode folds) and timestamps (absent, odd forms) select the same
// objects from SQL as objectMatches does; random orderBy keys sort SQL pages in the order the
// in-memory comparison gives, and paging reads the same list; each way of reading a term.
import t from 'tap';
import { prng } from '../hack/testing/prng.ts';
import { parseLabelSelector } from '../kube/labels.ts';
import { objectMatches } from './filters.ts';
import { comparePositions, sortValues } from './order-by.ts';
import { backends, openTestStore, podEvent, stopTestPostgres } from './testing.ts';
import type { KubeObject, ListQuery, OrderKey } from './types.ts';

t.teardown(stopTestPostgres);

const parts = ['web', 'WEB', 'Web', 'api', 'a_b', 'axb', 'db', '\u212Aube', 'kube', 'caf\u00e9', 'CAF\u00c9', '0', '-', '.'];
const times = ['', '2026-03-01T10:00:00Z', '2026-03-01T10:00:01Z', '2026-03-01T11:00:00Z', '2026-03-02T00:00:00Z', '2026-03-01T10:00:00.5Z', '2025-12-31T23:59:59Z'];
const bounds = ['2026-03-01T10:00:00Z', '2026-03-01T10:00:01Z', '2026-03-01T10:30:00Z', '2026-03-02T00:00:00Z', '2026-01-01T00:00:00Z'];
const needles = ['web', 'WEB', 'a_b', 'axb', 'kub', 'ube', 'caf', 'afé', 'AFÉ', 'b-0', 'eb.'];
const phases = ['Running', 'Pending', 'Failed', '10', '9'];
const seed = Number(process.env.SEARCH_SEED ?? 20261201);

for (const backend of backends) {
  t.test(`${backend}: SQL and in-memory evaluation of the search terms agree`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    const rnd = prng(seed);
    const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)];
    for (const cluster of ['c1', 'c2']) {
      const events = [];
      for (let i = 0; i < 60; i++) {
        const name = `${pick(parts)}${pick(parts)}-${i}`;
        const e = podEvent('ADDED', `ns-${i % 3}`, name, String(100 + i), { labels: { tier: pick(['a', 'b']) }, phase: pick(phases) });
        const created = pick(times);
        if (created) e.object.metadata!.creationTimestamp = created;
        else delete e.object.metadata!.creationTimestamp;
        if (rnd() < 0.2) delete (e.object.status as Record<string, unknown>).phase;
        events.push(e);
      }
      await store.applyBatch(cluster, events);
    }
    const objects = (await store.list({ group: '', resource: 'pods' })).items.map((o) => ({ key: o, obj: JSON.parse(o.object) as KubeObject }));
    t.equal(objects.length, 120);

    const rounds = 150;
    let discriminating = 0;
    for (let i = 0; i < rounds; i++) {
      const q: ListQuery = { group: '', resource: 'pods' };
      if (rnd() < 0.6) q.nameContains = rnd() < 0.8 ? [pick(needles)] : [pick(needles), pick(needles)];
      if (rnd() < 0.4) q.createdSince = pick(bounds);
      if (rnd() < 0.4) q.createdBefore = pick(bounds);
      if (rnd() < 0.2) q.labelSelector = parseLabelSelector(`tier=${pick(['a', 'b'])}`);
      const orderBy: OrderKey[] = [];
      for (let k = 0, n = Math.floor(rnd() * 3); k < n; k++) {
        const key = pick(['name', 'namespace', 'cluster', 'creationTimestamp', 'path'] as const);
        orderBy.push(key === 'path' ? { key, path: ['status', 'phase'], desc: rnd() < 0.5 } : { key, desc: rnd() < 0.5 });
      }
      if (orderBy.length) q.orderBy = orderBy;
      // Each way of reading the terms (storage/term-plan.ts), not only the one the counts choose.
      if (rnd() < 0.6) q.termPlan = { names: pick(['index', 'scan'] as const), created: pick(['index', 'scan'] as const) };
      const sql = (await store.list(q)).items.map((o) => `${o.cluster}/${o.namespace}/${o.name}`);
      const matching = objects.filter(({ key, obj }) => objectMatches(q, key, obj));
      if (orderBy.length) {
        const place = (m: (typeof matching)[number]) => ({ ...m.key, values: sortValues(orderBy, m.key, m.obj) });
        matching.sort((a, b) => comparePositions(orderBy, place(a), place(b)));
      }
      const js = matching.map(({ key }) => `${key.cluster}/${key.namespace}/${key.name}`);
      const what = `seed ${seed}, round ${i}: ${JSON.stringify({ ...q, labelSelector: undefined })}`;
      if ((orderBy.length ? sql.join() : [...sql].sort().join()) !== (orderBy.length ? js.join() : [...js].sort().join())) {
        t.same(sql, js, what);
        return;
      }
      if (sql.length > 0 && sql.length < objects.length) discriminating++;
      if (i % 10 === 0) {
        // Paged in small pages, the same list.
        const paged: string[] = [];
        let token: string | undefined;
        for (let p = 0; p < 200; p++) {
          const r = await store.list({ ...q, limit: 1 + Math.floor(rnd() * 7), continue: token });
          paged.push(...r.items.map((o) => `${o.cluster}/${o.namespace}/${o.name}`));
          token = r.continue;
          if (!token) break;
        }
        if (orderBy.length ? paged.join() !== sql.join() : [...paged].sort().join() !== [...sql].sort().join()) {
          t.same(paged, sql, `${what}: paged`);
          return;
        }
      }
    }
    t.pass(`${rounds} random queries agree`);
    t.ok(discriminating > rounds / 4, `the terms discriminate (${discriminating} of ${rounds} selected some but not all)`);
  });
}
