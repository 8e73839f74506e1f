// The clusterProfiles source on fixtures in the upstream format (status.accessProviders and
// the deprecated credentialProviders, KEP-5339): the provider chosen as upstream's pkg/access
// chooses it, the Secret provider bound to the server its Secret names, the exec provider only
// when synchro configures it (and what it is told), the profile's conditions; the provider
// file; and the validation of the ClusterSource spec.
import { writeFileSync } from 'node:fs';
import t from 'tap';
import { validateClusterSourceSpec, type ClusterSourceSpec } from '../../api/cluster-source.ts';
import type { HostObject } from '../../member/list-watch.ts';
import type { ExecClusterInfo, ExecCredentialResult, ExecCredentialSource, SourceObjects } from './candidate.ts';
import { ExecCredentials, parseProviderFile } from './exec-credentials.ts';
import { clusterProfiles } from './sources/cluster-profiles.ts';
import { tempDir, waitUntil } from '../testutil.ts';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const CA = b64('-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
const spec = (providers: ClusterSourceSpec['clusterProfiles'] = { providers: [{ name: 'secretreader', type: 'Secret' }] }): ClusterSourceSpec => ({ type: 'clusterProfiles', namespaces: ['fleet'], clusterProfiles: providers });
const profile = (name: string, status: Record<string, unknown>): HostObject => ({ apiVersion: 'multicluster.x-k8s.io/v1alpha1', kind: 'ClusterProfile', metadata: { name, namespace: 'fleet', labels: { 'x-k8s.io/cluster-manager': 'ocm' } }, spec: { clusterManager: { name: 'ocm' } }, status });
const provider = (name: string, cluster: Record<string, unknown>) => ({ name, cluster });
const secret = (name: string, data: Record<string, string>, type?: string): HostObject => ({ apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: 'fleet' }, ...(type ? { type } : {}), data });
const objects = (o: Partial<SourceObjects>): SourceObjects => ({ secrets: [], clusters: [], ...o });

t.test('collections: the profiles of each namespace with the selector; Secrets only for a Secret provider', async (t) => {
  const s = { ...spec(), selector: { matchLabels: { 'x-k8s.io/cluster-manager': 'ocm' } } };
  t.same(clusterProfiles.collections(s).map((c) => [c.path, c.labelSelector]), [
    ['/apis/multicluster.x-k8s.io/v1alpha1/namespaces/fleet/clusterprofiles', 'x-k8s.io/cluster-manager=ocm'],
    ['/api/v1/namespaces/fleet/secrets', '!panoptes.io/cluster'],
  ]);
  t.equal(clusterProfiles.collections(s)[0].crd?.name, 'clusterprofiles.multicluster.x-k8s.io');
  t.equal(clusterProfiles.collections(spec({ providers: [{ name: 'eks', type: 'Exec' }] })).length, 1, 'no Secret is read without a Secret provider');
  const own = { ...profile('east', { accessProviders: [provider('secretreader', { server: 'https://e' })] }), metadata: { name: 'east', namespace: 'fleet', labels: { 'x-k8s.io/cluster-manager': 'panoptes', 'panoptes.io/installation': 'inst-a' } } };
  t.equal(clusterProfiles.candidates(spec(), objects({ clusters: [own] }), { installation: 'inst-a' }).length, 0, 'what this installation publishes is not imported back');
  t.equal(clusterProfiles.candidates(spec(), objects({ clusters: [own] }), { installation: 'inst-b' }).length, 1, "another installation's is");
});

t.test('Secret provider: token of the Secret named by clusterName, for the server the Secret names only', async (t) => {
  const ext = { extensions: [{ name: 'client.authentication.k8s.io/exec', extension: { clusterName: 'spoke-1' } }] };
  const p = profile('east', { accessProviders: [provider('secretreader', { server: 'https://10.0.0.1:6443', 'certificate-authority-data': CA, ...ext })], conditions: [{ type: 'ControlPlaneHealthy', status: 'True', reason: 'Healthy', message: 'ok', lastTransitionTime: '2026-01-01T00:00:00Z' }] });
  const good = secret('spoke-1', { token: b64('tok\n'), server: b64('https://10.0.0.1:6443/') });
  const [c] = clusterProfiles.candidates(spec(), objects({ clusters: [p], secrets: [good] }));
  t.match(c, { baseName: 'east', namespace: 'fleet', sourceObject: { apiVersion: 'multicluster.x-k8s.io/v1alpha1', kind: 'ClusterProfile', namespace: 'fleet', name: 'east' }, secret: { namespace: 'fleet', name: 'spoke-1' }, connection: { server: 'https://10.0.0.1:6443', caData: CA, token: 'tok' } });
  t.same(c.conditions, [{ type: 'ClusterProfileControlPlaneHealthy', status: 'True', reason: 'Healthy', message: 'ok', lastTransitionTime: '2026-01-01T00:00:00Z' }], "the profile's health, beside Panoptes' own");
  t.notOk(c.invalid);

  const moved = profile('east', { accessProviders: [provider('secretreader', { server: 'https://attacker.example:443', ...ext })] });
  const [m] = clusterProfiles.candidates(spec(), objects({ clusters: [moved], secrets: [good] }));
  t.match(m.invalid, /holds a token for https:\/\/10.0.0.1:6443\/, not for https:\/\/attacker.example:443: it is not sent there/, 'a profile pointing elsewhere does not get the token');
  t.notOk(m.connection);
  const unbound = clusterProfiles.candidates(spec(), objects({ clusters: [p], secrets: [secret('spoke-1', { token: b64('tok') })] }))[0];
  t.match(unbound.invalid, /has no key server: the server its token is for/);
  t.match(clusterProfiles.candidates(spec(), objects({ clusters: [p] }))[0].invalid, /its Secret fleet\/spoke-1 is not found/);
  t.match(clusterProfiles.candidates(spec(), objects({ clusters: [p], secrets: [secret('spoke-1', { token: b64('sa'), server: b64('https://10.0.0.1:6443') }, 'kubernetes.io/service-account-token')] }))[0].invalid, /ServiceAccount token of the host cluster/);
  const plain = profile('west', { accessProviders: [provider('secretreader', { server: 'https://10.0.0.2' })] });
  t.match(clusterProfiles.candidates(spec(), objects({ clusters: [plain], secrets: [secret('west', { token: b64('w'), server: b64('https://10.0.0.2') })] }))[0], { secret: { name: 'west' }, connection: { token: 'w' } }, 'without clusterName, the profile\'s name');
});

t.test('the provider: the first of the ClusterSource\'s list the profile offers; accessProviders over credentialProviders; malformed profiles', async (t) => {
  const s = spec({ providers: [{ name: 'a', type: 'Secret' }, { name: 'b', type: 'Secret' }] });
  const both = profile('x', { credentialProviders: [provider('b', { server: 'https://old' }), provider('a', { server: 'https://deprecated' })], accessProviders: [provider('a', { server: 'https://new' })] });
  const secrets = [secret('x', { token: b64('t'), server: b64('https://new') })];
  t.match(clusterProfiles.candidates(s, objects({ clusters: [both], secrets }))[0].connection, { server: 'https://new' });
  const onlyB = profile('x', { credentialProviders: [provider('b', { server: 'https://new' })] });
  t.match(clusterProfiles.candidates(s, objects({ clusters: [onlyB], secrets }))[0].connection, { server: 'https://new' }, 'the deprecated field still read');
  const out = clusterProfiles.candidates(s, objects({ clusters: [profile('none', {}), profile('other', { accessProviders: [provider('kubelogin', { server: 'https://k' })] }), profile('noserver', { accessProviders: [provider('a', {})] }), profile('file', { accessProviders: [provider('a', { server: 'https://f', 'certificate-authority': '/etc/ca' })] }), profile('proxy', { accessProviders: [provider('a', { server: 'https://p', 'proxy-url': 'http://proxy' })] })] }));
  t.match(out.map((c) => c.invalid), [/offers no access provider this ClusterSource uses \(a, b\); it offers none/, /it offers kubelogin/, /has no cluster.server/, /certificate-authority \(a file\) is not supported/, /proxy-url is not supported/]);
});

t.test('Exec provider: only one synchro configures; told the server, CA and extension; pending, then the credentials', async (t) => {
  const p = profile('east', { accessProviders: [provider('eks', { server: 'https://10.0.0.1', 'certificate-authority-data': CA, extensions: [{ name: 'client.authentication.k8s.io/exec', extension: { clusterName: 'east' } }, { name: 'clusterprofiles.multicluster.x-k8s.io/exec/additional-args', extension: ['--evil'] }] })] });
  const s = spec({ providers: [{ name: 'eks', type: 'Exec' }] });
  t.match(clusterProfiles.candidates(s, objects({ clusters: [p] }))[0].invalid, /synchro has no exec provider eks/);
  const asked: ExecClusterInfo[] = [];
  let answer: ExecCredentialResult = { state: 'pending' };
  const exec: ExecCredentialSource = { has: (n) => n === 'eks', get: (_n, c) => (asked.push(c), answer) };
  t.match(clusterProfiles.candidates(s, objects({ clusters: [p] }), { exec })[0], { pending: /obtaining credentials/ });
  t.same(asked[0], { server: 'https://10.0.0.1', caData: CA, config: { clusterName: 'east' } });
  answer = { state: 'ready', token: 'exec-token' };
  t.match(clusterProfiles.candidates(s, objects({ clusters: [p] }), { exec })[0].connection, { server: 'https://10.0.0.1', token: 'exec-token' });
  answer = { state: 'error', message: 'aws exited with code 1' };
  t.match(clusterProfiles.candidates(s, objects({ clusters: [p] }), { exec })[0].invalid, /access provider eks: aws exited with code 1/);
});

t.test('ExecCredentials runs the configured command with KUBERNETES_EXEC_INFO and caches its answer per cluster', async (t) => {
  const { dir, cleanup } = tempDir();
  t.teardown(cleanup);
  const script = `${dir}/plugin.mjs`;
  writeFileSync(script, `const info = JSON.parse(process.env.KUBERNETES_EXEC_INFO);
if (info.spec.cluster.server.includes('fail')) { console.error('no credentials for ' + info.spec.cluster.server); process.exit(3); }
console.log(JSON.stringify({ apiVersion: info.apiVersion, kind: 'ExecCredential', status: { token: process.env.PREFIX + info.spec.cluster.config.clusterName, expirationTimestamp: new Date(Date.now() + 3600e3).toISOString() } }));`);
  const providers = parseProviderFile(JSON.stringify({ providers: [{ name: 'plugin', servers: ['https://10.0.0.1', 'https://*.fail.example'], execConfig: { apiVersion: 'client.authentication.k8s.io/v1', command: process.execPath, args: [script], env: [{ name: 'PREFIX', value: 'tok-' }], provideClusterInfo: true } }] }), 'providers.json');
  let changes = 0;
  const exec = new ExecCredentials(providers, { onChange: () => changes++, retryMs: 60_000 });
  t.teardown(() => exec.stop());
  const cluster = { server: 'https://10.0.0.1', config: { clusterName: 'east' } };
  t.same(exec.get('plugin', cluster), { state: 'pending' });
  const r = await waitUntil('the plugin answered', () => { const x = exec.get('plugin', cluster); return x.state !== 'pending' ? x : undefined; }, 10_000);
  t.same(r, { state: 'ready', token: 'tok-east' });
  t.ok(changes >= 1, 'the importer is told');
  exec.get('plugin', cluster);
  t.equal(changes, 1, 'cached: not run again');
  const failing = { server: 'https://api.fail.example', config: { clusterName: 'x' } };
  exec.get('plugin', failing);
  t.match(await waitUntil('the failure', () => { const x = exec.get('plugin', failing); return x.state === 'error' ? x : undefined; }, 10_000), { message: /exited with code 3: no credentials for https:\/\/api.fail.example/ });
  const before = changes;
  for (const server of ['https://attacker.example', 'https://10.0.0.1:8443', 'http://10.0.0.1', 'https://fail.example.attacker.io']) {
    t.match(exec.get('plugin', { ...cluster, server }), { state: 'error', message: /may not be used for server .*: it is not one of its servers/ }, `${server}: not one of its servers`);
  }
  t.equal(changes, before, 'and the plugin is not run for them');
  t.match(exec.get('nope', cluster), { state: 'error', message: /no exec provider nope/ });

  t.throws(() => parseProviderFile('{"providers": [{"name": "x"}]}', 'f'), /needs execConfig.command/);
  t.throws(() => parseProviderFile('{"providers": [{"name": "x", "execConfig": {"command": "c"}}]}', 'f'), /needs servers, the server URLs its credentials may be sent to/);
  t.throws(() => parseProviderFile('{"providers": [{"name": "x", "servers": ["ftp://x"], "execConfig": {"command": "c"}}]}', 'f'), /is not an https:\/\/ or http:\/\/ URL/);
  t.throws(() => parseProviderFile('{"providers": [{"name": "x", "servers": ["https://x"], "execConfig": {"command": "c"}, "profileSourcedCLIArgsPolicy": "Append"}]}', 'f'), /never adds arguments/);
  t.throws(() => parseProviderFile('nope', 'f'), /not JSON/);
});

t.test('validation of a clusterProfiles ClusterSource', async (t) => {
  t.same(validateClusterSourceSpec(spec()), []);
  t.match(validateClusterSourceSpec({ type: 'clusterProfiles', namespaces: ['fleet'] }), [{ type: 'Required', field: 'spec.clusterProfiles.providers' }]);
  t.match(validateClusterSourceSpec(spec({ providers: [{ name: 'a', type: 'Script' as never }, { name: 'a', type: 'Secret' }] })), [{ type: 'NotSupported', field: 'spec.clusterProfiles.providers[0].type' }, { type: 'Duplicate', field: 'spec.clusterProfiles.providers[1].name' }]);
  t.match(validateClusterSourceSpec({ type: 'karmada', namespaces: ['k'], clusterProfiles: { providers: [] } }), [{ type: 'Forbidden', field: 'spec.clusterProfiles' }]);
});
