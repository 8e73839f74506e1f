import { writeProtocol } from './ordered-commits.ts';
import t, { type Test } from 'tap';
import { parseLabelSelector } from '../kube/labels.ts';
import { clusterLease, type Fence } from './leases.ts';
import type { Store } from './store.ts';
import { backends, heldOpen, openTestStore, podEvent, stopTestPostgres, takeLease } from './testing.ts';
import type { KubeObject, UpstreamEvent } from './types.ts';

t.teardown(stopTestPostgres);

for (const backend of backends) {
  t.test(backend, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);

    t.test('an empty store has watermark 1 and no changes', async (t) => {
      t.equal(await store.watermark(), 1);
      t.same(await store.changesAfter(1, 10), []);
    });

    t.test('writes objects and changes with rvs in batch order', async (t) => {
      const r = await store.applyBatch('east', [podEvent('ADDED', 'web', 'a', '100'), podEvent('ADDED', 'web', 'b', '101')]);
      t.same(r.changes.map((c) => [c.rv, c.type, c.name]), [[2, 'ADDED', 'a'], [3, 'ADDED', 'b']]);
      t.equal(r.watermark, 3);
      t.equal(await store.watermark(), 3);
      const a = await store.get({ cluster: 'east', group: '', resource: 'pods', namespace: 'web', name: 'a' });
      t.ok(a);
      t.equal(a!.rv, 2);
      t.equal(a!.upstreamRv, '100');
      const obj = JSON.parse(a!.object) as KubeObject;
      t.equal(obj.metadata?.resourceVersion, '2', 'served rv is the change rv');
      t.equal(obj.metadata?.annotations?.['panoptes.io/cluster'], 'east');
      t.equal(obj.metadata?.annotations?.['panoptes.io/upstream-resource-version'], '100');
      const changes = await store.changesAfter(1, 10);
      t.same(changes.map((c) => c.rv), [2, 3]);
      t.equal(changes[0].prevObject, null, 'ADDED has no previous object');
      t.equal(JSON.parse(changes[0].object).metadata.resourceVersion, '2');
    });

    t.test('replays of events not newer than stored write nothing', async (t) => {
      const before = await store.watermark();
      const r = await store.applyBatch('east', [podEvent('ADDED', 'web', 'a', '100'), podEvent('MODIFIED', 'web', 'b', '99')]);
      t.same(r.changes, []);
      t.equal(await store.watermark(), before);
      const r2 = await store.applyBatch('east', [podEvent('DELETED', 'web', 'a', '100')]);
      t.same(r2.changes, [], 'a delete at the stored upstream rv is a replay too');
    });

    t.test('a newer event is MODIFIED and keeps the previous object', async (t) => {
      const r = await store.applyBatch('east', [podEvent('MODIFIED', 'web', 'a', '105', { labels: { app: 'web' } })]);
      t.same(r.changes.map((c) => c.type), ['MODIFIED']);
      const [c] = await store.changesAfter(r.changes[0].rv - 1, 1);
      t.equal(JSON.parse(c.prevObject!).metadata.resourceVersion, '2', 'prev is the object as served before');
      t.same(JSON.parse(c.object).metadata.labels, { app: 'web' });
    });

    t.test('an ADDED for a stored object is served as MODIFIED', async (t) => {
      const r = await store.applyBatch('east', [podEvent('ADDED', 'web', 'b', '110')]);
      t.same(r.changes.map((c) => c.type), ['MODIFIED']);
    });

    t.test('several events for one object in a batch each become a change, in order', async (t) => {
      const r = await store.applyBatch('east', [
        podEvent('ADDED', 'web', 'c', '120'),
        podEvent('MODIFIED', 'web', 'c', '121', { labels: { v: '1' } }),
        podEvent('MODIFIED', 'web', 'c', '122', { labels: { v: '2' } }),
      ]);
      t.same(r.changes.map((c) => c.type), ['ADDED', 'MODIFIED', 'MODIFIED']);
      const changes = await store.changesAfter(r.changes[0].rv - 1, 10);
      t.equal(JSON.parse(changes[2].prevObject!).metadata.labels.v, '1', 'prev of the third is the second as served');
      const c = await store.get({ cluster: 'east', group: '', resource: 'pods', namespace: 'web', name: 'c' });
      t.equal(c!.rv, r.changes[2].rv);
      t.equal(c!.upstreamRv, '122');
    });

    t.test('a delete removes the object and logs its last state at the new rv', async (t) => {
      const r = await store.applyBatch('east', [podEvent('DELETED', 'web', 'c', '130')]);
      t.same(r.changes.map((c) => c.type), ['DELETED']);
      t.equal(await store.get({ cluster: 'east', group: '', resource: 'pods', namespace: 'web', name: 'c' }), undefined);
      const [c] = await store.changesAfter(r.changes[0].rv - 1, 1);
      t.equal(JSON.parse(c.object).metadata.resourceVersion, String(c.rv));
      t.equal(JSON.parse(c.prevObject!).metadata.labels.v, '2');
      const again = await store.applyBatch('east', [podEvent('DELETED', 'web', 'c', '131')]);
      t.same(again.changes, [], 'deleting what is not stored writes nothing');
    });

    t.test('a reconcile delete (no upstream rv) serves the last stored state', async (t) => {
      const ev = podEvent('DELETED', 'web', 'b', '');
      ev.object = { metadata: { namespace: 'web', name: 'b' } };
      const r = await store.applyBatch('east', [ev]);
      t.same(r.changes.map((c) => c.type), ['DELETED']);
      const [c] = await store.changesAfter(r.changes[0].rv - 1, 1);
      const obj = JSON.parse(c.object) as KubeObject;
      t.equal(obj.kind, 'Pod');
      t.equal(obj.metadata?.uid, 'uid-web-b');
      t.equal(obj.metadata?.resourceVersion, String(c.rv));
    });

    t.test('an object recreated under the same name is DELETED then ADDED', async (t) => {
      const r = await store.applyBatch('east', [podEvent('MODIFIED', 'web', 'a', '140', { uid: 'new-uid' })]);
      t.same(r.changes.map((c) => c.type), ['DELETED', 'ADDED']);
      const a = await store.get({ cluster: 'east', group: '', resource: 'pods', namespace: 'web', name: 'a' });
      t.equal(a!.uid, 'new-uid');
    });

    t.test('replaying a batch that re-created an object writes nothing', async (t) => {
      // What the batcher resends when a COMMIT succeeded but its reply was lost.
      const batch = [
        podEvent('ADDED', 'replay', 'p', '10', { uid: 'A' }),
        podEvent('MODIFIED', 'replay', 'p', '11', { uid: 'A', labels: { v: '1' } }),
        podEvent('DELETED', 'replay', 'p', '12', { uid: 'A' }),
        podEvent('ADDED', 'replay', 'p', '13', { uid: 'B' }),
      ];
      const first = await store.applyBatch('replay', batch);
      t.same(first.changes.map((c) => c.type), ['ADDED', 'MODIFIED', 'DELETED', 'ADDED']);
      const again = await store.applyBatch('replay', batch);
      t.same(again.changes, [], 'B stays, A does not come back');
      const p = await store.get({ cluster: 'replay', group: '', resource: 'pods', namespace: 'replay', name: 'p' });
      t.equal(p?.uid, 'B');
      t.equal(p?.upstreamRv, '13');
      const older = await store.applyBatch('replay', [podEvent('MODIFIED', 'replay', 'p', '12', { uid: 'A' })]);
      t.same(older.changes, [], 'an older event of another uid writes nothing');
    });

    t.test('an object relisted at another API version is served again at it', async (t) => {
      const widget = (version: string, rv: string): UpstreamEvent => ({
        type: 'ADDED',
        group: 'example.com',
        version,
        resource: 'widgets',
        object: { apiVersion: `example.com/${version}`, kind: 'Widget', metadata: { name: 'w', namespace: 'web', uid: 'w-uid', resourceVersion: rv } },
      });
      await store.applyBatch('east', [widget('v1beta1', '50')]);
      const r = await store.applyBatch('east', [widget('v1', '50')]);
      t.same(r.changes.map((c) => c.type), ['MODIFIED'], 'same uid and rv, new version: re-served');
      const w = await store.get({ cluster: 'east', group: 'example.com', resource: 'widgets', namespace: 'web', name: 'w' });
      t.equal(w?.version, 'v1');
      t.equal((JSON.parse(w!.object) as KubeObject).apiVersion, 'example.com/v1');
      const again = await store.applyBatch('east', [widget('v1', '50')]);
      t.same(again.changes, [], 'then a replay at that version writes nothing');
      const [c] = await store.changesAfter(r.changes[0].rv - 1, 1);
      t.equal((JSON.parse(c.object) as KubeObject).apiVersion, 'example.com/v1');
      t.equal(c.version, 'v1');
    });

    t.test('clusters are separate', async (t) => {
      const r = await store.applyBatch('west', [podEvent('ADDED', 'web', 'a', '5')]);
      t.same(r.changes.map((c) => [c.cluster, c.type]), [['west', 'ADDED']]);
      t.same((await store.storedKeys('west', '', 'pods')).map((k) => k.name), ['a']);
      t.same((await store.storedKeys('east', '', 'pods')).map((k) => [k.name, k.upstreamRv]), [['a', '140']]);
    });

    t.test('cluster registration and status', async (t) => {
      const fence = await takeLease(store, clusterLease('east'));
      await store.upsertCluster('east', { server: 'https://east' }, fence);
      await store.setClusterStatus('east', { phase: 'Ready' }, fence);
      await store.upsertCluster('east', { server: 'https://east:6443' }, fence);
      const c = await store.getCluster('east');
      t.same(c?.spec, { server: 'https://east:6443' });
      t.same(c?.status, { phase: 'Ready' }, 're-registering keeps the status');
      t.same((await store.listClusters()).map((x) => x.name), ['east']);
      await store.deleteClusterRow('east', fence);
      t.equal(await store.getCluster('east'), undefined);
    });

    t.test('object_counts equals the objects per cluster, resource and namespace after every kind of write', async (t) => {
      const k = store.conn.knex;
      const counted = async () =>
        ((await k('object_counts').where('n', '<>', 0).select('cluster', 'grp', 'resource', 'namespace', 'n')) as Array<Record<string, unknown>>).map((r) => `${r.cluster}/${r.grp}/${r.resource}/${r.namespace}=${Number(r.n)}`).sort();
      const actual = async () =>
        ((await k('objects').groupBy('cluster', 'grp', 'resource', 'namespace').select('cluster', 'grp', 'resource', 'namespace').count({ n: '*' })) as Array<Record<string, unknown>>).map((r) => `${r.cluster}/${r.grp}/${r.resource}/${r.namespace}=${Number(r.n)}`).sort();
      await store.applyBatch('counts', [podEvent('ADDED', 'x', 'a', '1'), podEvent('ADDED', 'x', 'b', '2'), podEvent('ADDED', 'y', 'c', '3')]);
      await store.applyBatch('counts', [podEvent('DELETED', 'x', 'a', '4'), podEvent('MODIFIED', 'x', 'b', '5', { uid: 'new' }), podEvent('ADDED', 'x', 'a', '6')]);
      await store.applyBatch('counts', [podEvent('DELETED', 'y', 'c', '7'), podEvent('ADDED', 'y', 'c', '3')]);
      t.same(await counted(), await actual());
    });

    t.test('label rows follow the labels of each object through every kind of write', async (t) => {
      const k = store.conn.knex;
      const rows = async () =>
        ((await k('object_labels').join('objects', 'objects.id', 'object_labels.obj_id').where('objects.cluster', 'labels').select('objects.name', 'object_labels.key', 'object_labels.value', 'object_labels.num')) as Array<Record<string, unknown>>)
          .map((r) => `${r.name} ${r.key}=${r.value}${r.num === null ? '' : ` #${Number(r.num)}`}`)
          .sort();
      await store.applyBatch('labels', [podEvent('ADDED', 'x', 'a', '1', { labels: { x: '1', y: '2' } }), podEvent('ADDED', 'x', 'b', '2', { labels: { x: '1' } })]);
      t.same(await rows(), ['a x=1 #1', 'a y=2 #2', 'b x=1 #1']);
      // One label kept, one changed, one added; all removed; a new object.
      await store.applyBatch('labels', [
        podEvent('MODIFIED', 'x', 'a', '3', { labels: { x: '1', y: 'three', z: '4' } }),
        podEvent('MODIFIED', 'x', 'b', '4', { labels: {} }),
        podEvent('ADDED', 'x', 'c', '5', { labels: { q: '1' } }),
      ]);
      t.same(await rows(), ['a x=1 #1', 'a y=three', 'a z=4 #4', 'c q=1 #1']);
      // Deleted with its labels; labels again; recreated (new uid) with others.
      await store.applyBatch('labels', [podEvent('DELETED', 'x', 'a', '6'), podEvent('MODIFIED', 'x', 'b', '7', { labels: { x: '2' } }), podEvent('MODIFIED', 'x', 'c', '8', { uid: 'c2', labels: { r: '5' } })]);
      t.same(await rows(), ['b x=2 #2', 'c r=5 #5']);
      const listed = await store.list({ group: '', resource: 'pods', clusters: ['labels'], labelSelector: parseLabelSelector('x in (2)') });
      t.same(listed.items.map((i) => i.name), ['b'], 'a label selector reads them');
    });

    t.test('an event without a name is refused and writes nothing', async (t) => {
      const before = await store.watermark();
      const ev = podEvent('ADDED', 'web', 'x', '1');
      delete ev.object.metadata!.name;
      await t.rejects(store.applyBatch('east', [podEvent('ADDED', 'web', 'ok', '1'), ev]));
      t.equal(await store.watermark(), before);
      t.equal(await store.get({ cluster: 'east', group: '', resource: 'pods', namespace: 'web', name: 'ok' }), undefined);
    });
  });
}

/** A PostgreSQL store, the lease of cluster east, and the SQL of every statement it sends from now on. */
async function recordingStore(t: Test): Promise<{ store: Store; fence: Fence; sql: string[] }> {
  const { store, close } = await openTestStore('postgres');
  t.teardown(close);
  const fence = await takeLease(store, clusterLease('east'));
  const sql: string[] = [];
  const record = (q: { sql: string }) => sql.push(q.sql);
  store.conn.knex.on('query', record);
  t.teardown(() => void store.conn.knex.off('query', record));
  return { store, fence, sql };
}

/** What a statement of the write path is, by its SQL. */
const kindOf = (q: string): string =>
  /panoptes_rv_exclusive|FOR UPDATE/.test(q)
    ? 'alone'
    : /FOR KEY SHARE/.test(q)
        ? 'fences'
        : /panoptes_rv_begin|panoptes_rv_allocate/.test(q)
        ? 'allocate'
        : /panoptes_rv_publish/.test(q)
          ? 'publish'
          : /^(with|insert|update|delete)/i.test(q)
            ? 'write'
            : /FROM objects|from "objects"|objects o/i.test(q)
              ? 'read'
              : /from "meta"/.test(q)
                ? 'watermark'
                : q.slice(0, 40);

t.test('postgres: a batch is three statements to its commit, however many tables it writes; four behind a writer in flight', async (t) => {
  const { store, fence, sql } = await recordingStore(t);
  // Which protocol the database writes with is read once per process, before the first write.
  t.equal(await writeProtocol(store.conn.knex), 'parallel', 'a database created now writes in parallel');
  const statements = async (events: UpstreamEvent[]) => {
    sql.length = 0;
    await store.applyBatches([{ cluster: 'east', events, fence }]);
    t.match(sql[0], /^BEGIN/);
    t.match(sql[sql.length - 1], /^COMMIT/);
    return sql.slice(1, -1).map(kindOf);
  };
  // What storage holds for the keys; the locks, the fences' check and the rvs; objects, labels,
  // counts, the change log, NOTIFY and, with no writer ahead of it, the watermark; its COMMIT.
  const alone = ['read', 'allocate', 'write'];
  t.same(await statements([podEvent('ADDED', 'web', 'a', '1', { labels: { app: 'a' } }), podEvent('ADDED', 'web', 'b', '2', { labels: { app: 'b' } })]), alone, 'creates');
  t.equal(await store.watermark(), 3, 'the write statement moved the watermark');
  t.same(await statements([podEvent('MODIFIED', 'web', 'a', '3', { labels: { app: 'x', tier: 'web' } }), podEvent('DELETED', 'web', 'b', '4')]), alone, 'a relabel and a delete');
  t.same(await statements([podEvent('MODIFIED', 'web', 'a', '3')]), ['read', 'allocate', 'watermark'], 'a replay: the read, the locks and fences without rvs, nothing written');
  // A group commit of several clusters and resources reads what they hold in one statement.
  const west = await takeLease(store, clusterLease('west'));
  sql.length = 0;
  const cm = { ...podEvent('ADDED', 'web', 'cfg', '5'), resource: 'configmaps' };
  await store.applyBatches([
    { cluster: 'east', events: [podEvent('MODIFIED', 'web', 'a', '6', { labels: { app: 'y' } }), cm], fence },
    { cluster: 'west', events: [podEvent('ADDED', 'web', 'a', '7'), cm], fence: west },
  ]);
  t.same(sql.slice(1, -1).map(kindOf), alone, 'two clusters, two resources: the same three');

  // Behind a writer in flight (west, held open before its commit), east's publish is a
  // statement of its own, sent with its COMMIT: it waits for west's, then moves the watermark.
  const before = await store.watermark();
  const { release, done } = await heldOpen((opts) => store.applyBatches([{ cluster: 'west', events: [podEvent('ADDED', 'web', 'w2', '8')], fence: west }], opts));
  sql.length = 0;
  const east = store.applyBatches([{ cluster: 'east', events: [podEvent('ADDED', 'web', 'e2', '9')], fence }]);
  for (let i = 0; i < 500 && !sql.some((q) => kindOf(q) === 'publish'); i++) await new Promise((r) => setTimeout(r, 10));
  release();
  await Promise.all([done, east]);
  t.same(sql.filter((q) => !/^(BEGIN|COMMIT)/.test(q)).map(kindOf), ['read', 'allocate', 'write', 'publish'], 'behind a writer: read, allocate, write, publish with its commit');
  const after = await store.changesAfter(before, 10);
  t.same(after.map((c) => [c.rv, c.name]), [[before + 1, 'w2'], [before + 2, 'e2']], 'both committed, in allocation order');
  t.equal(await store.watermark(), before + 2);
});

t.test('postgres: under leases a batch runs in parallel with others; unleased writes and retries run alone and read under the lock', async (t) => {
  const { store, fence, sql } = await recordingStore(t);
  await writeProtocol(store.conn.knex);
  const order = async (write: () => Promise<unknown>) => {
    sql.length = 0;
    await write();
    return sql.slice(1, 3).map(kindOf);
  };
  t.same(await order(() => store.applyBatches([{ cluster: 'east', events: [podEvent('ADDED', 'web', 'a', '1')], fence }])), ['read', 'allocate'], 'leased: the read, then the locks and rvs');
  t.same(await order(() => store.applyBatches([{ cluster: 'east', events: [podEvent('MODIFIED', 'web', 'a', '2')], fence }], { readUnderLock: true })), ['alone', 'fences'], 'a retry: alone, then its fences');
  t.same(await order(() => store.applyBatch('west', [podEvent('ADDED', 'web', 'a', '1')])), ['alone', 'read'], 'unleased: alone, then the read');
  const a = await store.get({ cluster: 'east', group: '', resource: 'pods', namespace: 'web', name: 'a' });
  t.equal(a?.upstreamRv, '2', 'each write decided against what the one before it wrote');
  // A lease taken over between the read and the lock: the fence refuses the whole round.
  const stale = { ...fence };
  await store.releaseLease(fence.lease, fence.holder, fence.epoch);
  await takeLease(store, clusterLease('east'), 'other');
  await t.rejects(store.applyBatches([{ cluster: 'east', events: [podEvent('MODIFIED', 'web', 'a', '3')], fence: stale }]), { name: 'FencedError' });
  t.equal((await store.get({ cluster: 'east', group: '', resource: 'pods', namespace: 'web', name: 'a' }))?.upstreamRv, '2', 'nothing written');
});
