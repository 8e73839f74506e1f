// The plans of owner chains, indexed JSON path terms and bare kinds, checked with EXPLAIN on
// both engines: the chain walks objects_by_owner from the named owners (no read of every
// object), an `in` term on .status.phase reads objects_by_field_status_phase, and the objects
// without an owner (a collection's bare Pods) are read from objects_unowned_list_order.
import t from 'tap';
import { pageQuery } from './list-scan.ts';
import { backends, openTestStore, stopTestPostgres } from './testing.ts';
import type { ListQuery, UpstreamEvent } from './types.ts';

t.teardown(stopTestPostgres);

function fleet(): UpstreamEvent[] {
  const out: UpstreamEvent[] = [];
  for (let k = 0; k < 20; k++) {
    const namespace = `ns-${k % 5}`;
    out.push({ type: 'ADDED', group: 'apps', version: 'v1', resource: 'deployments', object: { metadata: { name: `app-${k}`, namespace, uid: `dep-${k}`, resourceVersion: '1' } } });
    out.push({ type: 'ADDED', group: 'apps', version: 'v1', resource: 'replicasets', object: { metadata: { name: `app-${k}-1`, namespace, uid: `rs-${k}`, resourceVersion: '1', ownerReferences: [{ uid: `dep-${k}`, controller: true }] } } });
  }
  for (let i = 0; i < 4000; i++) {
    const k = i % 20;
    out.push({
      type: 'ADDED',
      group: '',
      version: 'v1',
      resource: 'pods',
      object: { metadata: { name: `app-${k}-${i}`, namespace: `ns-${k % 5}`, uid: `pod-${i}`, resourceVersion: '1', ownerReferences: [{ uid: `rs-${k}`, controller: true }] }, spec: { nodeName: `n-${i % 7}` }, status: { phase: i % 100 ? 'Running' : 'Pending' } },
    });
  }
  return out;
}

const chain: ListQuery = { group: '', resource: 'pods', limit: 501, owners: { names: ['app-7'], group: 'apps', resource: 'deployments', seniority: 1 } };
/** Every owner term, each of which docs/search.md promises is read through an index. */
const ownerTerms: Array<[string, ListQuery]> = [
  ['ownerName, seniority 1', chain],
  ['ownerName, any seniority', { ...chain, owners: { ...chain.owners!, seniority: 'any' } }],
  ['ownerUID, seniority 1', { ...chain, owners: { uids: ['dep-7'], seniority: 1 } }],
  ['ownerUID, seniority 1, several uids', { ...chain, owners: { uids: ['dep-7', 'dep-8', 'dep-9'], seniority: 1 } }],
  ['ownerUID, any seniority', { ...chain, owners: { uids: ['dep-7'], seniority: 'any' } }],
  ['ownerUID, seniority 0', { group: '', resource: 'pods', limit: 501, ownerUIDs: ['rs-7'] }],
];
const phase: ListQuery = { group: '', resource: 'pods', limit: 501, jsonFields: [{ path: ['status', 'phase'], operator: 'in', values: ['Pending'] }] };

for (const backend of backends) {
  t.test(`${backend}: owner chains and indexed paths read their indexes`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    await store.applyBatch('c', fleet());
    await store.analyze();
    const { knex, dialect } = store.conn;
    const plan = async (q: ListQuery): Promise<string> => {
      const { sql, bindings } = pageQuery(knex, dialect, q, { limit: q.limit })!.toSQL();
      if (backend === 'postgres') return ((await knex.raw(`EXPLAIN ${sql}`, bindings as never[])) as { rows: Array<{ 'QUERY PLAN': string }> }).rows.map((r) => r['QUERY PLAN']).join('\n');
      return ((await knex.raw(`EXPLAIN QUERY PLAN ${sql}`, bindings as never[])) as Array<{ detail: string }>).map((r) => r.detail).join('\n');
    };
    for (const [what, q] of ownerTerms) {
      const c = await plan(q);
      t.match(c, /objects_by_owner/, `${what}: each level through the owner index`);
      // The owners a chain starts from, by name (objects_by_name) or by uid (objects_by_uid).
      if (q.owners?.uids) t.match(c, /objects_by_uid/, `${what}: the owners by uid through their index:\n${c}`);
      // The owners, the dependents and the listed objects are read through indexes (on
      // PostgreSQL the recursive step of a table this small may be a hash join over a
      // sequential scan: at 100,000 objects it is an index scan of objects_by_owner,
      // docs/bench/search-owners.md).
      t.notMatch(c, backend === 'postgres' ? /Seq Scan on objects (o|d|p)\b/ : /SCAN (o|d|c|p)\b(?! USING)/, `${what}: no object read but through an index:\n${c}`);
    }
    const p = await plan(phase);
    t.match(p, /objects_by_field_status_phase/, `the phase through its index:\n${p}`);
    // The index holds the list order after the value: a page is read in order, never every match sorted.
    t.notMatch(p, backend === 'postgres' ? /Sort Key/ : /USE TEMP B-TREE FOR ORDER BY/, `the phase's first page in list order:\n${p}`);
    if (backend === 'postgres') {
      // A value most pods hold is read in list order too, whichever index the planner takes.
      const running = await plan({ ...phase, jsonFields: [{ path: ['status', 'phase'], operator: 'in', values: ['Running'] }] });
      t.notMatch(running, /Sort Key/, `Running (99%) in list order, no sort:\n${running}`);
    }
    // Every pod here has an owner: the bare page finds none without reading any of them.
    const bare: ListQuery = { group: '', resource: 'pods', limit: 501, withoutOwner: true };
    const b = await plan(bare);
    t.match(b, /objects_unowned_list_order/, `the bare pods through the index of objects without an owner:\n${b}`);
    t.notMatch(b, backend === 'postgres' ? /Sort Key|Seq Scan on objects/ : /USE TEMP B-TREE FOR ORDER BY|SCAN o\b(?! USING)/, `in list order, no other read:\n${b}`);
    t.equal((await store.list(chain)).items.length, 200);
    t.equal((await store.list(phase)).items.length, 40);
    t.equal((await store.list(bare)).items.length, 0);
    t.equal((await store.list({ group: 'apps', resource: 'deployments', limit: 500, withoutOwner: true })).items.length, 20, 'the deployments have no owner');
  });
}

t.test('postgres: a page of a name substring many names hold reads its keys from the list index alone, then its rows', async (t) => {
  const { store, close } = await openTestStore('postgres');
  t.teardown(close);
  // As bench:list's pods: a tenth of the names hold "tenth", all in two of twenty namespaces,
  // so the ordered scan passes over the entries of five namespaces before its first match.
  const pods: UpstreamEvent[] = [];
  for (let i = 0; i < 20_000; i++) {
    const name = `app-${i % 40}-${i % 10 === 3 ? 'tenth-' : ''}${i}`;
    pods.push({ type: 'ADDED', group: '', version: 'v1', resource: 'pods', object: { metadata: { name, namespace: `bench-${i % 20}`, uid: `pod-${i}`, resourceVersion: '1' } } });
  }
  for (let i = 0; i < pods.length; i += 2000) await store.applyBatch('c', pods.slice(i, i + 2000));
  const { knex, dialect } = store.conn;
  // What autovacuum does after such inserts: the visibility map vouches for the pages.
  await knex.raw('VACUUM ANALYZE objects');
  const q: ListQuery = { group: '', resource: 'pods', limit: 501, nameContains: ['tenth'] };
  const { sql, bindings } = pageQuery(knex, dialect, q, { limit: q.limit })!.toSQL();
  const plan = ((await knex.raw(`EXPLAIN (ANALYZE, BUFFERS) ${sql}`, bindings as never[])) as { rows: Array<{ 'QUERY PLAN': string }> }).rows.map((r) => r['QUERY PLAN']).join('\n');
  t.notMatch(plan, /-> {2}Index Scan using objects_list_order on objects o\b[^\n]*\n[^\n]*\n\s*Filter: \(lower/, `no row read for each name the filter passes over:\n${plan}`);
  t.notMatch(plan, /Seq Scan|Bitmap Heap Scan on objects r\b/, 'then one probe per key, never every object');
  t.match(plan, /Nested Loop[\s\S]*Index Scan using objects_(list_order|by_name) on objects r\b/, 'each row by its key');
  const page = await store.list({ ...q, limit: 500 });
  t.equal(page.items.length, 500);
  t.ok(page.items.every((o) => o.name.includes('tenth')), 'every item holds it');
  t.same(page.items.map((o) => `${o.namespace}/${o.name}`), page.items.map((o) => `${o.namespace}/${o.name}`).sort(), 'in list order');
});

for (const backend of backends) {
  t.test(`${backend}: the field indexes hold only the objects that have the field, and their statistics are kept`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    const { knex } = store.conn;
    for (const field of ['status_phase', 'spec_nodename']) {
      const name = `objects_by_field_${field}`;
      const def =
        backend === 'postgres'
          ? ((await knex.raw('SELECT indexdef AS sql FROM pg_indexes WHERE indexname = ?', [name])) as { rows: Array<{ sql: string }> }).rows[0]?.sql
          : ((await knex.raw('SELECT sql FROM sqlite_schema WHERE name = ?', [name])) as Array<{ sql: string }>)[0]?.sql;
      t.match(def, /WHERE .*IS NOT NULL/, `${name} is partial: ${def}`);
      if (backend === 'postgres') {
        const stats = ((await knex.raw('SELECT count(*)::int AS n FROM pg_statistic_ext WHERE stxname = ?', [`${name}_stats`])) as { rows: Array<{ n: number }> }).rows[0].n;
        t.equal(stats, 1, `${name}: the expression's statistics`);
      }
    }
    // A ConfigMap has no selectable field: the predicate leaves it out of both indexes.
    await store.applyBatch('c', Array.from({ length: 50 }, (_, i) => ({ type: 'ADDED' as const, group: '', version: 'v1', resource: 'configmaps', object: { metadata: { name: `cm-${i}`, namespace: 'ns', uid: `cm-${i}`, resourceVersion: '1' } } })));
    await store.analyze();
    const count = async (expr: string) => Number(((await knex('objects').count({ n: '*' }).whereRaw(`${expr} IS NOT NULL`).first()) as { n: number | string }).n);
    t.equal(await count(store.conn.dialect.fieldsValue('status.phase', '')), 0, 'no ConfigMap has the field');
  });
}
