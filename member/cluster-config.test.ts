import { writeFileSync } from 'node:fs';
import t from 'tap';
import { ConfigError, loadKubeconfigClusters, parseClustersYaml, publicSpec } from './cluster-config.ts';
import { defaultResources } from '../api/resource-patterns.ts';
import { tempDir } from '../synchro/testutil.ts';

t.test('a valid file', async (t) => {
  const cfg = parseClustersYaml(
    `
defaults:
  namespaces: { exclude: [kube-system] }
clusters:
  - name: prod-eu
    kubeconfig: ./kube/prod.yaml
    context: prod-eu
    resources: ["apps/*", pods, "*"]
  - name: dev
    server: https://10.0.0.1:6443
    certificateAuthority: /etc/ca.crt
    token: s3cret
    namespaces: { include: [web, api] }
`,
    '/etc/panoptes',
  );
  t.same(cfg.invalid, []);
  t.equal(cfg.clusters.length, 2);
  const [eu, dev] = cfg.clusters;
  t.equal(eu.kubeconfig, '/etc/panoptes/kube/prod.yaml', 'relative paths resolve against the file');
  t.same(eu.resources, ['apps/*', 'pods', '*']);
  t.same(eu.namespaces, { exclude: ['kube-system'] }, 'defaults apply');
  t.same(dev.resources, [...defaultResources], 'default resource set');
  t.same(dev.namespaces, { include: ['web', 'api'] });
  t.equal(publicSpec(dev as never).token, '(redacted)', 'no secrets in the stored spec');
  t.not(eu.fingerprint, dev.fingerprint);
});

t.test('invalid entries are reported one by one', async (t) => {
  const cfg = parseClustersYaml(
    `
clusters:
  - name: good
    server: http://127.0.0.1:1
  - name: Bad_Name
    server: http://127.0.0.1:1
  - name: noserver
  - name: both
    server: http://x
    kubeconfig: /k
  - name: ftp
    server: ftp://x
  - name: typo
    server: http://x
    resource: [pods]
  - name: badres
    server: http://x
    resources: ["a/b/c"]
  - name: good
    server: http://127.0.0.1:2
  - 42
  - name: apis
    server: http://127.0.0.1:3
`,
    '/',
  );
  t.same(cfg.clusters.map((c) => c.name), ['good']);
  const byIndex = Object.fromEntries(cfg.invalid.map((i) => [i.index, i]));
  t.match(byIndex[1].message, /DNS label/);
  t.match(byIndex[9].message, /"apis" is reserved/, 'a name of the fleet URLs is no cluster name');
  t.equal(byIndex[1].name, undefined, 'an invalid name gets no status row');
  t.match(byIndex[2], { name: 'noserver', message: /give kubeconfig/ });
  t.match(byIndex[3].message, /not both/);
  t.match(byIndex[4].message, /http:\/\/ or https:\/\//);
  t.match(byIndex[5].message, /unknown key "resource"/);
  t.match(byIndex[6].message, /GROUP\/RESOURCE/);
  t.match(byIndex[7].message, /duplicate name "good"/);
  t.match(byIndex[8].message, /must be a map/);
});

t.test('a malformed file is one error', async (t) => {
  t.throws(() => parseClustersYaml('clusters: [\n  - name: x', '/'), ConfigError);
  t.throws(() => parseClustersYaml('clusters: 3', '/'), /clusters must be a list/);
  t.throws(() => parseClustersYaml('clustrs: []', '/'), /unknown top-level key "clustrs"/);
  t.same(parseClustersYaml('', '/').clusters, [], 'an empty file has no clusters');
});

t.test('kubeconfig contexts', async (t) => {
  const { dir, cleanup } = tempDir();
  t.teardown(cleanup);
  const file = `${dir}/kubeconfig`;
  writeFileSync(
    file,
    `apiVersion: v1
kind: Config
clusters:
- name: c1
  cluster: { server: "http://127.0.0.1:1" }
users:
- name: u1
  user: { token: abc }
contexts:
- name: Kind-One
  context: { cluster: c1, user: u1 }
- name: two
  context: { cluster: c1, user: u1 }
current-context: two
`,
  );
  const all = loadKubeconfigClusters(file, 'all');
  t.same(all.clusters.map((c) => [c.name, c.context]), [['kind-one', 'Kind-One'], ['two', 'two']]);
  const some = loadKubeconfigClusters(file, ['two', 'three'], ['pods']);
  t.same(some.clusters.map((c) => c.name), ['two']);
  t.same(some.clusters[0].resources, ['pods']);
  t.match(some.invalid[0].message, /no context "three"/);
  t.throws(() => loadKubeconfigClusters(`${dir}/missing`, 'all'), ConfigError);
});

t.test('a mistyped credential key: the entry is invalid, reported by key name, and nothing of its value is served', async (t) => {
  const SECRET = 'typo-secret-VALUE-4711';
  const cfg = parseClustersYaml(
    `
clusters:
  - name: tokn
    server: https://10.0.0.1:6443
    tokn: ${SECRET}
  - name: keydat
    server: https://10.0.0.2:6443
    clientCertificateData: Y2VydA==
    clientKeyDat: ${SECRET}
  - name: nested
    server: https://10.0.0.3:6443
    namespaces: { include: [a], token: ${SECRET} }
  - name: typed
    server: { token: ${SECRET} }
    resources: [pods]
`,
    '/',
  );
  t.same(cfg.clusters, []);
  const byName = Object.fromEntries(cfg.invalid.map((i) => [i.name, i]));
  t.match(byName.tokn.message, /unknown key "tokn"/);
  t.match(byName.keydat.message, /unknown key "clientKeyDat"/);
  t.same(byName.tokn.spec, { name: 'tokn', server: 'https://10.0.0.1:6443' }, 'the served spec holds allowlisted fields only');
  t.same(byName.keydat.spec, { name: 'keydat', server: 'https://10.0.0.2:6443', clientCertificateData: '(redacted)' });
  t.same(byName.nested.spec.namespaces, { include: ['a'] }, 'nested fields too');
  t.same(byName.typed.spec, { name: 'typed', resources: ['pods'] }, 'a public field of the wrong type is not served');
  t.notOk(JSON.stringify(cfg.invalid).includes(SECRET), 'no message or spec carries the value');
  t.same(publicSpec({ name: 'x', server: 'https://x', tokn: SECRET, token: SECRET, patterns: [], fingerprint: 'f' }), { name: 'x', server: 'https://x', token: '(redacted)' });
  const userinfo = parseClustersYaml(`clusters:\n  - name: ui\n    server: https://admin:${SECRET}@10.0.0.4:6443\n`, '/');
  t.match(userinfo.invalid[0].message, /server must not carry credentials/);
  t.same(userinfo.invalid[0].spec, { name: 'ui', server: 'https://10.0.0.4:6443/' }, 'nor is its user:password served');
});

t.test('multiClusterServices: what an entry grants (both when it says nothing), served; anything else is the entry\'s error', async (t) => {
  const cfg = parseClustersYaml(
    `
clusters:
  - { name: both, server: https://10.0.0.1:6443 }
  - { name: consumer-only, server: https://10.0.0.2:6443, multiClusterServices: { provider: false } }
  - { name: bad, server: https://10.0.0.3:6443, multiClusterServices: { provider: "yes" } }
  - { name: typo, server: https://10.0.0.4:6443, multiClusterServices: { providers: true } }
`,
    '/',
  );
  const [both, consumerOnly] = cfg.clusters;
  t.equal(both.multiClusterServices, undefined);
  t.same(consumerOnly.multiClusterServices, { provider: false });
  t.same(publicSpec(consumerOnly as never).multiClusterServices, { provider: false }, 'served (and stored in the file cluster\'s spec)');
  t.not(both.fingerprint, parseClustersYaml('clusters:\n  - { name: both, server: https://10.0.0.1:6443, multiClusterServices: { consumer: false } }\n', '/').clusters[0].fingerprint, 'a change of it is a change of the entry');
  const byName = Object.fromEntries(cfg.invalid.map((i) => [i.name, i.message]));
  t.match(byName.bad, /multiClusterServices\.provider must be true or false/);
  t.match(byName.typo, /multiClusterServices: unknown key "providers" \(use provider, consumer\)/);
});
