// The proxy's member credentials: clusters.yaml entries, Clusters registered through the API
// with inline credentials (bound to their endpoint, as synchro uses them), a Secret-held
// credential named as unavailable here, rotation seen as a new fingerprint; and the flags.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { createApiserver } from '../../apiserver/server.ts';
import { http, tempDir } from '../../hack/sim/testutil.ts';
import { logger, setLogLevel } from '../../lib/log.ts';
import { MemberNetworks } from '../../member/networks.ts';
import { openTestStore } from '../../storage/testing.ts';
import { UsageError } from '../command.ts';
import { memberSourceFlags } from './apiserver.ts';
import { parseProxyUser, proxyCredentials } from './proxy-credentials.ts';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');

t.test('credentials from the clusters file and from Clusters registered through the API', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'clusters.yaml');
  writeFileSync(file, 'clusters:\n  - name: filed\n    server: https://filed.example:6443\n    token: file-token-1\n');
  const { store, close } = await openTestStore('sqlite');
  const networks = MemberNetworks.parse('127.0.0.0/8');
  const api = await createApiserver({ store, memberNetworks: networks, catalogOptions: { refreshMs: 60_000 } });
  const base = await api.listen('127.0.0.1', 0);
  t.teardown(async () => {
    await api.close();
    await close();
  });
  const C = `${base}/apis/panoptes.io/v1alpha1/clusters`;
  t.equal((await http('POST', C, { metadata: { name: 'inline' }, spec: { server: 'https://inline.example:6443', credentials: { token: 'inline-token-1' } } })).status, 201);
  t.equal((await http('POST', C, { metadata: { name: 'secret' }, spec: { server: 'https://secret.example:6443', credentials: { secretRef: { name: 'secret-creds' } } } })).status, 201);

  const creds = proxyCredentials({ store, clustersFile: file, networks, log: logger('test'), refreshMs: 0 });
  const filed = await creds.lookup('filed');
  t.match(filed, { connection: { server: 'https://filed.example:6443', token: 'file-token-1' } });
  const inline = await creds.lookup('inline');
  t.match(inline, { connection: { server: 'https://inline.example:6443', token: 'inline-token-1' } });
  t.match(await creds.lookup('secret'), { unavailable: /in a Secret of the host cluster, which only synchro reads/ });
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

t.test('flags', async (t) => {
  t.same(parseProxyUser('dev'), { name: 'dev', groups: [], extra: {} });
  t.same(parseProxyUser('dev:a, b'), { name: 'dev', groups: ['a', 'b'], extra: {} });
  t.equal(parseProxyUser(undefined), undefined);
  t.throws(() => parseProxyUser(':g'), UsageError);
  t.same(memberSourceFlags({ clusters: 'c.yaml' }), { clustersFile: 'c.yaml' });
  t.same(memberSourceFlags({ kubeconfig: 'k', contexts: 'a,b' }), { kubeconfig: 'k', contexts: ['a', 'b'] });
  t.throws(() => memberSourceFlags({ clusters: 'c', kubeconfig: 'k' }), UsageError);
  t.throws(() => memberSourceFlags({ contexts: 'a' }), UsageError);
});
