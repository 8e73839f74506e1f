// Table and PartialObjectMetadata answers of a simulated cluster over HTTP, as kube-apiserver
// gives them: list, get, watch and writes; Accept negotiation; CRD printer columns.
import t from 'tap';
import { get, http, openWatch, simCluster, until, type WatchEvent } from './testutil.ts';

const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';
const POML = 'application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json';
const POM = 'application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io,application/json';
const merge = { 'Content-Type': 'application/merge-patch+json' };

const cm = (name: string, data: Record<string, string> = {}) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, labels: { app: 'x' } }, data });

t.test('lists as Tables: the kind columns, no Cluster column, rows with PartialObjectMetadata', async (t) => {
  const c = await simCluster(t, { workload: true });
  const r = await get(`${c.url}/api/v1/pods?limit=2`, { Accept: TABLE });
  t.equal(r.status, 200);
  t.equal(r.headers['content-type'], 'application/json', 'kube-apiserver answers with the serializer media type');
  t.match(r.json, { kind: 'Table', apiVersion: 'meta.k8s.io/v1', metadata: { resourceVersion: String(c.store.resourceVersion), continue: /./, remainingItemCount: c.store.count('/pods') - 2 } });
  t.same(r.json.columnDefinitions.map((col: { name: string }) => col.name), ['Name', 'Ready', 'Status', 'Restarts', 'Age', 'IP', 'Node', 'Nominated Node', 'Readiness Gates']);
  t.equal(r.json.rows.length, 2);
  const first = c.store.list('/pods', { limit: 1 }).items[0];
  t.match(r.json.rows[0], { cells: [first.metadata.name, /^\d+\/\d+$/, /\w/, '0', /\d+s$/], object: { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: { name: first.metadata.name, uid: first.metadata.uid } } });
  t.notOk('spec' in r.json.rows[0].object);
  const next = await get(`${c.url}/api/v1/pods?limit=2&continue=${encodeURIComponent(r.json.metadata.continue)}`, { Accept: TABLE });
  t.equal(next.json.metadata.resourceVersion, r.json.metadata.resourceVersion, 'pages of a Table keep the first page\'s rv');
  t.not(next.json.rows[0].cells[0], r.json.rows[0].cells[0]);

  const finished = await get(`${c.url}/api/v1/pods?fieldSelector=status.phase%3DSucceeded`, { Accept: TABLE });
  t.match(finished.json.rows[0].conditions, [{ type: 'Completed', status: 'True', reason: 'Succeeded' }], 'pod row conditions');
  const deploys = await get(`${c.url}/apis/apps/v1/namespaces/shop/deployments`, { Accept: TABLE });
  t.same(deploys.json.columnDefinitions.map((col: { name: string; priority: number }) => [col.name, col.priority]), [['Name', 0], ['Ready', 0], ['Up-to-date', 0], ['Available', 0], ['Age', 0], ['Containers', 1], ['Images', 1], ['Selector', 1]]);
  t.match(deploys.json.rows.find((row: { cells: unknown[] }) => row.cells[0] === 'frontend'), { cells: ['frontend', '3/3', 3, 3, /s$/, 'frontend', /frontend/, 'app=frontend'] });
  const leases = await get(`${c.url}/apis/coordination.k8s.io/v1/leases`, { Accept: TABLE });
  t.same(leases.json.columnDefinitions.map((col: { name: string }) => col.name), ['Name', 'Created At'], 'kinds without a printer: the default columns');
  t.same(leases.json.rows, [], 'an empty Table');
});

t.test('Table v1beta1 and includeObject None, Metadata, Object', async (t) => {
  const c = await simCluster(t);
  const base = `${c.url}/api/v1/namespaces/default/configmaps`;
  await http('POST', base, cm('web', { a: '1', b: '2' }));
  const beta = await get(base, { Accept: 'application/json;as=Table;v=v1beta1;g=meta.k8s.io' });
  t.match(beta.json, { kind: 'Table', apiVersion: 'meta.k8s.io/v1beta1', rows: [{ cells: ['web', 2, /s$/], object: { apiVersion: 'meta.k8s.io/v1beta1', kind: 'PartialObjectMetadata' } }] });
  const none = await get(`${base}?includeObject=None`, { Accept: TABLE });
  t.same(none.json.rows, [{ cells: ['web', 2, none.json.rows[0].cells[2]] }], 'no object');
  const full = await get(`${base}?includeObject=Object`, { Accept: TABLE });
  t.match(full.json.rows[0].object, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'web' }, data: { a: '1', b: '2' } });
  const bad = await get(`${base}?includeObject=Everything`, { Accept: TABLE });
  t.match([bad.status, bad.json.reason], [400, 'BadRequest'], 'a bad includeObject is refused for a Table');
  const json = await get(`${base}?includeObject=Everything`);
  t.equal(json.json.kind, 'ConfigMapList', '...and ignored for plain JSON, as kube-apiserver does');
});

t.test('get by name: a Table of one row at the object\'s rv, or PartialObjectMetadata', async (t) => {
  const c = await simCluster(t);
  const base = `${c.url}/api/v1/namespaces/default/configmaps`;
  const made = (await http('POST', base, cm('one', { k: 'v' }))).json;
  await http('POST', base, cm('two'));
  const tab = await get(`${base}/one`, { Accept: TABLE });
  t.match(tab.json, { kind: 'Table', metadata: { resourceVersion: made.metadata.resourceVersion }, rows: [{ cells: ['one', 1, /s$/] }] });
  t.equal(tab.json.rows.length, 1);
  t.equal(tab.json.columnDefinitions.length, 3);
  const pom = await get(`${base}/one`, { Accept: POM });
  t.same(pom.json, { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: made.metadata });
  const missing = await get(`${base}/nope`, { Accept: TABLE });
  t.match(missing.json, { kind: 'Status', reason: 'NotFound', code: 404 }, 'errors stay Status objects');
});

t.test('PartialObjectMetadataList for lists, with paging and selectors', async (t) => {
  const c = await simCluster(t);
  const base = `${c.url}/api/v1/namespaces/default/configmaps`;
  for (const n of ['a', 'b', 'c']) await http('POST', base, cm(n, { big: 'x'.repeat(1000) }));
  const page = await get(`${base}?limit=2&labelSelector=app%3Dx`, { Accept: POML });
  t.equal(page.headers['content-type'], 'application/json');
  t.match(page.json, { kind: 'PartialObjectMetadataList', apiVersion: 'meta.k8s.io/v1', metadata: { resourceVersion: String(c.store.resourceVersion), continue: /./ } });
  t.same(page.json.items.map((i: { kind: string; metadata: { name: string } }) => [i.kind, i.metadata.name]), [['PartialObjectMetadata', 'a'], ['PartialObjectMetadata', 'b']]);
  t.notOk(page.text.includes('xxxx'), 'no data, metadata only');
  const rest = await get(`${base}?limit=2&labelSelector=app%3Dx&continue=${encodeURIComponent(page.json.metadata.continue)}`, { Accept: POML });
  t.same(rest.json.items.map((i: { metadata: { name: string } }) => i.metadata.name), ['c']);
  // What client-go's metadata informer sends (protobuf first).
  const informer = await get(base, { Accept: 'application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json' });
  t.equal(informer.json.kind, 'PartialObjectMetadataList');
  const beta = await get(base, { Accept: 'application/json;as=PartialObjectMetadataList;v=v1beta1;g=meta.k8s.io' });
  t.match(beta.json, { apiVersion: 'meta.k8s.io/v1beta1', items: [{ apiVersion: 'meta.k8s.io/v1beta1' }] });
});

t.test('Accept negotiation: the first acceptable media type wins, JSON as fallback, 406 otherwise', async (t) => {
  const c = await simCluster(t);
  const url = `${c.url}/api/v1/namespaces`;
  t.equal((await get(url, { Accept: `${POML.split(',')[0]},${TABLE}` })).json.kind, 'PartialObjectMetadataList');
  t.equal((await get(url, { Accept: `${TABLE.split(',')[0]},${POML}` })).json.kind, 'Table');
  t.equal((await get(url, { Accept: 'application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1;g=meta.k8s.io' })).json.kind, 'Table', 'protobuf is skipped');
  t.equal((await get(url, { Accept: 'application/json;as=Table;v=v1alpha1;g=meta.k8s.io,application/json' })).json.kind, 'NamespaceList', 'an unknown Table version falls back to JSON');
  t.equal((await get(url, { Accept: '*/*' })).json.kind, 'NamespaceList');
  for (const accept of ['application/yaml', 'application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io', 'application/json;as=Table;v=v1;g=example.com', 'application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io']) {
    const r = await get(url, { Accept: accept });
    t.match([r.status, r.json], [406, { kind: 'Status', reason: 'NotAcceptable', code: 406 }], accept);
  }
  const w = await get(`${url}?watch=1`, { Accept: 'application/yaml' });
  t.equal(w.status, 406, 'watches negotiate too');
});

t.test('writes answer in the negotiated form; Status answers pass through', async (t) => {
  const c = await simCluster(t);
  const base = `${c.url}/api/v1/namespaces/default/configmaps`;
  const created = await http('POST', base, cm('w', { a: '1' }), { Accept: TABLE });
  t.match([created.status, created.json], [201, { kind: 'Table', rows: [{ cells: ['w', 1, /s$/] }] }]);
  const patched = await http('PATCH', `${base}/w`, { data: { a: '1', b: '2' } }, { ...merge, Accept: POM });
  t.match(patched.json, { kind: 'PartialObjectMetadata', metadata: { name: 'w' } });
  const deleted = await http('DELETE', `${base}/w`, undefined, { Accept: TABLE });
  t.match(deleted.json, { kind: 'Status', status: 'Success', details: { name: 'w' } });
  const scale = await get(`${c.url}/apis/apps/v1/namespaces/default/deployments`, { Accept: TABLE });
  t.equal(scale.json.kind, 'Table');
});

t.test('custom resources: the served version\'s additionalPrinterColumns, Age when it has none', async (t) => {
  const c = await simCluster(t);
  const crd = {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'gadgets.example.com' },
    spec: {
      group: 'example.com',
      scope: 'Namespaced',
      names: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget' },
      versions: [
        {
          name: 'v2',
          served: true,
          storage: true,
          additionalPrinterColumns: [
            { name: 'Size', type: 'integer', jsonPath: '.spec.size' },
            { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status', priority: 1 },
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
          ],
        },
        { name: 'v1', served: true, storage: false },
      ],
    },
  };
  t.equal((await http('POST', `${c.url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions`, crd)).status, 201);
  const gadget = { apiVersion: 'example.com/v2', kind: 'Gadget', metadata: { name: 'g1' }, spec: { size: 3.7 }, status: { conditions: [{ type: 'Ready', status: 'True' }] } };
  t.equal((await http('POST', `${c.url}/apis/example.com/v2/namespaces/default/gadgets`, gadget)).status, 201);
  const v2 = await get(`${c.url}/apis/example.com/v2/namespaces/default/gadgets`, { Accept: TABLE });
  t.same(v2.json.columnDefinitions.map((col: { name: string; type: string; priority: number }) => [col.name, col.type, col.priority]), [['Name', 'string', 0], ['Size', 'integer', 0], ['Ready', 'string', 1], ['Age', 'date', 0]]);
  t.match(v2.json.rows, [{ cells: ['g1', 3, 'True', /^\d+s$/] }], 'integer cells truncated; the date is an age');
  await http('PATCH', `${c.url}/apis/example.com/v2/namespaces/default/gadgets/g1`, { status: null }, merge);
  t.match((await get(`${c.url}/apis/example.com/v2/namespaces/default/gadgets/g1`, { Accept: TABLE })).json.rows, [{ cells: ['g1', 3, null, /s$/] }], 'a missing value is a null cell');
  const v1 = await get(`${c.url}/apis/example.com/v1/namespaces/default/gadgets/g1`, { Accept: TABLE });
  t.same(v1.json.columnDefinitions.map((col: { name: string }) => col.name), ['Name', 'Age'], 'a version without columns gets Age');
  t.match(v1.json.rows, [{ cells: ['g1', /^\d+s$/], object: { kind: 'PartialObjectMetadata' } }]);
  const full = await get(`${c.url}/apis/example.com/v1/namespaces/default/gadgets/g1?includeObject=Object`, { Accept: TABLE });
  t.equal(full.json.rows[0].object.apiVersion, 'example.com/v1', 'the row object is served at the URL version');
});

t.test('watches: one Table per event, columnDefinitions on the first only; PartialObjectMetadata events', async (t) => {
  const c = await simCluster(t, { bookmarkIntervalMs: 300 });
  const base = `${c.url}/api/v1/namespaces/default/configmaps`;
  await http('POST', base, cm('a'));
  const w = await openWatch(`${base}?watch=1&allowWatchBookmarks=true`, { Accept: TABLE });
  t.equal(w.status, 200);
  t.equal(w.headers['content-type'], 'application/json');
  await w.waitFor(1);
  await http('PATCH', `${base}/a`, { data: { k: 'v' } }, merge);
  await http('DELETE', `${base}/a`);
  const objectEvents = () => w.events.filter((e) => e.type !== 'BOOKMARK');
  t.ok(await until(() => objectEvents().length === 3 && w.events.some((e) => e.type === 'BOOKMARK'), 5000), 'three changes and a bookmark');
  w.close();
  const events: WatchEvent[] = w.events;
  t.same(objectEvents().map((e) => [e.type, e.object.kind, e.object.rows.length]), [['ADDED', 'Table', 1], ['MODIFIED', 'Table', 1], ['DELETED', 'Table', 1]]);
  t.same(events[0].object.columnDefinitions.map((col: { name: string }) => col.name), ['Name', 'Data', 'Age'], 'the first event carries the columns');
  t.ok(events.slice(1).every((e) => e.object.columnDefinitions === null), 'later events carry no columnDefinitions');
  const modified = objectEvents()[1].object;
  t.match(modified, { metadata: { resourceVersion: modified.rows[0].object.metadata.resourceVersion }, rows: [{ cells: ['a', 1, /s$/], object: { kind: 'PartialObjectMetadata', metadata: { name: 'a' } } }] });
  const bookmark = events.find((e) => e.type === 'BOOKMARK');
  t.match(bookmark?.object, { kind: 'Table', columnDefinitions: null, metadata: { resourceVersion: /^\d+$/ }, rows: [{ cells: ['', 0, '<unknown>'] }] }, 'a bookmark is transformed too, as kube-apiserver does');

  await http('POST', base, cm('c', { x: 'y', z: 'w' }));
  const named = await openWatch(`${base}?watch=1&fieldSelector=metadata.name%3Dc&includeObject=None`, { Accept: 'application/json;as=Table;v=v1beta1;g=meta.k8s.io' });
  const [one] = await named.waitFor(1);
  named.close();
  t.match(one.object, { kind: 'Table', apiVersion: 'meta.k8s.io/v1beta1', rows: [{ cells: ['c', 2, /s$/] }] });
  t.notOk('object' in one.object.rows[0]);
  t.equal(one.object.columnDefinitions.length, 3);

  const p = await openWatch(`${base}?watch=1&resourceVersion=0&allowWatchBookmarks=true`, { Accept: POM });
  await http('POST', base, cm('b', { big: 'payload' }));
  const pev = await p.waitFor(3);
  p.close();
  t.same(pev.slice(0, 2).map((e) => [e.type, e.object.kind, e.object.metadata.name]), [['ADDED', 'PartialObjectMetadata', 'c'], ['ADDED', 'PartialObjectMetadata', 'b']]);
  t.notOk('data' in pev[1].object);
  t.match(pev.find((e) => e.type === 'BOOKMARK')?.object, { kind: 'PartialObjectMetadata', metadata: { resourceVersion: /\d+/ } });

  // A compacted rv: the ERROR event's Status passes through untransformed.
  c.faults.expireHistory();
  const old = await openWatch(`${base}?watch=1&resourceVersion=1`, { Accept: TABLE });
  t.equal(await old.ended, true);
  t.match(old.events, [{ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired' } }]);
});
