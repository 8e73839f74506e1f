// --publish-cluster-profiles and --clusterprofile-provider-file of synchro and all-in-one:
// publishing is off unless a namespace is named (and needs the host cluster); the provider
// file is read as upstream's pkg/access reads it, a broken one a usage error.
import { writeFileSync } from 'node:fs';
import t from 'tap';
import { tempDir } from '../../synchro/testutil.ts';
import { parseSynchroFlags } from './synchro-flags.ts';

t.test('--publish-cluster-profiles: off by default; a namespace of the host cluster', async (t) => {
  const { dir, cleanup } = tempDir();
  t.teardown(cleanup);
  const host = `${dir}/host.kubeconfig`;
  writeFileSync(host, 'apiVersion: v1\nkind: Config\n');
  t.equal(parseSynchroFlags({}).publishClusterProfiles, undefined, 'off by default');
  t.same(parseSynchroFlags({ 'publish-cluster-profiles': 'inventory', 'host-kubeconfig': host }).publishClusterProfiles, { namespace: 'inventory' });
  t.throws(() => parseSynchroFlags({ 'publish-cluster-profiles': 'Not A Namespace', 'host-kubeconfig': host }), /is not a namespace name/);
  const saved = process.env.KUBERNETES_SERVICE_HOST;
  delete process.env.KUBERNETES_SERVICE_HOST;
  t.teardown(() => void (saved !== undefined && (process.env.KUBERNETES_SERVICE_HOST = saved)));
  t.throws(() => parseSynchroFlags({ 'publish-cluster-profiles': 'inventory' }), /needs the host cluster/);
});

t.test('--clusterprofile-provider-file: the exec providers, as upstream writes them', async (t) => {
  const { dir, cleanup } = tempDir();
  t.teardown(cleanup);
  const file = `${dir}/providers.json`;
  writeFileSync(file, JSON.stringify({ providers: [{ name: 'secretreader', servers: ['https://*.example.com'], execConfig: { apiVersion: 'client.authentication.k8s.io/v1', command: './bin/secretreader-plugin', args: null, env: null, provideClusterInfo: true } }] }));
  t.same(parseSynchroFlags({ 'clusterprofile-provider-file': file }).clusterProfileProviders, [{ name: 'secretreader', servers: ['https://*.example.com'], execConfig: { apiVersion: 'client.authentication.k8s.io/v1', command: './bin/secretreader-plugin', args: [], env: [], provideClusterInfo: true } }]);
  writeFileSync(file, '{"providers": [{"name": "x"}]}');
  t.throws(() => parseSynchroFlags({ 'clusterprofile-provider-file': file }), /providers\[0\]: needs execConfig.command/);
  t.throws(() => parseSynchroFlags({ 'clusterprofile-provider-file': `${dir}/missing.json` }), /ENOENT|no such file/);
});
