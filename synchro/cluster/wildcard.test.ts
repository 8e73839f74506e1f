// What `resources: ["*"]` reaches, against simulated members: the member's own resources
// (built-in groups, CRDs), not aggregated APIs nor Panoptes' own groups unless named; and the
// resources the credentials may not list (403): reported once as Forbidden, rechecked slowly,
// not counted in SYNCED. The reader role of manifests/member-cluster reaches every built-in
// resource `*` selects.
import { readFileSync } from 'node:fs';
import t, { type Test } from 'tap';
import { parseAllDocuments } from 'yaml';
import { panoptesApis } from '../../hack/sim/apiservices.ts';
import { readVerbs, type SimRule } from '../../hack/sim/auth.ts';
import { startSimCluster, type SimCluster } from '../../hack/sim/cluster.ts';
import type { AggregatedApi } from '../../hack/sim/resources.ts';
import { widgetCRD } from '../../hack/sim/workload.ts';
import { openTestStore } from '../../storage/testing.ts';
import type { Store } from '../../storage/store.ts';
import { startSynchro, type SynchroHandle } from '../synchro.ts';
import type { ResourceStatus } from './reflector.ts';
import { fastTimings, tempDir, waitUntil, writeClusters } from '../testutil.ts';

/** A sample extension apiserver's API (k8s.io/sample-apiserver), served behind the aggregator. */
const wardle: AggregatedApi = {
  group: 'wardle.example.com',
  version: 'v1alpha1',
  service: { namespace: 'wardle', name: 'api' },
  resources: [{ resource: 'flunders', kind: 'Flunder', namespaced: true }],
};

const reader = 'system:serviceaccount:panoptes-system:panoptes-reader';

/** The resource rules of manifests/member-cluster's panoptes:reader. */
function readerRules(): SimRule[] {
  const docs = parseAllDocuments(readFileSync(new URL('../../manifests/member-cluster/reader.yaml', import.meta.url), 'utf8')).map((d) => d.toJS() as { kind: string; metadata: { name: string }; rules?: SimRule[] });
  const role = docs.find((d) => d.kind === 'ClusterRole' && d.metadata.name === 'panoptes:reader');
  return (role?.rules ?? []).filter((r) => r.resources).map((r) => ({ verbs: r.verbs, apiGroups: r.apiGroups, resources: r.resources }));
}

interface Status {
  phase: string;
  resources: ResourceStatus[];
  initialSync: { resourcesSynced: number; resourcesTotal: number; complete: boolean };
  conditions: { type: string; status: string; reason: string; message: string }[];
  discoveryErrors?: Record<string, string>;
}

const statusOf = async (store: Store, name: string) => (await store.getCluster(name))?.status as unknown as Status | undefined;
const ids = (s: Status | undefined) => (s?.resources ?? []).map((r) => `${r.group}/${r.resource}`);
const stored = async (store: Store, cluster: string, group: string, resource: string) => (await store.list({ group, resource, clusters: [cluster] })).items.map((o) => o.name);

/** Lines written on stderr (the logs) while the test runs. */
function captureLogs(t: Test): string[] {
  const lines: string[] = [];
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
    lines.push(...String(chunk).split('\n').filter(Boolean));
    return write(chunk, ...rest);
  }) as typeof process.stderr.write;
  t.teardown(() => {
    process.stderr.write = write;
  });
  return lines;
}

async function run(t: Test, sims: SimCluster[], entries: Record<string, unknown>[], timings = {}): Promise<{ store: Store; synchro: SynchroHandle }> {
  const { store, close } = await openTestStore('sqlite');
  const { dir, cleanup } = tempDir();
  const file = `${dir}/clusters.yaml`;
  writeClusters(file, entries);
  const synchro = await startSynchro({ store, clustersFile: file, timings: { ...fastTimings, ...timings }, reloadIntervalMs: 50 });
  t.teardown(async () => {
    await synchro.stop();
    await Promise.all(sims.map((s) => s.close()));
    await close();
    cleanup();
  });
  return { store, synchro };
}

t.test('"*" on a host cluster that is also a member: its own resources, not aggregated APIs nor Panoptes itself', async (t) => {
  const hostApis = [...panoptesApis, wardle];
  const [all, named, blind] = await Promise.all(['all', 'named', 'blind'].map((name) => startSimCluster({ name, workload: name === 'all', mcsCRDs: true, aggregatedApis: hostApis })));
  for (const c of [all, named, blind]) {
    c.crud.create(c.registry.byId('panoptes.io/clusters')!, 'v1alpha1', undefined, { metadata: { name: 'east' }, spec: { server: 'https://east.example.com' } });
    c.crud.create(c.registry.byId('wardle.example.com/flunders')!, 'v1alpha1', 'default', { metadata: { name: 'f1' } });
  }
  // An identity that may read everything but the APIServices.
  const groups = blind.registry.groupList().map((g) => g.name).filter((g) => g !== 'apiregistration.k8s.io');
  blind.auth.grant('blind', { name: 'blind', rules: [{ verbs: readVerbs, apiGroups: groups }] });
  const { store, synchro } = await run(t, [all, named, blind], [
    { name: 'all', server: all.url, resources: ['*'] },
    { name: 'named', server: named.url, resources: ['panoptes.io/clusters', 'wardle.example.com/*'] },
    { name: 'blind', server: blind.url, token: 'blind', resources: ['*'] },
  ]);
  t.ok(await synchro.waitForInitialSync(30_000), 'every cluster completes its initial sync');

  const a = await statusOf(store, 'all');
  const own = ['panoptes.io/clusters', 'panoptes.io/clustersources', 'panoptes.io/multiclusterservices', 'wardle.example.com/flunders'];
  t.same(ids(a).filter((id) => own.includes(id) || id.startsWith('external.metrics.k8s.io/')), [], '"*" leaves out panoptes.io and the aggregated wardle.example.com');
  for (const id of ['/pods', 'apps/deployments', 'apiregistration.k8s.io/apiservices', 'multicluster.x-k8s.io/serviceexports', 'demo.panoptes.io/widgets']) t.ok(ids(a).includes(id), `"*" syncs ${id} (built-in or a CRD)`);
  t.same(await stored(store, 'all', 'panoptes.io', 'clusters'), [], 'no Cluster of the member stored again');
  t.ok((await stored(store, 'all', 'apiregistration.k8s.io', 'apiservices')).includes('v1alpha1.panoptes.io'), 'its APIService is an object of the member like any other');

  const n = await statusOf(store, 'named');
  t.same(ids(n).sort(), ['panoptes.io/clusters', 'wardle.example.com/flunders'], 'named explicitly, they are synced');
  t.same(await stored(store, 'named', 'panoptes.io', 'clusters'), ['east']);
  t.same(await stored(store, 'named', 'wardle.example.com', 'flunders'), ['f1']);

  const b = await statusOf(store, 'blind');
  t.notOk(ids(b).some((id) => id.startsWith('panoptes.io/')), 'APIServices unreadable: Panoptes\' own groups are still left out');
  t.ok(ids(b).includes('wardle.example.com/flunders'), '...but aggregated APIs cannot be told apart');
  t.match(b?.discoveryErrors?.['apiregistration.k8s.io'], /^GET \/apis\/apiregistration\.k8s\.io\/v1\/apiservices: apiservices\.apiregistration\.k8s\.io is forbidden: User "blind" cannot list resource "apiservices".*"\*" cannot tell aggregated APIs/, 'and the status says why');
});

t.test('"*" with the reader role of manifests/member-cluster: what it may not list is Forbidden, once', async (t) => {
  const logs = captureLogs(t);
  const sim = await startSimCluster({ name: 'east', workload: true, mcsCRDs: true });
  sim.auth.grant('token-of-the-reader', { name: reader, rules: readerRules() });
  const { store, synchro } = await run(t, [sim], [{ name: 'east', server: sim.url, token: 'token-of-the-reader', resources: ['*'] }], { forbiddenRecheckMs: 60_000 });
  t.ok(await synchro.waitForInitialSync(30_000), 'the initial sync completes');
  const s = await statusOf(store, 'east');
  const forbidden = (s?.resources ?? []).filter((r) => r.state === 'forbidden');
  // The role reads every built-in resource "*" selects; a CRD's group is the operator's to add.
  t.same(forbidden.map((r) => `${r.group}/${r.resource}`), ['demo.panoptes.io/widgets'], 'only the custom resource is forbidden');
  t.match(forbidden[0], {
    state: 'forbidden',
    reason: 'Forbidden',
    error: `list: widgets.demo.panoptes.io is forbidden: User "${reader}" cannot list resource "widgets" in API group "demo.panoptes.io" at the cluster scope`,
  });
  t.ok((s?.resources ?? []).filter((r) => r.state !== 'forbidden').every((r) => r.state === 'synced'), 'everything else is synced');
  t.ok(s && s.initialSync.complete && s.initialSync.resourcesSynced === s.initialSync.resourcesTotal && s.initialSync.resourcesTotal === s.resources.length - 1, `SYNCED n/n without it (${s?.initialSync.resourcesSynced}/${s?.initialSync.resourcesTotal})`);
  t.match(s?.conditions.find((c) => c.type === 'ResourcesForbidden'), { status: 'True', reason: 'Forbidden', message: /may not list 1 selected resource\(s\).*every 60s\): widgets\.demo\.panoptes\.io; grant get, list and watch/ });
  // Not retried hot, logged once.
  const denials = () => sim.auth.denied.filter((d) => d.resource === 'widgets').length;
  const before = denials();
  await new Promise((r) => setTimeout(r, 1500));
  t.equal(denials(), before, 'not asked again within the recheck interval');
  t.ok(before <= 2, `asked at most twice so far (${before})`);
  t.equal(logs.filter((l) => l.includes('forbidden') && l.includes('widgets.demo.panoptes.io')).length, 1, 'one log line');
  const obj = await store.getClusterObject('east');
  t.match(obj?.object.status, { conditions: [{ type: 'Ready' }, { type: 'ResourcesForbidden', reason: 'Forbidden' }] }, 'the Cluster object shows it');
});

t.test('forbidden resources are rechecked: slowly, and all at once when one became readable', async (t) => {
  const recheck = 6000;
  const sim = await startSimCluster({ name: 'c', mcsCRDs: true });
  const narrow: SimRule[] = [{ verbs: readVerbs, apiGroups: ['', 'apiextensions.k8s.io'] }];
  sim.auth.grant('t', { name: 'panoptes', rules: narrow });
  const { store } = await run(t, [sim], [{ name: 'c', server: sim.url, token: 't', resources: ['pods', 'multicluster.x-k8s.io/serviceexports', 'demo.panoptes.io/widgets'] }], { forbiddenRecheckMs: recheck });
  const entry = async (resource: string) => (await statusOf(store, 'c'))?.resources.find((r) => r.resource === resource);
  const exports = await waitUntil('serviceexports forbidden', async () => ((await entry('serviceexports'))?.state === 'forbidden' ? entry('serviceexports') : undefined), 20_000);
  const exportsSince = Date.parse(exports!.errorTime!);
  // Widgets appear half an interval later, and are forbidden from then on.
  await waitUntil('half an interval', () => Date.now() >= exportsSince + recheck / 2, recheck, 20);
  sim.crud.create(sim.registry.byId('apiextensions.k8s.io/customresourcedefinitions')!, 'v1', undefined, widgetCRD);
  const widgets = await waitUntil('widgets forbidden', async () => ((await entry('widgets'))?.state === 'forbidden' ? entry('widgets') : undefined), 20_000);
  const widgetsSince = Date.parse(widgets!.errorTime!);
  t.ok(widgetsSince - exportsSince >= recheck / 2 - 100, 'widgets were forbidden later');
  // The member's RBAC changes.
  sim.auth.grant('t', { name: 'panoptes', rules: [{ verbs: readVerbs }] });
  await waitUntil('both synced', async () => (await entry('serviceexports'))?.state === 'synced' && (await entry('widgets'))?.state === 'synced', 4 * recheck);
  const exportsSynced = Date.parse((await entry('serviceexports'))!.lastSyncTime!);
  const widgetsSynced = Date.parse((await entry('widgets'))!.lastSyncTime!);
  t.ok(exportsSynced >= exportsSince + recheck - 500, 'serviceexports were rechecked after the interval, not before');
  t.ok(widgetsSynced < widgetsSince + recheck, 'widgets were rechecked with them, before their own interval was over');
  t.ok(sim.auth.denied.filter((d) => d.resource === 'serviceexports').length <= 3, 'a handful of denials in all');
  const s = await statusOf(store, 'c');
  t.notOk(s?.conditions.some((c) => c.type === 'ResourcesForbidden'), 'the condition is gone');
  t.ok(s?.initialSync.complete && s.initialSync.resourcesSynced === s.initialSync.resourcesTotal, 'SYNCED n/n');
});

t.test("a forbidden resource is listed again soon after the member's RBAC changed, not at its slow interval", async (t) => {
  // Far beyond the bounded wait below: a list again within it is the reaction to the change.
  const recheck = 600_000;
  const sim = await startSimCluster({ name: 'c' });
  const narrow: SimRule[] = [{ verbs: readVerbs, apiGroups: ['', 'rbac.authorization.k8s.io'] }];
  sim.auth.grant('t', { name: 'panoptes', rules: narrow });
  const { store } = await run(t, [sim], [{ name: 'c', server: sim.url, token: 't', resources: ['pods', 'rbac.authorization.k8s.io/clusterrolebindings', 'apps/deployments'] }], { forbiddenRecheckMs: recheck });
  const entry = async (resource: string) => (await statusOf(store, 'c'))?.resources.find((r) => r.resource === resource);
  await waitUntil('deployments forbidden, the bindings synced', async () => (await entry('deployments'))?.state === 'forbidden' && (await entry('clusterrolebindings'))?.state === 'synced', 20_000);
  const denials = sim.auth.denied.filter((d) => d.resource === 'deployments').length;
  // The member's RBAC changes as it does on a real cluster: a binding is created (and the
  // authorizer follows it; the simulator's rules are set beside it).
  sim.auth.grant('t', { name: 'panoptes', rules: [...narrow, { verbs: readVerbs, apiGroups: ['apps'] }] });
  sim.crud.create(sim.registry.byId('rbac.authorization.k8s.io/clusterrolebindings')!, 'v1', undefined, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: 'panoptes-apps' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'apps-reader' },
    subjects: [{ kind: 'User', name: 't' }],
  });
  await waitUntil('deployments synced, listed again after the change, not after the recheck interval', async () => (await entry('deployments'))?.state === 'synced', 60_000);
  t.equal(sim.auth.denied.filter((d) => d.resource === 'deployments').length, denials, 'and not asked in between');
  const s = await statusOf(store, 'c');
  t.notOk(s?.conditions.some((c) => c.type === 'ResourcesForbidden'), 'the condition is gone');
});
