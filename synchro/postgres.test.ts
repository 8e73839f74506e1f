// End-to-end on PostgreSQL: initial sync, churn, a 410 relist with deletes in between, and
// removal of the cluster, compared with the cluster's own list after each step.
import t from 'tap';
import { startSimCluster } from '../hack/sim/cluster.ts';
import { openTestStore, stopTestPostgres } from '../storage/testing.ts';
import { startSynchro, type SynchroHandle } from './synchro.ts';
import { fastTimings, tempDir, waitForCopy, waitUntil, writeClusters } from './testutil.ts';

t.test('synchro on PostgreSQL', async (t) => {
  const sim = await startSimCluster({ name: 'pg', workload: true });
  const { store, close } = await openTestStore('postgres');
  const { dir, cleanup } = tempDir();
  const file = `${dir}/clusters.yaml`;
  let synchro: SynchroHandle | undefined;
  t.teardown(async () => {
    await synchro?.stop();
    await sim.close();
    await close();
    await stopTestPostgres();
    cleanup();
  });
  const ids = ['/configmaps', '/pods', '/namespaces', 'apps/deployments'];
  writeClusters(file, [{ name: 'pg', server: sim.url, resources: ['configmaps', 'pods', 'namespaces', 'apps/deployments'] }]);
  synchro = await startSynchro({ store, clustersFile: file, timings: fastTimings, reloadIntervalMs: 50 });
  t.ok(await synchro.waitForInitialSync(20_000), 'initial sync');
  t.same(await waitForCopy(store, sim, 'pg', ids), [], 'copied');

  sim.churn.configure({ ratePerSecond: 0, seed: 5 });
  for (let i = 0; i < 4; i++) sim.churn.step(100);
  t.same(await waitForCopy(store, sim, 'pg', ids), [], 'copied after churn');

  await sim.faults.down({ mode: 'refuse' });
  sim.churn.step(150);
  sim.faults.expireHistory();
  await waitUntil('unreachable', async () => (await store.getCluster('pg'))?.status.phase === 'Unreachable');
  await sim.faults.up();
  t.same(await waitForCopy(store, sim, 'pg', ids), [], 'copied after 410 and relist');

  writeClusters(file, []);
  await waitUntil('removed', async () => !(await store.getCluster('pg')));
  t.same(await store.storedResources('pg'), [], 'no objects left after removal');
});
