// Clusters imported from ClusterSources, end to end on both backends: a simulated host cluster
// holding the source objects (Secrets, and Cluster API's and Karmada's Cluster CRDs), simulated
// members that accept only their own token, the apiserver serving the writes and a running
// synchro. Each source kind imports its clusters (their objects become listable), a rotation
// of a token in a source Secret is followed, a malformed source object makes its one cluster
// Invalid while the others stay Ready, a source object that goes takes its Cluster with it
// (DELETED for its objects), spec edits of an imported Cluster are refused naming the source,
// a name clash with an API or a file Cluster is a condition on both, and the ClusterSource's deletion
// removes its Clusters.
import t from 'tap';
import { stringify } from 'yaml';
import { createApiserver } from '../../apiserver/server.ts';
import { startSimCluster } from '../../hack/sim/cluster.ts';
import { http, openWatch } from '../../hack/sim/testutil.ts';
import { MemberNetworks } from '../../member/networks.ts';
import { backends, openTestStore } from '../../storage/testing.ts';
import { startSynchro } from '../synchro.ts';
import { fastTimings, tempDir, waitForCopy, waitUntil, writeClusters } from '../testutil.ts';
import { startMembers } from './testutil.ts';

const C = '/apis/panoptes.io/v1alpha1/clusters';
const CS = '/apis/panoptes.io/v1alpha1/clustersources';
const b64 = (s: string) => Buffer.from(s).toString('base64');
const MERGE = { 'Content-Type': 'application/merge-patch+json' };

/** A kubeconfig as Cluster API writes one into <cluster>-kubeconfig (key value): one cluster, one user, one context. */
const kubeconfig = (contexts: Array<{ name: string; server: string; token: string }>, current = contexts[0]?.name) =>
  stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: contexts.map((c) => ({ name: c.name, cluster: { server: c.server } })),
    users: contexts.map((c) => ({ name: `${c.name}-admin`, user: { token: c.token } })),
    contexts: contexts.map((c) => ({ name: c.name, context: { cluster: c.name, user: `${c.name}-admin` } })),
    'current-context': current,
  });

for (const backend of backends) {
  t.test(`${backend}: clusters imported from Cluster API, Argo CD, Karmada and kubeconfig Secrets`, async (t) => {
    const sims = await startMembers(['capi-a', 'capi-b', 'argo-a', 'karmada-a', 'kc-a', 'kc-b', 'clash', 'filed']);
    const host = await startSimCluster({ name: 'host', importCRDs: true });
    const { store, close } = await openTestStore(backend);
    const { dir, cleanup } = tempDir();
    const file = `${dir}/clusters.yaml`;
    writeClusters(file, []);
    const memberNetworks = MemberNetworks.parse('127.0.0.0/8');
    const api = await createApiserver({ store, catalogOptions: { refreshMs: 200 }, memberNetworks });
    const base = await api.listen('127.0.0.1', 0);
    const synchro = await startSynchro({
      store,
      memberNetworks,
      clustersFile: file,
      hostCluster: { server: host.url },
      timings: fastTimings,
      reloadIntervalMs: 100,
      shards: { identity: 's1', assignIntervalMs: 200 },
      compaction: false,
    });
    t.teardown(async () => {
      await synchro.stop();
      await api.close();
      await close();
      await Promise.all([...sims.values(), host].map((s) => s.close()));
      cleanup();
    });
    const sim = (n: string) => sims.get(n)!;
    const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => http(method, base + path, body, headers);
    const cluster = async (name: string) => (await call('GET', `${C}/${name}`)).json;
    const hostCall = (method: string, path: string, body?: unknown) => http(method, host.url + path, body);
    for (const ns of ['capi', 'argocd', 'karmada-cluster', 'fleet']) t.equal((await hostCall('POST', '/api/v1/namespaces', { metadata: { name: ns } })).status, 201);
    const secret = (ns: string, name: string, data: Record<string, string>, extra: Record<string, unknown> = {}) =>
      hostCall('POST', `/api/v1/namespaces/${ns}/secrets`, { metadata: { name, namespace: ns, ...((extra.metadata as object) ?? {}) }, type: extra.type ?? 'Opaque', data });
    const ready = (name: string) =>
      waitUntil(`${name} Ready`, async () => {
        const o = await cluster(name);
        return o?.status?.ready === true ? o : undefined;
      }, 30_000);
    const configmap = (n: string, name: string) => sim(n).crud.create(sim(n).registry.lookup('', 'v1', 'configmaps')!, 'v1', 'default', { metadata: { name }, data: {} });

    await t.test('Cluster API: <cluster>-kubeconfig Secrets become Clusters; provisionedOnly waits for the Cluster to be provisioned', async (t) => {
      for (const n of ['a', 'b']) {
        const r = await secret('capi', `${n}-kubeconfig`, { value: b64(kubeconfig([{ name: n, server: sim(`capi-${n}`).url, token: `capi-${n}-token-1` }])) }, {
          type: 'cluster.x-k8s.io/secret',
          metadata: { labels: { 'cluster.x-k8s.io/cluster-name': n } },
        });
        t.equal(r.status, 201);
        // The CA Secret carries the same label: not a kubeconfig, not imported.
        await secret('capi', `${n}-ca`, { 'tls.crt': b64('x'), 'tls.key': b64('y') }, { type: 'cluster.x-k8s.io/secret', metadata: { labels: { 'cluster.x-k8s.io/cluster-name': n } } });
      }
      const phase = (name: string, p: string) => ({ apiVersion: 'cluster.x-k8s.io/v1beta1', kind: 'Cluster', metadata: { name, namespace: 'capi' }, spec: {}, status: { phase: p } });
      t.equal((await hostCall('POST', '/apis/cluster.x-k8s.io/v1beta1/namespaces/capi/clusters', phase('a', 'Provisioned'))).status, 201);
      t.equal((await hostCall('POST', '/apis/cluster.x-k8s.io/v1beta1/namespaces/capi/clusters', phase('b', 'Provisioning'))).status, 201);
      const created = await call('POST', CS, {
        apiVersion: 'panoptes.io/v1alpha1',
        kind: 'ClusterSource',
        metadata: { name: 'capi' },
        spec: { type: 'clusterAPI', namespaces: ['capi'], naming: { prefix: 'capi-' }, defaults: { resources: ['configmaps'] }, clusterAPI: { provisionedOnly: true } },
      });
      t.equal(created.status, 201, JSON.stringify(created.json));
      t.same(created.json.metadata.finalizers, ['panoptes.io/import']);
      const a = await ready('capi-a');
      t.match(a.spec, { source: 'clustersource/capi', sourceObject: { kind: 'Secret', namespace: 'capi', name: 'a-kubeconfig' }, server: sim('capi-a').url, resources: ['configmaps'], credentials: { sourceSecretRef: { namespace: 'capi', name: 'a-kubeconfig' } } });
      t.match(a.status.credentials, { source: 'Secret', secret: 'capi/a-kubeconfig', kinds: ['token'] });
      t.equal(a.spec.multiClusterServices, undefined, 'a source that grants nothing: no multi-cluster Service role');
      t.match((await call('GET', C, undefined, { Accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' })).json.rows.find((r: { cells: unknown[] }) => r.cells[0] === 'capi-a').cells[9], 'none', 'kubectl get clusters -o wide: MCS none');
      t.notOk(JSON.stringify(a).includes('capi-a-token-1'), 'the token is not served');
      t.notOk(JSON.stringify(await store.listClusterRegistrations()).includes('capi-a-token-1'), 'nor copied into storage');
      configmap('capi-a', 'hello');
      t.same(await waitForCopy(store, sim('capi-a'), 'capi-a', ['/configmaps'], 20_000), [], 'its objects are listable');
      t.equal((await call('GET', `${C}/capi-b`)).status, 404, 'b is not provisioned: not imported');
      const cur = (await hostCall('GET', '/apis/cluster.x-k8s.io/v1beta1/namespaces/capi/clusters/b')).json;
      t.equal((await hostCall('PUT', '/apis/cluster.x-k8s.io/v1beta1/namespaces/capi/clusters/b', { ...cur, status: { infrastructureReady: true, controlPlaneReady: true } })).status, 200);
      await ready('capi-b');
      const src = await waitUntil('the ClusterSource status', async () => {
        const o = (await call('GET', `${CS}/capi`)).json;
        return o.status?.imported === 2 ? o : undefined;
      });
      t.match(src.status, { imported: 2, failed: 0, conditions: [{ type: 'Ready', status: 'True' }] });
      const table = await call('GET', CS, undefined, { Accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' });
      t.match(table.json.rows.find((r: { cells: unknown[] }) => r.cells[0] === 'capi').cells, ['capi', 'clusterAPI', 2, 0]);
    });

    await t.test('an imported Cluster: spec edits refused naming the source (422), labels editable, delete refused (403)', async (t) => {
      const p = await call('PATCH', `${C}/capi-a`, { spec: { resources: ['secrets'] } }, MERGE);
      t.equal(p.status, 422);
      t.match(p.json.details.causes, [{ field: 'spec', reason: 'FieldValueForbidden', message: /managed by ClusterSource capi/ }]);
      const l = await call('PATCH', `${C}/capi-a`, { metadata: { labels: { team: 'blue' } } }, MERGE);
      t.equal(l.status, 200);
      t.equal(l.json.metadata.labels.team, 'blue');
      const d = await call('DELETE', `${C}/capi-a`);
      t.equal(d.status, 403);
      t.match(d.json.message, /imported by ClusterSource capi/);
      const forged = await call('POST', C, { metadata: { name: 'forged' }, spec: { source: 'clustersource/capi', server: 'https://10.0.0.1' } });
      t.equal(forged.status, 422, 'no one creates an imported Cluster through the API');
    });

    await t.test('Argo CD: cluster Secrets; a malformed one is Invalid alone', async (t) => {
      const label = { labels: { 'argocd.argoproj.io/secret-type': 'cluster' } };
      await secret('argocd', 'cluster-argo-a', { name: b64('Argo A'), server: b64(sim('argo-a').url), config: b64(JSON.stringify({ bearerToken: 'argo-a-token-1', tlsClientConfig: { insecure: false } })) }, { metadata: label });
      await secret('argocd', 'cluster-eks', { name: b64('eks'), server: b64('https://eks.example.com'), config: b64(JSON.stringify({ awsAuthConfig: { clusterName: 'eks', roleARN: 'arn:aws:iam::1:role/x' } })) }, { metadata: label });
      await secret('argocd', 'cluster-broken', { name: b64('broken'), server: b64('https://broken.example.com'), config: b64('{not json') }, { metadata: label });
      t.equal((await call('POST', CS, { metadata: { name: 'argo' }, spec: { type: 'argoCD', namespaces: ['argocd'], naming: { prefix: 'argo-' }, defaults: { resources: ['configmaps'] } } })).status, 201);
      // "Argo A" is not a DNS label: made one (Sanitize).
      const name: string = await waitUntil('the Argo CD cluster', async () => ((await call('GET', `${C}?labelSelector=panoptes.io/cluster-source=argo`)).json.items as Array<{ metadata: { name: string }; spec: { server?: string } }>).find((c) => c.spec.server === sim('argo-a').url)?.metadata.name ?? '');
      t.match(name, /^argo-argo-a-[0-9a-f]{6}$/);
      await ready(name);
      const eks = await waitUntil('argo-eks Invalid', async () => ((await cluster('argo-eks'))?.status?.phase === 'Invalid' ? cluster('argo-eks') : undefined));
      t.match(eks.status.message, /awsAuthConfig .* not supported/);
      const broken = await waitUntil('argo-broken Invalid', async () => ((await cluster('argo-broken'))?.status?.phase === 'Invalid' ? cluster('argo-broken') : undefined));
      t.match(broken.status.message, /key config is not JSON/);
      t.equal((await cluster(name)).status.ready, true, 'the good one stays Ready');
      const src = await waitUntil('argo status', async () => ((await call('GET', `${CS}/argo`)).json.status?.failed === 2 ? (await call('GET', `${CS}/argo`)).json : undefined));
      t.match(src.status, { imported: 1, failed: 2 });
      t.match(src.status.failures, [{ reason: 'Invalid', cluster: 'argo-broken' }, { reason: 'Invalid', cluster: 'argo-eks' }]);
    });

    await t.test('Karmada: Push Clusters with a secretRef (caBundle, token); Pull Clusters are left out', async (t) => {
      await secret('karmada-cluster', 'karmada-a', { token: b64('karmada-a-token-1') });
      const kc = (name: string, syncMode: string) => ({ apiVersion: 'cluster.karmada.io/v1alpha1', kind: 'Cluster', metadata: { name }, spec: { apiEndpoint: sim('karmada-a').url, syncMode, secretRef: { namespace: 'karmada-cluster', name: 'karmada-a' } } });
      t.equal((await hostCall('POST', '/apis/cluster.karmada.io/v1alpha1/clusters', kc('member1', 'Push'))).status, 201);
      t.equal((await hostCall('POST', '/apis/cluster.karmada.io/v1alpha1/clusters', kc('member2', 'Pull'))).status, 201);
      t.equal((await call('POST', CS, { metadata: { name: 'karmada' }, spec: { type: 'karmada', namespaces: ['karmada-cluster'], defaults: { resources: ['configmaps'] } } })).status, 201);
      const m = await ready('member1');
      t.match(m.spec, { source: 'clustersource/karmada', sourceObject: { apiVersion: 'cluster.karmada.io/v1alpha1', kind: 'Cluster', name: 'member1' }, credentials: { sourceSecretRef: { namespace: 'karmada-cluster', name: 'karmada-a' } } });
      t.equal((await call('GET', `${C}/member2`)).status, 404, 'a Pull cluster is not imported');
      // A Karmada Cluster naming a Panoptes credentials Secret (labelled panoptes.io/cluster) does not get its token.
      await secret('karmada-cluster', 'east-credentials', { token: b64('east-only-token') }, { metadata: { labels: { 'panoptes.io/cluster': 'east' }, annotations: { 'panoptes.io/server': 'https://east.example.com' } } });
      t.equal((await hostCall('POST', '/apis/cluster.karmada.io/v1alpha1/clusters', { ...kc('sneaky', 'Push'), spec: { ...kc('sneaky', 'Push').spec, secretRef: { namespace: 'karmada-cluster', name: 'east-credentials' } } })).status, 201);
      const sneaky = await waitUntil('sneaky Invalid', async () => ((await cluster('sneaky'))?.status?.phase === 'Invalid' ? cluster('sneaky') : undefined));
      t.match(sneaky.status.message, /Secret karmada-cluster\/east-credentials is not found/);
      t.notOk(sim('karmada-a').auth.seen.includes('east-only-token'), 'the credentials of a Panoptes Cluster go nowhere else');
    });

    await t.test('kubeconfig Secrets: one Cluster per context; a rotation is followed; a source that goes takes its Cluster with it', async (t) => {
      const two = (tokenA: string) => kubeconfig([{ name: 'a', server: sim('kc-a').url, token: tokenA }, { name: 'b', server: sim('kc-b').url, token: 'kc-b-token-1' }]);
      await secret('fleet', 'prod', { kubeconfig: b64(two('kc-a-token-1')) }, { metadata: { labels: { fleet: 'yes' } } });
      await secret('fleet', 'unrelated', { kubeconfig: b64(two('x')) });
      t.equal((await call('POST', CS, { metadata: { name: 'kc' }, spec: { type: 'kubeconfigSecrets', namespaces: ['fleet'], selector: { matchLabels: { fleet: 'yes' } }, kubeconfigSecrets: { contexts: 'All' }, defaults: { resources: ['configmaps'], multiClusterServices: { consumer: true } } } })).status, 201);
      const prodA = await ready('prod-a');
      await ready('prod-b');
      t.same(prodA.spec.multiClusterServices, { consumer: true }, 'the roles its ClusterSource grants');
      t.equal((await call('GET', `${C}/unrelated-a`)).status, 404, 'the selector leaves the other Secret out');

      // The member accepts only the new token from now on; the Secret is rotated.
      sim('kc-a').auth.tokens = ['kc-a-token-2'];
      const cur = (await hostCall('GET', '/api/v1/namespaces/fleet/secrets/prod')).json;
      t.equal((await hostCall('PUT', '/api/v1/namespaces/fleet/secrets/prod', { ...cur, data: { kubeconfig: b64(two('kc-a-token-2')) } })).status, 200);
      // Followed as the Secret changes (its watch), not at the importer's resync, which the
      // 10 minutes of synchro's default puts far beyond this bounded wait.
      await waitUntil('the rotated token in use', () => sim('kc-a').auth.seen.at(-1) === 'kc-a-token-2', 60_000);
      configmap('kc-a', 'after-rotation');
      t.same(await waitForCopy(store, sim('kc-a'), 'prod-a', ['/configmaps'], 20_000), [], 'syncing with the new token');

      // The source Secret goes: its Clusters go, their objects DELETED to watchers.
      configmap('kc-b', 'doomed');
      t.same(await waitForCopy(store, sim('kc-b'), 'prod-b', ['/configmaps'], 20_000), []);
      const w = await openWatch(`${base}/apis/panoptes.io/v1alpha1/resources/clusters/prod-b/api/v1/configmaps?watch=1&resourceVersion=0`);
      t.teardown(() => w.close());
      t.equal((await hostCall('DELETE', '/api/v1/namespaces/fleet/secrets/prod')).status, 200);
      await waitUntil('prod-a and prod-b gone', async () => (await call('GET', `${C}/prod-a`)).status === 404 && (await call('GET', `${C}/prod-b`)).status === 404, 30_000);
      await waitUntil('DELETED for its objects', () => w.events.some((e) => e.type === 'DELETED' && (e.object as { metadata: { name: string } }).metadata.name === 'doomed'), 10_000);
      t.equal((await store.list({ group: '', resource: 'configmaps', clusters: ['prod-b'] })).items.length, 0, 'nothing of it is left');
    });

    await t.test('a name clash with an API or a file Cluster: never taken over, a condition on both', async (t) => {
      sim('clash').auth.tokens = ['clash-token-1', 'clash-token-2'];
      t.equal((await call('POST', C, { metadata: { name: 'taken' }, spec: { server: sim('clash').url, resources: ['configmaps'], credentials: { token: 'clash-token-1' } } })).status, 201);
      await ready('taken');
      await secret('fleet', 'taken', { kubeconfig: b64(kubeconfig([{ name: 'c', server: sim('clash').url, token: 'clash-token-2' }])) }, { metadata: { labels: { clash: 'yes' } } });
      t.equal((await call('POST', CS, { metadata: { name: 'clash' }, spec: { type: 'kubeconfigSecrets', namespaces: ['fleet'], selector: { matchLabels: { clash: 'yes' } } } })).status, 201);
      const src = await waitUntil('NameClash', async () => {
        const o = (await call('GET', `${CS}/clash`)).json;
        return o.status?.failures?.length ? o : undefined;
      });
      t.match(src.status.failures, [{ object: 'Secret fleet/taken', cluster: 'taken', reason: 'NameClash', message: /already comes from the API/ }]);
      const taken = await waitUntil('ImportConflict on the API Cluster', async () => {
        const o = await cluster('taken');
        return (o.status?.conditions ?? []).some((c: { type: string }) => c.type === 'ImportConflict') ? o : undefined;
      });
      t.match(taken.spec, { source: 'api' }, 'the API Cluster keeps its spec');
      t.equal(taken.status.ready, true);

      // The same with a cluster of clusters.yaml.
      writeClusters(file, [{ name: 'fromfile', server: sim('filed').url, token: 'filed-token-1', resources: ['configmaps'] }]);
      await ready('fromfile');
      await secret('fleet', 'fromfile', { kubeconfig: b64(kubeconfig([{ name: 'c', server: sim('filed').url, token: 'filed-token-2' }])) }, { metadata: { labels: { clash: 'yes' } } });
      const both = await waitUntil('two NameClash failures', async () => {
        const o = (await call('GET', `${CS}/clash`)).json;
        return o.status?.failures?.length === 2 ? o : undefined;
      });
      t.match(both.status.failures, [{ cluster: 'fromfile', reason: 'NameClash', message: /clusters.yaml of synchro/ }, { cluster: 'taken' }]);
      const filed = await waitUntil('ImportConflict on the file Cluster', async () => {
        const o = await cluster('fromfile');
        return (o.status?.conditions ?? []).some((c: { type: string }) => c.type === 'ImportConflict') ? o : undefined;
      });
      t.match(filed.spec, { source: 'file' }, 'the file Cluster keeps its spec');
      t.equal(filed.status.ready, true);
    });

    await t.test('onSourceRemoval: Keep: a Cluster whose source goes stays, Invalid, with its data', async (t) => {
      t.equal((await call('PATCH', `${CS}/karmada`, { spec: { onSourceRemoval: 'Keep' } }, MERGE)).status, 200);
      configmap('karmada-a', 'kept');
      t.same(await waitForCopy(store, sim('karmada-a'), 'member1', ['/configmaps'], 20_000), []);
      t.equal((await hostCall('DELETE', '/apis/cluster.karmada.io/v1alpha1/clusters/member1')).status, 200);
      const kept = await waitUntil('member1 Invalid', async () => ((await cluster('member1'))?.status?.phase === 'Invalid' ? cluster('member1') : undefined));
      t.match(kept.status.message, /Cluster member1 of ClusterSource karmada is gone; the Cluster is kept \(onSourceRemoval: Keep\)/);
      t.ok((await store.list({ group: '', resource: 'configmaps', clusters: ['member1'] })).items.some((o) => o.name === 'kept'), 'its data stays');
    });

    await t.test('deleting a ClusterSource removes its Clusters, then it is gone', async (t) => {
      t.equal((await call('DELETE', `${CS}/capi`)).status, 200);
      await waitUntil('capi Clusters and the ClusterSource gone', async () => (await call('GET', `${C}/capi-a`)).status === 404 && (await call('GET', `${C}/capi-b`)).status === 404 && (await call('GET', `${CS}/capi`)).status === 404, 30_000);
      t.equal((await store.list({ group: '', resource: 'configmaps', clusters: ['capi-a'] })).items.length, 0);
      t.equal((await cluster('argo-eks')).status.phase, 'Invalid', 'the other sources\' Clusters stay');
    });
  });
}
