// The read path over HTTP against a seeded SQLite store: discovery of both prefixes, every
// List rule and error path of kube-apiserver's that this server builds, output formats, get in
// both views, health, metrics and OpenAPI, and malformed input (always a Status, never a 500).
import t from 'tap';
import { get, http } from '../hack/sim/testutil.ts';
import { setLogLevel } from '../lib/log.ts';
import { compactNow, crdEvent, openTestStore, podEvent, seedCluster, seedClusterObject } from '../storage/testing.ts';
import type { UpstreamEvent } from '../storage/types.ts';
import { createApiserver } from './server.ts';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');

const P = '/apis/panoptes.io/v1alpha1/resources';
const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';

const cm = (ns: string, name: string, rv: string): UpstreamEvent => ({
  type: 'ADDED',
  group: '',
  version: 'v1',
  resource: 'configmaps',
  object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns, uid: `cm-${ns}-${name}`, resourceVersion: rv, creationTimestamp: '2026-01-01T00:00:00Z' }, data: { k: 'v' } },
});
const node = (name: string, rv: string): UpstreamEvent => ({
  type: 'ADDED',
  group: '',
  version: 'v1',
  resource: 'nodes',
  object: { apiVersion: 'v1', kind: 'Node', metadata: { name, uid: `node-${name}`, resourceVersion: rv, creationTimestamp: '2026-01-01T00:00:00Z' }, spec: {}, status: {} },
});

const apiResources = [
  { group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, singularName: 'pod', shortNames: ['po'], categories: ['all'] },
  { group: '', version: 'v1', resource: 'configmaps', kind: 'ConfigMap', namespaced: true, singularName: 'configmap', shortNames: ['cm'] },
  { group: '', version: 'v1', resource: 'nodes', kind: 'Node', namespaced: false, singularName: 'node', shortNames: ['no'] },
];

t.test('apiserver read path', async (t) => {
  const { store, close } = await openTestStore('sqlite');
  await seedCluster(store, 'a', { phase: 'Ready', ready: true, apiResources });
  await seedCluster(store, 'b', { phase: 'Unreachable', ready: false, message: 'GET /readyz: ECONNREFUSED', lastTransitionTime: '2026-01-01T00:00:00Z', apiResources: apiResources.slice(0, 1) });
  await seedClusterObject(store, 'a', { phase: 'Ready', ready: true });
  await seedClusterObject(store, 'b', { phase: 'Unreachable', ready: false });
  const podsA: UpstreamEvent[] = [];
  for (let i = 0; i < 30; i++) podsA.push(podEvent('ADDED', i % 2 ? 'n1' : 'n2', `pa-${String(i).padStart(2, '0')}`, String(100 + i), { labels: { app: i % 3 ? 'web' : 'db' }, nodeName: `node-${i % 3}`, phase: i % 5 ? 'Running' : 'Pending', owner: i < 5 ? 'owner-1' : undefined }));
  podsA.push(podEvent('ADDED', 'n1', 'dup', '200'));
  await store.applyBatch('a', podsA);
  await store.applyBatch('a', [cm('n1', 'web', '300'), cm('n2', 'db', '301'), node('node-0', '302'), node('node-1', '303')]);
  const podsB: UpstreamEvent[] = [];
  for (let i = 0; i < 20; i++) podsB.push(podEvent('ADDED', 'n1', `pb-${String(i).padStart(2, '0')}`, String(10 + i), { uid: `b-${i}`, labels: { app: 'web' } }));
  podsB.push(podEvent('ADDED', 'n1', 'dup', '99', { uid: 'b-dup' }));
  await store.applyBatch('b', podsB);

  const api = await createApiserver({ store, catalogOptions: { refreshMs: 100 }, limits: { tooLargeWaitMs: 300, maxLimit: 25 } });
  const base = await api.listen('127.0.0.1', 0);
  t.teardown(async () => {
    await api.close();
    await close();
  });
  const GET = (path: string, headers: Record<string, string> = {}) => get(base + path, headers);
  const status = async (t: Tap, path: string, code: number, reason: string, headers: Record<string, string> = {}) => {
    const r = await GET(path, headers);
    t.equal(r.status, code, `${path} -> ${code}`);
    t.match(r.json, { kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason }, `${path}: Status ${reason}`);
    return r;
  };
  type Tap = typeof t;

  t.test('discovery of both prefixes', async (t) => {
    const v = await GET(`${P}/version`);
    t.match(v.json, { major: '1', minor: '32', gitVersion: /^v1\.32\.0\+panoptes\./ });
    t.match((await GET(`${P}/api`)).json, { kind: 'APIVersions', versions: ['v1'] });
    const core = (await GET(`${P}/api/v1`)).json;
    t.same(core.resources.map((r: { name: string }) => r.name), ['configmaps', 'nodes', 'pods'], 'union over clusters');
    t.match(core.resources[2], { name: 'pods', singularName: 'pod', namespaced: true, kind: 'Pod', verbs: ['get', 'list', 'watch'], shortNames: ['po'], categories: ['all'] });
    const coreB = (await GET(`${P}/clusters/b/api/v1`)).json;
    t.same(coreB.resources.map((r: { name: string }) => r.name).filter((n: string) => !n.includes('/')), ['pods'], 'one cluster: what it syncs (and the subresources its proxy serves)');
    const apis = (await GET(`${P}/apis`)).json;
    t.match(apis, { kind: 'APIGroupList', groups: [{ name: 'panoptes.io', preferredVersion: { version: 'v1alpha1' } }] });
    const agg = await GET(`${P}/apis`, { Accept: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json' });
    t.equal(agg.headers['content-type'], 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList', 'echoes the content type');
    t.match(agg.json, { kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2' });
    const aggApi = await GET(`${P}/api`, { Accept: 'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList' });
    t.match(aggApi.json, { apiVersion: 'apidiscovery.k8s.io/v2beta1', items: [{ versions: [{ version: 'v1', resources: [{ resource: 'configmaps', scope: 'Namespaced' }, {}, {}] }] }] });
    t.match((await GET('/apis/panoptes.io/v1alpha1')).json, {
      kind: 'APIResourceList',
      resources: [
        { name: 'clusters', kind: 'Cluster', namespaced: false, verbs: ['delete', 'get', 'list', 'patch', 'create', 'update', 'watch'] },
        { name: 'clusters/status', kind: 'Cluster', verbs: ['get'] },
      ],
    });
    t.match((await GET('/apis')).json, { groups: [{ name: 'panoptes.io' }] });
    await status(t, `${P}/apis/nope.io`, 404, 'NotFound');
    await status(t, `${P}/clusters/zzz/api/v1`, 404, 'NotFound');
    await status(t, `${P}/clusters/zzz/api/v1/pods`, 404, 'NotFound');
    await status(t, `${P}/api/v1/widgets`, 404, 'NotFound');
    // Not synced in b: the member's, through the proxy, which this unauthenticated server does not open to anyone unnamed.
    await status(t, `${P}/clusters/b/api/v1/configmaps`, 403, 'Forbidden');
  });

  t.test('lists: kind, rv, selectors, search', async (t) => {
    const all = await GET(`${P}/api/v1/pods`);
    t.equal(all.status, 200);
    t.match(all.json, { kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: /^\d+$/ } });
    t.equal(all.json.items.length, 52);
    const listRv = Number(all.json.metadata.resourceVersion);
    t.ok(all.json.items.every((i: { metadata: { resourceVersion: string } }) => Number(i.metadata.resourceVersion) <= listRv), 'item rvs <= list rv');
    t.match(all.headers.warning, /299 - "cluster b is not Ready \(Unreachable/, 'Warning for a cluster that is not Ready');
    const onlyA = await GET(`${P}/clusters/a/api/v1/namespaces/n1/pods`);
    t.equal(onlyA.json.items.length, 16);
    t.notOk(onlyA.headers.warning, 'no warning when every cluster read is Ready');
    const names = (r: { json: { items: Array<{ metadata: { name: string } }> } }) => r.json.items.map((i) => i.metadata.name);
    t.equal((await GET(`${P}/api/v1/pods?labelSelector=app%3Ddb`)).json.items.length, 10);
    t.equal((await GET(`${P}/api/v1/pods?labelSelector=app!%3Ddb`)).json.items.length, 42, '!= matches objects without the key too');
    t.equal((await GET(`${P}/api/v1/pods?labelSelector=app%20notin%20(web)`)).json.items.length, 12);
    t.equal((await GET(`${P}/api/v1/pods?labelSelector=!app`)).json.items.length, 2);
    t.equal((await GET(`${P}/api/v1/pods?fieldSelector=status.phase%3DPending`)).json.items.length, 6);
    t.same(names(await GET(`${P}/api/v1/pods?fieldSelector=metadata.name%3Dpa-01,metadata.namespace%3Dn1`)), ['pa-01']);
    t.equal((await GET(`${P}/api/v1/pods?fieldSelector=spec.nodeName!%3Dnode-0`)).json.items.length, 42);
    t.equal((await GET(`${P}/api/v1/pods?clusters=b`)).json.items.length, 21, 'clusters parameter');
    t.equal((await GET(`${P}/api/v1/pods?labelSelector=search.panoptes.io/clusters%20in%20(b)`)).json.items.length, 21, 'search.panoptes.io/clusters label key');
    t.equal((await GET(`${P}/api/v1/pods?ownerUID=owner-1`)).json.items.length, 5);
    t.same(names(await GET(`${P}/api/v1/pods?names=dup`)), ['dup', 'dup']);
    t.equal((await GET(`${P}/api/v1/pods?namespaces=n2&labelSelector=search.panoptes.io/namespaces%3Dn2`)).json.items.length, 15);
    t.equal((await GET(`${P}/clusters/a/api/v1/pods?clusters=b`)).json.items.length, 0, 'the view and the search intersect');
    t.match((await GET(`${P}/api/v1/nodes`)).json, { kind: 'NodeList', items: [{ metadata: { name: 'node-0' } }, {}] });
    await status(t, `${P}/api/v1/pods?clusters=nope`, 400, 'BadRequest');
    await status(t, `${P}/api/v1/pods?labelSelector=a%20in%20(`, 400, 'BadRequest');
    await status(t, `${P}/api/v1/pods?fieldSelector=spec.replicas%3D1`, 400, 'BadRequest');
    await status(t, `${P}/api/v1/configmaps?fieldSelector=spec.nodeName%3Dx`, 400, 'BadRequest');
    await status(t, `${P}/api/v1/pods?search=everything`, 400, 'BadRequest');
    await status(t, `${P}/api/v1/pods?labelSelector=search.panoptes.io/clusters`, 400, 'BadRequest');
  });

  t.test('paging: limit, continue, remainingItemCount', async (t) => {
    const seen: string[] = [];
    let cont = '';
    let rv = '';
    let pages = 0;
    const first = await GET(`${P}/api/v1/pods?limit=10`);
    t.equal(first.json.metadata.remainingItemCount, 42);
    do {
      const r = await GET(`${P}/api/v1/pods?limit=10${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`);
      t.equal(r.status, 200);
      if (rv) t.equal(r.json.metadata.resourceVersion, rv, 'every page carries the first page rv');
      rv = r.json.metadata.resourceVersion;
      for (const i of r.json.items) seen.push(`${i.metadata.annotations['panoptes.io/cluster']}/${i.metadata.namespace}/${i.metadata.name}`);
      cont = r.json.metadata.continue ?? '';
      if (pages === 0) await store.applyBatch('a', [podEvent('ADDED', 'n1', 'pa-zz-late', '500')]);
      pages++;
    } while (cont && pages < 20);
    t.equal(pages, 6);
    t.equal(seen.length, 52, 'a write between pages does not show');
    t.equal(new Set(seen).size, 52, 'nothing repeated');
    const capped = await GET(`${P}/api/v1/pods?limit=100000`);
    t.equal(capped.json.items.length, 25, 'limits above the maximum are served as pages of the maximum');
    t.ok(capped.json.metadata.continue);
    const unpaged = await GET(`${P}/api/v1/pods`);
    t.equal(unpaged.json.items.length, 53, 'no limit: everything');
    t.notOk('continue' in unpaged.json.metadata);
    await status(t, `${P}/api/v1/pods?limit=5&continue=garbage!`, 400, 'BadRequest');
    await status(t, `${P}/api/v1/pods?limit=5&continue=eyJ2IjoxfQ`, 400, 'BadRequest');
    await status(t, `${P}/api/v1/pods?limit=5&continue=${encodeURIComponent(first.json.metadata.continue)}&resourceVersion=5`, 400, 'BadRequest');
    await status(t, `${P}/api/v1/pods?limit=-1`, 400, 'BadRequest');
    await status(t, `${P}/api/v1/pods?limit=1e9`, 400, 'BadRequest');
  });

  t.test('resourceVersion semantics and errors', async (t) => {
    const wm = await store.watermark();
    t.equal((await GET(`${P}/api/v1/pods?resourceVersion=0`)).status, 200);
    t.equal((await GET(`${P}/api/v1/pods?resourceVersion=${wm}&resourceVersionMatch=NotOlderThan`)).status, 200);
    const exact = await GET(`${P}/clusters/a/api/v1/pods?resourceVersion=3&resourceVersionMatch=Exact`);
    t.equal(exact.json.metadata.resourceVersion, '3', 'Exact reads the snapshot at that rv');
    await status(t, `${P}/api/v1/pods?resourceVersionMatch=Exact`, 422, 'Invalid');
    await status(t, `${P}/api/v1/pods?resourceVersion=0&resourceVersionMatch=Exact`, 422, 'Invalid');
    const started = Date.now();
    const future = await status(t, `${P}/api/v1/pods?resourceVersion=${wm + 1000}`, 504, 'Timeout');
    t.match(future.json.details, { causes: [{ reason: 'ResourceVersionTooLarge' }] });
    t.ok(Date.now() - started >= 250, 'waited before answering 504');
    await status(t, `${P}/api/v1/pods?resourceVersion=${wm + 1000}&resourceVersionMatch=Exact`, 504, 'Timeout');
    // The legacy row of kube's List semantics: resourceVersion=N with limit and no
    // resourceVersionMatch is Exact at N; without limit it is NotOlderThan N (the latest).
    const before = await GET(`${P}/clusters/a/api/v1/namespaces/n1/pods/pa-01`);
    const at = Number(before.json.metadata.resourceVersion);
    await store.applyBatch('a', [podEvent('MODIFIED', 'n1', 'pa-01', '800', { phase: 'Succeeded' })]);
    const legacy = await GET(`${P}/clusters/a/api/v1/namespaces/n1/pods?resourceVersion=${at}&limit=500&fieldSelector=metadata.name%3Dpa-01`);
    t.equal(legacy.json.metadata.resourceVersion, String(at), 'limit + rv without match: the snapshot at exactly that rv');
    t.equal(legacy.json.items[0].metadata.resourceVersion, String(at), 'the object as it was at that rv');
    t.equal(legacy.json.items[0].status.phase, before.json.status.phase);
    const latest = await GET(`${P}/clusters/a/api/v1/namespaces/n1/pods?resourceVersion=${at}&fieldSelector=metadata.name%3Dpa-01`);
    t.equal(latest.json.items[0].status.phase, 'Succeeded', 'without limit: not older than, the latest');
    t.ok(Number(latest.json.metadata.resourceVersion) > at);
    const notOlder = await GET(`${P}/clusters/a/api/v1/namespaces/n1/pods?resourceVersion=${at}&limit=500&resourceVersionMatch=NotOlderThan&fieldSelector=metadata.name%3Dpa-01`);
    t.equal(notOlder.json.items[0].status.phase, 'Succeeded', 'an explicit NotOlderThan with limit: the latest');
    await store.applyBatch('a', [podEvent('MODIFIED', 'n1', 'pa-01', '900', { phase: 'Failed' })]);
    await compactNow(store, { minAgeMs: 0, minCount: 0 });
    await status(t, `${P}/api/v1/pods?resourceVersion=3&resourceVersionMatch=Exact`, 410, 'Expired');
    await status(t, `${P}/api/v1/pods?limit=5&continue=${encodeURIComponent((await GET(`${P}/api/v1/pods?limit=5&resourceVersion=3&resourceVersionMatch=Exact`)).json?.metadata?.continue ?? 'eyJ2IjoxLCJydiI6MywiayI6WyIiLCIiLCIiXSwicyI6MH0')}`, 410, 'Expired');
  });

  t.test('output formats', async (t) => {
    const tab = await GET(`${P}/api/v1/pods?limit=3`, { Accept: TABLE });
    t.equal(tab.headers['content-type'], 'application/json;as=Table;v=v1;g=meta.k8s.io');
    t.match(tab.json, { kind: 'Table', apiVersion: 'meta.k8s.io/v1', metadata: { resourceVersion: /\d+/, continue: /./ } });
    t.same(tab.json.columnDefinitions.map((c: { name: string }) => c.name), ['Cluster', 'Name', 'Ready', 'Status', 'Restarts', 'Age', 'IP', 'Node', 'Nominated Node', 'Readiness Gates']);
    t.match(tab.json.rows[0], { cells: ['a', 'dup', '0/0', 'Running', '0', /\w/, '<none>', 'node-1', '<none>', '<none>'], object: { kind: 'PartialObjectMetadata', metadata: { name: 'dup' } } });
    const one = await GET(`${P}/clusters/a/api/v1/configmaps`, { Accept: TABLE });
    t.same(one.json.columnDefinitions.map((c: { name: string }) => c.name), ['Name', 'Data', 'Age'], 'one-cluster view: no Cluster column');
    t.same(one.json.rows[0].cells.slice(0, 2), ['web', 1]);
    const noObj = await GET(`${P}/api/v1/configmaps?includeObject=None`, { Accept: TABLE });
    t.notOk('object' in noObj.json.rows[0]);
    const full = await GET(`${P}/api/v1/configmaps?includeObject=Object`, { Accept: TABLE });
    t.match(full.json.rows[0].object, { kind: 'ConfigMap', data: { k: 'v' } });
    const pom = await GET(`${P}/api/v1/pods?limit=2`, { Accept: 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1' });
    t.match(pom.json, { kind: 'PartialObjectMetadataList', apiVersion: 'meta.k8s.io/v1', metadata: { continue: /./ }, items: [{ kind: 'PartialObjectMetadata', metadata: { name: 'dup' } }, {}] });
    t.notOk('spec' in pom.json.items[0]);
    t.equal((await GET(`${P}/api/v1/pods?limit=1`, { Accept: 'application/vnd.kubernetes.protobuf,application/json' })).json.kind, 'PodList');
    await status(t, `${P}/api/v1/pods`, 406, 'NotAcceptable', { Accept: 'application/vnd.kubernetes.protobuf' });
  });

  t.test('get in both views', async (t) => {
    const one = await GET(`${P}/api/v1/namespaces/n1/pods/pa-01`);
    t.match(one.json, { kind: 'Pod', metadata: { name: 'pa-01', annotations: { 'panoptes.io/cluster': 'a' } } });
    t.notOk(one.headers.warning);
    const inB = await GET(`${P}/api/v1/namespaces/n1/pods/pb-01`);
    t.match(inB.headers.warning, /cluster b is not Ready/);
    const dup = await status(t, `${P}/api/v1/namespaces/n1/pods/dup`, 400, 'BadRequest');
    t.match(dup.json.message, /exists in 2 clusters \(a, b\)/);
    t.match((await GET(`${P}/api/v1/namespaces/n1/pods/dup?clusters=b`)).json, { metadata: { uid: 'b-dup' } });
    t.match((await GET(`${P}/clusters/b/api/v1/namespaces/n1/pods/dup`)).json, { metadata: { uid: 'b-dup' } });
    const nf = await status(t, `${P}/clusters/a/api/v1/namespaces/n1/pods/nope`, 404, 'NotFound');
    t.match(nf.json, { message: 'pods "nope" not found', details: { name: 'nope', kind: 'pods' } });
    await status(t, `${P}/api/v1/namespaces/n2/pods/pa-01`, 404, 'NotFound');
    t.match((await GET(`${P}/api/v1/nodes/node-1`)).json, { kind: 'Node' });
    const tab = await GET(`${P}/api/v1/namespaces/n1/pods/pa-01`, { Accept: TABLE });
    t.match(tab.json, { kind: 'Table', rows: [{ cells: ['a', 'pa-01'] }] });
    t.match((await GET(`${P}/api/v1/namespaces/n1/pods/pa-01`, { Accept: 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1' })).json, { kind: 'PartialObjectMetadata', metadata: { name: 'pa-01' } });
    await status(t, `${P}/api/v1/pods/pa-01`, 404, 'NotFound');
    // Subresources are the members', one cluster at a time (apiserver/proxy/).
    await status(t, `${P}/api/v1/namespaces/n1/pods/pa-01/log`, 405, 'MethodNotAllowed');
    await status(t, `${P}/api/v1/namespaces/n1/pods/pa-01/status/x`, 405, 'MethodNotAllowed');
  });

  t.test('clusters resource', async (t) => {
    const list = await GET('/apis/panoptes.io/v1alpha1/clusters');
    t.match(list.json, { kind: 'ClusterList', apiVersion: 'panoptes.io/v1alpha1', items: [{ kind: 'Cluster', metadata: { name: 'a' }, status: { phase: 'Ready' } }, { metadata: { name: 'b' }, status: { phase: 'Unreachable' } }] });
    t.match((await GET('/apis/panoptes.io/v1alpha1/clusters/b')).json, { kind: 'Cluster', status: { ready: false } });
    t.match((await GET('/apis/panoptes.io/v1alpha1/clusters', { Accept: TABLE })).json, { kind: 'Table', rows: [{ cells: ['a', 'Ready', 'True'] }, { cells: ['b', 'Unreachable', 'False'] }] });
    t.equal((await GET(`${P}/clusters/a/apis/panoptes.io/v1alpha1/clusters`)).json.items.length, 1, 'one-cluster view lists its cluster');
    await status(t, `${P}/clusters/a/apis/panoptes.io/v1alpha1/clusters/b`, 404, 'NotFound');
    t.same((await GET('/apis/panoptes.io/v1alpha1/clusters?clusters=b')).json.items.map((i: { metadata: { name: string } }) => i.metadata.name), ['b'], 'the clusters search selects by name');
    t.equal(list.json.metadata.resourceVersion, String(await store.watermark()), 'listed at the watermark');
    const nf = await status(t, '/apis/panoptes.io/v1alpha1/clusters/nope', 404, 'NotFound');
    t.equal(nf.json.message, 'clusters.panoptes.io "nope" not found');
  });

  t.test('bounds, methods and malformed requests', async (t) => {
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      const r = await http(method, `${base}${P}/api/v1/namespaces/n1/pods/pa-01`, '{}');
      t.equal(r.status, 405, method);
      t.match(r.json, { kind: 'Status', reason: 'MethodNotAllowed' });
    }
    const big = await http('GET', `${base}${P}/api/v1/pods`, 'x'.repeat(4 * 1024 * 1024));
    t.match(big, { status: 413, json: { reason: 'RequestEntityTooLarge', message: 'Request entity too large: limit is 3145728' } }, "a body over kube's 3 MiB, even on a read");
    await status(t, `${P}/api/v1/pods?labelSelector=${'a'.repeat(20_000)}`, 400, 'BadRequest');
    // Watches are served (apiserver/read/watch-http.test.ts); their parameter errors are Status answers too.
    await status(t, `${P}/api/v1/pods?watch=1&sendInitialEvents=true`, 422, 'Invalid');
    const legacy = await GET(`${P}/api/v1/watch/pods?timeoutSeconds=1&resourceVersion=0`);
    t.equal(legacy.status, 200, 'legacy /watch/ path');
    t.match(legacy.text.split('\n')[0], /^\{"type":"ADDED","object":\{/);
    await status(t, `${P}/api//pods`, 404, 'NotFound');
    await status(t, `${P}/api/v1/namespaces/%E0%A4%A/pods`, 400, 'BadRequest');
    await status(t, '/nothing/here', 404, 'NotFound');
    for (const q of ['limit=%00', 'resourceVersion=%FF', 'continue=%7B%7D', 'fieldSelector=%3D%3D%3D', 'labelSelector=%21%21', 'timeout=forever', 'includeObject=All', 'clusters=']) {
      const r = await GET(`${P}/api/v1/pods?${q}`);
      t.ok(r.status >= 400 && r.status < 500, `${q} -> ${r.status}`);
      t.equal(r.json?.kind, 'Status', `${q}: a Status`);
    }
  });

  t.test('health, metrics, openapi', async (t) => {
    t.match(await GET('/healthz'), { status: 200, text: 'ok' });
    t.match(await GET('/livez?verbose'), { status: 200, text: /\[\+\]ping ok\nlivez check passed/ });
    t.match(await GET('/readyz?verbose'), { status: 200, text: /\[\+\]storage ok/ });
    const m = await GET('/metrics');
    t.match(m.text, /panoptes_apiserver_requests_total\{verb="list",group="",resource="pods",code="200"\} \d+/);
    t.match(m.text, /panoptes_apiserver_request_duration_seconds_bucket\{le="0.005",verb="get",group="",resource="pods",code="404"\}/);
    // In flight: this scrape itself (readOnly), nothing else.
    t.match(m.text, /^panoptes_apiserver_current_inflight_requests\{request_kind="readOnly"\} 1$/m);
    t.match(m.text, /^panoptes_apiserver_current_inflight_requests\{request_kind="mutating"\} 0$/m);
    // The process's memory, as prom-client's default metrics name it.
    const rss = Number(/^process_resident_memory_bytes (\d+)$/m.exec(m.text)?.[1]);
    t.ok(rss > 10e6 && rss < 10e9, `process_resident_memory_bytes ${rss}`);
    for (const name of ['nodejs_heap_size_total_bytes', 'nodejs_heap_size_used_bytes', 'nodejs_external_memory_bytes']) t.match(m.text, new RegExp(`^${name} \\d+$`, 'm'));
    const v2 = await GET(`${P}/openapi/v2`);
    t.match(v2.json, { swagger: '2.0', paths: { '/api/v1/namespaces/{namespace}/pods': { get: { operationId: 'listCoreV1NamespacedPod' } } } });
    t.ok(v2.headers.etag);
    t.equal((await GET(`${P}/openapi/v2`, { 'If-None-Match': String(v2.headers.etag) })).status, 304);
    const v3 = await GET(`${P}/openapi/v3`);
    const url = v3.json.paths['api/v1'].serverRelativeURL as string;
    t.match(url, /^\/apis\/panoptes\.io\/v1alpha1\/resources\/openapi\/v3\/api\/v1\?hash=/);
    t.match((await GET(url)).json, { openapi: '3.0.0', paths: { '/api/v1/nodes/{name}': {} } });
    t.match((await GET('/openapi/v2')).json, { paths: { '/apis/panoptes.io/v1alpha1/clusters': {} } });
  });

  t.test('readyz fails while storage is unreachable; discovery answers from memory', async (t) => {
    // A second server on a store that is then closed (this one stays usable for the others).
    const other = await openTestStore('sqlite');
    await seedCluster(other.store, 'x', { ready: true, apiResources }, {});
    const api2 = await createApiserver({ store: other.store, catalogOptions: { refreshMs: 100 } });
    const base2 = await api2.listen('127.0.0.1', 0);
    t.teardown(() => api2.close());
    t.equal((await get(`${base2}/readyz`)).status, 200);
    await other.close();
    const r = await get(`${base2}/readyz`);
    t.equal(r.status, 500);
    t.match(r.text, /\[-\]storage failed/);
    t.match(r.text, /readyz check failed/);
    t.equal((await get(`${base2}/livez`)).status, 200, 'livez stays ok');
    await new Promise((res) => setTimeout(res, 250));
    const d = await get(`${base2}${P}/api/v1`);
    t.equal(d.status, 200, 'discovery answers from memory');
    t.equal(d.json.resources.length, 3);
    t.equal((await get(`${base2}${P}/apis`)).status, 200);
    const l = await get(`${base2}${P}/api/v1/pods`);
    t.equal(l.json?.kind, 'Status', 'a list fails with a Status');
  });
});

t.test("a member's CRD that changes: discovery follows from the change stream, not from a period", async (t) => {
  const { store, close } = await openTestStore('sqlite');
  await seedCluster(store, 'a', { phase: 'Ready', ready: true, apiResources: [{ group: 'example.com', version: 'v1', resource: 'widgets' }] });
  await store.applyBatch('a', [crdEvent('ADDED', 'widgets', 'Widget', '1', ['wd'])]);
  // Both periods far beyond the bounded wait below: what is served within it came from the change.
  const api = await createApiserver({ store, catalogOptions: { refreshMs: 600_000, storedRefreshMs: 600_000 } });
  const base = await api.listen('127.0.0.1', 0);
  t.teardown(async () => {
    await api.close();
    await close();
  });
  const shortNames = async () => ((await get(`${base}${P}/apis/example.com/v1`)).json as { resources?: Array<{ name: string; shortNames?: string[] }> }).resources?.find((r) => r.name === 'widgets')?.shortNames;
  t.same(await shortNames(), ['wd']);
  await store.applyBatch('a', [crdEvent('MODIFIED', 'widgets', 'Widget', '2', ['wdg'])]);
  const started = Date.now();
  let seen: string[] | undefined;
  while (Date.now() - started < 20_000 && !(seen = await shortNames())?.includes('wdg')) await new Promise((r) => setTimeout(r, 50));
  t.same(seen, ['wdg'], `the changed CRD is served (${Date.now() - started} ms)`);
});
