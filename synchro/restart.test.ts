// End-to-end: `panoptes synchro` as its own process, killed (SIGKILL) mid-churn and
// restarted; then stopped and restarted without changes, which must write nothing.
import { get } from 'node:http';
import t from 'tap';
import { clusterObjectsCluster } from '../storage/cluster-objects.ts';
import { startSimCluster } from '../hack/sim/cluster.ts';
import { openTestStore } from '../storage/testing.ts';
import { spawnPanoptes, tempDir, waitForCopy, waitUntil, writeClusters, type PanoptesProcess } from './testutil.ts';

/** `panoptes synchro` with these flags, logging at info. */
const startProcess = (args: string[]): PanoptesProcess => spawnPanoptes('synchro', ['synchro', ...args, '--log-level', 'info']);

const fetchText = (url: string) =>
  new Promise<string>((resolve, reject) => {
    get(url, (res) => {
      let s = '';
      res.setEncoding('utf8').on('data', (d: string) => (s += d)).on('end', () => resolve(s));
    }).on('error', reject);
  });

t.test('synchro killed mid-churn and restarted keeps an exact copy; a clean restart rewrites nothing', async (t) => {
  const sim = await startSimCluster({ name: 'c', workload: true });
  const { store, url, close } = await openTestStore('sqlite');
  const { dir, cleanup } = tempDir();
  const file = `${dir}/clusters.yaml`;
  writeClusters(file, [{ name: 'c', server: sim.url, resources: ['*'] }]);
  const args = ['--storage', url, '--clusters', file, '--metrics-listen', '127.0.0.1:0', '--probe-interval', '200ms'];
  let proc: PanoptesProcess | undefined;
  t.teardown(async () => {
    sim.churn.stop();
    if (proc && proc.child.exitCode === null) {
      proc.child.kill('SIGKILL');
      await proc.exited;
    }
    await sim.close();
    await close();
    cleanup();
  });
  // '*' never includes secrets.
  const ids = () => sim.store.ids().filter((id) => id !== '/secrets').concat(['apiextensions.k8s.io/customresourcedefinitions']);
  const syncedSince = async (after: string): Promise<string | undefined> => {
    const st = (await store.getCluster('c'))?.status as { initialSync?: { complete: boolean; startedAt: string } } | undefined;
    return st?.initialSync?.complete && st.initialSync.startedAt > after ? st.initialSync.startedAt : undefined;
  };

  proc = startProcess(args);
  let started: string = await waitUntil('initial sync of the first process', async () => (await syncedSince('')) ?? '', 30_000);
  const metricsLine = await waitUntil('metrics url logged', () => proc!.log.find((l) => l.includes('metrics listening')) ?? '');
  const metricsUrl = JSON.parse(metricsLine).url as string;

  sim.churn.start({ ratePerSecond: 300, seed: 3, resources: ['configmaps', 'pods'] });
  await new Promise((r) => setTimeout(r, 800));
  const metrics = await fetchText(metricsUrl);
  t.match(metrics, /panoptes_synchro_events_applied_total\{cluster="c",resource="pods",type="(ADDED|MODIFIED)"\} \d+/, 'metrics served');
  t.match(metrics, /panoptes_synchro_event_lag_seconds_bucket/);
  proc.child.kill('SIGKILL');
  t.equal(await proc.exited, null, 'killed');
  await new Promise((r) => setTimeout(r, 500));
  proc = startProcess(args);
  started = await waitUntil('initial sync after the kill', async () => (await syncedSince(started)) ?? '', 30_000);
  await new Promise((r) => setTimeout(r, 500));
  sim.churn.stop();
  t.same(await waitForCopy(store, sim, 'c', ids()), [], 'exact copy after kill and restart mid-churn');

  const rv = await store.watermark();
  proc.child.kill('SIGTERM');
  t.equal(await proc.exited, 0, 'SIGTERM stops cleanly');
  proc = startProcess(args);
  await waitUntil('initial sync after a clean restart', async () => (await syncedSince(started)) ?? '', 30_000);
  const after = await store.changesAfter(rv, 10_000);
  t.same(after.filter((c) => c.cluster !== clusterObjectsCluster), [], 'a restart without upstream changes writes no change of any synced object');
  t.ok(after.every((c) => c.group === 'panoptes.io' && c.resource === 'clusters' && c.type === 'MODIFIED'), 'only the Cluster object\'s status (its new owner) is news');
  // The status row can be read before the process's stderr line reaches this one.
  const logged = await waitUntil('the progress line', () => proc!.log.some((l) => l.includes('initial sync complete')), 15_000).catch(() => false);
  t.ok(logged, 'progress is logged');
  t.same(await waitForCopy(store, sim, 'c', ids()), [], 'still an exact copy');
  proc.child.kill('SIGTERM');
  t.equal(await proc.exited, 0);
});
