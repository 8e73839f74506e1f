// Label and field selectors have two implementations: SQL (storage/filters.ts, for lists)
// and in memory (kube/labels.ts, kube/fields.ts, for watches and rebuilt snapshot rows). An
// object one returns and the other rejects would never get its MODIFIED or DELETED, so
// random selectors over random labels and field values must get equal answers from both,
// on every backend.
import t from 'tap';
import { prng } from '../hack/testing/prng.ts';
import { parseFieldSelector } from '../kube/fields.ts';
import { parseLabelSelector } from '../kube/labels.ts';
import { connect } from './connect.ts';
import { objectMatches } from './filters.ts';
import { compareKeys } from './rows.ts';
import { migrate } from './schema.ts';
import { Store } from './store.ts';
import { backends, emptyStorageUrl, openTestStore, podEvent, stopTestPostgres } from './testing.ts';
import type { KubeObject, ListQuery } from './types.ts';

t.teardown(stopTestPostgres);

const keys = ['app', 'tier', 'gen', 'n', 'example.com/x'];
// Label values, with every kind of almost-number the int64 rule must tell apart.
const values = ['web', 'db', 'a', '', '0', '3', '5', '7', '10', '007', '5a', '7e1', '10x', '1.5', '-3', '+4', '9007199254740993', '9223372036854775807', '9223372036854775808', '-9223372036854775808', '12345678901234567890'];
// Values a selector may name in =, in, notin (valid label values only).
const selectable = values.filter((v) => v === '' || /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/.test(v));
const bounds = ['0', '3', '6', '-1', '+5', '007', '9007199254740992', '9223372036854775806', '-9223372036854775808'];
const phases = ['Running', 'Pending', 'Failed'];
const nodes = ['node-1', 'node-2', ''];

function randomSelector(rnd: () => number): { labels: string; fields: string } {
  const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)];
  const reqs: string[] = [];
  for (let i = 0, n = 1 + Math.floor(rnd() * 3); i < n; i++) {
    const k = pick(keys);
    switch (pick(['=', '!=', 'in', 'notin', 'exists', '!', '>', '<'])) {
      case '=':
        reqs.push(`${k}=${pick(selectable)}`);
        break;
      case '!=':
        reqs.push(`${k}!=${pick(selectable)}`);
        break;
      case 'in':
        reqs.push(`${k} in (${pick(selectable)},${pick(selectable)})`);
        break;
      case 'notin':
        reqs.push(`${k} notin (${pick(selectable)})`);
        break;
      case 'exists':
        reqs.push(k);
        break;
      case '!':
        reqs.push(`!${k}`);
        break;
      case '>':
        reqs.push(`${k}>${pick(bounds)}`);
        break;
      case '<':
        reqs.push(`${k}<${pick(bounds)}`);
        break;
    }
  }
  const fields: string[] = [];
  if (rnd() < 0.5) fields.push(`status.phase${pick(['=', '!='])}${pick(phases)}`);
  if (rnd() < 0.3) fields.push(`spec.nodeName${pick(['=', '!='])}${pick(nodes)}`);
  if (rnd() < 0.2) fields.push(`metadata.namespace=${pick(['ns-0', 'ns-1'])}`);
  if (rnd() < 0.1) fields.push(`metadata.name!=${pick(['p-1', 'p-2'])}`);
  return { labels: reqs.join(','), fields: fields.join(',') };
}

const seed = Number(process.env.SELECTOR_SEED ?? 20261130);

for (const backend of backends) {
  t.test(`${backend}: SQL and the in-memory matcher select the same objects`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    const rnd = prng(seed);
    const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)];
    const events = [];
    for (let i = 0; i < 200; i++) {
      const labels: Record<string, string> = {};
      for (const k of keys) if (rnd() < 0.6) labels[k] = pick(values);
      const e = podEvent('ADDED', `ns-${i % 2}`, `p-${i}`, String(100 + i), { labels, phase: pick(phases), nodeName: pick(nodes) });
      if (e.object.spec && (e.object.spec as { nodeName: string }).nodeName === '') delete (e.object.spec as { nodeName?: string }).nodeName;
      events.push(e);
    }
    await store.applyBatch('c', events);
    const objects = (await store.list({ group: '', resource: 'pods' })).items.map((o) => ({ key: o, obj: JSON.parse(o.object) as KubeObject }));
    t.equal(objects.length, 200);

    let nonEmpty = 0;
    const rounds = 400;
    for (let i = 0; i < rounds; i++) {
      const s = randomSelector(rnd);
      const q: ListQuery = { group: '', resource: 'pods', labelSelector: parseLabelSelector(s.labels), fieldSelector: parseFieldSelector(s.fields) };
      const sql = (await store.list(q)).items.map((o) => o.name).sort();
      const js = objects.filter(({ key, obj }) => objectMatches(q, key, obj)).map(({ key }) => key.name).sort();
      if (sql.join() !== js.join()) {
        t.same(sql, js, `seed ${seed}, round ${i}: labelSelector=${JSON.stringify(s.labels)} fieldSelector=${JSON.stringify(s.fields)}`);
        return;
      }
      if (sql.length > 0 && sql.length < objects.length) nonEmpty++;
    }
    t.pass(`${rounds} random selectors agree`);
    t.ok(nonEmpty > rounds / 4, `the selectors discriminate (${nonEmpty} of ${rounds} selected some but not all)`);
  });

  t.test(`${backend}: collections: SQL and the in-memory matcher select and order the same objects, page by page`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    const rnd = prng(seed + 1);
    const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)];
    const kinds = [
      { group: '', resource: 'pods' },
      { group: 'apps', resource: 'deployments' },
      { group: 'apps', resource: 'replicasets' },
      { group: 'batch', resource: 'jobs' },
    ];
    const events = [];
    for (let i = 0; i < 240; i++) {
      const labels: Record<string, string> = {};
      for (const k of keys) if (rnd() < 0.5) labels[k] = pick(values);
      // Few names, so that one key (namespace, name, cluster) is often in several kinds.
      const e = podEvent('ADDED', `ns-${i % 2}`, `o-${Math.floor(rnd() * 12)}`, String(100 + i), { labels, owner: rnd() < 0.5 ? `owner-${i % 3}` : undefined });
      const kind = pick(kinds);
      events.push({ ...e, group: kind.group, resource: kind.resource });
    }
    for (const cluster of ['c1', 'c2']) await store.applyBatch(cluster, events.filter(() => rnd() < 0.7));
    const objects = [];
    for (const k of kinds) objects.push(...(await store.list(k)).items.map((o) => ({ key: o, obj: JSON.parse(o.object) as KubeObject })));
    const id = (o: { cluster: string; group: string; resource: string; namespace: string; name: string }) => `${o.namespace}/${o.name}/${o.cluster}/${o.group}/${o.resource}`;

    const rounds = 120;
    let nonEmpty = 0;
    for (let i = 0; i < rounds; i++) {
      const chosen = kinds.filter(() => rnd() < 0.6).map((k) => ({ ...k, ...(rnd() < 0.4 ? { bare: true } : {}) }));
      if (chosen.length === 0) chosen.push(kinds[0]);
      const labels = rnd() < 0.5 ? randomSelector(rnd).labels : '';
      const q: ListQuery = { group: '', resource: '', kinds: chosen, labelSelector: parseLabelSelector(labels) };
      if (rnd() < 0.3) q.namespaces = ['ns-0', 'ns-1'];
      if (rnd() < 0.3) q.clusters = [pick(['c1', 'c2'])];
      const limit = 1 + Math.floor(rnd() * 40);
      const sql: string[] = [];
      let token: string | undefined;
      for (let page = 0; page < 1000; page++) {
        const r = await store.list({ ...q, limit, continue: token });
        sql.push(...r.items.map(id));
        token = r.continue;
        if (!token) break;
      }
      const js = objects.filter(({ key, obj }) => objectMatches(q, key, obj)).map(({ key }) => key).sort(compareKeys).map(id);
      if (sql.join() !== js.join()) {
        t.same(sql, js, `seed ${seed + 1}, round ${i}: kinds=${JSON.stringify(chosen)} labelSelector=${JSON.stringify(labels)} limit=${limit}`);
        return;
      }
      if (sql.length > 0) nonEmpty++;
    }
    t.pass(`${rounds} random collections agree`);
    t.ok(nonEmpty > rounds / 4, `the collections select something (${nonEmpty} of ${rounds})`);
  });

  t.test(`${backend}: label values stored before the int64 column are compared after the migration`, async (t) => {
    const { url, cleanup } = await emptyStorageUrl(backend);
    t.teardown(cleanup);
    const conn = connect(url);
    try {
      await migrate(conn.knex, conn.dialect, 1);
      await conn.knex('objects').insert({ id: 1, cluster: 'c', grp: '', version: 'v1', resource: 'pods', namespace: 'n', name: 'p', uid: 'u', rv: 1, upstream_rv: '1', created_at: '', object: '{"metadata":{"name":"p","namespace":"n","labels":{"gen":"12","x":"5a"}}}' });
      await conn.knex('object_labels').insert([
        { obj_id: 1, key: 'gen', value: '12' },
        { obj_id: 1, key: 'x', value: '5a' },
      ]);
    } finally {
      await conn.knex.destroy();
    }
    const store = await Store.open(url);
    t.teardown(() => store.close());
    const names = async (sel: string) => (await store.list({ group: '', resource: 'pods', labelSelector: parseLabelSelector(sel) })).items.map((o) => o.name);
    t.same(await names('gen>11'), ['p']);
    t.same(await names('gen<12'), []);
    t.same(await names('x>3'), [], '5a is not an integer');
  });
}
