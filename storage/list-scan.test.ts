// Lists filtered by several clusters and namespaces: the same pages as the unpaged list on both
// backends, and plans that read a continue page in index order (no sort of the rows left).
import t, { type Test } from 'tap';
import { parseLabelSelector } from '../kube/labels.ts';
import { maxScans } from './list-scan.ts';
import { compareKeys, compareText } from './rows.ts';
import type { Store } from './store.ts';
import { backends, openTestStore, podEvent, stopTestPostgres } from './testing.ts';
import type { ListQuery, StoredObject } from './types.ts';

t.teardown(stopTestPostgres);

const pods = (q: Partial<ListQuery> = {}): ListQuery => ({ group: '', resource: 'pods', ...q });
const ids = (items: StoredObject[]) => items.map((i) => `${i.cluster}/${i.namespace}/${i.name}`);

/** Every page of `q` (bounded), its items and continue tokens. */
async function pageAll(t: Test, store: Store, q: ListQuery, between?: (page: number) => Promise<void>) {
  const items: StoredObject[] = [];
  const tokens: string[] = [];
  const sizes: number[] = [];
  let token: string | undefined;
  for (let page = 0; page < 500; page++) {
    const r = await store.list({ ...q, continue: token });
    items.push(...r.items);
    sizes.push(r.items.length);
    token = r.continue;
    if (!token) {
      t.ok(sizes.slice(0, -1).every((n) => n === q.limit) && sizes[sizes.length - 1] <= q.limit!, 'every page but the last holds limit items');
      return { items, tokens };
    }
    tokens.push(token);
    if (between) await between(page);
  }
  throw new Error('more than 500 pages');
}

t.test('compareText is byte order of UTF-8 (code point order), as the engines compare keys', async (t) => {
  t.equal(compareText('a', 'a'), 0);
  t.equal(compareText('a', 'ab'), -1);
  t.equal(compareText('b', 'ab'), 1);
  // U+FF21 (3 bytes in UTF-8) before U+1F600 (4 bytes); UTF-16 code units order them the other way.
  t.equal(compareText('\uff21', '\u{1f600}'), -1);
  t.equal(compareText('\u{1f600}', '\uff21'), 1);
  t.equal(Buffer.compare(Buffer.from('\uff21'), Buffer.from('\u{1f600}')), -1);
  t.equal(compareText('\u{1f600}', '\u{1f601}'), -1);
});

for (const backend of backends) {
  t.test(`${backend}: multi-value filters page exactly like the unpaged list`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    // 4 clusters × 5 namespaces × 6 names: the same names in every cluster and namespace,
    // so page boundaries fall between clusters of one name.
    const clusters = ['c1', 'c2', 'c3', 'c4'];
    const namespaces = ['alpha', 'beta', 'delta', 'gamma', 'omega'];
    for (const cluster of clusters) {
      const events = [];
      for (const ns of namespaces) for (let i = 0; i < 6; i++) events.push(podEvent('ADDED', ns, `pod-${i}`, String(100 + i), { labels: { app: i % 2 ? 'web' : 'db', idx: String(i) } }));
      await store.applyBatch(cluster, events);
    }
    const everything = (await store.list(pods())).items;
    t.equal(everything.length, 120);
    const manyNamespaces = [...namespaces, ...Array.from({ length: maxScans }, (_, i) => `none-${i}`)];
    const queries: Array<[string, Partial<ListQuery>]> = [
      ['two clusters', { clusters: ['c1', 'c3'] }],
      ['three namespaces', { namespaces: ['omega', 'alpha', 'delta'] }],
      ['clusters × namespaces', { clusters: ['c4', 'c2'], namespaces: ['beta', 'gamma', 'omega'] }],
      ['repeated and unknown values', { clusters: ['c2', 'c2', 'nope', 'c3'], namespaces: ['alpha', 'alpha', 'zzz'] }],
      ['with a label selector', { clusters: ['c1', 'c2', 'c4'], namespaces: ['alpha', 'omega'], labelSelector: parseLabelSelector('app=web,idx!=3') }],
      ['with names', { clusters: ['c1', 'c3'], names: ['pod-1', 'pod-4'] }],
      [`more than ${maxScans} namespaces`, { clusters: ['c1', 'c2'], namespaces: manyNamespaces }],
    ];
    for (const [what, filter] of queries) {
      const whole = (await store.list(pods(filter))).items;
      const expected = everything.filter(
        (o) =>
          (!filter.clusters || filter.clusters.includes(o.cluster)) &&
          (!filter.namespaces || filter.namespaces.includes(o.namespace)) &&
          (!filter.names || filter.names.includes(o.name)) &&
          (!filter.labelSelector || (JSON.parse(o.object).metadata.labels.app === 'web' && JSON.parse(o.object).metadata.labels.idx !== '3')),
      );
      t.ok(expected.length > 0, `${what}: selects something`);
      t.same(ids(whole), ids(expected), `${what}: the unpaged list holds exactly the matching objects, in list order`);
      for (const limit of [1, 2, 5, 7]) {
        const { items, tokens } = await pageAll(t, store, pods({ ...filter, limit }));
        t.same(ids(items), ids(expected), `${what}, limit ${limit}: the pages hold the list, each object once`);
        t.equal(tokens.length, Math.ceil(expected.length / limit) - 1, `${what}, limit ${limit}: as many pages as needed`);
      }
    }
    t.same(ids(everything), ids([...everything].sort(compareKeys)), 'list order is compareKeys order');
  });

  t.test(`${backend}: multi-value pages are read at the first page's snapshot while writes go on`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    for (const cluster of ['c1', 'c2', 'c3']) {
      const events = [];
      for (const ns of ['alpha', 'beta', 'gamma']) for (let i = 0; i < 8; i++) events.push(podEvent('ADDED', ns, `pod-${i}`, String(100 + i)));
      await store.applyBatch(cluster, events);
    }
    const q = pods({ clusters: ['c1', 'c3'], namespaces: ['alpha', 'gamma'] });
    const first = await store.list(q);
    let n = 0;
    const { items } = await pageAll(t, store, { ...q, limit: 3 }, async (page) => {
      // Ahead of the cursor and behind it, in selected and unselected clusters and namespaces.
      await store.applyBatch('c3', [podEvent('DELETED', 'gamma', `pod-${page % 8}`, String(1000 + n++)), podEvent('ADDED', 'alpha', `new-${page}`, String(1000 + n++))]);
      await store.applyBatch('c1', [podEvent('DELETED', 'alpha', `pod-${(page + 4) % 8}`, String(1000 + n++)), podEvent('ADDED', 'beta', `new-${page}`, String(1000 + n++))]);
    });
    t.same(ids(items), ids(first.items), 'the paged list equals the list at the first page’s rv');
    t.ok((await store.watermark()) > first.resourceVersion, 'writes happened while paging');
  });
}

/** The SQL of the page statement a list runs (the one over `objects` with an ORDER BY), with its bindings. */
async function pageStatement(store: Store, q: ListQuery): Promise<{ sql: string; bindings: unknown[] }> {
  const knex = store.conn.knex;
  const seen: Array<{ sql: string; bindings: unknown[] }> = [];
  const listener = (data: { sql: string; bindings?: unknown[] }) => {
    if (/from [`"]?objects[`"]? as [`"]?o[`"]?/i.test(data.sql) && /order by/i.test(data.sql)) seen.push({ sql: data.sql, bindings: data.bindings ?? [] });
  };
  knex.on('query', listener);
  try {
    await store.list(q);
  } finally {
    knex.removeListener('query', listener);
  }
  if (seen.length !== 1) throw new Error(`expected one page statement, saw ${seen.length}`);
  // PostgreSQL's native placeholders back to knex's (the statements hold no other `$`).
  return { sql: seen[0].sql.replace(/\$\d+/g, '?'), bindings: seen[0].bindings };
}

type PgPlanNode = { 'Node Type': string; 'Index Name'?: string; 'Relation Name'?: string; Plans?: PgPlanNode[] };
const nodes = (n: PgPlanNode): PgPlanNode[] => [n, ...(n.Plans ?? []).flatMap(nodes)];

/**
 * Objects shaped where PostgreSQL misjudged continue pages: the bulk of two clusters in one
 * namespace, a few objects of two more in namespaces after it. A row comparison is estimated by
 * its first column, `namespace > 'bench'`: a few rows, so reading and sorting every row left
 * looked as cheap as the ordered scan.
 */
async function seedSkewed(store: Store): Promise<void> {
  for (const cluster of ['c2', 'c3']) {
    for (let off = 0; off < 3000; off += 1000) {
      const events = [];
      for (let i = off; i < off + 1000; i++) events.push(podEvent('ADDED', 'bench', `pod-${String(i).padStart(5, '0')}`, String(10 + i)));
      await store.applyBatch(cluster, events);
    }
  }
  for (const cluster of ['c1', 'c4']) {
    await store.applyBatch(cluster, Array.from({ length: 20 }, (_, i) => podEvent('ADDED', `ns-${i % 10}`, `pod-${i}`, String(10 + i))));
  }
  await store.analyze();
}

/** A continue token in the middle of the bench namespace for `q`. */
async function midListToken(store: Store, q: ListQuery): Promise<string> {
  let token: string | undefined;
  for (let page = 0; page < 15; page++) token = (await store.list({ ...q, limit: 100, continue: token })).continue;
  if (!token) throw new Error('no continue token');
  return token;
}

const skewedQueries: Array<[string, ListQuery]> = [
  ['two clusters', pods({ clusters: ['c1', 'c2'] })],
  ['two clusters, three namespaces', pods({ clusters: ['c1', 'c2'], namespaces: ['bench', 'ns-1', 'ns-3'] })],
  ['three namespaces', pods({ namespaces: ['bench', 'ns-1', 'ns-3'] })],
  ['a collection of two kinds', { group: '', resource: '', kinds: [{ group: '', resource: 'pods' }, { group: 'apps', resource: 'deployments' }] }],
  ['a collection of two kinds, two clusters', { group: '', resource: '', kinds: [{ group: '', resource: 'pods' }, { group: 'apps', resource: 'deployments' }], clusters: ['c1', 'c2'] }],
];

t.test('postgres: a continue page with several clusters and namespaces is a merge of ordered index scans', async (t) => {
  const { store, close } = await openTestStore('postgres');
  t.teardown(close);
  await seedSkewed(store);
  for (const [what, q] of skewedQueries) {
    const token = await midListToken(store, q);
    for (const [page, cont] of [['first page', undefined], ['continue page', token]] as const) {
      const { sql, bindings } = await pageStatement(store, { ...q, limit: 100, continue: cont });
      const result = (await store.conn.knex.raw(`EXPLAIN (FORMAT JSON) ${sql}`, bindings as never[])) as { rows: Array<{ 'QUERY PLAN': Array<{ Plan: PgPlanNode }> }> };
      const all = nodes(result.rows[0]['QUERY PLAN'][0].Plan);
      const types = all.map((n) => n['Node Type']);
      const scans = all.filter((n) => n['Relation Name'] === 'objects');
      t.ok(scans.length > 0, `${what}, ${page}: reads objects`);
      t.ok(
        scans.every((n) => n['Node Type'] === 'Index Scan' && n['Index Name'] === 'objects_list_order'),
        `${what}, ${page}: every read of objects is an index scan in list order (${scans.map((n) => n['Node Type']).join(', ')})`,
      );
      t.equal(types[0], 'Limit', `${what}, ${page}: the page's LIMIT stops the scans`);
      if (q.kinds) {
        // The kind is a constant of each scan, which the planner does not carry out of it as an
        // order: the merged rows are sorted again, at most (limit + 1) per scan, each scan
        // stopped by its own LIMIT.
        t.equal(all.filter((n) => n['Node Type'] === 'Limit').length, scans.length + 1, `${what}, ${page}: every scan stops at the page's end (${types.join(', ')})`);
        continue;
      }
      t.notOk(types.includes('Sort') || types.includes('Incremental Sort'), `${what}, ${page}: nothing is sorted (${types.join(', ')})`);
      if ((q.clusters?.length ?? 0) > 1 || (q.namespaces?.length ?? 0) > 1) t.ok(types.includes('Merge Append'), `${what}, ${page}: one scan per value, merged in order`);
    }
  }
});

t.test('sqlite: a continue page with several clusters and namespaces is a merge of index scans that start at the key', async (t) => {
  const { store, close } = await openTestStore('sqlite');
  t.teardown(close);
  await seedSkewed(store);
  for (const [what, q] of skewedQueries) {
    const token = await midListToken(store, q);
    const { sql, bindings } = await pageStatement(store, { ...q, limit: 100, continue: token });
    const plan = ((await store.conn.knex.raw(`EXPLAIN QUERY PLAN ${sql}`, bindings as never[])) as Array<{ detail: string }>).map((r) => r.detail);
    t.notOk(plan.some((d) => d.includes('TEMP B-TREE')), `${what}: nothing is sorted (${plan.join(' | ')})`);
    const searches = plan.filter((d) => d.startsWith('SEARCH o '));
    t.ok(searches.length > 0 && searches.every((d) => d.includes('objects_list_order')), `${what}: every read of objects is a search of the list order index`);
    // The scan of the key's namespace (or of everything) starts at the key, not at its namespace's start.
    t.ok(searches.some((d) => /\(namespace,name(,cluster)?\)>/.test(d)), `${what}: a scan starts at the continue key`);
  }
});
