// The source modules on fixtures in each inventory's own format: Cluster API's kubeconfig
// Secret (and its CA Secret beside it), Argo CD's cluster Secret (config JSON), Karmada's
// Cluster with its Secret, a kubeconfig Secret with several contexts; what each refuses, and
// why; the names they get; and the network allowance a shard applies to the connection.
import t from 'tap';
import { stringify } from 'yaml';
import type { ClusterSourceSpec } from '../../api/cluster-source.ts';
import { MemberNetworks } from '../../member/networks.ts';
import type { ClusterRegistration } from '../../storage/cluster-objects.ts';
import type { HostObject } from '../../member/list-watch.ts';
import type { SourceObjects } from './candidate.ts';
import { importedConfig } from './connection.ts';
import type { Importer, SourceView } from './importer.ts';
import { clusterName } from './naming.ts';
import { argoCD } from './sources/argocd.ts';
import { clusterAPI } from './sources/cluster-api.ts';
import { karmada } from './sources/karmada.ts';
import { kubeconfigSecrets } from './sources/kubeconfig-secrets.ts';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const CA = b64('-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
const kc = (contexts: Array<{ name: string; server: string; user: Record<string, unknown> }>) =>
  stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: contexts.map((c) => ({ name: c.name, cluster: { server: c.server, 'certificate-authority-data': CA } })),
    users: contexts.map((c) => ({ name: c.name, user: c.user })),
    contexts: contexts.map((c) => ({ name: c.name, context: { cluster: c.name, user: c.name } })),
    'current-context': contexts[0].name,
  });
const secret = (ns: string, name: string, data: Record<string, string>, extra: Partial<HostObject> & { labels?: Record<string, string> } = {}): HostObject => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name, namespace: ns, labels: extra.labels ?? {} },
  ...(extra.type ? { type: extra.type } : {}),
  data,
});
const objects = (o: Partial<SourceObjects>): SourceObjects => ({ secrets: [], clusters: [], ...o });
const spec = (s: Partial<ClusterSourceSpec>): ClusterSourceSpec => ({ type: 'kubeconfigSecrets', namespaces: ['fleet'], ...s });

t.test('Cluster API: the <cluster>-kubeconfig Secret (key value), not its -ca Secret; provisionedOnly', async (t) => {
  const label = { 'cluster.x-k8s.io/cluster-name': 'east' };
  const kubeconfig = secret('capi', 'east-kubeconfig', { value: b64(kc([{ name: 'east-admin@east', server: 'https://10.0.0.1:6443', user: { 'client-certificate-data': CA, 'client-key-data': b64('key') } }])) }, { type: 'cluster.x-k8s.io/secret', labels: label });
  const ca = secret('capi', 'east-ca', { 'tls.crt': CA, 'tls.key': b64('k') }, { type: 'cluster.x-k8s.io/secret', labels: label });
  const s = spec({ type: 'clusterAPI', namespaces: ['capi'] });
  t.same(clusterAPI.collections(s).map((c) => [c.path, c.labelSelector]), [['/api/v1/namespaces/capi/secrets', 'cluster.x-k8s.io/cluster-name,!panoptes.io/cluster']]);
  const [c, ...rest] = clusterAPI.candidates(s, objects({ secrets: [kubeconfig, ca] }));
  t.same(rest, [], 'the CA Secret is not a kubeconfig');
  t.match(c, { baseName: 'east', namespace: 'capi', secret: { namespace: 'capi', name: 'east-kubeconfig' }, connection: { server: 'https://10.0.0.1:6443', caData: CA, clientCertData: CA, clientKeyData: b64('key') } });
  const provisioned = spec({ type: 'clusterAPI', namespaces: ['capi'], clusterAPI: { provisionedOnly: true } });
  t.equal(clusterAPI.collections(provisioned)[1].path, '/apis/cluster.x-k8s.io/v1beta1/namespaces/capi/clusters');
  const cluster = (status: Record<string, unknown>): HostObject => ({ metadata: { name: 'east', namespace: 'capi' }, status });
  t.equal(clusterAPI.candidates(provisioned, objects({ secrets: [kubeconfig] })).length, 0, 'no Cluster: not provisioned');
  t.equal(clusterAPI.candidates(provisioned, objects({ secrets: [kubeconfig], clusters: [cluster({ phase: 'Provisioning' })] })).length, 0);
  t.equal(clusterAPI.candidates(provisioned, objects({ secrets: [kubeconfig], clusters: [cluster({ phase: 'Provisioned' })] })).length, 1);
  t.equal(clusterAPI.candidates(provisioned, objects({ secrets: [kubeconfig], clusters: [cluster({ infrastructureReady: true, controlPlaneReady: true })] })).length, 1);
  const exec = secret('capi', 'west-kubeconfig', { value: b64(kc([{ name: 'w', server: 'https://10.0.0.2', user: { exec: { command: 'aws' } } }])) }, { labels: { 'cluster.x-k8s.io/cluster-name': 'west' } });
  t.match(clusterAPI.candidates(s, objects({ secrets: [exec] }))[0].invalid, /exec plugin or an auth provider/);
  const garbage = secret('capi', 'north-kubeconfig', { value: b64('{{{ token: SECRET') }, { labels: { 'cluster.x-k8s.io/cluster-name': 'north' } });
  const bad = clusterAPI.candidates(s, objects({ secrets: [garbage] }))[0].invalid!;
  t.match(bad, /not valid YAML/);
  t.notMatch(bad, /SECRET/, 'the text is never quoted');
});

t.test('Argo CD: name, server, config; exec, AWS and basic auth refused', async (t) => {
  const label = { 'argocd.argoproj.io/secret-type': 'cluster' };
  const good = secret('argocd', 'mycluster-secret', { name: b64('mycluster.example.com'), server: b64('https://mycluster.example.com'), config: b64(JSON.stringify({ bearerToken: 'tok', tlsClientConfig: { insecure: false, caData: CA, serverName: 'kubernetes' } })) }, { labels: label });
  t.same(argoCD.collections(spec({ type: 'argoCD', namespaces: ['argocd'] }))[0].labelSelector, 'argocd.argoproj.io/secret-type=cluster,!panoptes.io/cluster');
  t.match(argoCD.candidates(spec({ type: 'argoCD' }), objects({ secrets: [good] })), [{ baseName: 'mycluster.example.com', connection: { server: 'https://mycluster.example.com', token: 'tok', caData: CA, tlsServerName: 'kubernetes' } }]);
  for (const [config, why] of [
    [{ execProviderConfig: { command: 'argocd-k8s-auth', apiVersion: 'client.authentication.k8s.io/v1beta1' } }, /execProviderConfig/],
    [{ awsAuthConfig: { clusterName: 'x', roleARN: 'arn' } }, /awsAuthConfig/],
    [{ username: 'u', password: 'p' }, /basic auth/],
  ] as const) {
    const s = secret('argocd', 'x', { name: b64('x'), server: b64('https://x'), config: b64(JSON.stringify(config)) }, { labels: label });
    t.match(argoCD.candidates(spec({ type: 'argoCD' }), objects({ secrets: [s] }))[0].invalid, why);
  }
});

t.test('Karmada: Push only, apiEndpoint with caBundle and token of its secretRef', async (t) => {
  const s = spec({ type: 'karmada', namespaces: ['karmada-cluster'] });
  const member = (name: string, syncMode: string, ns = 'karmada-cluster'): HostObject => ({ apiVersion: 'cluster.karmada.io/v1alpha1', kind: 'Cluster', metadata: { name }, spec: { apiEndpoint: `https://${name}:6443`, syncMode, secretRef: { namespace: ns, name } } });
  const secrets = [secret('karmada-cluster', 'm1', { caBundle: CA, token: b64('t1') }), secret('karmada-cluster', 'm3', { caBundle: CA }), secret('karmada-cluster', 'm5', { token: b64('sa') }, { type: 'kubernetes.io/service-account-token' })];
  const out = karmada.candidates(s, objects({ secrets, clusters: [member('m1', 'Push'), member('m2', 'Pull'), member('m3', 'Push'), member('m4', 'Push', 'elsewhere'), member('m5', 'Push')] }));
  t.same(out.map((c) => c.baseName), ['m1', 'm3', 'm4', 'm5'], 'Pull is left out');
  t.match(out[3].invalid, /ServiceAccount token of the host cluster/);
  t.match(out[0], { connection: { server: 'https://m1:6443', caData: CA, token: 't1' }, secret: { namespace: 'karmada-cluster', name: 'm1' } });
  t.match(out[1].invalid, /has no key token/);
  t.match(out[2].invalid, /namespace elsewhere, which the ClusterSource does not read/);
});

t.test('kubeconfig Secrets: current context, or one per context; the selector', async (t) => {
  const text = kc([{ name: 'a', server: 'https://a', user: { token: 'ta' } }, { name: 'b', server: 'https://b', user: { tokenFile: '/etc/passwd' } }]);
  const s = secret('fleet', 'prod', { kubeconfig: b64(text) });
  t.match(kubeconfigSecrets.candidates(spec({}), objects({ secrets: [s] })), [{ baseName: 'prod', connection: { server: 'https://a', token: 'ta' } }]);
  const all = kubeconfigSecrets.candidates(spec({ kubeconfigSecrets: { contexts: 'All' } }), objects({ secrets: [s] }));
  t.match(all, [{ context: 'a', connection: { token: 'ta' } }, { context: 'b', invalid: /names files/ }]);
  t.same(kubeconfigSecrets.collections(spec({ selector: { matchLabels: { team: 'x' }, matchExpressions: [{ key: 'env', operator: 'In', values: ['prod', 'dev'] }] } }))[0].labelSelector, 'team=x,env in (prod,dev),!panoptes.io/cluster');
  t.same(karmada.collections(spec({ type: 'karmada', namespaces: ['panoptes'] }))[1].labelSelector, '!panoptes.io/cluster', 'a credentials Secret of a Panoptes Cluster is never read as a source (a Karmada Cluster could name it)');
  t.equal(kubeconfigSecrets.candidates(spec({}), objects({ secrets: [secret('fleet', 'other', { token: b64('x') })] })).length, 0, 'a Secret without the key is not a source');
});

t.test('names: prefix and template; Sanitize or Reject', async (t) => {
  const c = { baseName: 'Prod EU', namespace: 'fleet', sourceObject: { apiVersion: 'v1', kind: 'Secret', name: 'x' } };
  t.same(clusterName({ ...c, baseName: 'east' }, { template: '{name}', prefix: 'capi-', invalidNames: 'Sanitize' }), { name: 'capi-east' });
  t.same(clusterName({ ...c, baseName: 'east' }, { template: '{namespace}-{name}', prefix: '', invalidNames: 'Sanitize' }), { name: 'fleet-east' });
  t.match(clusterName(c, { template: '{name}', prefix: '', invalidNames: 'Sanitize' }), { name: /^prod-eu-[0-9a-f]{6}$/ });
  t.match(clusterName(c, { template: '{name}', prefix: '', invalidNames: 'Reject' }), { problem: /"Prod EU" is not a Cluster name/ });
  t.match(clusterName({ ...c, baseName: 'api' }, { template: '{name}', prefix: '', invalidNames: 'Sanitize' }), { problem: /cannot be made a Cluster name/ }, 'a reserved name is refused, not taken');
  const long = clusterName({ ...c, baseName: 'x'.repeat(80) }, { template: '{name}', prefix: '', invalidNames: 'Sanitize' });
  t.ok('name' in long && long.name.length <= 63);
  t.same(clusterName({ ...c, baseName: 'east', context: 'admin' }, { template: '{name}', prefix: '', invalidNames: 'Sanitize' }), { name: 'east-admin' }, 'one per context: the context is added');
});

t.test('a shard refuses a loopback or link-local server unless allowed, and plain http with credentials', async (t) => {
  const view = (server: string): SourceView => ({
    state: 'known',
    clusters: new Map([['m', { name: 'm', baseName: 'm', namespace: 'fleet', sourceObject: { apiVersion: 'v1', kind: 'Secret', namespace: 'fleet', name: 'm' }, secret: { namespace: 'fleet', name: 'm' }, connection: { server, token: 'tok' } }]]),
    unnamed: [],
    duplicates: [],
  });
  const importer = (server: string) => ({ view: () => view(server), spec: () => ({ type: 'kubeconfigSecrets', namespaces: ['fleet'] }) }) as unknown as Importer;
  const reg = { name: 'm', uid: 'u', rv: 1, object: { metadata: { name: 'm', generation: 1 }, spec: { source: 'clustersource/s', resources: ['configmaps'] } } } as ClusterRegistration;
  t.match(importedConfig(reg, importer('https://127.0.0.1:6443'), new MemberNetworks()), { state: 'invalid', message: /spec.server: Forbidden: .*loopback/ });
  t.match(importedConfig(reg, importer('https://169.254.169.254'), new MemberNetworks()), { state: 'invalid', message: /link-local/ });
  t.match(importedConfig(reg, importer('http://10.0.0.1'), new MemberNetworks()), { state: 'invalid', message: /plain http:\/\/ would send the credentials in clear text/ });
  t.match(importedConfig(reg, importer('https://127.0.0.1:6443'), MemberNetworks.parse('127.0.0.0/8')), { state: 'ready', config: { server: 'https://127.0.0.1:6443', token: 'tok', credentials: { source: 'Secret', secret: 'fleet/m', kinds: ['token'] } } });
  t.match(importedConfig(reg, undefined, new MemberNetworks()), { state: 'invalid', message: /no host cluster client/ });
});
