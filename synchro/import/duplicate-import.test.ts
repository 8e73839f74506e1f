// Importing a member that is already registered (here in clusters.yaml): the imported Cluster
// is a second registration of one member (the same kube-system uid), so it is Duplicate and
// the older registration keeps syncing it; the fleet's objects are counted once. Removing the
// older registration lets the imported one sync.
import t from 'tap';
import { stringify } from 'yaml';
import { startSimCluster } from '../../hack/sim/cluster.ts';
import { http } from '../../hack/sim/testutil.ts';
import { waitUntil } from '../testutil.ts';
import { importSetting } from './testutil.ts';

const C = '/apis/panoptes.io/v1alpha1/clusters';
const b64 = (s: string) => Buffer.from(s).toString('base64');

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}

t.test('a member imported while already registered: the import is Duplicate, the older registration syncs', async (t) => {
  const east = await startSimCluster({ name: 'east' });
  east.auth.tokens = ['east-token'];
  const host = await startSimCluster({ name: 'host' });
  const { store, base, setClusters } = await importSetting({ host, sims: [east], clusters: [{ name: 'east', server: east.url, token: 'east-token', resources: ['configmaps'] }] }, (stop) => t.teardown(stop));
  const cluster = async (name: string) => (await http('GET', `${base}${C}/${name}`)).json;
  const condition = (o: { status?: { conditions?: Condition[] } }, type: string) => o.status?.conditions?.find((c) => c.type === type);
  const configMaps = async (name: string) => (await store.list({ group: '', resource: 'configmaps', clusters: [name] })).items.length;
  east.crud.create(east.registry.lookup('', 'v1', 'configmaps')!, 'v1', 'default', { metadata: { name: 'hello' }, data: {} });
  const upstream = east.store.list('/configmaps').items.length;
  await waitUntil('east (clusters.yaml) Ready with its objects', async () => (await cluster('east')).status?.ready === true && (await configMaps('east')) === upstream, 30_000);

  t.equal((await http('POST', `${host.url}/api/v1/namespaces`, { metadata: { name: 'fleet' } })).status, 201);
  const kubeconfig = stringify({ apiVersion: 'v1', kind: 'Config', clusters: [{ name: 'east', cluster: { server: east.url } }], users: [{ name: 'u', user: { token: 'east-token' } }], contexts: [{ name: 'east', context: { cluster: 'east', user: 'u' } }], 'current-context': 'east' });
  t.equal((await http('POST', `${host.url}/api/v1/namespaces/fleet/secrets`, { metadata: { name: 'east' }, data: { kubeconfig: b64(kubeconfig) } })).status, 201);
  t.equal((await http('POST', `${base}/apis/panoptes.io/v1alpha1/clustersources`, { metadata: { name: 'fleet' }, spec: { type: 'kubeconfigSecrets', namespaces: ['fleet'], naming: { prefix: 'fleet-' }, defaults: { resources: ['configmaps'] } } })).status, 201);

  const dup = await waitUntil('fleet-east Duplicate', async () => {
    const o = await cluster('fleet-east');
    return o.status?.phase === 'Duplicate' ? o : undefined;
  }, 30_000);
  t.match(dup.spec, { source: 'clustersource/fleet' }, 'imported');
  t.equal(dup.status.ready, false);
  t.match(condition(dup, 'Ready'), { status: 'False', reason: 'Duplicate' });
  t.match(condition(dup, 'Duplicate'), { status: 'True', reason: 'SameClusterAs', message: /registered as east: it is synced as east/ });
  const older = await waitUntil('east says it is also registered as fleet-east', async () => {
    const o = await cluster('east');
    return condition(o, 'Duplicate') ? o : undefined;
  }, 20_000);
  t.match(older.status, { phase: 'Ready', ready: true }, 'the older registration keeps syncing');
  t.match(condition(older, 'Duplicate'), { reason: 'SameClusterAs', message: /also registered as fleet-east: it is synced under this name only/ });
  t.equal(await configMaps('fleet-east'), 0, 'nothing stored under the import');
  t.equal(await configMaps('east'), upstream, 'the objects once, under the older name');
  t.match((await http('GET', `${base}/apis/panoptes.io/v1alpha1/clustersources/fleet`)).json.status, { imported: 1, failed: 0 }, 'the ClusterSource counts it imported: the Cluster exists');

  setClusters([]);
  await waitUntil('the imported registration syncs once the older one is gone', async () => (await cluster('fleet-east')).status?.ready === true && (await configMaps('fleet-east')) === upstream, 30_000);
});
