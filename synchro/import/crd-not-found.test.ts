// A ClusterSource that reads a kind the host cluster does not serve: Cluster API's Cluster
// for `clusterAPI.provisionedOnly`, Karmada's Cluster. It imports nothing, and its status says
// why: Ready False, reason CRDNotFound, naming the CustomResourceDefinition. Once the CRD is
// installed (and the Cluster API Cluster provisioned) the source imports and is Ready.
import t from 'tap';
import { stringify } from 'yaml';
import { startSimCluster } from '../../hack/sim/cluster.ts';
import { installImportCRDs } from '../../hack/sim/import-crds.ts';
import { http } from '../../hack/sim/testutil.ts';
import { waitUntil } from '../testutil.ts';
import { importSetting } from './testutil.ts';

const CS = '/apis/panoptes.io/v1alpha1/clustersources';
const b64 = (s: string) => Buffer.from(s).toString('base64');

t.test('provisionedOnly without the Cluster API CRD, karmada without its CRD: CRDNotFound, nothing imported; imported once the CRD is there', async (t) => {
  const member = await startSimCluster({ name: 'a' });
  member.auth.tokens = ['a-token'];
  const host = await startSimCluster({ name: 'host' }); // no Cluster API or Karmada CRD
  // A short relist, so that the CRD installed later is seen within the test.
  const { base } = await importSetting({ host, sims: [member], importResyncMs: 500 }, (stop) => t.teardown(stop));
  const hostCall = (method: string, path: string, body?: unknown) => http(method, host.url + path, body);
  const call = (method: string, path: string, body?: unknown) => http(method, base + path, body);
  t.equal((await hostCall('POST', '/api/v1/namespaces', { metadata: { name: 'capi' } })).status, 201);
  const kubeconfig = stringify({ apiVersion: 'v1', kind: 'Config', clusters: [{ name: 'a', cluster: { server: member.url } }], users: [{ name: 'a-admin', user: { token: 'a-token' } }], contexts: [{ name: 'a', context: { cluster: 'a', user: 'a-admin' } }], 'current-context': 'a' });
  t.equal((await hostCall('POST', '/api/v1/namespaces/capi/secrets', { metadata: { name: 'a-kubeconfig', labels: { 'cluster.x-k8s.io/cluster-name': 'a' } }, type: 'cluster.x-k8s.io/secret', data: { value: b64(kubeconfig) } })).status, 201);
  t.equal((await call('POST', CS, { metadata: { name: 'capi' }, spec: { type: 'clusterAPI', namespaces: ['capi'], naming: { prefix: 'capi-' }, defaults: { resources: ['configmaps'] }, clusterAPI: { provisionedOnly: true } } })).status, 201);
  t.equal((await call('POST', CS, { metadata: { name: 'karmada' }, spec: { type: 'karmada', namespaces: ['capi'] } })).status, 201);
  const ready = async (name: string) => (await call('GET', `${CS}/${name}`)).json.status?.conditions?.find((c: { type: string }) => c.type === 'Ready');

  const capi = await waitUntil('capi: CRDNotFound', async () => ((await ready('capi'))?.reason === 'CRDNotFound' ? (await call('GET', `${CS}/capi`)).json : undefined), 20_000);
  t.match(capi.status, {
    imported: 0,
    failed: 0,
    conditions: [{
      type: 'Ready',
      status: 'False',
      reason: 'CRDNotFound',
      message: 'CustomResourceDefinition clusters.cluster.x-k8s.io is not installed in the host cluster: spec.clusterAPI.provisionedOnly imports a Secret only once its Cluster API Cluster is provisioned, so it imports nothing (0 clusters imported)',
    }],
  });
  t.match(await waitUntil('karmada: CRDNotFound', async () => ((await ready('karmada'))?.reason === 'CRDNotFound' ? ready('karmada') : undefined), 20_000), {
    status: 'False',
    message: 'CustomResourceDefinition clusters.cluster.karmada.io is not installed in the host cluster: Karmada Clusters are the source objects, so it imports nothing (0 clusters imported)',
  });
  t.equal((await call('GET', '/apis/panoptes.io/v1alpha1/clusters/capi-a')).status, 404, 'nothing imported');

  installImportCRDs(host.crud);
  t.equal((await hostCall('POST', '/apis/cluster.x-k8s.io/v1beta1/namespaces/capi/clusters', { apiVersion: 'cluster.x-k8s.io/v1beta1', kind: 'Cluster', metadata: { name: 'a' }, spec: {}, status: { phase: 'Provisioned' } })).status, 201);
  await waitUntil('capi-a imported and Ready', async () => (await call('GET', '/apis/panoptes.io/v1alpha1/clusters/capi-a')).json.status?.ready === true, 30_000);
  t.match(await waitUntil('capi: Ready', async () => ((await ready('capi'))?.status === 'True' ? ready('capi') : undefined), 20_000), { reason: 'Imported', message: '1 cluster imported' });
  t.match(await waitUntil('karmada: Ready', async () => ((await ready('karmada'))?.status === 'True' ? ready('karmada') : undefined), 20_000), { reason: 'Imported', message: '0 clusters imported' });
});
