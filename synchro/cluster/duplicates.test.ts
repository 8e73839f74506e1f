// One member cluster registered twice, in process on both backends, with two synchro members
// holding the two registrations: the member is identified by the uid of its kube-system
// namespace whatever URL reaches it, both registrations get the Duplicate condition, only the
// one first in sort order syncs (the other's objects get their DELETED), a fleet-wide list
// counts each object once; the first registration removed, the other syncs again. Another
// member is not affected; a member that forbids reading namespaces is identified by its URL.
import t from 'tap';
import { startSimCluster, type SimCluster } from '../../hack/sim/cluster.ts';
import type { KObject } from '../../hack/sim/types.ts';
import type { Store } from '../../storage/store.ts';
import { backends, openTestStore, stopTestPostgres } from '../../storage/testing.ts';
import { HttpError, type ClusterClient } from '../../member/client.ts';
import { identifyCluster, sameMember, serverIdentity } from './identity.ts';
import { assignment } from '../membership/rendezvous.ts';
import { startSynchro, type SynchroHandle } from '../synchro.ts';
import { fastTimings, tempDir, waitForCopy, waitUntil, writeClusters } from '../testutil.ts';

const CM = ['/configmaps'];
const MEMBERS = ['m1', 'm2'];
/** Every wait is for a condition; its bound only ends a failing run. */
const WAIT = 60_000;

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}
interface RowStatus {
  phase?: string;
  ready?: boolean;
  reason?: string;
  clusterID?: string;
  clusterIDSource?: string;
  warnings?: string[];
  conditions?: Condition[];
}

const statusOf = async (store: Store, name: string) => ((await store.getCluster(name))?.status ?? {}) as RowStatus;
/** The status of `name` once `ok` holds for it. */
const statusWhen = async (store: Store, name: string, what: string, ok: (s: RowStatus) => boolean): Promise<RowStatus> => {
  let last: RowStatus = {};
  await waitUntil(what, async () => ok((last = await statusOf(store, name))), WAIT);
  return last;
};
const duplicateOf = (s: RowStatus) => s.conditions?.find((c) => c.type === 'Duplicate');
const configMaps = (prefix: string, n: number): KObject[] =>
  Array.from({ length: n }, (_, i) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: 'default', name: `${prefix}-${i}` }, data: { i: String(i) } }) as KObject);
const kubeSystemUid = (sim: SimCluster) => sim.store.get('/namespaces', undefined, 'kube-system')?.metadata.uid;
const fleetConfigMaps = async (store: Store) => (await store.list({ group: '', resource: 'configmaps' })).items.length;

/** Two names, `first` sorting before `second`, that bounded-load rendezvous gives to different members beside west and locked. */
function namesOnTwoMembers(): { first: string; second: string } {
  for (let i = 0; i < 200; i++) {
    const first = `alpha-${i}`;
    const second = `beta-${i}`;
    const owners = assignment([first, second, 'west', 'locked'], MEMBERS);
    if (owners.get(first) !== owners.get(second)) return { first, second };
  }
  throw new Error('no pair found');
}

t.test('registrations of one member: the one registered first syncs it', async (t) => {
  const at = (clusterID: string, registeredAt: string) => ({ clusterID, registeredAt });
  const ids = new Map([
    ['b', at('U', '2026-01-01T00:00:00.000Z')],
    ['a', at('U', '2026-02-01T00:00:00.000Z')],
    ['c', at('V', '2025-01-01T00:00:00.000Z')],
    ['d', at('U', '2026-01-01T00:00:00.000Z')],
  ]);
  t.same(sameMember('d', 'U', ids), { others: ['a', 'b'], syncedBy: 'b' }, 'registered first; a tie goes to the first name');
  t.same(sameMember('a', 'U', ids), { others: ['b', 'd'], syncedBy: 'b' }, 'a newer registration whose name sorts first does not take over');
  t.same(sameMember('e', 'U', ids), { others: ['a', 'b', 'd'], syncedBy: 'b' }, 'a registration not recorded yet counts as the newest');
  t.same(sameMember('e', 'U', new Map([['z', at('U', '2026-03-01T00:00:00.000Z')]])), { others: ['z'], syncedBy: 'z' }, '... even against a later name');
  t.equal(sameMember('c', 'V', ids), undefined, 'a member registered once');
  t.equal(sameMember('e', 'W', ids), undefined, 'an id nobody else has');
  t.equal(serverIdentity('https://EAST.example:443/'), 'server:https://east.example', 'the URL as compared');
  t.equal(serverIdentity('https://10.0.0.1:6443', 'api.east'), 'server:https://10.0.0.1:6443#api.east', 'with the TLS server name');
});

t.test('only a refusal to read the namespace falls back to the server; other failures are tried again', async (t) => {
  const failing = (status: number) => ({ server: 'https://east.example:6443', get: () => Promise.reject(new HttpError(status, `HTTP ${status}`)) }) as unknown as ClusterClient;
  for (const status of [403, 404]) {
    const id = await identifyCluster(failing(status));
    t.match(id, { clusterID: 'server:https://east.example:6443', source: 'Server' }, `${status}: the server stands in`);
  }
  for (const status of [401, 429, 500, 503]) {
    await t.rejects(identifyCluster(failing(status)), HttpError, `${status}: not identified, tried again`);
  }
  const answering = { server: 'https://east.example:6443', get: () => Promise.resolve({ metadata: { uid: 'u-1' } }) } as unknown as ClusterClient;
  t.same(await identifyCluster(answering), { clusterID: 'u-1', source: 'KubeSystemNamespace' });
  for (const uid of ['x'.repeat(129), 'a b', 'a\nb', '']) {
    const odd = { server: 'https://east.example:6443', get: () => Promise.resolve({ metadata: { uid } }) } as unknown as ClusterClient;
    t.match(await identifyCluster(odd), { clusterID: 'server:https://east.example:6443', source: 'Server' }, `uid ${JSON.stringify(uid.slice(0, 10))}: not taken, the server stands in`);
  }
});

for (const backend of backends) {
  t.test(`${backend}: one member cluster registered twice is synced once`, async (t) => {
    const { store, close } = await openTestStore(backend);
    const { dir, cleanup } = tempDir();
    const east = await startSimCluster({ name: 'east' });
    const west = await startSimCluster({ name: 'west' });
    const locked = await startSimCluster({ name: 'locked' });
    const handles: SynchroHandle[] = [];
    t.teardown(async () => {
      for (const h of handles) await h.stop().catch(() => undefined);
      await Promise.all([east.close(), west.close(), locked.close()]);
      await close();
      cleanup();
    });
    east.store.bulkCreate('/configmaps', configMaps('e', 6));
    west.store.bulkCreate('/configmaps', configMaps('w', 4));
    locked.store.bulkCreate('/configmaps', configMaps('l', 2));
    // A reader that may list and watch configmaps and nothing else: GET namespaces/kube-system is 403.
    locked.auth.grant('narrow-reader-token', { name: 'narrow', rules: [{ verbs: ['get', 'list', 'watch'], resources: ['configmaps'] }] });
    const upstreamTotal = () => east.store.count('/configmaps') + west.store.count('/configmaps') + locked.store.count('/configmaps');

    const { first, second } = namesOnTwoMembers();
    const file = `${dir}/clusters.yaml`;
    const entry = (name: string, server: string, extra: Record<string, unknown> = {}) => ({ name, server, resources: ['configmaps'], ...extra });
    const others = [entry('west', west.url), entry('locked', locked.url, { token: 'narrow-reader-token' })];
    // The name that sorts later registered first, alone: it keeps syncing when a newer registration, whose name sorts first, reaches the same member.
    writeClusters(file, [entry(second, east.url), ...others]);
    for (const identity of MEMBERS) {
      handles.push(await startSynchro({ store, clustersFile: file, timings: fastTimings, reloadIntervalMs: 50, compaction: false, mcs: false, shards: { identity, leaseTtlMs: 2000, assignIntervalMs: 200 } }));
    }

    await t.test('each member identified; a single registration syncs', async (t) => {
      t.same(await waitForCopy(store, east, second, CM, WAIT), [], `${second} is copied`);
      t.same(await waitForCopy(store, west, 'west', CM, WAIT), [], 'west is copied');
      t.same(await waitForCopy(store, locked, 'locked', CM, WAIT), [], 'a member that forbids reading namespaces is synced');
      const s = await statusWhen(store, second, 'the id recorded', (st) => st.clusterID !== undefined);
      t.equal(s.clusterID, kubeSystemUid(east), 'the id is the uid of the kube-system namespace');
      t.equal(s.clusterIDSource, 'KubeSystemNamespace');
      t.notOk(duplicateOf(s), 'no Duplicate condition');
      t.not((await statusOf(store, 'west')).clusterID, s.clusterID, 'another member has another id');
      const l = await statusWhen(store, 'locked', 'the locked id recorded', (st) => st.clusterID !== undefined);
      t.equal(l.clusterID, `server:${locked.url}`, 'forbidden: the server URL stands in');
      t.equal(l.clusterIDSource, 'Server');
      t.ok(l.warnings?.some((w) => w.includes('namespaces/kube-system: HTTP 403 Forbidden') && w.includes('server URL')), 'its status says so');
      t.notOk(JSON.stringify(l).includes('narrow-reader-token'), 'no credential in the status');
      t.equal(await fleetConfigMaps(store), upstreamTotal(), 'the fleet list counts every object once');
    });

    await t.test('a newer registration of the member (another URL, another synchro member, a name that sorts first): the earlier one keeps syncing', async (t) => {
      const rvBefore = (await store.meta()).rv;
      // localhost instead of 127.0.0.1: the URLs differ, the member is one.
      writeClusters(file, [entry(first, east.url.replace('127.0.0.1', 'localhost')), entry(second, east.url), ...others]);
      const dup = await statusWhen(store, first, `${first} a duplicate`, (st) => st.phase === 'Duplicate');
      t.equal(dup.ready, false);
      t.equal(dup.reason, 'Duplicate');
      t.match(dup.conditions?.find((c) => c.type === 'Ready'), { status: 'False', reason: 'Duplicate' }, 'Ready False, reason Duplicate');
      t.match(duplicateOf(dup), { status: 'True', reason: 'SameClusterAs', message: new RegExp(`registered as ${second}: it is synced as ${second}`) });
      t.same(await waitForCopy(store, east, second, CM, WAIT), [], `${second} is copied`);
      const syncedStatus = await statusWhen(store, second, `${second} shows the condition`, (st) => duplicateOf(st) !== undefined);
      t.match(syncedStatus, { phase: 'Ready', ready: true, clusterID: kubeSystemUid(east) });
      t.match(duplicateOf(syncedStatus), { status: 'True', reason: 'SameClusterAs', message: new RegExp(`also registered as ${first}: it is synced under this name only`) });
      await waitUntil(`${first}'s objects removed`, async () => (await store.list({ group: '', resource: 'configmaps', clusters: [first] })).items.length === 0, WAIT);
      // Identified before its first list, the newer registration stores nothing (or, had it listed first, deletes what it stored).
      const changes = (await store.changesAfter(rvBefore, 10_000)).filter((c) => c.cluster === first);
      t.equal(changes.filter((c) => c.type === 'DELETED').length, changes.filter((c) => c.type === 'ADDED').length, `${first}: a DELETED change for each object it stored`);
      t.equal(await fleetConfigMaps(store), upstreamTotal(), 'the fleet list counts every object once');
      t.notOk(duplicateOf(await statusOf(store, 'west')), 'another member: no condition');
      t.same(await waitForCopy(store, west, 'west', CM, WAIT), [], 'another member keeps syncing');
      // The Cluster objects say the same (what kubectl get clusters shows).
      const objectStatus = async (name: string) => ((await store.getClusterObject(name))?.object.status ?? {}) as RowStatus;
      await waitUntil('the Cluster objects', async () => (await objectStatus(first)).phase === 'Duplicate' && duplicateOf(await objectStatus(second)) !== undefined, WAIT);
      t.match(duplicateOf(await objectStatus(first)), { reason: 'SameClusterAs' }, 'the Cluster object of the duplicate');
      t.match(await objectStatus(second), { phase: 'Ready' }, 'the Cluster object of the synced one');
      const holders = new Set([second, first].map((n) => handles.find((h) => h.clusters()[n])?.identity));
      t.equal(holders.size, 2, 'the two registrations are held by different synchro members');
      const metric = async (name: string) => {
        for (const h of handles) {
          const v = (await h.metrics.duplicateClusters.get()).values.find((x) => x.labels.cluster === name);
          if (v) return v.value;
        }
        return undefined;
      };
      t.equal(await metric(second), 1, 'panoptes_synchro_duplicate_clusters for the synced one');
      t.equal(await metric(first), 1, '... and for the duplicate');
      // Upstream changes reach storage once.
      east.store.bulkCreate('/configmaps', configMaps('later', 2));
      t.same(await waitForCopy(store, east, second, CM, WAIT), [], 'changes synced under the earlier registration');
      t.equal((await store.list({ group: '', resource: 'configmaps', clusters: [first] })).items.length, 0, 'and not under the newer one');
    });

    await t.test('the earlier registration removed: the newer one syncs again', async (t) => {
      writeClusters(file, [entry(first, east.url.replace('127.0.0.1', 'localhost')), ...others]);
      t.same(await waitForCopy(store, east, first, CM, WAIT), [], `${first} is copied again`);
      const s = await statusWhen(store, first, `${first} Ready without the condition`, (st) => st.phase === 'Ready' && !duplicateOf(st));
      t.equal(s.clusterID, kubeSystemUid(east));
      await waitUntil(`${second} removed`, async () => (await store.getCluster(second)) === undefined, WAIT);
      t.equal(await fleetConfigMaps(store), upstreamTotal(), 'the fleet list counts every object once');
    });
  });
}

t.teardown(stopTestPostgres);
