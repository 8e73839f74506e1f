import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { nested } from '../hack/hostile/objects.ts';
import { stringifyJson } from '../kube/json-text.ts';
import { connect } from './connect.ts';
import { clusterLease } from './leases.ts';
import { migrate } from './schema.ts';
import { Store } from './store.ts';
import { backends, emptyStorageUrl, podEvent, stopTestPostgres } from './testing.ts';

t.teardown(stopTestPostgres);

const bin = fileURLToPath(new URL('../bin/panoptes.mjs', import.meta.url));

function migrateProcess(url: string): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, 'migrate', '--storage', url], { timeout: 60_000 }, (err, _stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stderr });
    });
  });
}

for (const backend of backends) {
  t.test(`${backend}: several processes migrating one fresh database at once`, async (t) => {
    const { url, cleanup } = await emptyStorageUrl(backend);
    t.teardown(cleanup);
    const results = await Promise.all([1, 2, 3, 4].map(() => migrateProcess(url)));
    for (const r of results) t.equal(r.code, 0, r.stderr);
    const store = await Store.open(url);
    t.teardown(() => store.close());
    t.equal(await store.watermark(), 1, 'one counter row');
    await store.applyBatch('c', [podEvent('ADDED', 'n', 'a', '1')]);
    t.equal(await store.watermark(), 2);
    const again = await migrateProcess(url);
    t.equal(again.code, 0, 'migrations are idempotent');
    t.equal(await store.watermark(), 2, 'and leave data alone');
  });
}

for (const backend of backends) {
  t.test(`${backend}: version 8 makes rows stored before it readable by JSON paths and field selectors`, async (t) => {
    const { url, cleanup } = await emptyStorageUrl(backend);
    t.teardown(cleanup);
    const conn = connect(url);
    await migrate(conn.knex, conn.dialect, 7);
    // As version 7 wrote them: the object's text holds NUL and a lone surrogate as escapes, and
    // so does the selectable fields' JSON; one object nests past SQLite's JSON limit.
    const pod = podEvent('ADDED', 'n', 'nul', '1', { nodeName: 'node\u0000a' }).object;
    pod.metadata!.annotations = { a: 'x\u0000y', b: 'x\ud800y' };
    const deep = { ...podEvent('ADDED', 'n', 'deep', '2').object, spec: { tree: nested(1200) } };
    const row = (name: string, o: object, fields: string) => ({ cluster: 'c', grp: '', version: 'v1', resource: 'pods', namespace: 'n', name, uid: `u-${name}`, rv: 2, upstream_rv: '1', created_at: '', owner_uid: null, fields, object: stringifyJson(o) });
    await conn.knex('objects').insert([row('nul', pod, JSON.stringify({ 'spec.nodeName': 'node\u0000a' })), row('deep', deep, JSON.stringify({ 'spec.nodeName': 'node-1' }))]);
    await conn.knex.destroy();

    const store = await Store.open(url);
    t.teardown(() => store.close());
    const count = async (path: string[]) => (await store.aggregate({ select: { group: '', resource: 'pods' }, match: [{ path, operator: 'Exists', values: [] }], fn: 'count' })).rows[0].value;
    t.equal(await count(['metadata', 'annotations', 'a']), 1, 'a NUL annotation');
    t.equal(await count(['spec', 'tree', 'd']), 1, 'a deep tree');
    const list = await store.list({ group: '', resource: 'pods', fieldSelector: [{ field: 'spec.nodeName', operator: '=', value: 'node\u0000a' }] });
    t.same(list.items.map((i) => i.name), ['nul'], 'the field selector');
  });
}

for (const backend of backends) {
  t.test(`${backend}: lease epochs continue above every epoch of a database made before the epoch sequence`, async (t) => {
    const { url, cleanup } = await emptyStorageUrl(backend);
    t.teardown(cleanup);
    const conn = connect(url);
    await migrate(conn.knex, conn.dialect, 8);
    // Epochs of that time: a lease at 7, and changes written under 12 by a lease since deleted.
    await conn.knex('leases').insert({ name: clusterLease('east'), holder: 'a', epoch: 7, acquired_at: 0, renewed_at: 0, expires_at: 0 });
    const change = { type: 'ADDED', cluster: 'gone', grp: '', version: 'v1', resource: 'pods', namespace: 'n', name: 'p', uid: 'u', object: '{}', prev_object: null, ts: 0 };
    await conn.knex('changes').insert([
      { rv: 2, ...change, epoch: 12 },
      { rv: 3, ...change, epoch: null },
    ]);
    await conn.knex('meta').where({ key: 'rv' }).update({ value: 3 });
    await conn.knex.destroy();

    const store = await Store.open(url);
    t.teardown(() => store.close());
    t.equal(await store.acquireLease(clusterLease('gone'), 'b', 60_000), 13, 'the next epoch is above every one in leases and in the change log');
    t.equal(await store.acquireLease(clusterLease('east'), 'b', 60_000), 14, 'for every lease');
  });
}

for (const backend of backends) {
  t.test(`${backend}: version 18 gives each cluster its recorded member id in a column; a status holding NUL reads like any other`, async (t) => {
    const { url, cleanup } = await emptyStorageUrl(backend);
    t.teardown(cleanup);
    const conn = connect(url);
    await migrate(conn.knex, conn.dialect, 17);
    // As version 17 wrote them: the id only in the status text, one status with a NUL escape.
    const row = (name: string, status: Record<string, unknown>) => ({ name, spec: '{}', status: JSON.stringify(status), created_at: `2026-01-0${name === 'east' ? 1 : 2}T00:00:00.000Z`, updated_at: '' });
    await conn.knex('clusters').insert([row('east', { clusterID: 'id-east', message: 'a \u0000 b' }), row('west', { phase: 'Pending' })]);
    await conn.knex.destroy();

    const store = await Store.open(url);
    t.teardown(() => store.close());
    t.same([...(await store.clusterIdentities())], [['east', { clusterID: 'id-east', registeredAt: '2026-01-01T00:00:00.000Z' }]], 'backfilled from the status');
    const fence = { lease: clusterLease('west'), holder: 'a', epoch: (await store.acquireLease(clusterLease('west'), 'a', 60_000))! };
    await store.setClusterStatus('west', { clusterID: 'id-west', message: 'c \u0000 d' }, fence);
    t.same((await store.clusterIdentities()).get('west')?.clusterID, 'id-west', 'written with the status, which holds a NUL');
  });
}
