// @kubernetes/client-node 1.4 informers keep a correct cache through churn, dropped watches
// (clean and abrupt) and an expired history (410 -> relist).
import * as k8s from '@kubernetes/client-node';
import t from 'tap';
import type { SimCluster } from './cluster.ts';
import { simCluster, until } from './testutil.ts';

function cacheState(objs: readonly k8s.KubernetesObject[]): string[] {
  return objs.map((o) => `${o.metadata!.namespace}/${o.metadata!.name}@${o.metadata!.resourceVersion}`).sort();
}

function storeState(c: SimCluster, id: string): string[] {
  return c.store.list(id).items.map((o) => `${o.metadata.namespace}/${o.metadata.name}@${o.metadata.resourceVersion}`).sort();
}

t.test('makeInformer through churn, dropped watches and an expired history', async (t) => {
  const c = await simCluster(t, { historySize: 200 });
  const kc = new k8s.KubeConfig();
  kc.loadFromClusterAndUser({ name: 'sim', server: c.url, skipTLSVerify: true }, { name: 'sim' });
  const api = kc.makeApiClient(k8s.CoreV1Api);
  let lists = 0;
  let errors = 0;
  const informer = k8s.makeInformer(kc, '/api/v1/configmaps', () => {
    lists++;
    return api.listConfigMapForAllNamespaces();
  });
  let stopped = false;
  informer.on('error', () => {
    errors++;
    // As client-node documents: restart after an error.
    if (!stopped) setTimeout(() => void (stopped ? undefined : informer.start().catch(() => undefined)), 50);
  });
  const stop = async () => {
    stopped = true;
    await informer.stop();
  };
  t.teardown(stop);
  await informer.start();
  const converged = (what: string) => until(() => JSON.stringify(cacheState(informer.list())) === JSON.stringify(storeState(c, '/configmaps')), 10_000).then((ok) => {
    t.ok(ok, `cache equals the cluster ${what}`);
    if (!ok) t.same(cacheState(informer.list()), storeState(c, '/configmaps'));
  });

  c.churn.start({ ratePerSecond: 300, seed: 7, resources: ['configmaps'], maxObjects: 60 });
  await until(() => c.churn.status().creates + c.churn.status().updates + c.churn.status().deletes > 300, 5000);
  c.churn.stop();
  const s = c.churn.status();
  t.ok(s.creates > 0 && s.updates > 0 && s.deletes > 0, 'creates, updates and deletes happened');
  await converged('after churn');
  t.equal(lists, 1, 'one list, then watch only');

  // Clean drop: the informer re-watches from its last rv and misses nothing.
  t.equal(c.faults.dropWatches(), 1);
  c.churn.step(40);
  await until(() => c.hub.count === 1, 5000);
  c.churn.step(40);
  await converged('after a dropped watch');
  t.equal(lists, 1, 'resumed without relisting');

  // Abrupt drop (connection reset): error, restart, same result.
  c.faults.dropWatches({ abrupt: true });
  c.churn.step(40);
  await until(() => c.hub.count === 1, 5000);
  c.churn.step(20);
  await converged('after a reset connection');

  // Expired history: the resume gets 410, the informer relists and reconciles deletions.
  const listsBefore = lists;
  c.faults.dropWatches();
  c.churn.step(80);
  c.faults.expireHistory();
  await until(() => lists > listsBefore && c.hub.count === 1, 5000);
  t.ok(lists > listsBefore, 'relisted after 410 Expired');
  await converged('after an expired history');
  t.ok(errors >= 1, 'the reset connection surfaced as an error');
  await stop();
});
