// Cluster objects into cluster configurations: the connection from the spec, credentials
// inline or from every kind of Secret (token, tls.crt/tls.key, ca.crt, kubeconfig), what is
// refused in a Secret's kubeconfig, the file's names, deletion marks and pending Secrets.
import t from 'tap';
import type { ClusterRegistration } from '../storage/cluster-objects.ts';
import type { HostSecret, SecretSource } from './host-secrets.ts';
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
const secret = (name: string, cluster: string, data: Record<string, string>): HostSecret => ({ name, namespace: 'panoptes', resourceVersion: '1', labels: { 'panoptes.io/cluster': cluster }, data });

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
