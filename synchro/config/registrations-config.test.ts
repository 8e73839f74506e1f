// Cluster objects into cluster configurations: the connection from the spec, credentials
// inline or from every kind of Secret (token, tls.crt/tls.key, ca.crt, kubeconfig), what is
// refused in a Secret's kubeconfig, the file's names, deletion marks and pending Secrets;
// and credentials used only where they were given for: inline ones at their recorded
// endpoint, a Secret's at the server it names and with the trust it gives, never at an
// address the network guard refuses.
import t from 'tap';
import { MemberNetworks } from '../../member/networks.ts';
import type { ClusterRegistration } from '../../storage/cluster-objects.ts';
import type { HostSecret, SecretSource } from '../../member/host-secrets.ts';
import { apiClusters, needsSecrets } from './registrations.ts';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const CA = b64('-----BEGIN CERTIFICATE-----\nQ0E=\n-----END CERTIFICATE-----\n');

const reg = (name: string, spec: Record<string, unknown>, extra: Partial<ClusterRegistration> = {}, metadata: Record<string, unknown> = {}): ClusterRegistration => ({
  name,
  uid: `uid-${name}`,
  rv: 10,
  object: { apiVersion: 'panoptes.io/v1alpha1', kind: 'Cluster', metadata: { name, generation: 4, ...metadata }, spec: { source: 'api', ...spec } },
  ...extra,
});

function source(secrets: HostSecret[] | 'pending'): SecretSource {
  return {
    namespace: 'panoptes',
    lookup: (name) => (secrets === 'pending' ? { state: 'pending' } : { state: 'known', secret: secrets.find((s) => s.name === name) }),
  };
}
const secret = (name: string, cluster: string, data: Record<string, string>, server = 'https://a'): HostSecret => ({
  name,
  namespace: 'panoptes',
  resourceVersion: '1',
  labels: { 'panoptes.io/cluster': cluster },
  annotations: server === '' ? {} : { 'panoptes.io/server': server },
  data,
});

t.test('configurations from Cluster objects', async (t) => {
  const kubeconfig = (user: Record<string, unknown>, cluster: Record<string, unknown> = {}) =>
    b64(JSON.stringify({ apiVersion: 'v1', kind: 'Config', 'current-context': 'c', contexts: [{ name: 'c', context: { cluster: 'k', user: 'u' } }], clusters: [{ name: 'k', cluster: { server: 'https://ignored', ...cluster } }], users: [{ name: 'u', user }] }));
  const secrets = source([
    secret('tok', 'a-token', { token: b64('the-token\n'), 'ca.crt': CA }),
    secret('tls', 'a-tls', { 'tls.crt': b64('CERT'), 'tls.key': b64('KEY') }),
    secret('kc', 'a-kubeconfig', { kubeconfig: kubeconfig({ token: 'kc-token' }, { 'certificate-authority-data': CA }) }),
    secret('exec', 'a-exec', { kubeconfig: kubeconfig({ exec: { command: 'rm' } }) }),
    secret('empty', 'a-empty', { other: b64('x') }),
  ]);
  const out = apiClusters(
    [
      reg('inline', { server: 'https://inline', caData: CA, resources: ['pods'], namespaces: { include: ['web'] } }, { credentials: { token: 'T', clientCertData: 'C', clientKeyData: 'K' } }),
      reg('a-token', { server: 'https://a', credentials: { secretRef: { name: 'tok' } } }),
      reg('a-tls', { server: 'https://a', caData: CA, credentials: { secretRef: { name: 'tls' } } }),
      reg('a-kubeconfig', { server: 'https://a', credentials: { secretRef: { name: 'kc' } } }),
      reg('a-exec', { server: 'https://a', credentials: { secretRef: { name: 'exec' } } }),
      reg('a-empty', { server: 'https://a', credentials: { secretRef: { name: 'empty' } } }),
      reg('a-none', { server: 'https://a', credentials: { secretRef: { name: 'none' } } }),
      reg('bad-spec', { server: 'ftp://x' }),
      reg('in-file', { server: 'https://f' }),
      reg('filed', { source: 'file', server: 'https://g' }),
      reg('going', { server: 'https://g' }, {}, { deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: ['panoptes.io/synchro'] }),
      reg('released', { server: 'https://g' }, {}, { deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: ['other.io/keep'] }),
    ],
    new Set(['in-file']),
    secrets,
  );
  t.match(out.configs.get('inline'), {
    source: 'api', server: 'https://inline', certificateAuthorityData: CA, token: 'T', clientCertificateData: 'C', clientKeyData: 'K',
    resources: ['pods'], namespaces: { include: ['web'] }, generation: 4, credentials: { source: 'Inline', kinds: ['token', 'clientCertificate'] },
  });
  t.match(out.configs.get('a-token'), { token: 'the-token', certificateAuthorityData: CA, credentials: { source: 'Secret', secret: 'panoptes/tok', kinds: ['token'] } }, 'token and ca.crt');
  t.ok(out.configs.get('a-token')!.resources.length > 5, 'the default set without resources');
  t.match(out.configs.get('a-tls'), { clientCertificateData: b64('CERT'), clientKeyData: b64('KEY'), certificateAuthorityData: CA }, 'a kubernetes.io/tls Secret');
  t.match(out.configs.get('a-kubeconfig'), { token: 'kc-token', certificateAuthorityData: CA, server: 'https://a', credentials: { kinds: ['kubeconfig'] } }, 'a kubeconfig: its user and CA, the spec\'s server');
  t.match(out.invalid.get('a-exec')?.message, /user exec is not supported in a Secret's kubeconfig/);
  t.match(out.invalid.get('a-empty')?.message, /has none of the keys token, ca.crt, tls.crt, tls.key, kubeconfig/);
  t.match(out.invalid.get('a-none')?.message, /Secret panoptes\/none not found with label panoptes.io\/cluster=a-none/);
  t.match(out.invalid.get('bad-spec')?.message, /spec.server: Invalid value/);
  t.notOk(out.configs.has('in-file') || out.invalid.has('in-file'), 'a name of the file is the file\'s');
  t.notOk(out.configs.has('filed'), 'a clusters.yaml object is not an API registration');
  t.ok(out.deleting.has('going'));
  t.ok(out.pending.has('released') && !out.deleting.has('released'), 'deleted, no longer waiting for synchro: left alone');
  t.same([...out.objects.keys()].length, 12);
  t.not(out.configs.get('a-token')!.fingerprint, apiClusters([reg('a-token', { server: 'https://a', credentials: { secretRef: { name: 'tok' } } })], new Set(), source([secret('tok', 'a-token', { token: b64('rotated') })])).configs.get('a-token')!.fingerprint, 'a rotated Secret changes the fingerprint');

  const pending = apiClusters([reg('p', { server: 'https://p', credentials: { secretRef: { name: 's' } } })], new Set(), source('pending'));
  t.ok(pending.pending.has('p'), 'undecided while the Secrets are not read yet');
  const noHost = apiClusters([reg('p', { server: 'https://p', credentials: { secretRef: { name: 's' } } })], new Set(), undefined);
  t.match(noHost.invalid.get('p')?.message, /no host cluster client: run it in the host cluster \(in-cluster configuration\) or give --host-kubeconfig/);
  t.ok(needsSecrets([reg('x', { credentials: { secretRef: { name: 's' } } })]));
  t.notOk(needsSecrets([reg('x', { credentials: { token: 'T' } })]));
});

t.test('credentials go only where they were given for', async (t) => {
  const CA2 = b64('-----BEGIN CERTIFICATE-----\nT1RIRVI=\n-----END CERTIFICATE-----\n');
  const kubeconfig = (cluster: Record<string, unknown>) =>
    b64(JSON.stringify({ 'current-context': 'c', contexts: [{ name: 'c', context: { cluster: 'k', user: 'u' } }], clusters: [{ name: 'k', cluster }], users: [{ name: 'u', user: { token: 'kc-token-123456' } }] }));
  const secrets = source([
    secret('unannotated', 'x', { token: b64('tok-unannotated') }, ''),
    secret('elsewhere', 'x', { token: b64('tok-elsewhere') }, 'https://b'),
    secret('spelled', 'x', { token: b64('tok-spelled') }, 'https://A:443/'),
    secret('any', 'x', { token: b64('tok-any') }, '*'),
    secret('with-ca', 'x', { token: b64('tok-ca'), 'ca.crt': CA }),
    secret('no-ca', 'x', { token: b64('tok-noca') }),
    secret('kc-skips', 'x', { kubeconfig: kubeconfig({ 'insecure-skip-tls-verify': true }) }),
    secret('kc-name', 'x', { kubeconfig: kubeconfig({ 'certificate-authority-data': CA, 'tls-server-name': 'api.internal' }) }),
    secret('kc-broken', 'x', { kubeconfig: b64('users:\n  - token: kc-broken-SECRET-42\n  bad: [unclosed\n') }),
  ]);
  const via = (name: string, spec: Record<string, unknown> = {}) => reg('x', { server: 'https://a', credentials: { secretRef: { name } }, ...spec });
  const one = (r: ClusterRegistration, networks?: MemberNetworks) => {
    const out = apiClusters([r], new Set(), secrets, networks);
    return { config: out.configs.get(r.name), message: out.invalid.get(r.name)?.message };
  };

  t.match(one(via('unannotated')).message, /does not say which server its credentials are for: add the annotation panoptes.io\/server: https:\/\/a \(kubectl -n panoptes annotate secret unannotated panoptes.io\/server=https:\/\/a\), or panoptes.io\/server: "\*" to allow any server/);
  t.match(one(via('elsewhere')).message, /is for server https:\/\/b \(annotation panoptes.io\/server\), not https:\/\/a/);
  t.match(one(via('spelled')).config, { token: 'tok-spelled' }, 'the server compared normalised on both sides');
  t.match(one(via('any', { server: 'https://anywhere.example' })).config, { token: 'tok-any' }, '"*": any server');

  t.match(one(via('with-ca', { insecureSkipTLSVerify: true })).message, /spec.insecureSkipTLSVerify: Secret panoptes\/with-ca has a CA/, 'the spec cannot skip the verification a Secret with a CA asks for');
  t.match(one(via('with-ca', { caData: CA2 })).message, /spec.caData differs from the CA of Secret panoptes\/with-ca/, 'nor replace its CA');
  t.match(one(via('with-ca', { caData: CA })).config, { certificateAuthorityData: CA }, 'repeating it is fine');
  t.match(one(via('no-ca', { caData: CA2 })).config, { certificateAuthorityData: CA2 }, 'a Secret without a CA leaves it to the spec');
  t.match(one(via('no-ca', { insecureSkipTLSVerify: true })).message, /does not allow its credentials to be sent without verifying the server/);
  t.match(one(via('kc-skips', { insecureSkipTLSVerify: true })).config, { insecureSkipTLSVerify: true, token: 'kc-token-123456' }, 'unless its kubeconfig skips verification itself');
  t.match(one(via('kc-name')).config, { tlsServerName: 'api.internal', certificateAuthorityData: CA });
  t.match(one(via('kc-name', { tlsServerName: 'evil.internal' })).message, /spec.tlsServerName differs from tls-server-name/);
  const broken = one(via('kc-broken'));
  t.match(broken.message, /key kubeconfig is not valid YAML at line \d+, column \d+ \([A-Z_]+\)/);
  t.notOk(broken.message?.includes('kc-broken-SECRET-42'), 'a bad kubeconfig is reported by position, never by content');

  const bound = { token: 'inline-tok-1234', endpoint: { server: 'https://a', caData: CA } };
  t.match(one(reg('i', { server: 'https://a', caData: CA }, { credentials: bound })).config, { token: 'inline-tok-1234' }, 'inline credentials at their endpoint');
  const moved = one(reg('i', { server: 'https://evil.example', caData: CA }, { credentials: bound }));
  t.match(moved.message, /the stored inline credentials were given for another spec.server \(server https:\/\/a\), so they are not used: inline credentials are bound to the endpoint they were given for/);
  t.equal(moved.config, undefined);
  t.match(one(reg('i', { server: 'https://a' }, { credentials: bound })).message, /another spec.caData/, 'the CA is part of the endpoint');
  t.match(one(reg('i', { server: 'https://legacy.example' }, { credentials: { token: 'legacy-tok-1234' } })).config, { token: 'legacy-tok-1234' }, 'credentials stored before endpoints were recorded: used with the spec\'s endpoint');

  const loop = one(reg('l', { server: 'https://127.0.0.1:6443' }));
  t.match(loop.message, /spec.server: Forbidden: 127.0.0.1 is loopback: .*--allow-member-networks/, 'synchro validates with its own allowance');
  const allowed = one(reg('l', { server: 'https://127.0.0.1:6443' }), MemberNetworks.parse('127.0.0.0/8'));
  t.match(allowed.config, { server: 'https://127.0.0.1:6443', networkGuard: { allow: ['127.0.0.0/8'] } }, 'allowed: the connection carries the guard');
  t.match(one(reg('h', { server: 'http://10.0.0.1' }, { credentials: { token: 'clear-tok-1234' } })).message, /plain http:\/\/ would send the credentials in clear text/);
  t.match(one(via('any')).config, { networkGuard: { allow: [] } }, 'every API cluster is guarded');
});
