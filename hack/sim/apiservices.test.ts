// The APIServices of a simulated cluster, as kube-apiserver's aggregator keeps them: Local ones
// for its own group versions and CRDs', with a Service for aggregated APIs (whose resources
// the simulator serves), followed as CRDs come, change and go.
import t from 'tap';
import { panoptesApis } from './apiservices.ts';
import { widgetCRD } from './workload.ts';
import { get, http, simCluster } from './testutil.ts';

const path = '/apis/apiregistration.k8s.io/v1/apiservices';

t.test('one APIService per group version: Local, or naming the Service of an aggregated API', async (t) => {
  const c = await simCluster(t, { aggregatedApis: panoptesApis });
  const list = await get(`${c.url}${path}`);
  t.equal(list.status, 200, list.text);
  const byName = new Map<string, { metadata: { labels?: Record<string, string> }; spec: Record<string, unknown>; status: { conditions: unknown[] } }>(list.json.items.map((o: { metadata: { name: string } }) => [o.metadata.name, o]));
  t.match(byName.get('v1.'), { metadata: { labels: { 'kube-aggregator.kubernetes.io/automanaged': 'onstart' } }, spec: { version: 'v1', groupPriorityMinimum: 18000, versionPriority: 1 }, status: { conditions: [{ type: 'Available', status: 'True', reason: 'Local', message: 'Local APIServices are always available' }] } });
  t.notOk('group' in byName.get('v1.')!.spec, 'the core group has none');
  t.equal(byName.get('v1.apps')?.spec.service, undefined, 'built-in: Local');
  t.match(byName.get('v1beta1.metrics.k8s.io'), { spec: { group: 'metrics.k8s.io', service: { namespace: 'kube-system', name: 'metrics-server', port: 443 } }, status: { conditions: [{ reason: 'Passed' }] } }, "metrics-server's");
  t.match(byName.get('v1alpha1.panoptes.io'), { spec: { group: 'panoptes.io', service: { namespace: 'panoptes', name: 'panoptes-apiserver' } } });
  t.notOk(byName.get('v1alpha1.panoptes.io')?.metadata.labels, 'not automanaged');
  // The aggregated API's resources are served, RBAC applying as for any other.
  const made = await http('POST', `${c.url}/apis/panoptes.io/v1alpha1/clusters`, { apiVersion: 'panoptes.io/v1alpha1', kind: 'Cluster', metadata: { name: 'east' }, spec: {} });
  t.equal(made.status, 201, made.text);
  t.same((await get(`${c.url}/apis/panoptes.io/v1alpha1/clusters`)).json.items.map((o: { metadata: { name: string } }) => o.metadata.name), ['east']);
  c.auth.grant('nobody', { name: 'nobody', rules: [] });
  t.equal((await get(`${c.url}/apis/panoptes.io/v1alpha1/clusters`, { Authorization: 'Bearer nobody' })).json.message, 'clusters.panoptes.io is forbidden: User "nobody" cannot list resource "clusters" in API group "panoptes.io" at the cluster scope');
});

t.test("a CRD's group version gets a Local APIService while it has a CRD", async (t) => {
  const c = await simCluster(t);
  const crds = `${c.url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions`;
  t.equal((await get(`${c.url}${path}/v1.demo.panoptes.io`)).status, 404);
  t.equal((await http('POST', crds, widgetCRD)).status, 201);
  const made = await get(`${c.url}${path}/v1.demo.panoptes.io`);
  t.match(made.json, { metadata: { labels: { 'kube-aggregator.kubernetes.io/automanaged': 'true' } }, spec: { group: 'demo.panoptes.io', version: 'v1', groupPriorityMinimum: 1000, versionPriority: 100 } });
  t.equal(made.json.spec.service, undefined);
  const patched = await http('PATCH', `${crds}/${widgetCRD.metadata.name}`, { metadata: { labels: { x: 'y' } } }, { 'Content-Type': 'application/merge-patch+json' });
  t.equal(patched.status, 200, patched.text);
  t.equal((await get(`${c.url}${path}/v1.demo.panoptes.io`)).json.metadata.resourceVersion, made.json.metadata.resourceVersion, 'a CRD update leaves it alone');
  t.equal((await http('DELETE', `${crds}/${widgetCRD.metadata.name}`)).status, 200);
  t.equal((await get(`${c.url}${path}/v1.demo.panoptes.io`)).status, 404, 'gone with the CRD');
});
