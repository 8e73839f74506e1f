// OpenAPI over HTTP from member documents in storage (fetched from simulated clusters by
// synchro's fetcher, and hand-made ones): both prefixes and the root, v2 validity, v3 per group
// version, the served version's schema, open schemas for kinds no member described, protobuf,
// 406, 301 on an old hash, 304, and documents shared between views with the same members.
import t from 'tap';
import { startSimCluster } from '../../hack/sim/cluster.ts';
import { get, http } from '../../hack/sim/testutil.ts';
import { logger, setLogLevel } from '../../lib/log.ts';
import { clusterLease } from '../../storage/leases.ts';
import { openTestStore, seedCluster, takeLease, underTestLease } from '../../storage/testing.ts';
import { connectCluster } from '../../member/client.ts';
import { SynchroMetrics } from '../../synchro/metrics/metrics.ts';
import { OpenAPIFetcher } from '../../synchro/cluster/openapi.ts';
import { createApiserver } from '../server.ts';
import { openapiV3Problems, swaggerProblems, type Kind } from './testutil.ts';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');

const P = '/apis/panoptes.io/v1alpha1/resources';
const PROTO = 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf';

const res = (group: string, version: string, resource: string, kind: string, namespaced = true) => ({ group, version, resource, kind, namespaced });
const memberKinds = [res('', 'v1', 'pods', 'Pod'), res('', 'v1', 'configmaps', 'ConfigMap'), res('', 'v1', 'nodes', 'Node', false), res('apps', 'v1', 'deployments', 'Deployment'), res('demo.panoptes.io', 'v1', 'widgets', 'Widget')];
const unknownKind = res('things.example.com', 'v1', 'things', 'Thing');
const clusterKind: Kind = res('panoptes.io', 'v1alpha1', 'clusters', 'Cluster', false);
const mcsKind: Kind = res('panoptes.io', 'v1alpha1', 'multiclusterservices', 'MultiClusterService');

const gadgetDoc = (version: string, field: string) =>
  JSON.stringify({
    openapi: '3.0.0',
    info: { title: 'Kubernetes', version: 'v1.29.0' },
    paths: {},
    components: {
      schemas: {
        [`com.example.demo.${version}.Gadget`]: {
          type: 'object',
          properties: { spec: { type: 'object', properties: { [field]: { type: 'string', nullable: true } } }, metadata: { allOf: [{ $ref: '#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta' }] } },
          'x-kubernetes-group-version-kind': [{ group: 'demo.example.com', kind: 'Gadget', version }],
        },
        'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta': { type: 'object', properties: { name: { type: 'string' } } },
      },
    },
  });

t.test('OpenAPI of the views from stored member documents', async (t) => {
  const sims = [await startSimCluster({ name: 'a', workload: true }), await startSimCluster({ name: 'b', workload: true }), await startSimCluster({ name: 'c', workload: true, openapiV3: false })];
  const { store, close } = await openTestStore('sqlite');
  const clients = await Promise.all(sims.map((s) => connectCluster({ server: s.url })));
  const metrics = new SynchroMetrics();
  for (const [i, s] of sims.entries()) {
    await seedCluster(store, s.name, { phase: 'Ready', ready: true, apiResources: s.name === 'a' ? [...memberKinds, unknownKind] : memberKinds });
    const lease = { fence: await takeLease(store, clusterLease(s.name)), onFenced: () => undefined };
    await new OpenAPIFetcher({ cluster: s.name, client: clients[i], store, lease, metrics, log: logger('test') }).sync(['api/v1', 'apis/apps/v1', 'apis/demo.panoptes.io/v1', 'apis/things.example.com/v1']);
  }
  // Gadgets: x serves v1, y and z serve v2 (the version served in the all-clusters view).
  for (const [name, version] of [['x', 'v1'], ['y', 'v2'], ['z', 'v2']]) {
    await seedCluster(store, name, { phase: 'Ready', ready: true, apiResources: [res('demo.example.com', version, 'gadgets', 'Gadget')] });
    const body = gadgetDoc(version, version === 'v1' ? 'old' : 'fresh');
    const entries = [{ groupVersion: `apis/demo.example.com/${version}`, format: 'v3' as const, hash: `gadget-${version}`, upstreamHash: `G-${version}`, body }];
    await underTestLease(store, clusterLease(name), (fence) => store.replaceClusterOpenAPI(name, entries, fence));
  }
  const api = await createApiserver({ store, catalogOptions: { refreshMs: 100 }, openapi: { refreshMs: 0 } });
  const base = await api.listen('127.0.0.1', 0);
  t.teardown(async () => {
    await api.close();
    for (const c of clients) c.close();
    await Promise.all(sims.map((s) => s.close()));
    await close();
  });
  const GET = (path: string, headers: Record<string, string> = {}) => get(base + path, headers);

  await t.test('v2 of each view is valid Swagger 2.0 describing every served kind', async (t) => {
    for (const [prefix, kinds] of [
      [`${P}/clusters/a`, [...memberKinds, unknownKind, clusterKind, mcsKind]],
      [`${P}/clusters/c`, [...memberKinds, clusterKind, mcsKind]],
      [P, [...memberKinds, unknownKind, clusterKind, mcsKind, res('demo.example.com', 'v2', 'gadgets', 'Gadget')]],
      ['', [clusterKind, mcsKind]],
    ] as Array<[string, Kind[]]>) {
      const r = await GET(`${prefix}/openapi/v2`);
      t.equal(r.status, 200, prefix);
      t.equal(r.headers['content-type'], 'application/json');
      t.same(swaggerProblems(r.json, kinds), [], `${prefix || '/'}/openapi/v2`);
    }
    const a = (await GET(`${P}/clusters/a/openapi/v2`)).json;
    t.match(a.definitions['io.k8s.api.core.v1.Pod'], { properties: { spec: { $ref: '#/definitions/io.k8s.api.core.v1.PodSpec' } } }, 'the member schema of Pod');
    t.match(a.definitions['io.panoptes.demo.v1.Widget'], { properties: { spec: { properties: { color: { type: 'string' } } } } }, 'the CRD schema');
    t.match(a.definitions['things.example.com.v1.Thing'], { type: 'object', 'x-kubernetes-preserve-unknown-fields': true, properties: undefined }, 'an open schema where no member described the kind');
    t.match(a.paths['/api/v1/namespaces/{namespace}/configmaps'].get, { operationId: 'listCoreV1NamespacedConfigMap', 'x-kubernetes-action': 'list' });
    t.equal(a.paths['/api/v1/namespaces/{namespace}/configmaps'].post, undefined, 'no write operations on read-only resources');
    t.ok(a.paths['/api/v1/watch/namespaces/{namespace}/pods'], 'legacy watch paths');
    t.match(a.paths['/apis/panoptes.io/v1alpha1/clusters/{name}'].get, { 'x-kubernetes-group-version-kind': { group: 'panoptes.io', kind: 'Cluster', version: 'v1alpha1' } });
    t.ok(a.paths['/apis/panoptes.io/v1alpha1/watch/clusters'], 'clusters are watchable');
    t.ok(a.paths['/apis/panoptes.io/v1alpha1/clusters/{name}'].patch && a.paths['/apis/panoptes.io/v1alpha1/clusters'].post, 'and writable');
    const c = (await GET(`${P}/clusters/c/openapi/v2`)).json;
    t.ok(c.definitions['io.k8s.api.apps.v1.Deployment'], 'schemas from a member that only has v2');
  });

  await t.test('v3 root and group versions in both prefixes and the root', async (t) => {
    for (const prefix of [`${P}/clusters/a`, `${P}/clusters/c`, P]) {
      const root = await GET(`${prefix}/openapi/v3`);
      t.equal(root.status, 200);
      const paths = root.json.paths as Record<string, { serverRelativeURL: string }>;
      t.ok(paths['api/v1'] && paths['apis/apps/v1'] && paths['apis/demo.panoptes.io/v1'] && paths['apis/panoptes.io/v1alpha1'], `${prefix}: every group version`);
      for (const [gv, { serverRelativeURL }] of Object.entries(paths)) {
        t.match(serverRelativeURL, new RegExp(`^${prefix}/openapi/v3/${gv}\\?hash=[0-9A-F]{128}$`));
        const r = await GET(serverRelativeURL);
        t.equal(r.status, 200, serverRelativeURL);
        t.equal(r.headers['cache-control'], 'public, immutable');
        const kinds = [...memberKinds, unknownKind, clusterKind, mcsKind, res('demo.example.com', 'v2', 'gadgets', 'Gadget')].filter((k) => (k.group ? `apis/${k.group}/${k.version}` : `api/${k.version}`) === gv && (prefix !== `${P}/clusters/c` || k !== unknownKind));
        t.same(openapiV3Problems(r.json, kinds), [], `${prefix} ${gv}`);
      }
    }
    const root = (await GET('/openapi/v3')).json.paths;
    t.same(Object.keys(root), ['apis/panoptes.io/v1alpha1'], 'the root serves panoptes.io (for the aggregator)');
    t.match(root['apis/panoptes.io/v1alpha1'].serverRelativeURL, /^\/openapi\/v3\/apis\/panoptes\.io\/v1alpha1\?hash=/);
    const doc = (await GET(root['apis/panoptes.io/v1alpha1'].serverRelativeURL)).json;
    t.same(openapiV3Problems(doc, [clusterKind, mcsKind]), []);
    t.match(doc.components.schemas['io.panoptes.v1alpha1.Cluster'].properties.status, { allOf: [{ $ref: '#/components/schemas/io.panoptes.v1alpha1.ClusterStatus' }] });
    t.ok(doc.components.schemas['io.panoptes.v1alpha1.ClusterStatus'].properties.initialSync);
  });

  await t.test('the schema is that of the version served', async (t) => {
    const all = (await GET(`${P}/openapi/v3`)).json.paths;
    t.notOk(all['apis/demo.example.com/v1'], 'v1 is not served in the all-clusters view');
    const v2 = (await GET(all['apis/demo.example.com/v2'].serverRelativeURL)).json;
    t.ok(v2.components.schemas['com.example.demo.v2.Gadget'].properties.spec.properties.fresh);
    const x = (await GET(`${P}/clusters/x/openapi/v3`)).json.paths;
    const v1 = (await GET(x['apis/demo.example.com/v1'].serverRelativeURL)).json;
    t.ok(v1.components.schemas['com.example.demo.v1.Gadget'].properties.spec.properties.old, "x's own view serves v1 with v1's schema");
    const sw = (await GET(`${P}/openapi/v2`)).json;
    t.same(sw.definitions['com.example.demo.v2.Gadget'].properties.spec.properties.fresh, {}, 'nullable fields lose their type in v2');
  });

  await t.test('negotiation, hashes, ETags and shared documents', async (t) => {
    const pb = await GET(`${P}/clusters/a/openapi/v2`, { Accept: PROTO });
    t.equal(pb.status, 200);
    t.equal(pb.headers['content-type'], 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf');
    t.equal(pb.text.slice(0, 5), '\n\u00032.0', 'gnostic Document: swagger "2.0" first');
    const json = await GET(`${P}/clusters/a/openapi/v2`, { Accept: `${PROTO};q=0.5, application/json` });
    t.equal(json.headers['content-type'], 'application/json', 'JSON preferred when it comes first');
    const bad = await GET(`${P}/clusters/a/openapi/v2`, { Accept: 'application/vnd.kubernetes.protobuf' });
    t.equal(bad.status, 406);
    t.match(bad.json, { kind: 'Status', reason: 'NotAcceptable' });
    t.equal((await GET(`${P}/openapi/v3/api/v1`, { Accept: 'application/com.github.proto-openapi.spec.v3@v1.0+protobuf' })).status, 406, 'v3 is JSON only');
    t.equal((await GET(`${P}/openapi/v3/apis/nope/v1`)).status, 404);
    t.equal((await GET(`${P}/clusters/nope/openapi/v2`)).status, 404);

    const old = await http('GET', `${base}${P}/openapi/v3/api/v1?hash=ABC`);
    t.equal(old.status, 301);
    t.match(old.headers.location, new RegExp(`^${P}/openapi/v3/api/v1\\?hash=[0-9A-F]{128}$`), 'an old hash redirects to the current document');
    const cur = await GET(String(old.headers.location));
    t.equal((await GET(String(old.headers.location), { 'If-None-Match': String(cur.headers.etag) })).status, 304);
    const v2 = await GET(`${P}/clusters/b/openapi/v2`, { Accept: PROTO });
    t.equal((await GET(`${P}/clusters/b/openapi/v2`, { Accept: PROTO, 'If-None-Match': String(v2.headers.etag) })).status, 304);

    const urlOf = async (prefix: string) => (await GET(`${prefix}/openapi/v3`)).json.paths['api/v1'].serverRelativeURL as string;
    const [ua, ub] = [await urlOf(`${P}/clusters/a`), await urlOf(`${P}/clusters/b`)];
    t.equal(ua.split('hash=')[1], ub.split('hash=')[1], 'clusters with the same documents serve the same api/v1 document');
    const builds = api.deps.openapi.builds;
    await GET(ua);
    await GET(ub);
    t.equal(api.deps.openapi.builds, builds, 'built once, served from the cache for both views');
    t.not((await GET(`${P}/clusters/a/openapi/v2`)).headers.etag, (await GET(`${P}/clusters/b/openapi/v2`)).headers.etag, 'a serves one kind more than b: another v2 document');
  });
});
