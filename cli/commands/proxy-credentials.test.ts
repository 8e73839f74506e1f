// The proxy's member credentials: clusters.yaml entries, Clusters registered through the API
// with inline credentials (bound to their endpoint, as synchro uses them) or a Secret of the
// host cluster (unavailable without one), rotation seen as a new fingerprint; and the flags.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test as Tap } from 'tap';
import { createApiserver } from '../../apiserver/server.ts';
import { http, tempDir } from '../../hack/sim/testutil.ts';
import { logger, setLogLevel } from '../../lib/log.ts';
import { MemberNetworks } from '../../member/networks.ts';
import { openTestStore } from '../../storage/testing.ts';
import { UsageError } from '../command.ts';
import { memberSourceFlags } from './apiserver.ts';
import { parseProxyUser, proxyCredentials } from './proxy-credentials.ts';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');

/** Storage with an apiserver to register Clusters through, torn down with the test. */
async function registry(t: Tap, networks: MemberNetworks) {
  const { store, close } = await openTestStore('sqlite');
  const api = await createApiserver({ store, memberNetworks: networks, catalogOptions: { refreshMs: 60_000 } });
  const base = await api.listen('127.0.0.1', 0);
  t.teardown(async () => {
    await api.close();
    await close();
  });
  return { store, C: `${base}/apis/panoptes.io/v1alpha1/clusters` };
}

t.test('credentials from the clusters file and from Clusters registered through the API', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'clusters.yaml');
  writeFileSync(file, 'clusters:\n  - name: filed\n    server: https://filed.example:6443\n    token: file-token-1\n');
  const networks = MemberNetworks.parse('127.0.0.0/8');
  const { store, C } = await registry(t, networks);
  t.equal((await http('POST', C, { metadata: { name: 'inline' }, spec: { server: 'https://inline.example:6443', credentials: { token: 'inline-token-1' } } })).status, 201);
  t.equal((await http('POST', C, { metadata: { name: 'secret' }, spec: { server: 'https://secret.example:6443', credentials: { secretRef: { name: 'secret-creds' } } } })).status, 201);

  const creds = proxyCredentials({ store, clustersFile: file, networks, log: logger('test'), refreshMs: 0 });
  const filed = await creds.lookup('filed');
  t.match(filed, { connection: { server: 'https://filed.example:6443', token: 'file-token-1' } });
  const inline = await creds.lookup('inline');
  t.match(inline, { connection: { server: 'https://inline.example:6443', token: 'inline-token-1' } });
  t.match(await creds.lookup('secret'), { unavailable: /in a Secret of the host cluster, and this apiserver has no host cluster to read it from/ });
  t.equal(await creds.lookup('nowhere'), undefined);

  // Rotation: a new token is a new fingerprint (the pool opens new connections).
  writeFileSync(file, 'clusters:\n  - name: filed\n    server: https://filed.example:6443\n    token: file-token-2\n');
  t.equal((await http('PATCH', `${C}/inline`, { spec: { credentials: { token: 'inline-token-2' } } }, { 'Content-Type': 'application/merge-patch+json' })).status, 200);
  const filed2 = await creds.lookup('filed');
  const inline2 = await creds.lookup('inline');
  t.match(filed2, { connection: { token: 'file-token-2' } });
  t.match(inline2, { connection: { token: 'inline-token-2' } });
  t.not(filed2 && 'fingerprint' in filed2 && filed2.fingerprint, filed && 'fingerprint' in filed && filed.fingerprint);
  t.not(inline2 && 'fingerprint' in inline2 && inline2.fingerprint, inline && 'fingerprint' in inline && inline.fingerprint);

  // A broken file keeps the last good one.
  writeFileSync(file, 'clusters: [');
  t.match(await creds.lookup('filed'), { connection: { token: 'file-token-2' } });
});

t.test("a Secret of the host cluster, read as synchro reads it, once a Cluster names one", async (t) => {
  const { store, C } = await registry(t, new MemberNetworks());
  const server = 'https://north.example:6443';
  t.equal((await http('POST', C, { metadata: { name: 'north' }, spec: { server, credentials: { secretRef: { name: 'north-creds' } } } })).status, 201);
  let started = 0;
  let token = 'north-token-1';
  const secret = () => ({ name: 'north-creds', namespace: 'panoptes', resourceVersion: token, labels: { 'panoptes.io/cluster': 'north' }, annotations: { 'panoptes.io/server': server }, data: { token: Buffer.from(token).toString('base64') } });
  const secrets = { namespace: 'panoptes', start: () => void started++, lookup: (name: string) => (name === 'north-creds' ? { state: 'known' as const, secret: secret() } : { state: 'known' as const }) };
  const creds = proxyCredentials({ store, networks: new MemberNetworks(), log: logger('test'), refreshMs: 0, secrets });
  const first = await creds.lookup('north');
  t.match(first, { connection: { server, token: 'north-token-1' } });
  t.ok(started > 0, 'the Secrets are listed once a Cluster names one');
  token = 'north-token-2';
  const second = await creds.lookup('north');
  t.match(second, { connection: { token: 'north-token-2' } }, 'the rotated Secret');
  t.not(second && 'fingerprint' in second && second.fingerprint, first && 'fingerprint' in first && first.fingerprint, 'a new fingerprint: new connections');
  const none = proxyCredentials({ store, networks: new MemberNetworks(), log: logger('test'), refreshMs: 0 });
  t.match(await none.lookup('north'), { unavailable: /no host cluster to read it from/ }, 'without the host cluster: 503 saying why');
});

t.test('flags', async (t) => {
  t.same(parseProxyUser('dev'), { name: 'dev', groups: [], extra: {} });
  t.same(parseProxyUser('dev:a, b'), { name: 'dev', groups: ['a', 'b'], extra: {} });
  t.equal(parseProxyUser(undefined), undefined);
  t.throws(() => parseProxyUser(':g'), UsageError);
  t.same(memberSourceFlags({ clusters: 'c.yaml' }), { clustersFile: 'c.yaml' });
  t.same(memberSourceFlags({ kubeconfig: 'k', contexts: 'a,b' }), { kubeconfig: 'k', contexts: ['a', 'b'] });
  t.throws(() => memberSourceFlags({ clusters: 'c', kubeconfig: 'k' }), UsageError);
  t.throws(() => memberSourceFlags({ contexts: 'a' }), UsageError);
  const saved = process.env.PANOPTES_HOST_KUBECONFIG;
  delete process.env.PANOPTES_HOST_KUBECONFIG;
  t.teardown(() => (saved === undefined ? undefined : (process.env.PANOPTES_HOST_KUBECONFIG = saved)));
  t.notOk(memberSourceFlags({}).hostCluster, "host Secrets are read only when asked for (the apiserver's manifests give it no Secret access)");
  const dir = tempDir(t);
  const hostKc = join(dir, 'host.kubeconfig');
  writeFileSync(hostKc, 'apiVersion: v1\nkind: Config\n');
  t.same(memberSourceFlags({ 'host-kubeconfig': hostKc, 'credentials-namespace': 'creds' }), { hostCluster: { kubeconfig: hostKc }, credentialsNamespace: 'creds' });
  t.throws(() => memberSourceFlags({ 'host-kubeconfig': join(dir, 'missing') }), UsageError);
});
