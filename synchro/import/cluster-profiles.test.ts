// ClusterProfiles in and out, end to end on both backends, with the upstream CRD served by the
// simulated host cluster. Import: profiles of another cluster manager become Clusters (Secret
// and exec providers), a rotation of the Secret's token is followed, a malformed profile is
// Invalid alone, the profile's conditions show on its Cluster, a profile whose name another
// ClusterSource's Cluster holds is a NameClash, and a profile that goes takes its Cluster
// with it. Publish: a ClusterProfile per Cluster, its conditions following Panoptes' health,
// deleted with its Cluster, never a credential, and another manager's profile left alone.
// Round trip: a second installation importing what the first publishes finds the same clusters.
import { writeFileSync } from 'node:fs';
import t from 'tap';
import { stringify } from 'yaml';
import { createApiserver } from '../../apiserver/server.ts';
import { startSimCluster, type SimCluster } from '../../hack/sim/cluster.ts';
import { http, kubectl, tempDir as simTempDir } from '../../hack/sim/testutil.ts';
import { MemberNetworks } from '../../member/networks.ts';
import { backends, openTestStore } from '../../storage/testing.ts';
import type { Store } from '../../storage/store.ts';
import { startSynchro, type SynchroOptions } from '../synchro.ts';
import { fastTimings, tempDir, waitUntil, writeClusters } from '../testutil.ts';
import { parseProviderFile } from './exec-credentials.ts';
import { startMembers } from './testutil.ts';

const C = '/apis/panoptes.io/v1alpha1/clusters';
const CS = '/apis/panoptes.io/v1alpha1/clustersources';
const profiles = (ns: string) => `/apis/multicluster.x-k8s.io/v1alpha1/namespaces/${ns}/clusterprofiles`;
const b64 = (s: string) => Buffer.from(s).toString('base64');

type Condition = Record<'type' | 'status' | 'reason' | 'message', string>;
interface Obj {
  metadata: { name: string; labels?: Record<string, string>; resourceVersion?: string };
  spec?: Record<string, unknown> & { server?: string };
  status?: Record<string, unknown> & { conditions?: Condition[]; phase?: string; ready?: boolean; message?: string; failures?: Array<Record<string, unknown>>; properties?: Array<{ name: string; value: string }> };
}
const condition = (o: Obj | undefined, type: string) => o?.status?.conditions?.find((c) => c.type === type);

/** One Panoptes installation (its own database) with the host cluster. */
async function installation(backend: (typeof backends)[number], host: SimCluster, extra: Partial<SynchroOptions>, teardown: (f: () => Promise<void>) => void) {
  const { store, close } = await openTestStore(backend);
  const { dir, cleanup } = tempDir();
  const file = `${dir}/clusters.yaml`;
  writeClusters(file, []);
  const memberNetworks = MemberNetworks.parse('127.0.0.0/8');
  const api = await createApiserver({ store, memberNetworks });
  const base = await api.listen('127.0.0.1', 0);
  const synchro = await startSynchro({ store, memberNetworks, clustersFile: file, hostCluster: { server: host.url }, timings: fastTimings, reloadIntervalMs: 100, shards: { identity: 's1', assignIntervalMs: 200 }, compaction: false, ...extra });
  teardown(async () => {
    await synchro.stop();
    await api.close();
    await close();
    cleanup();
  });
  const call = async (method: string, path: string, body?: unknown) => http(method, base + path, body);
  const get = async (name: string): Promise<Obj | undefined> => {
    const r = await call('GET', `${C}/${name}`);
    return r.status === 200 ? (r.json as Obj) : undefined;
  };
  const until = async (name: string, what: string, ok: (o: Obj) => boolean): Promise<Obj> =>
    (await waitUntil(`${name} ${what}`, async () => {
      const o = await get(name);
      return o && ok(o) ? o : undefined;
    }, 30_000))!;
  return { store: store as Store, dir, call, get, until, installationId: await store.installationId() };
}

for (const backend of backends) {
  t.test(`${backend}: ClusterProfiles imported, published, and round-tripped`, async (t) => {
    const sims = await startMembers(['east', 'west', 'north', 'shared']);
    const host = await startSimCluster({ name: 'host', importCRDs: true });
    t.teardown(() => Promise.all([...sims.values(), host].map((s) => s.close())));
    const sim = (n: string) => sims.get(n)!;
    const hostCall = (method: string, path: string, body?: unknown) => http(method, host.url + path, body);
    for (const ns of ['fleet', 'kc', 'inventory']) t.equal((await hostCall('POST', '/api/v1/namespaces', { metadata: { name: ns } })).status, 201);
    const secret = (ns: string, name: string, data: Record<string, string>) => hostCall('POST', `/api/v1/namespaces/${ns}/secrets`, { metadata: { name, namespace: ns }, type: 'Opaque', data });
    const setStatus = async (ns: string, name: string, status: Record<string, unknown>) => {
      const cur = (await hostCall('GET', `${profiles(ns)}/${name}`)).json;
      const r = await hostCall('PUT', `${profiles(ns)}/${name}/status`, { ...cur, status });
      t.equal(r.status, 200, JSON.stringify(r.json));
    };
    const profile = async (ns: string, name: string, manager: string, status: Record<string, unknown>, labels: Record<string, string> = {}) => {
      const r = await hostCall('POST', profiles(ns), { apiVersion: 'multicluster.x-k8s.io/v1alpha1', kind: 'ClusterProfile', metadata: { name, labels: { 'x-k8s.io/cluster-manager': manager, ...labels } }, spec: { clusterManager: { name: manager } } });
      t.equal(r.status, 201, JSON.stringify(r.json));
      await setStatus(ns, name, status);
    };
    const access = (provider: string, server: string, clusterName?: string) => ({ name: provider, cluster: { server, ...(clusterName ? { extensions: [{ name: 'client.authentication.k8s.io/exec', extension: { clusterName } }] } : {}) } });
    const healthy = (status: string) => [{ type: 'ControlPlaneHealthy', status, reason: status === 'True' ? 'Healthy' : 'Unhealthy', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' }];

    // Another manager's profile where Panoptes publishes, of a name Panoptes' fleet will have: never touched.
    await profile('inventory', 'east', 'ocm', { conditions: healthy('True') });
    // A profile labelled as Panoptes' but of another installation: never deleted.
    await profile('inventory', 'stranger', 'panoptes', { conditions: healthy('True') }, { 'panoptes.io/installation': 'someone-else' });

    // The exec plugin the operator configures: tokens by clusterName (as KEP-5339's extension passes it).
    const { dir: pluginDir, cleanup } = tempDir();
    t.teardown(cleanup);
    writeFileSync(`${pluginDir}/plugin.mjs`, `const info = JSON.parse(process.env.KUBERNETES_EXEC_INFO);
console.log(JSON.stringify({ apiVersion: info.apiVersion, kind: 'ExecCredential', status: { token: info.spec.cluster.config.clusterName + '-token-1' } }));`);
    const clusterProfileProviders = parseProviderFile(JSON.stringify({ providers: [{ name: 'plugin', servers: [sim('west').url], execConfig: { command: process.execPath, args: [`${pluginDir}/plugin.mjs`], provideClusterInfo: true } }] }), 'providers.json');
    const a = await installation(backend, host, { clusterProfileProviders, publishClusterProfiles: { namespace: 'inventory', intervalMs: 200 } }, (f) => t.teardown(f));

    await t.test('import: Secret and exec providers, conditions, a malformed profile alone, a name clash with another source', async (t) => {
      // Another ClusterSource imports `shared` first.
      await secret('kc', 'shared', { kubeconfig: b64(stringify({ apiVersion: 'v1', kind: 'Config', clusters: [{ name: 'c', cluster: { server: sim('shared').url } }], users: [{ name: 'u', user: { token: 'shared-token-1' } }], contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }], 'current-context': 'c' })) });
      t.equal((await a.call('POST', CS, { metadata: { name: 'kc' }, spec: { type: 'kubeconfigSecrets', namespaces: ['kc'], defaults: { resources: ['configmaps'] } } })).status, 201);
      await a.until('shared', 'Ready', (o) => o.status?.ready === true);

      await secret('fleet', 'east', { token: b64('east-token-1'), server: b64(sim('east').url) });
      await profile('fleet', 'east', 'ocm', { accessProviders: [access('secretreader', sim('east').url)], conditions: healthy('True') });
      await profile('fleet', 'west', 'ocm', { accessProviders: [access('plugin', sim('west').url, 'west')] });
      await profile('fleet', 'broken', 'ocm', { conditions: healthy('True') });
      await secret('fleet', 'shared', { token: b64('shared-token-1'), server: b64(sim('shared').url) });
      await profile('fleet', 'shared', 'ocm', { accessProviders: [access('secretreader', sim('shared').url)] });
      await profile('fleet', 'theirs', 'karmada', { accessProviders: [access('secretreader', sim('north').url)] });
      const created = await a.call('POST', CS, {
        metadata: { name: 'ocm' },
        spec: { type: 'clusterProfiles', namespaces: ['fleet'], selector: { matchLabels: { 'x-k8s.io/cluster-manager': 'ocm' } }, clusterProfiles: { providers: [{ name: 'secretreader', type: 'Secret' }, { name: 'plugin', type: 'Exec' }] }, defaults: { resources: ['configmaps'] } },
      });
      t.equal(created.status, 201, JSON.stringify(created.json));
      const east = await a.until('east', 'Ready', (o) => o.status?.ready === true);
      t.match(east.spec, { source: 'clustersource/ocm', sourceObject: { apiVersion: 'multicluster.x-k8s.io/v1alpha1', kind: 'ClusterProfile', namespace: 'fleet', name: 'east' }, server: sim('east').url, credentials: { sourceSecretRef: { namespace: 'fleet', name: 'east' } } });
      t.equal(east.spec?.multiClusterServices, undefined, 'no multi-cluster Service role unless granted');
      t.match(condition(east, 'Ready'), { status: 'True' }, "Panoptes' own condition");
      t.match(condition(await a.until('east', 'shows the profile\'s health', (o) => condition(o, 'ClusterProfileControlPlaneHealthy') !== undefined), 'ClusterProfileControlPlaneHealthy'), { status: 'True', reason: 'Healthy' }, "and the profile's beside it");
      const west = await a.until('west', 'Ready (exec provider)', (o) => o.status?.ready === true);
      t.match(west.status?.credentials, { kinds: ['token'] });
      t.ok(sim('west').auth.seen.includes('west-token-1'), 'the token the plugin printed');
      const broken = await a.until('broken', 'Invalid', (o) => o.status?.phase === 'Invalid');
      t.match(broken.status?.message, /offers no access provider this ClusterSource uses/);
      t.equal((await a.get('east'))?.status?.ready, true, 'the others stay Ready');
      t.equal(await a.get('theirs'), undefined, "the selector leaves another manager's profile out");
      const src = (await waitUntil('the ClusterSource status', async () => {
        const o = (await a.call('GET', `${CS}/ocm`)).json as Obj;
        return o.status?.failed === 2 ? o : undefined;
      }, 30_000))!;
      t.match(src.status, { imported: 2, failed: 2 });
      t.match(src.status?.failures, [{ reason: 'Invalid', cluster: 'broken' }, { reason: 'NameClash', cluster: 'shared', message: /already comes from ClusterSource kc/ }]);
      t.match((await a.get('shared'))?.spec, { source: 'clustersource/kc' }, 'the other source keeps its Cluster');
    });

    await t.test('import: conditions follow the profile, a rotation is followed, a profile that goes takes its Cluster', async (t) => {
      await setStatus('fleet', 'east', { accessProviders: [access('secretreader', sim('east').url)], conditions: healthy('False') });
      await a.until('east', 'shows the profile unhealthy', (o) => condition(o, 'ClusterProfileControlPlaneHealthy')?.status === 'False');

      sim('east').auth.tokens = ['east-token-2'];
      const cur = (await hostCall('GET', '/api/v1/namespaces/fleet/secrets/east')).json;
      t.equal((await hostCall('PUT', '/api/v1/namespaces/fleet/secrets/east', { ...cur, data: { ...cur.data, token: b64('east-token-2') } })).status, 200);
      await waitUntil('the rotated token in use', () => sim('east').auth.seen.at(-1) === 'east-token-2', 30_000);
      await a.until('east', 'Ready after the rotation', (o) => o.status?.ready === true);

      // A profile pointing its access provider elsewhere: the token is not sent there.
      await setStatus('fleet', 'east', { accessProviders: [access('secretreader', sim('north').url)] });
      const moved = await a.until('east', 'Invalid once its profile points elsewhere', (o) => o.status?.phase === 'Invalid');
      t.match(moved.status?.message, /holds a token for .*: it is not sent there/);
      t.notOk(sim('north').auth.seen.includes('east-token-2'), 'north never saw east\'s token');
      await setStatus('fleet', 'east', { accessProviders: [access('secretreader', sim('east').url)], conditions: healthy('True') });
      await a.until('east', 'Ready again', (o) => o.status?.ready === true);

      // Nor through the exec provider: the plugin is run only for the servers the operator gave it.
      await setStatus('fleet', 'west', { accessProviders: [access('plugin', sim('north').url, 'west')] });
      const redirected = await a.until('west', 'Invalid once its profile points elsewhere', (o) => o.status?.phase === 'Invalid');
      t.match(redirected.status?.message, /exec provider plugin may not be used for server .*: it is not one of its servers/);
      t.notOk(sim('north').auth.seen.includes('west-token-1'), "north never saw west's token");

      t.equal((await hostCall('DELETE', `${profiles('fleet')}/west`)).status, 200);
      await waitUntil('west removed', async () => (await a.get('west')) === undefined, 30_000);
    });

    await t.test('publish: a profile per Cluster; health, deletion; never a credential; others left alone', async (t) => {
      type Profile = Obj & { spec: { clusterManager: { name: string } } };
      const published = async () => ((await hostCall('GET', profiles('inventory'))).json.items as Profile[]);
      const mine = (p: Profile) => p.metadata.labels?.['panoptes.io/installation'] === a.installationId;
      const byName = async (n: string) => (await published()).find((p) => p.metadata.name === n);
      const shared = (await waitUntil('shared published', async () => {
        const p = await byName('shared');
        return p && condition(p, 'ControlPlaneHealthy')?.status === 'True' ? p : undefined;
      }, 30_000))!;
      t.match(shared.metadata.labels, { 'x-k8s.io/cluster-manager': 'panoptes', 'panoptes.io/installation': a.installationId });
      t.same(shared.spec, { displayName: 'shared', clusterManager: { name: 'panoptes' } });
      t.match(condition(shared, 'Joined'), { status: 'True', reason: 'Reached' });
      t.match(shared.status, { accessProviders: [{ name: 'panoptes', cluster: { server: sim('shared').url } }] });
      t.match(shared.status?.properties, [{ name: 'panoptes.io/phase', value: 'Ready' }]);
      t.match(shared.status?.version, { kubernetes: /^v1\.\d+/ }, 'the Kubernetes version Panoptes observes');
      t.equal((shared.status?.version as { kubernetes: string }).kubernetes, (await a.get('shared'))?.status?.kubernetesVersion);
      t.notOk(JSON.stringify(await published()).match(/token-[12]/), 'no credential in any profile');
      t.ok(await waitUntil('broken published, unhealthy', async () => condition(await byName('broken'), 'ControlPlaneHealthy')?.status === 'False', 30_000));

      const theirs = (await byName('east'))!;
      t.same(theirs.spec, { clusterManager: { name: 'ocm' } }, "another manager's profile of a Cluster's name: left alone");
      t.equal(theirs.metadata.labels?.['x-k8s.io/cluster-manager'], 'ocm');
      t.ok(await byName('stranger'), "another installation's profile is not deleted");

      // Health: the member refuses the credentials; the profile says so.
      sim('shared').auth.tokens = ['something-else'];
      await waitUntil('shared unhealthy in its profile', async () => condition(await byName('shared'), 'ControlPlaneHealthy')?.status === 'False', 30_000);
      t.match(condition((await byName('shared'))!, 'ControlPlaneHealthy'), { reason: 'Unauthorized' });
      sim('shared').auth.tokens = ['shared-token-1'];
      await waitUntil('shared healthy again', async () => condition(await byName('shared'), 'ControlPlaneHealthy')?.status === 'True', 30_000);

      // Deletion follows the Cluster: the west Cluster went with its source profile.
      await waitUntil('no profile for west', async () => (await byName('west')) === undefined, 30_000);
      t.same((await published()).filter(mine).map((p) => p.metadata.name).sort(), ['broken', 'shared'], "this installation's profiles: its Clusters but east, which another manager holds");

      // As every inventory consumer sees it: kubectl against the host, by the upstream CRD.
      const listed = await kubectl(host, simTempDir(t), ['get', 'clusterprofiles', '-A', '-l', 'x-k8s.io/cluster-manager=panoptes', '-o', 'custom-columns=NS:.metadata.namespace,NAME:.metadata.name,MANAGER:.spec.clusterManager.name,HEALTHY:.status.conditions[?(@.type=="ControlPlaneHealthy")].status', '--no-headers']);
      t.equal(listed.code, 0, listed.stderr);
      t.match(listed.stdout, /^inventory\s+broken\s+panoptes\s+False$/m);
      t.match(listed.stdout, /^inventory\s+shared\s+panoptes\s+True$/m);
    });

    await t.test('round trip: a second installation imports what the first publishes and finds the same clusters', async (t) => {
      // The second installation's operator gives it its own credentials, for the server each is for.
      await secret('inventory', 'shared', { token: b64('shared-token-1'), server: b64(sim('shared').url) });
      const b = await installation(backend, host, {}, (f) => t.teardown(f));
      t.not(b.installationId, a.installationId);
      const created = await b.call('POST', CS, { metadata: { name: 'panoptes-a' }, spec: { type: 'clusterProfiles', namespaces: ['inventory'], selector: { matchLabels: { 'x-k8s.io/cluster-manager': 'panoptes', 'panoptes.io/installation': a.installationId } }, clusterProfiles: { providers: [{ name: 'panoptes', type: 'Secret' }] }, defaults: { resources: ['configmaps'] } } });
      t.equal(created.status, 201, JSON.stringify(created.json));
      const shared = await b.until('shared', 'Ready in the second installation', (o) => o.status?.ready === true);
      t.equal(shared.spec?.server, (await a.get('shared'))?.spec?.server, 'the same endpoint');
      const listA = ((await a.call('GET', C)).json.items as Obj[]).filter((o) => o.metadata.name !== 'east').map((o) => o.metadata.name).sort();
      const listB = await waitUntil('the same clusters', async () => {
        const items = ((await b.call('GET', C)).json.items as Obj[]).map((o) => o.metadata.name).sort();
        return items.length === listA.length ? items : undefined;
      }, 30_000);
      t.same(listB, listA, 'every Cluster A publishes as its own is one of B\'s');
      t.match(condition((await b.get('shared'))!, 'ClusterProfileControlPlaneHealthy'), { status: 'True' }, "A's health of it, shown in B");
    });
  });
}
