// Discovery of a one-cluster view lists what the proxy serves there, in kube-apiserver's
// shapes (apiserver/reference/builtin-verbs.json, from kube-apiserver v1.28); the all-clusters
// view stays read-only, with metrics.k8s.io gathered from the members.
import t from 'tap';
import { http } from '../../hack/sim/testutil.ts';
import { setLogLevel } from '../../lib/log.ts';
import { openTestStore, seedCluster } from '../../storage/testing.ts';
import { createApiserver } from '../server.ts';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');

const P = '/apis/panoptes.io/v1alpha1/resources';
const AGG = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json';

t.test('one-cluster discovery: verbs, subresources, metrics.k8s.io and access reviews', async (t) => {
  const { store, close } = await openTestStore('sqlite');
  await seedCluster(store, 'east', {
    phase: 'Ready',
    ready: true,
    apiResources: [
      { group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, singularName: 'pod' },
      { group: 'apps', version: 'v1', resource: 'deployments', kind: 'Deployment', namespaced: true, singularName: 'deployment' },
      { group: 'demo.panoptes.io', version: 'v1', resource: 'widgets', kind: 'Widget', namespaced: true, singularName: 'widget' },
    ],
  });
  const api = await createApiserver({ store, catalogOptions: { refreshMs: 100 } });
  const base = await api.listen('127.0.0.1', 0);
  t.teardown(async () => {
    await api.close();
    await close();
  });
  const get = async (path: string, accept?: string) => (await http('GET', base + path, undefined, accept ? { Accept: accept } : {})).json;

  const apps = await get(`${P}/clusters/east/apis/apps/v1`);
  t.same(apps.resources.find((r: { name: string }) => r.name === 'deployments/scale'), { name: 'deployments/scale', singularName: '', namespaced: true, group: 'autoscaling', version: 'v1', kind: 'Scale', verbs: ['get', 'patch', 'update'] }, 'as kube-apiserver lists it');
  t.same(apps.resources.find((r: { name: string }) => r.name === 'deployments').verbs, ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch']);
  const core = await get(`${P}/clusters/east/api/v1`);
  for (const sub of ['pods/log', 'pods/exec', 'pods/attach', 'pods/portforward', 'pods/eviction', 'pods/status']) t.ok(core.resources.some((r: { name: string }) => r.name === sub), sub);
  t.same((await get(`${P}/clusters/east/apis/demo.panoptes.io/v1`)).resources[0].verbs, ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'], 'a custom resource: every verb');
  t.same((await get(`${P}/clusters/east/apis/metrics.k8s.io/v1beta1`)).resources.map((r: { name: string }) => r.name), ['nodes', 'pods']);
  t.same((await get(`${P}/clusters/east/apis/authorization.k8s.io/v1`)).resources.map((r: { name: string; verbs: string[] }) => [r.name, r.verbs]), [['selfsubjectaccessreviews', ['create']], ['selfsubjectrulesreviews', ['create']]]);
  const groups = (await get(`${P}/clusters/east/apis`)).groups.map((g: { name: string }) => g.name);
  t.ok(groups.includes('metrics.k8s.io') && groups.includes('authorization.k8s.io'));
  const agg = await get(`${P}/clusters/east/apis`, AGG);
  const deploy = agg.items.find((i: { metadata: { name: string } }) => i.metadata.name === 'apps').versions[0].resources.find((r: { resource: string }) => r.resource === 'deployments');
  t.same(deploy.subresources[0], { subresource: 'scale', responseKind: { group: 'autoscaling', version: 'v1', kind: 'Scale' }, verbs: ['get', 'patch', 'update'] });
  const clusters = (await get(`${P}/clusters/east/apis/panoptes.io/v1alpha1`)).resources.find((r: { name: string }) => r.name === 'clusters');
  const ownEverywhere = (await get(`${P}/apis/panoptes.io/v1alpha1`)).resources.find((r: { name: string }) => r.name === 'clusters');
  t.same(clusters, ownEverywhere, "Panoptes' own kinds are listed as in every view");

  const all = await get(`${P}/apis/apps/v1`);
  t.same(all.resources.map((r: { name: string; verbs: string[] }) => [r.name, r.verbs]), [['deployments', ['get', 'list', 'watch']]], 'the all-clusters view: reads only');
  const allGroups = (await get(`${P}/apis`)).groups.map((g: { name: string }) => g.name);
  t.ok(allGroups.includes('metrics.k8s.io'), 'the all-clusters view gathers metrics from the members (kubectl top pods -A)');
  t.notOk(allGroups.includes('authorization.k8s.io'), 'access reviews are a member\'s, one at a time');
});
