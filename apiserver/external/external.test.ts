// external.metrics.k8s.io over HTTP against a seeded store, on both backends: discovery (plain
// and aggregated, as the APIService availability check and kube-aggregator ask), counts with
// every kind of selector requirement (cross-checked against the list API's answer to the same
// selection), declared rules (sum per cluster, conditions on JSON paths of a custom resource),
// staleness policies, the metrics file's reload (rewrite, ConfigMap symlink swap, broken file,
// missing file), every error as a Status, and the Prometheus metrics.
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { get } from '../../hack/sim/testutil.ts';
import { setLogLevel } from '../../lib/log.ts';
import { backends, openTestStore, podEvent, seedCluster, stopTestPostgres } from '../../storage/testing.ts';
import type { UpstreamEvent } from '../../storage/types.ts';
import { createApiserver } from '../server.ts';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');
t.teardown(stopTestPostgres);

const EM = '/apis/external.metrics.k8s.io/v1beta1';
const P = '/apis/panoptes.io/v1alpha1/resources';

const deployment = (ns: string, name: string, ready: number | undefined, rv: string, uid: string): UpstreamEvent => ({
  type: 'ADDED',
  group: 'apps',
  version: 'v1',
  resource: 'deployments',
  object: { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name, namespace: ns, uid, resourceVersion: rv, labels: { app: name } }, spec: { replicas: 3 }, status: ready === undefined ? {} : { readyReplicas: ready } },
});
const widget = (ns: string, name: string, phase: string, size: number, rv: string, uid: string): UpstreamEvent => ({
  type: 'ADDED',
  group: 'example.com',
  version: 'v1',
  resource: 'widgets',
  object: { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name, namespace: ns, uid, resourceVersion: rv }, spec: { size }, status: { phase } },
});
const node = (name: string, rv: string): UpstreamEvent => ({ type: 'ADDED', group: '', version: 'v1', resource: 'nodes', object: { apiVersion: 'v1', kind: 'Node', metadata: { name, uid: `node-${name}`, resourceVersion: rv } } });

const apiResources = [
  { group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, singularName: 'pod' },
  { group: '', version: 'v1', resource: 'nodes', kind: 'Node', namespaced: false, singularName: 'node' },
  { group: 'apps', version: 'v1', resource: 'deployments', kind: 'Deployment', namespaced: true, singularName: 'deployment' },
  { group: 'example.com', version: 'v1', resource: 'widgets', kind: 'Widget', namespaced: true, singularName: 'widget' },
];

const rulesYaml = `
defaults:
  whenClusterNotReady: ServeLastKnown
metrics:
  - name: web-ready
    resource: deployments.apps
    fieldSelector: metadata.name=web
    aggregate: sum
    path: .status.readyReplicas
    perCluster: true
  - name: web-ready-strict
    resource: deployments.apps
    fieldSelector: metadata.name=web
    aggregate: sum
    path: .status.readyReplicas
    whenClusterNotReady: Fail
  - name: queued-widgets
    resource: widgets.example.com
    namespaces: all
    match:
      - { path: .status.phase, operator: In, values: [Queued] }
  - name: widget-size-max
    resource: widgets.example.com
    aggregate: max
    path: spec.size
  - name: widget-size-avg
    resource: widgets.example.com
    aggregate: avg
    path: .spec.size
  - name: gadgets-per-cluster
    resource: gadgets.example.com
    perCluster: true
  - name: broken
    resource: widgets.example.com
    aggregate: sum
  - name: nothing-synced
    resource: gizmos.example.com
`;

interface Item {
  metricName: string;
  metricLabels: Record<string, string>;
  timestamp: string;
  value: string;
}

for (const backend of backends) {
  t.test(`external metrics over HTTP (${backend})`, async (t) => {
    const { store, close } = await openTestStore(backend);
    // Gadgets: v1 in a and b, v2 in c (the all-clusters view serves v1, which c does not have).
    const gadgets = (version: string) => ({ group: 'example.com', version, resource: 'gadgets', kind: 'Gadget', namespaced: true, singularName: 'gadget' });
    await seedCluster(store, 'a', { phase: 'Ready', ready: true, apiResources: [...apiResources, gadgets('v1')] });
    await seedCluster(store, 'b', { phase: 'Ready', ready: true, apiResources: [...apiResources, gadgets('v1')] });
    await seedCluster(store, 'c', { phase: 'Unreachable', ready: false, message: 'GET /readyz: ECONNREFUSED', lastTransitionTime: '2026-01-01T00:00:00Z', apiResources: [...apiResources, gadgets('v2')] });
    let rv = 10;
    const next = () => String(rv++);
    for (const c of ['a', 'b', 'c']) {
      const evs: UpstreamEvent[] = [];
      for (let i = 0; i < 12; i++) {
        evs.push(podEvent('ADDED', i % 3 ? 'n1' : 'n2', `p-${i}`, next(), { uid: `${c}-p-${i}`, labels: { app: i % 2 ? 'web' : 'db' }, phase: i % 4 === 0 ? 'Pending' : 'Running' }));
      }
      evs.push(deployment('n1', 'web', c === 'a' ? 3 : c === 'b' ? 2 : 5, next(), `${c}-d-web`));
      evs.push(deployment('n1', 'db', 1, next(), `${c}-d-db`));
      evs.push(deployment('n2', 'web', undefined, next(), `${c}-d-web2`));
      evs.push(widget('n1', 'w1', 'Queued', 2, next(), `${c}-w1`));
      evs.push(widget('n2', 'w2', c === 'a' ? 'Queued' : 'Done', 7, next(), `${c}-w2`));
      evs.push(node(`${c}-node`, next()));
      await store.applyBatch(c, evs);
    }
    const dir = mkdtempSync(join(tmpdir(), 'panoptes-em-'));
    // A ConfigMap-style mount: metrics.yaml -> ..data/metrics.yaml, ..data -> ..v1.
    mkdirSync(join(dir, '..v1'));
    writeFileSync(join(dir, '..v1', 'metrics.yaml'), rulesYaml);
    symlinkSync('..v1', join(dir, '..data'));
    symlinkSync('..data/metrics.yaml', join(dir, 'metrics.yaml'));
    const api = await createApiserver({ store, catalogOptions: { refreshMs: 100 }, externalMetrics: { file: join(dir, 'metrics.yaml'), reloadIntervalMs: 50 } });
    const base = await api.listen('127.0.0.1', 0);
    t.teardown(async () => {
      await api.close();
      await close();
      rmSync(dir, { recursive: true, force: true });
    });
    const GET = (path: string, headers: Record<string, string> = {}) => get(base + path, headers);
    const metric = async (ns: string, name: string, selector?: string, extra = '') => {
      const r = await GET(`${EM}/namespaces/${ns}/${name}${selector !== undefined ? `?labelSelector=${encodeURIComponent(selector)}` : ''}${extra}`);
      return r;
    };
    const items = async (ns: string, name: string, selector?: string): Promise<Item[]> => {
      const r = await metric(ns, name, selector);
      t.equal(r.status, 200, `${name} ${selector ?? ''}: ${r.text.slice(0, 300)}`);
      return r.json.items;
    };
    const value = async (ns: string, name: string, selector?: string): Promise<string> => {
      const list = await items(ns, name, selector);
      t.equal(list.length, 1, 'one item');
      return list[0]?.value;
    };
    /** The same selection through the list API: the count must agree. */
    const listed = async (path: string, selector: string) => (await GET(`${P}${path}?labelSelector=${encodeURIComponent(selector)}`)).json.items.length;
    const status = async (t: Tap, path: string, code: number, reason: string, message?: RegExp) => {
      const r = await GET(path);
      t.equal(r.status, code, `${path} -> ${code}: ${r.text.slice(0, 300)}`);
      t.match(r.json, { kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason }, path);
      if (message) t.match(r.json.message, message, path);
      return r;
    };
    type Tap = typeof t;

    t.test('discovery, as the APIService check, kube-aggregator and kubectl ask', async (t) => {
      const apis = (await GET('/apis')).json;
      t.ok(apis.groups.some((g: { name: string; preferredVersion: { groupVersion: string } }) => g.name === 'external.metrics.k8s.io' && g.preferredVersion.groupVersion === 'external.metrics.k8s.io/v1beta1'));
      t.match((await GET('/apis/external.metrics.k8s.io')).json, { kind: 'APIGroup', name: 'external.metrics.k8s.io', versions: [{ groupVersion: 'external.metrics.k8s.io/v1beta1', version: 'v1beta1' }] });
      const list = (await GET(EM)).json;
      t.match(list, { kind: 'APIResourceList', groupVersion: 'external.metrics.k8s.io/v1beta1' });
      const names = list.resources.map((r: { name: string }) => r.name);
      t.same(names.slice(0, 7), ['gadgets-per-cluster', 'nothing-synced', 'queued-widgets', 'web-ready', 'web-ready-strict', 'widget-size-avg', 'widget-size-max'], 'declared metrics first (the invalid one left out)');
      t.ok(['pods', 'nodes', 'deployments.apps', 'widgets.example.com'].every((n) => names.includes(n)), 'a count per synced resource');
      t.notOk(names.includes('clusters.panoptes.io'));
      t.same(list.resources.find((r: { name: string }) => r.name === 'pods'), { name: 'pods', singularName: '', namespaced: true, kind: 'ExternalMetricValueList', verbs: ['get'] });
      const agg = await GET('/apis', { Accept: 'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json' });
      const group = agg.json.items.find((g: { metadata: { name: string } }) => g.metadata.name === 'external.metrics.k8s.io');
      t.equal(group?.versions[0].version, 'v1beta1');
      t.ok(group?.versions[0].resources.some((r: { resource: string; verbs: string[] }) => r.resource === 'queued-widgets' && r.verbs[0] === 'get'));
      const paths: string[] = (await GET('/')).json.paths;
      t.ok(paths.includes('/apis/external.metrics.k8s.io') && paths.includes('/apis/external.metrics.k8s.io/v1beta1'), 'root paths');
      const openapi = (await GET('/openapi/v2')).json;
      t.notOk(Object.keys(openapi.paths).some((p) => p.includes('external.metrics')), 'metrics are not objects: not in OpenAPI');
    });

    t.test('counts: the request namespace in every cluster, narrowed or widened by the selector', async (t) => {
      const r = await metric('n1', 'pods', 'app=web');
      t.equal(r.status, 200);
      t.equal(r.headers['content-type'], 'application/json');
      t.match(r.json, { kind: 'ExternalMetricValueList', apiVersion: 'external.metrics.k8s.io/v1beta1', metadata: { resourceVersion: /^\d+$/ } });
      t.match(r.json.items[0], { metricName: 'pods', metricLabels: {}, timestamp: /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/ });
      const cases: Array<[string, string, string]> = [
        ['n1', 'app=web', '/api/v1/namespaces/n1/pods'],
        ['n1', '', '/api/v1/namespaces/n1/pods'],
        ['n2', 'app!=web', '/api/v1/namespaces/n2/pods'],
        ['n1', 'field.panoptes.io/status.phase=Pending', '/api/v1/namespaces/n1/pods'],
        ['n1', 'field.panoptes.io/status.phase!=Pending,app=db', '/api/v1/namespaces/n1/pods'],
        ['n1', 'search.panoptes.io/clusters in (a,b)', '/api/v1/namespaces/n1/pods'],
        ['n1', 'search.panoptes.io/clusters=c,app in (web,db)', '/api/v1/namespaces/n1/pods'],
        ['n1', 'search.panoptes.io/names in (p-1,p-2,p-3)', '/api/v1/namespaces/n1/pods'],
        ['default', 'search.panoptes.io/all-namespaces=true', '/api/v1/pods'],
        ['default', 'search.panoptes.io/all-namespaces,field.panoptes.io/status.phase=Pending', '/api/v1/pods'],
        ['default', 'search.panoptes.io/namespaces=n2', '/api/v1/namespaces/n2/pods'],
      ];
      for (const [ns, sel, path] of cases) {
        const listSel = sel
          .replace('search.panoptes.io/all-namespaces=true', '')
          .replace('search.panoptes.io/all-namespaces,', '')
          .replace('search.panoptes.io/namespaces=n2', '')
          .replace(/field\.panoptes\.io\/status\.phase(!?=)Pending,?/, '');
        const field = /field\.panoptes\.io\/status\.phase(!?=)Pending/.exec(sel);
        const want = (await GET(`${P}${path}?labelSelector=${encodeURIComponent(listSel)}${field ? `&fieldSelector=${encodeURIComponent(`status.phase${field[1]}Pending`)}` : ''}`)).json.items.length;
        t.equal(await value(ns, 'pods', sel), String(want), `${ns} ${sel}: ${want}`);
      }
      t.equal(await value('n1', 'pods', 'search.panoptes.io/clusters notin (c)'), String(await listed('/api/v1/namespaces/n1/pods', 'search.panoptes.io/clusters in (a,b)')), 'clusters notin');
      t.equal(await value('default', 'pods', 'search.panoptes.io/all-namespaces,search.panoptes.io/namespaces!=n2'), String(await listed('/api/v1/namespaces/n1/pods', '')), 'namespaces notin');
      t.equal(await value('n1', 'pods', 'search.panoptes.io/names notin (p-1)'), String((await listed('/api/v1/namespaces/n1/pods', '')) - 3), 'names notin');
      t.equal(await value('n1', 'pods', 'app=nope'), '0', 'nothing selected: one item, 0');
      t.equal(await value('n1', 'deployments.apps'), '6');
      t.equal(await value('whatever', 'nodes'), '3', 'cluster-scoped: the namespace does not apply');
      t.equal(await value('n1', 'pods', '', ), String(await listed('/api/v1/namespaces/n1/pods', '')));
      const viaField = await GET(`${EM}/namespaces/n1/pods?fieldSelector=status.phase%3DPending`);
      t.equal(viaField.json.items[0].value, await value('n1', 'pods', 'field.panoptes.io/status.phase=Pending'), 'fieldSelector parameter = field.panoptes.io keys');
      t.equal((await GET(`${EM}/namespaces/n1/pods`, { Accept: 'application/vnd.kubernetes.protobuf, */*' })).status, 200, 'the controller-manager Accept header');
    });

    t.test('declared metrics: sum per cluster, conditions on a custom resource, min/max/avg', async (t) => {
      const r = await metric('n1', 'web-ready');
      t.same(
        r.json.items.map((i: Item) => [i.metricLabels, i.value]),
        [[{ cluster: 'a' }, '3'], [{ cluster: 'b' }, '2'], [{ cluster: 'c' }, '5']],
        'one item per cluster',
      );
      t.match(r.headers.warning, /cluster c is not Ready/, 'ServeLastKnown: last synced values with a Warning');
      t.same((await items('n1', 'web-ready', 'search.panoptes.io/clusters notin (a)')).map((i) => [i.metricLabels.cluster, i.value]), [['b', '2'], ['c', '5']], 'the other clusters (failover capacity)');
      t.same((await items('n2', 'web-ready')).map((i) => i.value), ['0', '0', '0'], 'no number: 0');
      t.same((await items('n1', 'gadgets-per-cluster')).map((i) => [i.metricLabels.cluster, i.value]), [['a', '0'], ['b', '0'], ['c', '0']], 'an item for every cluster that syncs the resource, at any version');
      t.equal(await value('anything', 'queued-widgets'), '4', 'Queued widgets in every namespace: n1 of a, b, c and n2 of a');
      t.equal(await value('anything', 'queued-widgets', 'search.panoptes.io/namespaces=n2'), '1', 'the request narrows the rule scope');
      t.equal(await value('n1', 'widget-size-max'), '2');
      t.equal(await value('n2', 'widget-size-max'), '7');
      t.equal(await value('default', 'widget-size-avg', 'search.panoptes.io/all-namespaces'), '4500m', 'avg 4.5 as a quantity');
      const strict = await status(t, `${EM}/namespaces/n1/web-ready-strict`, 503, 'ServiceUnavailable', /not Ready \(whenClusterNotReady: Fail\): c/);
      t.equal(strict.headers['retry-after'], '10');
      t.equal(await value('n1', 'web-ready-strict', 'search.panoptes.io/clusters in (a,b)'), '5', 'Fail only when a cluster read is not Ready');
    });

    t.test('errors are Status objects with the right code', async (t) => {
      await status(t, `${EM}/namespaces/n1/nope`, 404, 'NotFound', /external metric "nope" not found/);
      await status(t, `${EM}/namespaces/n1/pods.nope.example`, 404, 'NotFound');
      await status(t, `${EM}/namespaces/n1/pods?labelSelector=app%3D%3D%3D`, 400, 'BadRequest', /unable to parse requirement/);
      await status(t, `${EM}/namespaces/n1/pods?labelSelector=search.panoptes.io%2Fnope%3Dx`, 400, 'BadRequest', /unknown search key/);
      await status(t, `${EM}/namespaces/n1/pods?labelSelector=${encodeURIComponent('field.panoptes.io/status.phase in (a,b)')}`, 400, 'BadRequest', /matches one/);
      await status(t, `${EM}/namespaces/n1/pods?labelSelector=field.panoptes.io%2Fspec.nope%3Dx`, 400, 'BadRequest', /field label not supported: spec.nope/);
      await status(t, `${EM}/namespaces/n1/pods?labelSelector=search.panoptes.io%2Fclusters%3Dzz`, 400, 'BadRequest', /unknown cluster "zz"/);
      await status(t, `${EM}/namespaces/n1/pods?labelSelector=${encodeURIComponent('search.panoptes.io/all-namespaces,search.panoptes.io/namespaces=n1')}`, 400, 'BadRequest', /either/);
      await status(t, `${EM}/namespaces/n1/nodes?labelSelector=search.panoptes.io%2Fall-namespaces`, 400, 'BadRequest', /cluster-scoped/);
      await status(t, `${EM}/namespaces/n1/pods?limit=1`, 400, 'BadRequest', /unknown query parameter "limit"/);
      await status(t, `${EM}/namespaces/N_1/pods`, 400, 'BadRequest', /invalid namespace/);
      await status(t, `${EM}/namespaces/n1/broken`, 503, 'ServiceUnavailable', /rule is invalid: .*path \(the number to sum\)/);
      await status(t, `${EM}/namespaces/n1/nothing-synced`, 503, 'ServiceUnavailable', /gizmos.example.com, which no member cluster syncs/);
      await status(t, `${EM}/pods`, 404, 'NotFound');
      await status(t, `${EM}/namespaces/n1/pods/extra`, 404, 'NotFound');
      const na = await GET(`${EM}/namespaces/n1/pods`, { Accept: 'application/yaml' });
      t.equal(na.status, 406);
    });

    t.test('the metrics file is reloaded: rewrite, ConfigMap symlink swap, broken, missing', async (t) => {
      const waitFor = async (what: string, ok: () => Promise<boolean>) => {
        const deadline = Date.now() + 5000;
        while (Date.now() < deadline) {
          if (await ok()) return;
          await new Promise((r) => setTimeout(r, 50));
        }
        t.fail(`timed out waiting for ${what}`);
      };
      const code = async (name: string) => (await metric('n1', name)).status;
      // The ConfigMap update: a new ..v2 directory, ..data swapped to it atomically.
      mkdirSync(join(dir, '..v2'));
      writeFileSync(join(dir, '..v2', 'metrics.yaml'), 'metrics:\n  - name: all-pods\n    resource: pods\n    namespaces: all\n');
      symlinkSync('..v2', join(dir, '..data_tmp'));
      renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
      rmSync(join(dir, '..v1'), { recursive: true });
      await waitFor('the swapped file', async () => (await code('all-pods')) === 200);
      t.equal(await value('x', 'all-pods'), '36');
      t.equal(await code('web-ready'), 404, 'rules of the old file are gone');
      // Broken: the last good rules stay.
      writeFileSync(join(dir, '..v2', 'metrics.yaml'), 'metrics: [unclosed\n');
      await waitFor('the broken file noticed', async () => /not valid YAML/.test((await metric('n1', 'nope')).json.message));
      t.equal(await code('all-pods'), 200, 'last good rules in effect');
      t.match((await metric('n1', 'nope')).json.message, /the last good rules stay in effect/);
      // Missing: no declared metrics; counts still served.
      rmSync(join(dir, 'metrics.yaml'));
      await waitFor('the missing file', async () => (await code('all-pods')) === 404);
      t.equal(await code('pods'), 200);
      const m = (await GET('/metrics')).text;
      t.match(m, /panoptes_external_metric_queries_total\{metric="pods",code="200"\} \d+/);
      t.match(m, /panoptes_external_metric_errors_total\{metric="",reason="NotFound"\} \d+/);
      t.match(m, /panoptes_external_metric_rule_loads_total\{result="error"\} [1-9]/);
      t.match(m, /panoptes_external_metric_query_duration_seconds_count\{metric="pods"\} \d+/);
      t.match(m, /panoptes_apiserver_requests_total\{verb="list",group="external.metrics.k8s.io",resource="pods",code="200"\} \d+/);
    });
  });
}
