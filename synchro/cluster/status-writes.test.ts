// An idle cluster's probes write nothing: its status row and Cluster object are written when
// the status means something new (here: object counts, then the phase), and otherwise once per
// statusRefreshMs with the latest probe time. Without that, every probe of every cluster was a
// row write and a read of its Cluster object (a thousand clusters: a hundred of each per second).
import t from 'tap';
import { startSimCluster } from '../../hack/sim/cluster.ts';
import { openTestStore } from '../../storage/testing.ts';
import { startSynchro } from '../synchro.ts';
import { fastTimings, tempDir, waitUntil, writeClusters } from '../testutil.ts';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

t.test('probes that change nothing write nothing until the refresh; a change is written at once', async (t) => {
  const sim = await startSimCluster({ name: 'east' });
  const { store, close } = await openTestStore('sqlite');
  const { dir, cleanup } = tempDir();
  const file = `${dir}/clusters.yaml`;
  writeClusters(file, [{ name: 'east', server: sim.url, resources: ['configmaps'] }]);

  // Every status row written and every read of the Cluster object, by cluster name.
  const rowWrites: string[] = [];
  const objectReads: string[] = [];
  const setStatuses = store.setClusterStatuses.bind(store);
  store.setClusterStatuses = (writes) => (rowWrites.push(...writes.map((w) => w.name)), setStatuses(writes));
  const setStatus = store.setClusterStatus.bind(store);
  store.setClusterStatus = (name, status, fence) => (rowWrites.push(name), setStatus(name, status, fence));
  const getObject = store.getClusterObject.bind(store);
  store.getClusterObject = (name) => (objectReads.push(name), getObject(name));

  const refreshMs = 3000;
  const synchro = await startSynchro({ store, clustersFile: file, timings: { ...fastTimings, probeIntervalMs: 100, statusIntervalMs: 50, statusRefreshMs: refreshMs }, compaction: false });
  t.teardown(async () => {
    await synchro.stop();
    await close();
    await sim.close();
    cleanup();
  });
  type Status = { phase?: string; lastProbeTime?: string; initialSync?: { complete?: boolean; objects?: number } };
  const status = async () => (await store.getCluster('east'))?.status as Status | undefined;
  await waitUntil('east synced', async () => (await status())?.initialSync?.complete === true, 30_000);

  // Settled: the writes that follow the initial sync are over once half a second (five
  // probes) passes without one; a row written at every probe never gets there.
  let quietFrom = 0;
  const settled = await waitUntil('half a second without a write', async () => {
    const n = rowWrites.length;
    await sleep(500);
    if (rowWrites.length !== n) return false;
    quietFrom = rowWrites.length;
    return true;
  }, 20_000, 0).catch(() => false);
  t.ok(settled, `the writes after the initial sync end (${rowWrites.length} rows written)`);
  const readsFrom = objectReads.length;
  const before = (await status())?.lastProbeTime;
  await sleep(1000);
  t.equal(rowWrites.length - quietFrom, 0, 'ten probes that change nothing: no row written');
  t.equal(objectReads.length - readsFrom, 0, 'and no read of the Cluster object');

  const refreshed = await waitUntil('the refresh', async () => {
    const p = (await status())?.lastProbeTime;
    return p && p !== before ? p : undefined;
  }, 4 * refreshMs, 50).catch(() => undefined);
  t.ok(refreshed, `written again within the refresh period, with the latest probe time (${before} -> ${refreshed})`);

  const objects = (await status())?.initialSync?.objects ?? 0;
  sim.crud.create(sim.registry.byId('/configmaps')!, 'v1', 'default', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'one-more', namespace: 'default' } });
  const counted = await waitUntil('the new count', async () => ((await status())?.initialSync?.objects ?? 0) > objects, refreshMs / 2, 20).catch(() => false);
  t.ok(counted, 'a new object count is written at once, not at the refresh');

  await sim.close();
  const down = await waitUntil('east Unreachable', async () => (await status())?.phase === 'Unreachable', refreshMs / 2, 20).catch(() => false);
  t.ok(down, 'a new phase is written at once');
  const obj = await store.getClusterObject('east');
  t.match(obj?.object.status, { phase: 'Unreachable' }, 'and the Cluster object shows it');
});
