// collectionresources over HTTP, on both backends: the list of collections, a collection's
// objects (bare kinds, the kinds of `any`, a declared collection), one rv and exact paging
// across kinds, selectors and search across kinds, the one-cluster view, Tables, watch of a
// collection (every kind's events, in rv order), and malformed terms as 400s naming them.
import t from 'tap';
import { get, http, openWatch } from '../../hack/sim/testutil.ts';
import { setLogLevel } from '../../lib/log.ts';
import { backends, openTestStore, seedCluster, stopTestPostgres } from '../../storage/testing.ts';
import type { KubeObject, UpstreamEvent } from '../../storage/types.ts';
import { createApiserver } from '../server.ts';
import { builtinCollections } from './definitions.ts';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');
t.teardown(stopTestPostgres);

const C = '/apis/panoptes.io/v1alpha1/collectionresources';
const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json';

const apiResources = [
  { group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, singularName: 'pod' },
  { group: '', version: 'v1', resource: 'configmaps', kind: 'ConfigMap', namespaced: true, singularName: 'configmap' },
  { group: 'apps', version: 'v1', resource: 'deployments', kind: 'Deployment', namespaced: true, singularName: 'deployment' },
  { group: 'apps', version: 'v1', resource: 'replicasets', kind: 'ReplicaSet', namespaced: true, singularName: 'replicaset' },
  { group: 'batch', version: 'v1', resource: 'jobs', kind: 'Job', namespaced: true, singularName: 'job' },
];
const kinds: Record<string, [string, string, string]> = { pods: ['', 'v1', 'Pod'], configmaps: ['', 'v1', 'ConfigMap'], deployments: ['apps', 'v1', 'Deployment'], replicasets: ['apps', 'v1', 'ReplicaSet'], jobs: ['batch', 'v1', 'Job'] };

function ev(resource: string, ns: string, name: string, rv: string, opts: { owned?: boolean; app?: string; type?: 'ADDED' | 'MODIFIED' | 'DELETED' } = {}): UpstreamEvent {
  const [group, version, kind] = kinds[resource];
  const object: KubeObject = {
    apiVersion: group ? `${group}/${version}` : version,
    kind,
    metadata: {
      name,
      namespace: ns,
      uid: `${resource}-${ns}-${name}`,
      resourceVersion: rv,
      creationTimestamp: '2026-01-01T00:00:00Z',
      labels: { app: opts.app ?? 'web' },
      ...(opts.owned ? { ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'x', uid: 'owner', controller: true }] } : {}),
    },
  };
  return { type: opts.type ?? 'ADDED', group, version, resource, object };
}

const key = (o: KubeObject) => `${o.kind}/${o.metadata?.namespace}/${o.metadata?.name}/${o.metadata?.annotations?.['panoptes.io/cluster']}`;

for (const backend of backends) {
  t.test(backend, async (t) => {
    const { store, close } = await openTestStore(backend);
    for (const c of ['east', 'west']) await seedCluster(store, c, { phase: 'Ready', ready: true, apiResources });
    // A cluster that syncs pods only, and is away: a Warning where a collection reads pods.
    await seedCluster(store, 'lab', { phase: 'Unreachable', ready: false, message: 'GET /readyz: ECONNREFUSED', lastTransitionTime: '2026-01-01T00:00:00Z', apiResources: apiResources.slice(0, 1) });
    for (const c of ['east', 'west']) {
      const events: UpstreamEvent[] = [];
      for (const ns of ['shop', 'lab']) {
        for (let i = 0; i < 4; i++) {
          const app = i % 2 ? 'db' : 'web';
          events.push(ev('deployments', ns, `web-${i}`, `${10 + i}`, { app }));
          events.push(ev('replicasets', ns, `web-${i}`, `${20 + i}`, { app, owned: i !== 3 }));
          events.push(ev('pods', ns, `web-${i}`, `${30 + i}`, { app, owned: i !== 0 }));
          events.push(ev('jobs', ns, `job-${i}`, `${40 + i}`, { app }));
          events.push(ev('configmaps', ns, `web-${i}`, `${50 + i}`, { app }));
        }
      }
      await store.applyBatch(c, events);
    }
    const collections = [...builtinCollections, { name: 'config', kinds: [{ group: '', resource: 'configmaps' }] }];
    const api = await createApiserver({ store, catalogOptions: { refreshMs: 100 }, limits: { tooLargeWaitMs: 300, maxLimit: 50 }, collections });
    const base = await api.listen('127.0.0.1', 0);
    t.teardown(async () => {
      await api.close();
      await close();
    });
    const GET = (path: string, headers: Record<string, string> = {}) => get(base + path, headers);

    /** Every page of a collection: its objects, and the rvs the pages carried. */
    async function pages(path: string, limit: number) {
      const items: KubeObject[] = [];
      const rvs = new Set<string>();
      let token = '';
      for (let i = 0; i < 200; i++) {
        const sep = path.includes('?') ? '&' : '?';
        const r = await GET(`${path}${sep}limit=${limit}${token ? `&continue=${encodeURIComponent(token)}` : ''}`);
        if (r.status !== 200) throw new Error(`${path}: ${r.status} ${r.text}`);
        rvs.add(r.json.metadata.resourceVersion);
        items.push(...(r.json.items as KubeObject[]));
        token = r.json.continue ?? '';
        if (!token) return { items, rvs };
      }
      throw new Error('more than 200 pages');
    }

    t.test('the list of collections, as kubectl get collectionresources shows it', async (t) => {
      const r = await GET(C);
      t.equal(r.status, 200);
      t.equal(r.json.kind, 'CollectionResourceList');
      t.same(r.json.items.map((i: { metadata: { name: string } }) => i.metadata.name), ['any', 'workloads', 'config']);
      const workloads = r.json.items[1];
      t.same(workloads.resourceTypes, [
        { group: 'apps', version: 'v1', kind: 'Deployment', resource: 'deployments' },
        { group: 'batch', version: 'v1', kind: 'Job', resource: 'jobs' },
        { group: 'apps', version: 'v1', kind: 'ReplicaSet', resource: 'replicasets', bare: true },
        { group: '', version: 'v1', kind: 'Pod', resource: 'pods', bare: true },
      ], 'the kinds the members sync, bare ones marked');
      const table = await GET(C, { Accept: TABLE });
      t.same(table.json.columnDefinitions.map((c: { name: string }) => c.name), ['Name', 'Resources']);
      t.match(table.json.rows[1].cells, ['workloads', /^deployments\.apps,statefulsets\.apps,daemonsets\.apps,jobs\.batch,cronjobs\.batch,replicasets\.apps \(bare\),pods \(bare\)$/]);
    });

    t.test('workloads: every kind in one list, bare ReplicaSets and Pods only', async (t) => {
      const r = await GET(`${C}/workloads`);
      t.equal(r.status, 200, r.text);
      t.equal(r.json.kind, 'CollectionResource');
      t.equal(r.json.apiVersion, 'panoptes.io/v1alpha1');
      t.equal(r.json.metadata.name, 'workloads');
      t.match(r.json.metadata.resourceVersion, /^\d+$/);
      const items = r.json.items as KubeObject[];
      const count = (kind: string) => items.filter((i) => i.kind === kind).length;
      t.equal(count('Deployment'), 16);
      t.equal(count('Job'), 16);
      t.equal(count('ReplicaSet'), 4, 'the ReplicaSets without an owner');
      t.equal(count('Pod'), 4, 'the Pods without an owner');
      t.equal(count('ConfigMap'), 0);
      t.equal(items.length, 40);
      t.equal(r.json.continue, undefined);
    });

    t.test('pages: one rv, every object once, in order across kinds, at any page size', async (t) => {
      const all = (await GET(`${C}/workloads`)).json.items.map(key);
      for (const limit of [1, 3, 7]) {
        const { items, rvs } = await pages(`${C}/workloads`, limit);
        t.same(items.map(key), all, `limit ${limit}`);
        t.equal(rvs.size, 1);
      }
      const first = await GET(`${C}/config?limit=5`);
      t.equal(first.json.remainingItemCount, 16 - 5, 'remainingItemCount without bare kinds or selectors');
      const capped = await GET(`${C}/workloads?limit=100000`);
      t.equal(capped.json.items.length, 40, 'limit capped at --max-limit (50 here): one page');
      const broken = await GET(`${C}/workloads?limit=2&continue=garbage`);
      t.equal(broken.status, 400);
    });

    t.test('selectors and the search apply across kinds; the one-cluster view reads its cluster', async (t) => {
      const web = (await GET(`${C}/workloads?labelSelector=app%3Dweb`)).json.items as KubeObject[];
      t.ok(web.length > 0 && web.every((i) => i.metadata?.labels?.app === 'web'));
      t.equal(web.length, 8 + 8 + 4, 'deployments, jobs and bare pods labelled web (the bare ReplicaSets are db)');
      const east = (await GET(`${C}/workloads?clusters=east&namespaces=shop`)).json.items as KubeObject[];
      t.equal(east.length, 10);
      t.ok(east.every((i) => i.metadata?.namespace === 'shop' && i.metadata?.annotations?.['panoptes.io/cluster'] === 'east'));
      const viaLabels = (await GET(`${C}/workloads?labelSelector=${encodeURIComponent('search.panoptes.io/clusters=east,search.panoptes.io/namespaces=shop')}`)).json.items as KubeObject[];
      t.same(viaLabels.map(key), east.map(key), 'the same through search.panoptes.io/ label keys');
      const view = await GET(`/apis/panoptes.io/v1alpha1/resources/clusters/west/apis/panoptes.io/v1alpha1/collectionresources/workloads`);
      t.equal(view.status, 200);
      t.equal(view.json.items.length, 20);
      t.ok(view.json.items.every((i: KubeObject) => i.metadata?.annotations?.['panoptes.io/cluster'] === 'west'));
      const byName = (await GET(`${C}/workloads?fieldSelector=metadata.name%3Dweb-3`)).json.items as KubeObject[];
      t.same(byName.map((i) => i.kind).sort(), ['Deployment', 'Deployment', 'Deployment', 'Deployment', 'ReplicaSet', 'ReplicaSet', 'ReplicaSet', 'ReplicaSet'], 'metadata.name across kinds (pod web-3 is owned)');
    });

    t.test('any: the kinds of groups= and resources=, and their label keys', async (t) => {
      const kindsOf = async (q: string) => [...new Set(((await GET(`${C}/any?${q}`)).json.items as KubeObject[]).map((i) => i.kind))].sort();
      t.same(await kindsOf('resources=deployments.apps,pods'), ['Deployment', 'Pod']);
      t.same(await kindsOf('resources=apps/replicasets,/configmaps'), ['ConfigMap', 'ReplicaSet'], "Clusterpedia's forms");
      t.same(await kindsOf('groups=batch'), ['Job']);
      t.same(await kindsOf('groups=apps/v1&resources=pods'), ['Deployment', 'Pod', 'ReplicaSet']);
      t.same(await kindsOf(`labelSelector=${encodeURIComponent('search.panoptes.io/resources in (configmaps,jobs.batch)')}`), ['ConfigMap', 'Job']);
      t.same(await kindsOf(`labelSelector=${encodeURIComponent('search.panoptes.io/groups=core,app=db')}`), ['ConfigMap', 'Pod'], 'core is the core group; other label requirements stay selectors');
      const any = await GET(`${C}/any?resources=pods`);
      t.same(any.json.resourceTypes, [{ group: '', version: 'v1', kind: 'Pod', resource: 'pods' }]);
      t.equal(any.json.items.length, 16, 'any pod, owned or not: bare is the collection’s, not the kind’s');
    });

    t.test('malformed or misplaced terms: 400 naming them; unknown collection 404; writes 405', async (t) => {
      const bad = async (path: string, re: RegExp) => {
        const r = await GET(path);
        t.equal(r.status, 400, path);
        t.match(r.json, { kind: 'Status', reason: 'BadRequest', message: re }, path);
      };
      await bad(`${C}/any`, /groups= or resources=/);
      await bad(`${C}/any?resources=widgets.example.com`, /resources: "widgets\.example\.com" is not a resource any member cluster syncs/);
      await bad(`${C}/any?groups=nosuch`, /groups: "nosuch" is not a group/);
      await bad(`${C}/any?resources=a/b/c/d`, /resources: "a\/b\/c\/d" is not/);
      await bad(`${C}/any?resources=`, /resources: empty value/);
      await bad(`${C}/workloads?resources=pods`, /choose the kinds of the any collection; workloads reads its own/);
      await bad(`${C}/any?labelSelector=${encodeURIComponent('search.panoptes.io/resources notin (pods)')}`, /supports only =, == and in/);
      await bad(`${C}/workloads?clusters=nosuch`, /unknown cluster "nosuch"/);
      await bad(`${C}/workloads?bogus=1`, /unknown query parameter "bogus"/);
      await bad(`${C}/workloads?fieldSelector=status.phase%3DRunning`, /fieldSelector status\.phase: the kinds of a collection share only the fields metadata\.name and metadata\.namespace/);
      const missing = await GET(`${C}/nosuch`);
      t.equal(missing.status, 404);
      t.match(missing.json, { reason: 'NotFound', message: /collectionresources.panoptes.io "nosuch" not found/ });
      const post = await http('POST', `${base}${C}`, { kind: 'CollectionResource' });
      t.equal(post.status, 405);
    });

    t.test('the list form (search.panoptes.io/collection, as kubectl -l reaches it): a List of the objects, paged by its ListMeta', async (t) => {
      const all = (await GET(`${C}/workloads`)).json.items.map(key);
      const selector = encodeURIComponent('search.panoptes.io/collection=workloads');
      const items: KubeObject[] = [];
      const rvs = new Set<string>();
      let token = '';
      for (let i = 0; i < 100; i++) {
        const r = await GET(`${C}?labelSelector=${selector}&limit=6${token ? `&continue=${encodeURIComponent(token)}` : ''}`);
        t.equal(r.status, 200, r.text);
        t.equal(r.json.kind, 'List');
        rvs.add(r.json.metadata.resourceVersion);
        items.push(...r.json.items);
        token = r.json.metadata.continue ?? '';
        if (!token) break;
      }
      t.same(items.map(key), all);
      t.equal(rvs.size, 1);
      const byParam = await GET(`${C}?collection=any&resources=jobs.batch`);
      t.equal(byParam.json.items.length, 16, 'collection= and resources= as query parameters');
      const two = await GET(`${C}?labelSelector=${encodeURIComponent('search.panoptes.io/collection in (workloads,any)')}`);
      t.equal(two.status, 400);
      t.match(two.json.message, /name one collection/);
      const both = await GET(`${C}/workloads?collection=any`);
      t.equal(both.status, 400);
      t.match(both.json.message, /the path names the collection/);
      const bare = await GET(`${C}?resources=pods`);
      t.equal(bare.status, 400);
      t.match(bare.json.message, /name it \(collectionresources\/any, or search.panoptes.io\/collection=any\)/);
      const partial = await GET(`${C}?collection=workloads&limit=2`, { Accept: 'application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io' });
      t.equal(partial.json.kind, 'PartialObjectMetadataList');
      t.equal(partial.json.items.length, 2);
    });

    t.test('resourceVersion as for a list; a Warning when a cluster read from is not Ready', async (t) => {
      const now = (await GET(`${C}/workloads`)).json.metadata.resourceVersion as string;
      const notOlder = await GET(`${C}/workloads?resourceVersion=${now}`);
      t.equal(notOlder.status, 200, 'without a limit, N is a lower bound');
      const future = await GET(`${C}/workloads?resourceVersion=${Number(now) + 1000}`);
      t.equal(future.status, 504);
      t.match(future.json, { reason: 'Timeout' });
      const exact = await GET(`${C}/workloads?resourceVersion=${now}&resourceVersionMatch=Exact&limit=5`);
      t.equal(exact.status, 200);
      t.equal(exact.json.metadata.resourceVersion, now);
      t.match(notOlder.headers.warning, /cluster lab is not Ready/, 'workloads reads pods, which lab syncs');
      t.equal((await GET(`${C}/any?resources=jobs.batch`)).headers.warning, undefined, 'lab syncs no jobs');
    });

    t.test('a watch from resourceVersion 0 starts with every object of the collection', async (t) => {
      const w = await openWatch(`${base}${C}/any?resources=jobs.batch&watch=true&resourceVersion=0`);
      t.teardown(() => w.close());
      const events = await w.waitFor(16, 5000);
      t.equal(events.length, 16);
      t.ok(events.every((e) => e.type === 'ADDED' && e.object.kind === 'Job'));
    });

    t.test('Table: KIND, CLUSTER, NAMESPACE, NAME, AGE', async (t) => {
      const r = await GET(`${C}/workloads?limit=3`, { Accept: TABLE });
      t.equal(r.status, 200);
      t.equal(r.json.kind, 'Table');
      t.same(r.json.columnDefinitions.map((c: { name: string }) => c.name), ['Kind', 'Cluster', 'Namespace', 'Name', 'Age']);
      t.equal(r.json.rows.length, 3);
      t.match(r.json.rows[0].cells, [/^(Deployment\.apps|Job\.batch|Pod|ReplicaSet\.apps)$/, /^(east|west)$/, 'lab', /./, /^\d+d$/]);
      t.ok(r.json.metadata.continue, 'the continue key of the next page');
      t.equal(r.json.rows[0].object.kind, 'PartialObjectMetadata');
    });

    t.test('watch of a collection: each kind’s events in rv order, bare kinds by transition, as JSON and as Table', async (t) => {
      const rv = (await GET(`${C}/workloads`)).json.metadata.resourceVersion;
      const w = await openWatch(`${base}${C}/workloads?watch=true&resourceVersion=${rv}`);
      t.teardown(() => w.close());
      t.equal(w.status, 200);
      await store.applyBatch('east', [ev('deployments', 'shop', 'new', '900'), ev('configmaps', 'shop', 'new', '901'), ev('pods', 'shop', 'owned', '902', { owned: true }), ev('jobs', 'shop', 'new', '903')]);
      await store.applyBatch('east', [ev('pods', 'shop', 'web-1', '904', { type: 'MODIFIED' })]); // its owner went: it becomes bare
      const events = await w.waitFor(3, 5000);
      t.same(events.map((e) => `${e.type} ${e.object.kind}/${e.object.metadata.name}`), ['ADDED Deployment/new', 'ADDED Job/new', 'ADDED Pod/web-1']);
      const rvs = events.map((e) => Number(e.object.metadata.resourceVersion));
      t.same(rvs, [...rvs].sort((a, b) => a - b), 'in rv order');
      // As kubectl get -w asks for it: Table events, the first with the columns.
      const now = (await GET(`${C}/workloads`)).json.metadata.resourceVersion;
      const tw = await openWatch(`${base}${C}?labelSelector=${encodeURIComponent('search.panoptes.io/collection=workloads')}&watch=true&resourceVersion=${now}`, { Accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' });
      t.teardown(() => tw.close());
      await store.applyBatch('west', [ev('jobs', 'lab', 'tabled', '905')]);
      const [row] = await tw.waitFor(1, 5000);
      t.equal(row?.object.kind, 'Table');
      t.same(row?.object.columnDefinitions.map((c: { name: string }) => c.name), ['Kind', 'Cluster', 'Namespace', 'Name', 'Age']);
      t.match(row?.object.rows[0].cells, ['Job.batch', 'west', 'lab', 'tabled', /\d+d/]);
    });
  });
}
