// The simulated clusters' controllers: Deployments make ReplicaSets and pods, Services with a
// selector get EndpointSlices as kube's EndpointSlice controller makes them, and slices
// managed by anyone else (Panoptes' dispatched slices) are never touched.
import t from 'tap';
import type { SimCluster } from './cluster.ts';
import { get, http, kubectl, simCluster, tempDir } from './testutil.ts';
import type { JsonObject, KObject } from './types.ts';

const SLICES = 'discovery.k8s.io/endpointslices';

function slicesOf(c: SimCluster, ns: string, svc: string, managedBy = 'endpointslice-controller.k8s.io'): KObject[] {
  return c.store.list(SLICES, { namespace: ns }).items.filter((s) => s.metadata.labels?.['kubernetes.io/service-name'] === svc && s.metadata.labels?.['endpointslice.kubernetes.io/managed-by'] === managedBy);
}

const endpoints = (slices: KObject[]): JsonObject[] => slices.flatMap((s) => (Array.isArray(s.endpoints) ? (s.endpoints as JsonObject[]) : []));
const podsOf = (c: SimCluster, ns: string, app: string) => c.store.list('/pods', { namespace: ns }).items.filter((p) => p.metadata.labels?.app === app);

async function scale(c: SimCluster, ns: string, name: string, replicas: number): Promise<void> {
  const r = await http('PATCH', `${c.url}/apis/apps/v1/namespaces/${ns}/deployments/${name}/scale`, { spec: { replicas } }, { 'Content-Type': 'application/merge-patch+json' });
  if (r.status !== 200) throw new Error(`scale: ${r.text}`);
  if (!(await c.controllers.settle())) throw new Error('controllers did not settle');
}

/** A node of the workload's podCIDR holds the pod's address. */
function inNodeCIDR(c: SimCluster, pod: KObject): boolean {
  const node = c.store.get('/nodes', undefined, (pod.spec as JsonObject).nodeName as string)!;
  const cidr = (node.spec as JsonObject).podCIDR as string;
  return ((pod.status as JsonObject).podIP as string).startsWith(cidr.replace(/0\/24$/, ''));
}

t.test('the workload: statuses and slices are the controllers\' own, and a resync writes nothing', async (t) => {
  const c = await simCluster(t, { workload: true });
  const d = c.store.get('apps/deployments', 'shop', 'frontend')!;
  t.match(d.status, { observedGeneration: 1, replicas: 3, updatedReplicas: 3, readyReplicas: 3, availableReplicas: 3, conditions: [{ type: 'Available', status: 'True' }, { type: 'Progressing', reason: 'NewReplicaSetAvailable' }] });
  const [slice, ...more] = slicesOf(c, 'shop', 'frontend');
  t.equal(more.length, 0, 'one slice per service, no static duplicate');
  t.match(slice.metadata, { generateName: 'frontend-', generation: 1, labels: { app: 'frontend' }, ownerReferences: [{ apiVersion: 'v1', kind: 'Service', name: 'frontend', controller: true, blockOwnerDeletion: true }] });
  t.match(slice, { addressType: 'IPv4', ports: [{ name: 'http', port: 8080, protocol: 'TCP' }] });
  t.equal(endpoints([slice]).length, 3);
  for (const p of podsOf(c, 'shop', 'frontend')) t.ok(inNodeCIDR(c, p), `${p.metadata.name} has an address of its node's podCIDR`);
  const rv = c.store.resourceVersion;
  c.controllers.reconcileAll();
  t.equal(c.store.resourceVersion, rv, 'a resync of a settled cluster writes nothing');
  t.same(c.controllers.stats().errors, 0);
});

t.test('scaling a Deployment creates and deletes its pods and the endpoints follow', async (t) => {
  const c = await simCluster(t, { workload: true });
  await scale(c, 'shop', 'frontend', 5);
  const pods = podsOf(c, 'shop', 'frontend');
  t.equal(pods.length, 5);
  t.ok(pods.every((p) => (p.status as JsonObject).phase === 'Running' && inNodeCIDR(c, p)), 'Running, with addresses of their nodes');
  t.equal(new Set(pods.map((p) => (p.status as JsonObject).podIP)).size, 5, 'distinct addresses');
  const eps = endpoints(slicesOf(c, 'shop', 'frontend'));
  t.same(eps.map((e) => (e.targetRef as JsonObject).name).sort(), pods.map((p) => p.metadata.name).sort());
  t.ok(eps.every((e) => e.zone && e.nodeName && (e.conditions as JsonObject).ready === true));
  t.match(c.store.get('apps/deployments', 'shop', 'frontend')!.status, { replicas: 5, readyReplicas: 5, availableReplicas: 5, updatedReplicas: 5, observedGeneration: 2 });
  const rs = c.store.list('apps/replicasets', { namespace: 'shop' }).items.find((r) => r.metadata.name!.startsWith('frontend-'))!;
  t.match(rs.metadata.annotations, { 'deployment.kubernetes.io/desired-replicas': '5', 'deployment.kubernetes.io/max-replicas': '7' });

  await scale(c, 'shop', 'frontend', 1);
  t.equal(podsOf(c, 'shop', 'frontend').length, 1);
  t.equal(endpoints(slicesOf(c, 'shop', 'frontend')).length, 1);

  await scale(c, 'shop', 'frontend', 0);
  const placeholder = slicesOf(c, 'shop', 'frontend');
  t.equal(placeholder.length, 1, 'a placeholder slice when nothing is selected');
  t.match(placeholder[0], { endpoints: null, ports: null });

  // 150 endpoints: two slices, at most 100 each (kube-controller-manager's default).
  await scale(c, 'shop', 'frontend', 150);
  const big = slicesOf(c, 'shop', 'frontend');
  t.same(big.map((s) => (s.endpoints as unknown[]).length).sort((a, b) => a - b), [50, 100]);
  t.equal(big.filter((s) => s.metadata.name === placeholder[0].metadata.name).length, 1, 'the placeholder was filled, not replaced');
});

t.test('a new pod template rolls out a new ReplicaSet; the old one scales to 0', async (t) => {
  const c = await simCluster(t, { workload: true });
  const old = podsOf(c, 'shop', 'cart').map((p) => p.metadata.name);
  const r = await http('PATCH', `${c.url}/apis/apps/v1/namespaces/shop/deployments/cart`, { spec: { template: { spec: { containers: [{ name: 'cart', image: 'ghcr.io/demo/cart:2.1.0' }] } } } }, { 'Content-Type': 'application/strategic-merge-patch+json' });
  t.equal(r.status, 200, r.text);
  t.ok(await c.controllers.settle());
  const rss = c.store.list('apps/replicasets', { namespace: 'shop' }).items.filter((x) => x.metadata.name!.startsWith('cart-'));
  t.same(rss.map((x) => [(x.spec as JsonObject).replicas, x.metadata.annotations?.['deployment.kubernetes.io/revision']]).sort(), [[0, '1'], [2, '2']]);
  const now = podsOf(c, 'shop', 'cart');
  t.equal(now.length, 2);
  t.ok(now.every((p) => !old.includes(p.metadata.name)), 'new pods');
  t.equal(c.store.get('apps/deployments', 'shop', 'cart')!.metadata.annotations?.['deployment.kubernetes.io/revision'], '2');
});

t.test('slices managed by someone else are left alone, as kube\'s controller leaves them', async (t) => {
  const c = await simCluster(t, { workload: true });
  const foreign = {
    apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice',
    metadata: { name: 'west-frontend-abcde', labels: { 'kubernetes.io/service-name': 'frontend', 'endpointslice.kubernetes.io/managed-by': 'panoptes.io-mcs-dispatcher', 'multicluster.kubernetes.io/source-cluster': 'west' } },
    addressType: 'IPv4',
    endpoints: [{ addresses: ['10.245.1.7'], conditions: { ready: true } }],
    ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
  };
  const made = await http('POST', `${c.url}/apis/discovery.k8s.io/v1/namespaces/shop/endpointslices`, foreign);
  t.equal(made.status, 201, made.text);
  // Nor one without any managed-by label.
  const bare = await http('POST', `${c.url}/apis/discovery.k8s.io/v1/namespaces/shop/endpointslices`, { ...foreign, metadata: { name: 'by-hand', labels: { 'kubernetes.io/service-name': 'frontend' } } });
  t.equal(bare.status, 201, bare.text);
  await scale(c, 'shop', 'frontend', 4);
  await scale(c, 'shop', 'frontend', 2);
  t.equal(c.store.get(SLICES, 'shop', 'west-frontend-abcde')!.metadata.resourceVersion, made.json.metadata.resourceVersion, 'untouched');
  t.equal(c.store.get(SLICES, 'shop', 'by-hand')!.metadata.resourceVersion, bare.json.metadata.resourceVersion, 'untouched');
  t.equal(endpoints(slicesOf(c, 'shop', 'frontend')).length, 2, 'the controller\'s own slice follows the pods');
  // Deleting the Service deletes the controller's slices (owned by it), not the others.
  t.equal((await http('DELETE', `${c.url}/api/v1/namespaces/shop/services/frontend`)).status, 200);
  t.ok(await c.controllers.settle());
  t.equal(slicesOf(c, 'shop', 'frontend').length, 0, 'collected with their Service');
  t.ok(c.store.get(SLICES, 'shop', 'west-frontend-abcde'), 'the dispatched slice stays');
});

t.test('a Service without a selector gets no slices; a selector added later gets them', async (t) => {
  const c = await simCluster(t, { workload: true });
  const svc = { metadata: { name: 'imported', labels: { 'app.kubernetes.io/managed-by': 'panoptes.io' } }, spec: { ports: [{ name: 'http', port: 80, targetPort: 8080 }] } };
  const made = await http('POST', `${c.url}/api/v1/namespaces/shop/services`, svc);
  t.equal(made.status, 201, made.text);
  t.ok(await c.controllers.settle());
  t.equal(c.store.list(SLICES, { namespace: 'shop' }).items.filter((s) => s.metadata.labels?.['kubernetes.io/service-name'] === 'imported').length, 0);
  const sel = await http('PATCH', `${c.url}/api/v1/namespaces/shop/services/imported`, { spec: { selector: { app: 'cart' } } }, { 'Content-Type': 'application/merge-patch+json' });
  t.equal(sel.status, 200, sel.text);
  t.ok(await c.controllers.settle());
  t.equal(endpoints(slicesOf(c, 'shop', 'imported')).length, 2);
  t.match(slicesOf(c, 'shop', 'imported')[0].metadata.labels, { 'app.kubernetes.io/managed-by': 'panoptes.io', 'kubernetes.io/service-name': 'imported' }, 'the Service\'s labels are copied');
});

t.test('endpoint conditions, named and numeric target ports, a hand-deleted slice comes back', async (t) => {
  const c = await simCluster(t, { workload: true });
  const svc = { metadata: { name: 'multi' }, spec: { selector: { app: 'frontend' }, ports: [{ name: 'web', port: 80, targetPort: 'http' }, { name: 'metrics', port: 9100, targetPort: 9100 }, { name: 'admin', port: 81, targetPort: 'admin' }] } };
  t.equal((await http('POST', `${c.url}/api/v1/namespaces/shop/services`, svc)).status, 201);
  t.ok(await c.controllers.settle());
  let [slice] = slicesOf(c, 'shop', 'multi');
  t.same(slice.ports, [{ name: 'web', port: 8080, protocol: 'TCP' }, { name: 'metrics', port: 9100, protocol: 'TCP' }], 'the named port resolved, the unresolvable one left out');

  // A pod that is not ready: ready and serving false. A terminating one (held by a finalizer): serving but not ready.
  const [p1, p2] = podsOf(c, 'shop', 'frontend');
  const status = { ...(p1.status as JsonObject), conditions: [{ type: 'Ready', status: 'False' }] };
  t.equal((await http('PUT', `${c.url}/api/v1/namespaces/shop/pods/${p1.metadata.name}/status`, { ...p1, status })).status, 200);
  t.equal((await http('PATCH', `${c.url}/api/v1/namespaces/shop/pods/${p2.metadata.name}`, { metadata: { finalizers: ['example.com/hold'] } }, { 'Content-Type': 'application/merge-patch+json' })).status, 200);
  t.equal((await http('DELETE', `${c.url}/api/v1/namespaces/shop/pods/${p2.metadata.name}`)).status, 200);
  t.ok(await c.controllers.settle());
  const byPod = new Map(endpoints(slicesOf(c, 'shop', 'multi')).map((e) => [(e.targetRef as JsonObject).name, e.conditions]));
  t.same(byPod.get(p1.metadata.name), { ready: false, serving: false, terminating: false });
  t.same(byPod.get(p2.metadata.name), { ready: false, serving: true, terminating: true });
  t.equal(podsOf(c, 'shop', 'frontend').filter((p) => !p.metadata.deletionTimestamp).length, 3, 'the ReplicaSet replaced the terminating pod');

  // Deleting the controller's slice by hand: it is made again.
  [slice] = slicesOf(c, 'shop', 'multi');
  t.equal((await http('DELETE', `${c.url}/apis/discovery.k8s.io/v1/namespaces/shop/endpointslices/${slice.metadata.name}`)).status, 200);
  t.ok(await c.controllers.settle());
  const again = slicesOf(c, 'shop', 'multi');
  t.equal(again.length, 1);
  t.not(again[0].metadata.name, slice.metadata.name);
  t.equal(endpoints(again).length, 4);
});

t.test('a static cluster: no controllers, scaling changes only the spec', async (t) => {
  const c = await simCluster(t, { workload: true, controllers: false });
  t.equal(slicesOf(c, 'shop', 'frontend').length, 1, 'the workload still has its slices');
  const r = await http('PATCH', `${c.url}/apis/apps/v1/namespaces/shop/deployments/frontend/scale`, { spec: { replicas: 5 } }, { 'Content-Type': 'application/merge-patch+json' });
  t.equal(r.status, 200);
  await new Promise((resolve) => setTimeout(resolve, 100));
  t.equal(podsOf(c, 'shop', 'frontend').length, 3);
  t.equal(c.controllers.stats().running, false);
  t.match((await get(`${c.url}/_sim/status`)).json, { controllers: { running: false } });
});

t.test('kubectl scale changes the pods and the EndpointSlices', async (t) => {
  const c = await simCluster(t, { workload: true });
  const dir = tempDir(t);
  const k = (...args: string[]) => kubectl(c, dir, args);
  const sc = await k('-n', 'shop', 'scale', 'deploy', 'frontend', '--replicas=5');
  t.equal(sc.code, 0, sc.stderr);
  t.ok(await c.controllers.settle());
  const pods = await k('-n', 'shop', 'get', 'pods', '-l', 'app=frontend', '-o', 'name');
  t.equal(pods.stdout.trim().split('\n').length, 5, pods.stdout);
  const deploy = await k('-n', 'shop', 'get', 'deploy', 'frontend');
  t.match(deploy.stdout, /frontend\s+5\/5\s+5\s+5/);
  const es = await k('-n', 'shop', 'get', 'endpointslices', '-l', 'kubernetes.io/service-name=frontend', '-o', 'json');
  t.equal(es.code, 0, es.stderr);
  const items = JSON.parse(es.stdout).items as KObject[];
  t.equal(endpoints(items).length, 5);
  const table = await k('-n', 'shop', 'get', 'endpointslices', '-l', 'kubernetes.io/service-name=frontend');
  t.match(table.stdout, /frontend-\S+\s+IPv4\s+8080\s+10\.244\./);
  t.equal((await k('-n', 'shop', 'scale', 'deploy', 'frontend', '--replicas=1')).code, 0);
  t.ok(await c.controllers.settle());
  const after = JSON.parse((await k('-n', 'shop', 'get', 'endpointslices', '-l', 'kubernetes.io/service-name=frontend', '-o', 'json')).stdout).items as KObject[];
  t.equal(endpoints(after).length, 1);
});
