// The synchro members through the Kubernetes API (synchromembers.panoptes.io), on both
// backends: a live member holding clusters, one kept out by its clusters file (its row written
// expired with its configError, as synchro/membership/membership.ts reports it) and one whose heartbeat
// expired. List and get (JSON and Table), 404 for an unknown name, 405 for watch and writes,
// discovery, OpenAPI, the one-cluster view, and the real kubectl (get, get -o wide, explain).
import t from 'tap';
import { runKubectl } from '../../../hack/testing/kubectl.ts';
import { http, tempDir } from '../../../hack/sim/testutil.ts';
import { setLogLevel } from '../../../lib/log.ts';
import { clusterLease } from '../../../storage/leases.ts';
import { backends, openTestStore, seedCluster, stopTestPostgres } from '../../../storage/testing.ts';
import { waitUntil } from '../../../synchro/testutil.ts';
import { createApiserver } from '../../server.ts';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');
t.teardown(stopTestPostgres);

const G = '/apis/panoptes.io/v1alpha1';
const SM = `${G}/synchromembers`;
const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json';
// The default identity's form (host name and a uuid): not a DNS name.
const live = 'node-a_3f2b9c1e-7d4a-4c8e-9a51-0b6d2e8f4a17';
const broken = 'synchro-1';
const gone = 'old@node-b:7';
const brokenError = 'clusters.yaml: line 3: not valid YAML';

for (const backend of backends) {
  t.test(backend, async (t) => {
    const { store, close } = await openTestStore(backend);
    await seedCluster(store, 'east', { phase: 'Ready', ready: true, apiResources: [] });
    const api = await createApiserver({ store, catalogOptions: { refreshMs: 100 } });
    const base = await api.listen('127.0.0.1', 0);
    t.teardown(async () => {
      await api.close();
      await close();
    });
    const call = (method: string, path: string, headers: Record<string, string> = {}, body?: unknown) => http(method, base + path, body, headers);

    await store.heartbeat({ id: live, host: 'node-a', pid: 41, instance: 'i-live' }, 60_000);
    for (const c of ['west', 'east']) t.ok(await store.acquireLease(clusterLease(c), live, 60_000), `${live} holds ${c}`);
    // Kept out by its file: the row written already expired, with its error (synchro/membership/membership.ts reportOut).
    await store.heartbeat({ id: broken, host: 'node-b', pid: 1, instance: 'i-broken', configError: brokenError }, 0);
    // A heartbeat of 1 ms that nobody renews.
    await store.heartbeat({ id: gone, host: 'node-b', pid: 7, instance: 'i-gone' }, 1);
    await waitUntil('the short heartbeat expired', async () => ((await call('GET', `${SM}/${encodeURIComponent(gone)}`)).json?.status?.state === 'Expired' ? true : undefined), 10_000);

    t.test('list and get', async (t) => {
      const list = await call('GET', SM);
      t.equal(list.status, 200, list.text);
      t.match(list.json, { kind: 'SynchroMemberList', apiVersion: 'panoptes.io/v1alpha1', metadata: { resourceVersion: '' } });
      type Item = { metadata: { name: string }; status: Record<string, unknown> & { heartbeatTime: string; expiresTime: string } };
      const byName = Object.fromEntries((list.json.items as Item[]).map((i) => [i.metadata.name, i]));
      t.same(Object.keys(byName).sort(), [broken, live, gone].sort());
      t.match(byName[live], { kind: 'SynchroMember', apiVersion: 'panoptes.io/v1alpha1', metadata: { name: live, creationTimestamp: /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/ }, status: { state: 'Live', host: 'node-a', pid: 41, instance: 'i-live', clusters: ['east', 'west'] } });
      t.match(byName[live].status.heartbeatTime, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/, 'a MicroTime');
      t.ok(Date.parse(byName[live].status.expiresTime) > Date.parse(byName[live].status.heartbeatTime));
      t.notOk('configError' in byName[live].status, 'no error reported');
      t.match(byName[broken], { status: { state: 'Out', host: 'node-b', pid: 1, configError: brokenError, clusters: [] } });
      t.equal(byName[broken].status.heartbeatTime, byName[broken].status.expiresTime, 'written already expired');
      t.match(byName[gone], { status: { state: 'Expired', clusters: [] } });

      const one = await call('GET', `${SM}/${encodeURIComponent(gone)}`);
      t.equal(one.status, 200, 'a name with @ and : is one path segment');
      t.same(one.json, byName[gone]);
      t.same((await call('GET', `${SM}/${live}`)).json, byName[live], 'get by name: the object of the list');

      const missing = await call('GET', `${SM}/nobody`);
      t.equal(missing.status, 404);
      t.match(missing.json, { kind: 'Status', reason: 'NotFound', code: 404, message: 'synchromembers.panoptes.io "nobody" not found', details: { name: 'nobody', group: 'panoptes.io', kind: 'synchromembers' } });

      const chosen = await call('GET', `${SM}?fieldSelector=${encodeURIComponent(`metadata.name=${broken}`)}`);
      t.same(chosen.json.items.map((i: { metadata: { name: string } }) => i.metadata.name), [broken], 'field selector on the name');
      const out = await call('GET', `${SM}?fieldSelector=${encodeURIComponent('.status.state=Out')}`);
      t.same(out.json.items.map((i: { metadata: { name: string } }) => i.metadata.name), [broken], 'a JSON path field term on the state');
      t.equal((await call('GET', `${SM}?clusters=east`)).status, 400, 'the clusters search does not apply');

      const view = await call('GET', `${G}/resources/clusters/east${G}/synchromembers/${live}`);
      t.equal(view.status, 200, 'a one-cluster view serves the fleet\'s members too');
      t.same(view.json, byName[live]);
      t.equal((await call('GET', `${G}/resources${G}/synchromembers`)).json.items.length, 3, 'and the all-clusters view');
    });

    t.test('Table', async (t) => {
      const table = await call('GET', SM, { Accept: TABLE });
      t.equal(table.status, 200);
      t.match(table.json, { kind: 'Table', apiVersion: 'meta.k8s.io/v1' });
      t.same(
        table.json.columnDefinitions.map((c: { name: string; priority: number }) => `${c.name}:${c.priority}`),
        ['Name:0', 'State:0', 'Clusters:0', 'Heartbeat:0', 'Config Error:0', 'Host:1', 'PID:1', 'Instance:1'],
      );
      const rows = Object.fromEntries((table.json.rows as Array<{ cells: unknown[] }>).map((r) => [r.cells[0], r.cells]));
      t.match(rows[live], [live, 'Live', 2, /^\d+s$/, '<none>', 'node-a', 41, 'i-live']);
      t.match(rows[broken], [broken, 'Out', 0, /^\d+s$/, brokenError, 'node-b', 1, 'i-broken']);
      t.match(rows[gone], [gone, 'Expired', 0, /^\d+s$/, '<none>', 'node-b', 7, 'i-gone']);
      t.match(table.json.rows[0].object, { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1' });
      const one = await call('GET', `${SM}/${broken}`, { Accept: TABLE });
      t.equal(one.json.rows.length, 1);
      t.equal(one.json.rows[0].cells[4], brokenError);
    });

    t.test('read-only: watch and writes are 405', async (t) => {
      const watch = await call('GET', `${SM}?watch=true`);
      t.equal(watch.status, 405);
      t.match(watch.json, { kind: 'Status', reason: 'MethodNotAllowed', code: 405, message: 'watch is not supported on resources of kind "synchromembers.panoptes.io"' });
      const post = await call('POST', SM, { 'Content-Type': 'application/json' }, { apiVersion: 'panoptes.io/v1alpha1', kind: 'SynchroMember', metadata: { name: 'x' } });
      t.equal(post.status, 405);
      t.match(post.json, { kind: 'Status', reason: 'MethodNotAllowed', code: 405 });
      for (const method of ['PUT', 'PATCH', 'DELETE']) t.equal((await call(method, `${SM}/${broken}`, { 'Content-Type': 'application/merge-patch+json' }, {})).status, 405, method);
      t.equal((await call('DELETE', SM)).status, 405, 'deletecollection');
      t.equal((await call('POST', `${G}/resources/clusters/east${G}/synchromembers`, { 'Content-Type': 'application/json' }, {})).status, 405, 'not proxied from a one-cluster view either');
      t.equal((await call('GET', `${G}/watch/synchromembers`)).status, 404, 'no legacy watch path (kube registers none without a watcher)');
      t.equal((await call('GET', `${SM}/${broken}/status`)).status, 404, 'no subresource');
      t.equal((await call('GET', `${SM}/${broken}`)).json.status.state, 'Out', 'nothing changed');
    });

    t.test('discovery and OpenAPI', async (t) => {
      const list = await call('GET', G);
      t.same(list.json.resources.find((r: { name: string }) => r.name === 'synchromembers'), { name: 'synchromembers', singularName: 'synchromember', namespaced: false, kind: 'SynchroMember', verbs: ['get', 'list'], shortNames: ['members'] });
      const agg = await call('GET', '/apis', { Accept: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList' });
      const group = agg.json.items.find((g: { metadata: { name: string } }) => g.metadata.name === 'panoptes.io');
      t.match(group.versions[0].resources.find((r: { resource: string }) => r.resource === 'synchromembers'), { responseKind: { kind: 'SynchroMember' }, scope: 'Cluster', singularResource: 'synchromember', verbs: ['get', 'list'], shortNames: ['members'] });
      const v2 = await call('GET', '/openapi/v2');
      t.match(v2.json.definitions['io.panoptes.v1alpha1.SynchroMemberStatus'].properties.state.enum, ['Live', 'Out', 'Expired']);
      t.ok(v2.json.paths[`${SM}/{name}`]?.get, 'get by name');
      t.ok(v2.json.paths[SM]?.get, 'list');
      t.notOk(v2.json.paths[SM]?.post, 'no create');
      t.notOk(v2.json.paths[`${G}/watch/synchromembers`], 'no watch path');
      const v3 = await call('GET', `/openapi/v3/apis/panoptes.io/v1alpha1`);
      t.match(v3.json.components.schemas['io.panoptes.v1alpha1.SynchroMember'], { 'x-kubernetes-group-version-kind': [{ group: 'panoptes.io', kind: 'SynchroMember', version: 'v1alpha1' }] });
    });

    t.test('kubectl', async (t) => {
      const target = { server: base, cacheDir: tempDir(t) };
      const get = await runKubectl(target, ['get', 'synchromembers']);
      t.equal(get.code, 0, get.stderr);
      const lines = get.stdout.trim().split('\n');
      t.match(lines[0], /^NAME\s+STATE\s+CLUSTERS\s+HEARTBEAT\s+CONFIG ERROR$/);
      t.ok(lines.some((l) => new RegExp(`^${broken}\\s+Out\\s+0\\s+\\d+s\\s+${brokenError.replace(/[.]/g, '\\.')}$`).test(l)), `the broken member and its error:\n${get.stdout}`);
      t.ok(lines.some((l) => new RegExp(`^${live}\\s+Live\\s+2\\s+\\d+s\\s+<none>$`).test(l)), 'the live member and its clusters');
      const wide = await runKubectl(target, ['get', 'members', broken, '-o', 'wide']);
      t.equal(wide.code, 0, wide.stderr);
      t.match(wide.stdout, /^NAME\s+STATE\s+CLUSTERS\s+HEARTBEAT\s+CONFIG ERROR\s+HOST\s+PID\s+INSTANCE\n/);
      t.match(wide.stdout, new RegExp(`\\n${broken}\\s+Out\\s+0\\s+\\d+s\\s+.*not valid YAML\\s+node-b\\s+1\\s+i-broken\\n`));
      const yaml = await runKubectl(target, ['get', 'synchromember', live, '-o', 'jsonpath={.status.clusters}']);
      t.equal(yaml.stdout, '["east","west"]', yaml.stderr);
      const explain = await runKubectl(target, ['explain', 'synchromembers.status']);
      t.equal(explain.code, 0, explain.stderr);
      t.match(explain.stdout, /KIND:\s+SynchroMember/);
      t.match(explain.stdout, /configError\s+<string>/);
      t.match(explain.stdout, /state\s+<string>.*-required-/s);
      const watch = await runKubectl(target, ['get', 'synchromembers', '--watch-only', '--request-timeout', '5s'], { timeoutMs: 20_000 });
      t.not(watch.code, 0, 'kubectl get -w: refused');
      t.match(watch.stderr, /watch is not supported on resources of kind "synchromembers\.panoptes\.io"/);
    });
  });
}
