// Cluster objects on both backends: in `objects` and `changes` like any served object, in
// the one rv sequence; read-decide-write under the rv lock (concurrent writers never lose an
// update); inline credentials kept apart and never in a served row; fenced writes.
import t from 'tap';
import { clusterGroup, clusterObjectsCluster, clusterResource, type ClusterCredentials, type ClusterObjectState, type ClusterObjectWrite } from './cluster-objects.ts';
import { clusterLease, FencedError } from './leases.ts';
import { Store } from './store.ts';
import { backends, openTestStore, podEvent, stopTestPostgres } from './testing.ts';
import type { KubeObject } from './types.ts';

t.teardown(stopTestPostgres);

const cluster = (name: string, uid: string, spec: Record<string, unknown>, labels?: Record<string, string>): KubeObject => ({
  apiVersion: 'panoptes.io/v1alpha1',
  kind: 'Cluster',
  metadata: { name, uid, generation: 1, creationTimestamp: '2026-01-01T00:00:00Z', ...(labels ? { labels } : {}) },
  spec,
});
const put = (object: KubeObject, credentials?: ClusterCredentials | null): ClusterObjectWrite => ({ action: 'put', object, credentials });
const list = (store: Store, extra: Record<string, unknown> = {}) => store.list({ group: clusterGroup, resource: clusterResource, clusters: [clusterObjectsCluster], ...extra });

/** Every text column of every served row: objects and the change log. */
async function servedText(store: Store): Promise<string> {
  const k = store.conn.knex;
  const objects: Array<{ object: string }> = await k('objects').select('object');
  const changes: Array<{ object: string; prev_object: string | null }> = await k('changes').select('object', 'prev_object');
  return JSON.stringify([objects, changes]);
}

for (const backend of backends) {
  t.test(`${backend}: Cluster objects in the change log`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    await store.applyBatch('east', [podEvent('ADDED', 'n', 'p1', '1')]);
    const start = await store.watermark();

    let seen: ClusterObjectState | undefined | 'unset' = 'unset';
    const created = await store.writeClusterObjectWithoutLease('east', (cur) => ((seen = cur), put(cluster('east', 'u1', { server: 'https://east' }, { team: 'a' }))));
    t.equal(seen, undefined, 'decide sees no object');
    t.same(created.change, { rv: start + 1, type: 'ADDED' });
    t.equal(JSON.parse(created.object!).metadata.resourceVersion, String(start + 1), 'served with its rv');
    t.equal(await store.watermark(), start + 1);

    await store.applyBatch('east', [podEvent('ADDED', 'n', 'p2', '2')]);
    const updated = await store.writeClusterObjectWithoutLease('east', (cur) => {
      seen = cur;
      return put({ ...cur!.object, spec: { server: 'https://east2' } });
    });
    t.match(seen, { name: 'east', uid: 'u1', rv: start + 1, object: { spec: { server: 'https://east' } } });
    t.same(updated.change, { rv: start + 3, type: 'MODIFIED' }, 'one rv sequence with the member writes');

    const none = await store.writeClusterObjectWithoutLease('east', () => ({ action: 'none' }));
    t.equal(none.change, undefined);
    t.equal(await store.watermark(), start + 3, 'nothing written');
    await t.rejects(store.writeClusterObjectWithoutLease('east', () => {
      throw new Error('refused');
    }), /refused/);
    t.equal(await store.watermark(), start + 3, 'a refusal writes nothing');

    const changes = (await store.changesAfter(start, 10)).filter((c) => c.cluster === clusterObjectsCluster);
    t.same(changes.map((c) => [c.rv, c.type, c.group, c.resource, c.name]), [
      [start + 1, 'ADDED', 'panoptes.io', 'clusters', 'east'],
      [start + 3, 'MODIFIED', 'panoptes.io', 'clusters', 'east'],
    ]);
    t.equal(JSON.parse(changes[1].prevObject!).spec.server, 'https://east');

    await store.writeClusterObjectWithoutLease('west', () => put(cluster('west', 'u2', { server: 'https://west' }, { team: 'b' })));
    const all = await list(store);
    t.same(all.items.map((i) => [i.name, i.rv]), [['east', start + 3], ['west', start + 4]]);
    const byLabel = await list(store, { labelSelector: [{ key: 'team', operator: 'in', values: ['b'] }] });
    t.same(byLabel.items.map((i) => i.name), ['west'], 'label selectors from the index');
    t.same((await store.storedResources()).map((r) => r.cluster), ['east'], 'Cluster objects are no member cluster');
    t.match(await store.getClusterObject('west'), { uid: 'u2', rv: start + 4 });

    const deleted = await store.writeClusterObjectWithoutLease('west', () => ({ action: 'delete' }));
    t.same(deleted.change, { rv: start + 5, type: 'DELETED' });
    const last = (await store.changesAfter(start + 4, 10))[0];
    t.match(JSON.parse(last.object), { metadata: { name: 'west', resourceVersion: String(start + 5) } }, 'DELETED carries the last state at the new rv');
    t.equal(await store.getClusterObject('west'), undefined);
    t.same((await list(store, { labelSelector: [{ key: 'team', operator: 'exists', values: [] }] })).items.map((i) => i.name), ['east'], 'its label rows went with it');
    t.equal((await store.writeClusterObjectWithoutLease('west', () => ({ action: 'delete' }))).change, undefined, 'deleting nothing writes nothing');
  });

  t.test(`${backend}: inline credentials are kept apart`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    const secret = 'token-SECRET-1';
    await store.writeClusterObjectWithoutLease('c1', () => put(cluster('c1', 'u1', { server: 'https://c1' }), { token: secret, clientKeyData: 'KEY-SECRET' }));
    let digest: string | undefined;
    await store.writeClusterObjectWithoutLease('c1', (cur) => ((digest = cur!.credentialsDigest), { action: 'none' }));
    t.match(digest, /^[0-9a-f]{64}$/, 'writers see a digest');
    const [reg] = await store.listClusterRegistrations();
    t.same(reg.credentials, { token: secret, clientKeyData: 'KEY-SECRET' }, 'synchro reads them');

    await store.writeClusterObjectWithoutLease('c1', (cur) => put({ ...cur!.object, metadata: { ...cur!.object.metadata, labels: { x: 'y' } } }));
    t.same((await store.listClusterRegistrations())[0].credentials, { token: secret, clientKeyData: 'KEY-SECRET' }, 'kept when not given');
    await store.writeClusterObjectWithoutLease('c1', (cur) => put(cur!.object, { token: 'token-SECRET-2' }));
    t.same((await store.listClusterRegistrations())[0].credentials, { token: 'token-SECRET-2' }, 'replaced');
    t.notOk(/SECRET/.test(await servedText(store)), 'never in objects or the change log');

    await store.writeClusterObjectWithoutLease('c1', (cur) => put(cur!.object, null));
    t.equal((await store.listClusterRegistrations())[0].credentials, undefined, 'removed with null');
    await store.writeClusterObjectWithoutLease('c1', (cur) => put(cur!.object, { token: 'token-SECRET-3' }));
    await store.writeClusterObjectWithoutLease('c1', () => ({ action: 'delete' }));
    await store.writeClusterObjectWithoutLease('c1', () => put(cluster('c1', 'u9', { server: 'https://c1' })));
    t.equal((await store.listClusterRegistrations())[0].credentials, undefined, 'a new object of the same name inherits nothing');
    t.equal(await store.conn.knex('cluster_credentials').count({ n: '*' }).first().then((r) => Number(r?.n)), 0);
  });

  t.test(`${backend}: concurrent read-decide-writes lose no update`, async (t) => {
    const { store, url, close } = await openTestStore(backend);
    t.teardown(close);
    // PostgreSQL: a second Store, as another apiserver replica. SQLite: one Store per process
    // (better-sqlite3 waits for the file lock synchronously), its writes queue on one connection.
    const other = backend === 'postgres' ? await Store.open(url) : store;
    if (other !== store) t.teardown(() => other.close());
    await store.writeClusterObjectWithoutLease('n', () => put(cluster('n', 'u', { count: 0 })));
    const bump = (s: Store) => s.writeClusterObjectWithoutLease('n', (cur) => put({ ...cur!.object, spec: { count: Number((cur!.object.spec as { count: number }).count) + 1 } }));
    await Promise.all(Array.from({ length: 12 }, (_, i) => bump(i % 2 ? store : other)));
    const final = await store.getClusterObject('n');
    t.equal((final!.object.spec as { count: number }).count, 12, 'each writer saw the one before');
    const rvs = (await store.changesAfter(1, 100)).map((c) => c.rv);
    t.same(rvs, Array.from({ length: 13 }, (_, i) => 2 + i), 'gap-free rvs in commit order');
  });

  t.test(`${backend}: fenced status writes`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    const L = clusterLease('east');
    const epoch = (await store.acquireLease(L, 'a', 10_000))!;
    await store.writeClusterObject('east', () => put(cluster('east', 'u', {})), { lease: L, holder: 'a', epoch });
    await store.acquireLease(L, 'b', 10_000, ['a']);
    const before = await store.watermark();
    await t.rejects(store.writeClusterObject('east', (cur) => put({ ...cur!.object, status: { phase: 'Ready' } }), { lease: L, holder: 'a', epoch }), FencedError);
    t.equal(await store.watermark(), before, 'a writer that lost its lease writes nothing');
  });
}

for (const backend of backends) {
  t.test(`${backend}: a group of Cluster object writes: each decided on its latest row, labels kept or rewritten, one change each`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    const fences = await Promise.all(['east', 'west'].map(async (n) => ({ lease: clusterLease(n), holder: 's1', epoch: (await store.acquireLease(clusterLease(n), 's1', 60_000))! })));
    await store.writeClusterObjectWithoutLease('east', () => put(cluster('east', 'u1', {}, { team: 'a' })));
    await store.writeClusterObjectWithoutLease('west', () => put(cluster('west', 'u2', {}, { team: 'b' })));
    const before = await store.watermark();
    const r = await store.writeClusterObjects([
      // A status write: the labels stay.
      { name: 'east', decide: (cur) => put({ ...cur!.object, status: { phase: 'Ready' } }), fence: fences[0] },
      // A relabel.
      { name: 'west', decide: (cur) => put({ ...cur!.object, metadata: { ...cur!.object.metadata, labels: { team: 'c' } } }), fence: fences[1] },
    ]);
    t.same(r.map((x) => x.change), [{ rv: before + 1, type: 'MODIFIED' }, { rv: before + 2, type: 'MODIFIED' }]);
    t.same((await store.changesAfter(before, 10)).map((c) => [c.rv, c.name]), [[before + 1, 'east'], [before + 2, 'west']], 'one change each, in order, in the log');
    const byTeam = async (team: string) => (await list(store, { labelSelector: [{ key: 'team', operator: 'in', values: [team] }] })).items.map((i) => i.name);
    t.same(await byTeam('a'), ['east'], 'the kept labels still select');
    t.same(await byTeam('b'), [], 'the old label no longer selects');
    t.same(await byTeam('c'), ['west'], 'the new one does');
  });
}

for (const protocol of ['serial', 'parallel'] as const) {
  t.test(`postgres, ${protocol} writes: a Cluster the apiserver changes while a round of status writes waits is decided on as it is after`, async (t) => {
    const { store, close } = await openTestStore('postgres');
    t.teardown(close);
    // serial: a database created before parallel writes (storage/ordered-commits.ts).
    if (protocol === 'serial') await store.conn.knex('meta').where({ key: 'write_protocol' }).update({ value: 0 });
    t.equal(await store.writeProtocol(), protocol);
    const fence = { lease: clusterLease('east'), holder: 's1', epoch: (await store.acquireLease(clusterLease('east'), 's1', 60_000))! };
    await store.writeClusterObjectWithoutLease('east', () => put(cluster('east', 'u1', { server: 'https://one' })));
    // Another writer holds the rv lock (serial), or runs alone as the apiserver's writes do
    // (parallel): the round waits; serial, it has read the group's rows already.
    const holder = await store.conn.knex.transaction();
    await holder.raw(protocol === 'serial' ? "SELECT value FROM meta WHERE key = 'rv' FOR UPDATE" : 'SELECT panoptes_rv_exclusive()');
    let seen: ClusterObjectState | undefined;
    const pending = store.writeClusterObjects([{ name: 'east', decide: (cur) => ((seen = cur), put({ ...cur!.object, status: { phase: 'Ready' } })), fence }]);
    for (let i = 0; i < 100; i++) {
      const waiting = await store.conn.knex.raw("SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()");
      if ((waiting as { rows: Array<{ n: number }> }).rows[0].n > 0) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    // ...and meanwhile the object changes (as the apiserver's write would: a new rv, a new spec).
    const row: { rv: number | string; object: string } = await holder('objects').where({ cluster: clusterObjectsCluster, resource: clusterResource, name: 'east' }).first('rv', 'object');
    const changed = JSON.parse(row.object) as KubeObject;
    changed.spec = { server: 'https://two' };
    changed.metadata = { ...changed.metadata, resourceVersion: '999' };
    await holder('objects').where({ cluster: clusterObjectsCluster, resource: clusterResource, name: 'east' }).update({ rv: 999, object: JSON.stringify(changed) });
    await holder.commit();
    await pending;
    t.equal(seen?.rv, 999, 'decided on the row as it is once the other write is done');
    t.same(seen?.object.spec, { server: 'https://two' });
    t.match((await store.getClusterObject('east'))?.object, { spec: { server: 'https://two' }, status: { phase: 'Ready' } }, 'nothing of the other write lost');
  });
}

t.test('postgres: a round of status writes runs beside other writers; one that creates or deletes an object runs alone', async (t) => {
  const { store, close } = await openTestStore('postgres');
  t.teardown(close);
  const lease = async (name: string) => ({ lease: clusterLease(name), holder: 's1', epoch: (await store.acquireLease(clusterLease(name), 's1', 60_000))! });
  const east = await lease('east');
  const west = await lease('west');
  const sql: string[] = [];
  const record = (q: { sql: string }) => void sql.push(q.sql);
  store.conn.knex.on('query', record);
  t.teardown(() => void store.conn.knex.off('query', record));
  const round = async (writes: Array<{ name: string; fence: typeof east; decide: (cur: ClusterObjectState | undefined) => ClusterObjectWrite }>) => {
    sql.length = 0;
    const results = await store.writeClusterObjects(writes);
    return { results, alone: sql.some((q) => q.includes('panoptes_rv_exclusive')), parallel: sql.some((q) => q.includes('panoptes_rv_allocate')), objectUpdates: sql.filter((q) => /^update "?objects"?/i.test(q.trim())).length };
  };
  const created = await round([
    { name: 'east', fence: east, decide: () => put(cluster('east', 'u1', { server: 'https://one' })) },
    { name: 'west', fence: west, decide: () => put(cluster('west', 'u2', { server: 'https://two' })) },
  ]);
  t.ok(created.alone, 'creating objects: alone (the object count is one row every such round shares)');
  t.same(created.results.map((r) => r.change?.type), ['ADDED', 'ADDED']);
  const status = await round([
    { name: 'east', fence: east, decide: (cur) => put({ ...cur!.object, status: { phase: 'Ready' } }) },
    { name: 'west', fence: west, decide: (cur) => put({ ...cur!.object, status: { phase: 'Ready' } }) },
  ]);
  t.ok(status.parallel && !status.alone, 'status writes of existing objects: beside other writers');
  const [a, b] = status.results;
  t.same([a.change?.type, b.change?.type], ['MODIFIED', 'MODIFIED']);
  t.equal(b.change!.rv, a.change!.rv + 1, 'one rv each, in order');
  t.equal(a.watermark, b.change!.rv, "the round's watermark is its last rv");
  t.equal(await store.watermark(), b.change!.rv, 'published');
  t.equal(status.objectUpdates, 1, "the round's status writes are one statement: it holds its rvs for one round trip, whatever its size");
  const stored = (await list(store)).items.map((i) => JSON.parse(i.object) as KubeObject);
  t.same(
    stored.map((o) => [o.metadata?.name, o.metadata?.resourceVersion, (o.status as { phase?: string } | undefined)?.phase]),
    [['east', String(a.change!.rv), 'Ready'], ['west', String(b.change!.rv), 'Ready']],
    'each object stored with its status and its own rv',
  );
  const mixed = await round([
    { name: 'east', fence: east, decide: (cur) => put({ ...cur!.object, status: { phase: 'Offline', message: 'a member said: nul \u0000, \ud83d\ude80, "quoted" \\ ' + 'x'.repeat(70_000) } }) },
    { name: 'west', fence: west, decide: (cur) => put({ ...cur!.object, metadata: { ...cur!.object.metadata, labels: { team: 'x' } } }) },
  ]);
  t.same(mixed.results.map((r) => r.change?.type), ['MODIFIED', 'MODIFIED'], 'a status write and a relabel in one round');
  t.same((await list(store, { labelSelector: [{ key: 'team', operator: 'in', values: ['x'] }] })).items.map((i) => i.name), ['west'], 'the relabel is written with its label rows');
  const east1 = JSON.parse((await list(store)).items.find((i) => i.name === 'east')!.object) as KubeObject;
  t.equal((east1.status as { message?: string }).message, 'a member said: nul \u0000, \ud83d\ude80, "quoted" \\ ' + 'x'.repeat(70_000), 'a status with NUL, astral characters, quotes and 70,000 more characters stored as given');
  const gone = await round([{ name: 'west', fence: west, decide: () => ({ action: 'delete' }) }]);
  t.ok(gone.alone, 'deleting: alone');
  t.equal(gone.results[0].change?.type, 'DELETED');
});

for (const backend of backends) {
  t.test(`${backend}: listClusterRegistrations reads again only the Cluster objects that changed`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    for (const name of ['east', 'west', 'north']) await store.writeClusterObjectWithoutLease(name, () => put(cluster(name, `u-${name}`, { server: `https://${name}` })));
    // Counts the statements of a read that read Cluster objects whole.
    let wholeReads = 0;
    store.conn.knex.on('query', (q: { sql: string }) => {
      if (/^select .*\bobject\b.* from .objects./i.test(q.sql)) wholeReads++;
    });
    const read = async () => {
      wholeReads = 0;
      const regs = await store.listClusterRegistrations();
      return { regs, wholeReads, names: regs.map((r) => `${r.name}:${(r.object.spec as { server: string }).server}`) };
    };
    t.match(await read(), { names: ['east:https://east', 'north:https://north', 'west:https://west'], wholeReads: 1 }, 'the first read has every object, read whole once');
    t.match(await read(), { names: ['east:https://east', 'north:https://north', 'west:https://west'], wholeReads: 0 }, 'nothing changed: no object read again');
    await store.writeClusterObjectWithoutLease('west', (cur) => put({ ...cur!.object, spec: { server: 'https://west-2' } }, { token: 'west-token' }));
    await store.writeClusterObjectWithoutLease('north', () => ({ action: 'delete' }));
    await store.writeClusterObjectWithoutLease('south', () => put(cluster('south', 'u-south', { server: 'https://south' })));
    const { regs, ...after } = await read();
    t.match(after, { names: ['east:https://east', 'south:https://south', 'west:https://west-2'], wholeReads: 1 }, 'a change, a deletion and a creation: the two that moved read in one statement');
    t.same(regs.find((r) => r.name === 'west')?.credentials, { token: 'west-token' }, 'credentials as stored now');
    t.ok(Object.isFrozen(regs[0].object) && Object.isFrozen(regs[0].object.metadata), 'shared between reads: frozen');
  });
}
