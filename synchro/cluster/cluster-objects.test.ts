// synchro's writes of Cluster objects (SQLite): a status change becomes a MODIFIED change
// only when it means something (probe times never; object counts at most every interval);
// file clusters' objects are created and follow the file; a removal deletes a file object
// and releases an API object's finalizer; a writer without the lease writes nothing.
import t from 'tap';
import { clusterLease, FencedError, type Fence } from '../../storage/leases.ts';
import { openTestStore } from '../../storage/testing.ts';
import { logger } from '../../lib/log.ts';
import { ClusterObjectWriter, finishRemoval, statusDigest } from './cluster-objects.ts';
import '../testutil.ts';

const status = (over: Record<string, unknown> = {}) => ({
  phase: 'Ready',
  ready: true,
  reason: 'ProbeSucceeded',
  message: 'GET /readyz answered ok',
  lastTransitionTime: '2026-01-01T00:00:00.000Z',
  lastProbeTime: new Date().toISOString(),
  conditions: [{ type: 'Ready', status: 'True', reason: 'ProbeSucceeded', message: 'ok', lastTransitionTime: '2026-01-01T00:00:00.000Z' }],
  initialSync: { resourcesSynced: 2, resourcesTotal: 2, objects: 10, complete: true, startedAt: '2026-01-01T00:00:00.000Z' },
  resources: [{ group: '', version: 'v1', resource: 'pods', state: 'synced', objects: 10, lastEventTime: new Date().toISOString() }],
  owner: { member: 's1', epoch: 1, acquiredAt: '2026-01-01T00:00:00.000Z' },
  ...over,
});

t.test('statusDigest: times are not news, counts are apart', async (t) => {
  const a = statusDigest(status());
  const later = statusDigest(status({ lastProbeTime: '2030-01-01T00:00:00Z' }));
  t.same(later, a, 'a probe time alone');
  const counted = statusDigest(status({ initialSync: { resourcesSynced: 2, resourcesTotal: 2, objects: 11, complete: true, startedAt: '2026-01-01T00:00:00.000Z' } }));
  t.equal(counted.major, a.major);
  t.not(counted.counts, a.counts);
  t.not(statusDigest(status({ phase: 'Unreachable', ready: false })).major, a.major);
  t.not(statusDigest(status({ owner: { member: 's2', epoch: 2, acquiredAt: 'x' } })).major, a.major);
});

t.test('status writes: rate-limited by meaning', async (t) => {
  const { store, close } = await openTestStore('sqlite');
  t.teardown(close);
  const L = clusterLease('east');
  const fence: Fence = { lease: L, holder: 's1', epoch: (await store.acquireLease(L, 's1', 60_000))! };
  const writer = new ClusterObjectWriter({ store, name: 'east', log: logger('test'), countsIntervalMs: 3_600_000 });
  const fileSpec = { source: 'file', server: 'https://east', resources: ['pods'] };

  t.ok(await writer.write(status(), { source: 'file', fileSpec }, fence), 'a file cluster: its object is created');
  const created = await store.getClusterObject('east');
  t.match(created?.object, { metadata: { name: 'east', generation: 1 }, spec: fileSpec, status: { phase: 'Ready', observedGeneration: 1, credentials: { source: 'File' } } });
  t.notOk(await writer.write(status({ lastProbeTime: '2030-01-01T00:00:00Z' }), { source: 'file', fileSpec }, fence), 'probe time only: nothing');
  t.ok(await writer.write(status({ initialSync: { resourcesSynced: 2, resourcesTotal: 2, objects: 99, complete: true, startedAt: 'x' } }), { source: 'file', fileSpec }, fence), 'counts: the first change goes at once');
  t.notOk(await writer.write(status({ initialSync: { resourcesSynced: 2, resourcesTotal: 2, objects: 100, complete: true, startedAt: 'x' } }), { source: 'file', fileSpec }, fence), 'then not before the interval');
  t.ok(await writer.write(status({ phase: 'Unreachable', ready: false }), { source: 'file', fileSpec }, fence), 'a phase change: at once');
  t.ok(await writer.write(status({ phase: 'Unreachable', ready: false }), { source: 'file', fileSpec: { ...fileSpec, resources: ['pods', 'nodes'] } }, fence), 'the file entry changed');
  t.match((await store.getClusterObject('east'))?.object, { metadata: { generation: 2 }, spec: { resources: ['pods', 'nodes'] }, status: { observedGeneration: 2 } });
  const changes = (await store.changesAfter(1, 100)).filter((c) => c.name === 'east');
  t.same(changes.map((c) => c.type), ['ADDED', 'MODIFIED', 'MODIFIED', 'MODIFIED']);
  t.ok(changes.every((c) => c.epoch === fence.epoch), 'written under the lease');

  const stale: Fence = { ...fence };
  await store.acquireLease(L, 's2', 60_000, ['s1']);
  const before = await store.watermark();
  await t.rejects(writer.write(status({ phase: 'Pending' }), { source: 'file', fileSpec }, stale), FencedError, 'a writer that lost its lease is refused');
  t.equal(await store.watermark(), before, 'and writes nothing');
});

t.test('API objects: conflict condition, removal releases the finalizer', async (t) => {
  const { store, close } = await openTestStore('sqlite');
  t.teardown(close);
  const L = clusterLease('dup');
  const fence: Fence = { lease: L, holder: 's1', epoch: (await store.acquireLease(L, 's1', 60_000))! };
  await store.writeClusterObjectWithoutLease('dup', () => ({
    action: 'put',
    object: { apiVersion: 'panoptes.io/v1alpha1', kind: 'Cluster', metadata: { name: 'dup', uid: 'u1', generation: 3, finalizers: ['panoptes.io/synchro', 'other.io/keep'] }, spec: { source: 'api', server: 'https://api' } },
  }));
  const writer = new ClusterObjectWriter({ store, name: 'dup', log: logger('test') });
  await writer.write(status(), { source: 'file', fileSpec: { source: 'file', server: 'https://file' } }, fence);
  const conflicted = (await store.getClusterObject('dup'))!.object;
  t.match(conflicted, { spec: { source: 'api', server: 'https://api' }, status: { conditions: [{ type: 'Ready' }, { type: 'Accepted', status: 'False', reason: 'DefinedInClustersFile' }] } }, 'the API object says the file wins; its spec is untouched');
  await writer.write(status(), { source: 'api', generation: 3, credentials: { source: 'Inline', kinds: ['token'] } }, fence);
  t.match((await store.getClusterObject('dup'))!.object, { status: { observedGeneration: 3, credentials: { source: 'Inline', kinds: ['token'] }, conditions: [{ type: 'Ready' }, { type: 'Accepted', status: 'True' }] } });

  t.equal(await finishRemoval(store, 'dup', fence), 'kept', 'an API object not being deleted stays');
  await store.writeClusterObjectWithoutLease('dup', (cur) => ({ action: 'put', object: { ...cur!.object, metadata: { ...cur!.object.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } } }));
  t.equal(await finishRemoval(store, 'dup', fence), 'released', 'another finalizer holds it');
  t.same((await store.getClusterObject('dup'))!.object.metadata?.finalizers, ['other.io/keep']);
  const rv = await store.watermark();
  t.equal(await finishRemoval(store, 'dup', fence), 'kept', 'once released, nothing more to do');
  t.equal(await store.watermark(), rv, 'and nothing written');
  await store.writeClusterObjectWithoutLease('dup', (cur) => ({ action: 'put', object: { ...cur!.object, metadata: { ...cur!.object.metadata, finalizers: ['panoptes.io/synchro'] } } }));
  t.equal(await finishRemoval(store, 'dup', fence), 'deleted');
  t.equal(await store.getClusterObject('dup'), undefined);
  t.equal((await store.changesAfter(1, 100)).pop()?.type, 'DELETED');
});
