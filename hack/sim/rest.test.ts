import t from 'tap';
import { get, http, simCluster } from './testutil.ts';

const merge = { 'Content-Type': 'application/merge-patch+json' };

t.test('create, get, update, patch, delete with kube-apiserver metadata and Status errors', async (t) => {
  // A static cluster: no deployment controller writing the Deployment between these requests.
  const c = await simCluster(t, { controllers: false });
  const base = `${c.url}/apis/apps/v1/namespaces/default/deployments`;
  const body = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', labels: { app: 'web' } }, spec: { replicas: 1, selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'c', image: 'nginx' }] } } }, status: { replicas: 9 } };
  const created = await http('POST', base, body);
  t.equal(created.status, 201);
  const d = created.json;
  t.match(d.metadata, { name: 'web', namespace: 'default', generation: 1, resourceVersion: String(c.store.resourceVersion) });
  t.match(d.metadata.uid, /^[0-9a-f-]{36}$/);
  t.match(d.metadata.creationTimestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  t.equal(d.status, undefined, 'status is not set by create');

  const dup = await http('POST', base, body);
  t.equal(dup.status, 409);
  t.match(dup.json, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'AlreadyExists', code: 409, message: 'deployments.apps "web" already exists', details: { name: 'web', group: 'apps', kind: 'deployments' } });
  const missing = await get(`${base}/nope`);
  t.match(missing.json, { reason: 'NotFound', code: 404, message: 'deployments.apps "nope" not found' });
  const noNs = await http('POST', `${c.url}/api/v1/namespaces/ghost/configmaps`, { metadata: { name: 'x' } });
  t.match(noNs.json, { reason: 'NotFound', message: 'namespaces "ghost" not found' });
  const badName = await http('POST', `${c.url}/api/v1/namespaces/default/configmaps`, { metadata: { name: 'Bad_Name' } });
  t.match(badName.json, { reason: 'Invalid', code: 422 });

  // PUT: stale rv -> 409 Conflict; current rv -> generation bumps on spec change only.
  const stale = await http('PUT', `${base}/web`, { ...d, metadata: { ...d.metadata, resourceVersion: '1' } });
  t.match(stale.json, { reason: 'Conflict', code: 409, message: 'Operation cannot be fulfilled on deployments.apps "web": the object has been modified; please apply your changes to the latest version and try again' });
  const up = await http('PUT', `${base}/web`, { ...d, spec: { ...d.spec, replicas: 3 } });
  t.equal(up.status, 200);
  t.equal(up.json.metadata.generation, 2);
  t.equal(up.json.metadata.uid, d.metadata.uid);
  const lab = await http('PATCH', `${base}/web`, { metadata: { labels: { tier: 'x' } } }, merge);
  t.equal(lab.json.metadata.generation, 2, 'metadata changes keep the generation');
  t.ok(Number(lab.json.metadata.resourceVersion) > Number(up.json.metadata.resourceVersion));
  const same = await http('PATCH', `${base}/web`, { metadata: { labels: { tier: 'x' } } }, merge);
  t.equal(same.json.metadata.resourceVersion, lab.json.metadata.resourceVersion, 'a no-op patch writes nothing');

  // Strategic merge merges containers by name; JSON patch works too.
  const sm = await http('PATCH', `${base}/web`, { spec: { template: { spec: { containers: [{ name: 'c', image: 'nginx:2' }, { name: 'side', image: 'envoy' }] } } } }, { 'Content-Type': 'application/strategic-merge-patch+json' });
  t.same(sm.json.spec.template.spec.containers.map((x: { name: string; image: string }) => `${x.name}=${x.image}`), ['c=nginx:2', 'side=envoy']);
  const jp = await http('PATCH', `${base}/web`, [{ op: 'add', path: '/metadata/annotations', value: { a: 'b' } }], { 'Content-Type': 'application/json-patch+json' });
  t.same(jp.json.metadata.annotations, { a: 'b' });

  // Status subresource: only status changes, the generation stays.
  const st = await http('PATCH', `${base}/web/status`, { status: { replicas: 3 }, spec: { replicas: 100 } }, merge);
  t.equal(st.json.status.replicas, 3);
  t.equal(st.json.spec.replicas, 3);
  // Scale subresource.
  const sc = await get(`${base}/web/scale`);
  t.match(sc.json, { kind: 'Scale', apiVersion: 'autoscaling/v1', spec: { replicas: 3 }, status: { replicas: 3, selector: 'app=web' } });
  const sp = await http('PATCH', `${base}/web/scale`, { spec: { replicas: 5 } }, merge);
  t.equal(sp.json.spec.replicas, 5);
  t.equal((await get(`${base}/web`)).json.spec.replicas, 5);

  // DELETE with a stale precondition, then for real.
  const pre = await http('DELETE', `${base}/web`, { preconditions: { resourceVersion: '1' } });
  t.equal(pre.json.reason, 'Conflict');
  const del = await http('DELETE', `${base}/web`);
  t.match(del.json, { kind: 'Status', status: 'Success', details: { name: 'web', group: 'apps', kind: 'deployments' } });
  t.equal((await get(`${base}/web`)).status, 404);
});

t.test('finalizers hold a deletion; removing the last one completes it', async (t) => {
  const c = await simCluster(t);
  const base = `${c.url}/api/v1/namespaces/default/configmaps`;
  await http('POST', base, { metadata: { name: 'f', finalizers: ['example.com/hold'] } });
  const d = await http('DELETE', `${base}/f`);
  t.ok(d.json.metadata.deletionTimestamp);
  t.equal((await get(`${base}/f`)).status, 200);
  await http('PATCH', `${base}/f`, { metadata: { finalizers: null } }, merge);
  t.equal((await get(`${base}/f`)).status, 404);
});

t.test('list: selectors, limit/continue, rv validation', async (t) => {
  const c = await simCluster(t);
  const base = `${c.url}/api/v1/namespaces/default/configmaps`;
  for (let i = 0; i < 7; i++) await http('POST', base, { metadata: { name: `c${i}`, labels: { i: String(i), odd: String(i % 2 === 1) } } });
  const l = await get(`${base}?labelSelector=odd%3Dtrue`);
  t.same(l.json.items.map((o: { metadata: { name: string } }) => o.metadata.name), ['c1', 'c3', 'c5']);
  t.equal(l.json.metadata.resourceVersion, String(c.store.resourceVersion));
  t.equal((await get(`${base}?labelSelector=i+notin+(1,2),odd!%3Dtrue`)).json.items.length, 3);
  t.equal((await get(`${base}?labelSelector=%3D%3D`)).status, 400);
  const p1 = await get(`${base}?limit=3`);
  t.equal(p1.json.items.length, 3);
  t.equal(p1.json.metadata.remainingItemCount, 4);
  await http('DELETE', `${base}/c6`);
  const p2 = await get(`${base}?limit=10&continue=${encodeURIComponent(p1.json.metadata.continue)}`);
  t.equal(p2.json.metadata.resourceVersion, p1.json.metadata.resourceVersion, 'every page carries the first page rv');
  t.same(p2.json.items.map((o: { metadata: { name: string } }) => o.metadata.name), ['c3', 'c4', 'c5', 'c6']);
  t.equal((await get(`${base}?resourceVersionMatch=Exact`)).status, 422);
  t.equal((await get(`${base}?resourceVersionMatch=Exact&resourceVersion=0`)).status, 422);
  t.equal((await get(`${base}?continue=${encodeURIComponent(p1.json.metadata.continue)}&resourceVersion=5`)).status, 400);
  const exact = await get(`${base}?resourceVersionMatch=Exact&resourceVersion=${p1.json.metadata.resourceVersion}`);
  t.equal(exact.json.items.length, 7);
  c.faults.expireHistory();
  const gone = await get(`${base}?limit=10&continue=${encodeURIComponent(p1.json.metadata.continue)}`);
  t.match(gone.json, { reason: 'Expired', code: 410 });
  t.equal((await get(`${c.url}/api/v1/pods?fieldSelector=status.phase%3DRunning,spec.nodeName%3Dn1`)).status, 200);
});

t.test('discovery, version, health', async (t) => {
  const c = await simCluster(t);
  t.match((await get(`${c.url}/api`)).json, { kind: 'APIVersions', versions: ['v1'] });
  const v1 = (await get(`${c.url}/api/v1`)).json;
  t.match(v1.resources.find((r: { name: string }) => r.name === 'pods'), { singularName: 'pod', namespaced: true, kind: 'Pod', shortNames: ['po'] });
  t.ok(v1.resources.find((r: { name: string }) => r.name === 'pods/status'));
  const apps = (await get(`${c.url}/apis/apps/v1`)).json;
  t.match(apps.resources.find((r: { name: string }) => r.name === 'deployments/scale'), { group: 'autoscaling', version: 'v1', kind: 'Scale' });
  t.match((await get(`${c.url}/apis/apps`)).json, { kind: 'APIGroup', name: 'apps', preferredVersion: { groupVersion: 'apps/v1' } });
  const groups = (await get(`${c.url}/apis`)).json;
  t.equal(groups.kind, 'APIGroupList');
  for (const g of ['apps', 'batch', 'discovery.k8s.io', 'events.k8s.io', 'apiextensions.k8s.io']) t.ok(groups.groups.find((x: { name: string }) => x.name === g), g);
  const accept = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json';
  const agg = await get(`${c.url}/apis`, { Accept: accept });
  t.equal(agg.headers['content-type'], 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList');
  t.match(agg.json, { kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2' });
  const aggCore = await get(`${c.url}/api`, { Accept: accept });
  t.ok(aggCore.json.items[0].versions[0].resources.find((r: { resource: string }) => r.resource === 'pods'));
  t.match((await get(`${c.url}/version`)).json, { major: '1', minor: '28' });
  const ready = await get(`${c.url}/readyz`);
  t.equal(ready.text, 'ok');
  t.match((await get(`${c.url}/readyz?verbose`)).text, /\[\+\]ping ok/);
  t.equal((await get(`${c.url}/apis/nope.io/v1`)).status, 404);
});

t.test('CRDs: custom resources served once created, gone once deleted', async (t) => {
  const c = await simCluster(t);
  const crd = {
    apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'gadgets.example.com' },
    spec: { group: 'example.com', scope: 'Namespaced', names: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget' }, versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }] },
  };
  const base = `${c.url}/apis/example.com/v1/namespaces/default/gadgets`;
  t.equal((await get(base)).status, 404);
  t.equal((await http('POST', `${c.url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions`, crd)).status, 201);
  const g = await http('POST', base, { apiVersion: 'example.com/v1', kind: 'Gadget', metadata: { name: 'g1' }, spec: { size: 1 } });
  t.equal(g.status, 201);
  t.equal(g.json.metadata.generation, 1);
  t.equal((await http('PATCH', `${base}/g1`, { spec: { size: 2 } }, merge)).json.metadata.generation, 2);
  t.equal((await http('PATCH', `${base}/g1`, { spec: { size: 3 } }, { 'Content-Type': 'application/strategic-merge-patch+json' })).status, 415);
  t.ok((await get(`${c.url}/apis`)).json.groups.find((x: { name: string }) => x.name === 'example.com'));
  t.match((await get(`${c.url}/apis/example.com/v1`)).json.resources, [{ name: 'gadgets', kind: 'Gadget', namespaced: true }]);
  await http('DELETE', `${c.url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.example.com`);
  t.equal((await get(base)).status, 404);
  t.equal(c.store.count('example.com/gadgets'), 0);
});
