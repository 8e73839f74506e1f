// Secure serving end to end over real TLS: a fake host cluster (TokenReview,
// SubjectAccessReview, the extension-apiserver-authentication ConfigMap) and certificates
// made here (hack/certs.ts). Front-proxy headers are trusted only with the front-proxy
// client certificate and an allowed CN; SAR denials are 403 Status objects; the SARs carry
// the request's attributes and the cluster check.
import { request } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { makeCertSet } from '../../hack/certs.ts';
import { logger, setLogLevel } from '../../lib/log.ts';
import { openTestStore, podEvent, seedCluster } from '../../storage/testing.ts';
import { createApiserver } from '../server.ts';
import { createCA, createCert, type KeyPair } from './certs.ts';
import { secureServingFromFlags } from './config.ts';
import { authenticationConfigMap, startFakeHost } from '../../hack/testing/fakehost.ts';
import { requestAttributes } from './attributes.ts';
import { anonymousUser, Authenticator } from './authn.ts';
import type { HostClient } from './hostclient.ts';
import type { IncomingMessage } from 'node:http';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');

interface Res {
  status: number;
  body: string;
  peerCert?: string;
}

function call(base: string, path: string, o: { ca: string; client?: KeyPair; headers?: Record<string, string | string[]>; method?: string; body?: unknown }): Promise<Res> {
  return new Promise((resolve, reject) => {
    const body = o.body === undefined ? undefined : JSON.stringify(o.body);
    const headers = { ...(body ? { 'Content-Type': 'application/json' } : {}), ...(o.headers ?? {}) };
    const req = request(base + path, { method: o.method ?? 'GET', ca: o.ca, cert: o.client?.cert, key: o.client?.key, headers, agent: false, timeout: 10_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      const peerCert = (res.socket as TLSSocket).getPeerCertificate().fingerprint256;
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), peerCert }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(body);
  });
}

t.test('aggregated-mode authentication and authorization', async (t) => {
  const certs = makeCertSet(['127.0.0.1', 'localhost']);
  // A certificate from the front-proxy CA whose CN is not allowed, and a look-alike from another CA.
  const wrongCN = createCert(certs.frontProxyCA, { commonName: 'intruder' });
  const otherCA = createCA('other-ca');
  const lookAlike = createCert(otherCA, { commonName: 'front-proxy-client' });
  const dev = createCert(certs.clientCA, { commonName: 'dora', organizations: ['devs', 'ops'] });

  const host = await startFakeHost({
    configMap: authenticationConfigMap(certs),
    tokens: { 'tok-carol': { name: 'carol', uid: 'u-carol', groups: ['readers'], extra: {} } },
    policy: (s) => {
      const a = s.resourceAttributes;
      // A team that registers clusters without reading them, and auditors who read them without registering any.
      if (s.user === 'registrar') return a?.resource === 'clusters' && !a.subresource && ['create', 'delete'].includes(a.verb) ? true : 'registrar may only create and delete clusters';
      if (s.user === 'auditor') return a?.resource === 'clusters' && ['get', 'list', 'watch', 'patch'].includes(a.verb) ? true : 'auditor may only read clusters (and patch their status)';
      // A team that exports the Services of its own namespace (panoptes:service-exporter bound in it).
      if (s.user === 'exporter') return a?.resource === 'multiclusterservices' && a.namespace === 'shop' ? true : 'exporter may only export the services of shop';
      return s.user === 'bob' ? 'no RBAC rule for bob' : s.user === 'eve' && a?.resource === 'clusters' ? 'eve may not read that cluster' : true;
    },
  });
  const { store, close: closeStore } = await openTestStore('sqlite');
  await seedCluster(store, 'a', { phase: 'Ready', ready: true, apiResources: [{ group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, singularName: 'pod' }] });
  await store.applyBatch('a', [podEvent('ADDED', 'n1', 'web-1', '10'), podEvent('ADDED', 'n1', 'web-2', '11')]);

  const selfSigned = await secureServingFromFlags({ 'bind-address': '127.0.0.1', 'secure-port': '0' }, logger('test'), { authnClient: host.client(), authzClient: host.client() });
  t.ok(selfSigned.tls.selfSigned, 'no --tls-cert-file: self-signed');
  t.match(selfSigned.tls.certificate, /BEGIN CERTIFICATE/);
  selfSigned.stop();
  // Serve the hack/ serving certificate from files.
  const dir = mkdtempSync(join(tmpdir(), 'panoptes-auth-'));
  writeFileSync(join(dir, 'tls.crt'), certs.serving.cert);
  writeFileSync(join(dir, 'tls.key'), certs.serving.key);
  const secureFiles = await secureServingFromFlags({ 'tls-cert-file': join(dir, 'tls.crt'), 'tls-private-key-file': join(dir, 'tls.key') }, logger('test'), { authnClient: host.client(), authzClient: host.client() });
  const api = await createApiserver({ store, catalogOptions: { refreshMs: 200 }, secure: secureFiles, log: logger('test') });
  const base = await api.listen('127.0.0.1', 0);
  t.teardown(async () => {
    await api.close();
    secureFiles.stop();
    await closeStore();
    await host.close();
    rmSync(dir, { recursive: true, force: true });
  });
  t.match(base, /^https:\/\/127\.0\.0\.1:\d+$/);
  t.ok(host.requests.some((r) => r.path.endsWith('/extension-apiserver-authentication')), 'the ConfigMap was read');

  const ca = certs.servingCA.cert;
  const podsPath = '/apis/panoptes.io/v1alpha1/resources/clusters/a/api/v1/namespaces/n1/pods';
  const asUser = (user: string, client: KeyPair | undefined, extra: Record<string, string | string[]> = {}) =>
    call(base, podsPath, { ca, client, headers: { 'X-Remote-User': user, 'X-Remote-Group': ['devs', 'qa'], 'X-Remote-Extra-Scopes': ['s1', 's2'], ...extra } });

  t.test('front proxy with an allowed CN: authenticated as X-Remote-User, allowed user gets data, SAR attributes', async (t) => {
    host.requests.length = 0;
    const r = await asUser('alice', certs.frontProxyClient);
    t.equal(r.status, 200, r.body);
    const list = JSON.parse(r.body) as { items: { metadata: { name: string } }[] };
    t.same(
      list.items.map((i) => i.metadata.name),
      ['web-1', 'web-2'],
    );
    const sars = host.sars();
    t.equal(sars.length, 2, 'the resource and the cluster are both reviewed');
    const res = sars.find((s) => s.resourceAttributes?.resource === 'pods');
    t.same(res, {
      user: 'alice',
      groups: ['devs', 'qa', 'system:authenticated'],
      extra: { scopes: ['s1', 's2'] },
      resourceAttributes: { verb: 'list', group: '', version: 'v1', resource: 'pods', namespace: 'n1' },
    });
    const cl = sars.find((s) => s.resourceAttributes?.resource === 'clusters');
    t.same(cl?.resourceAttributes, { verb: 'list', group: 'panoptes.io', version: 'v1alpha1', resource: 'clusters', subresource: 'resources', name: 'a' });
    t.ok(host.requests.every((r) => r.authorization === 'Bearer panoptes-sa-token'), 'host calls carry the service account token');

    // cached: the same request again asks nothing
    const n = host.requests.length;
    t.equal((await asUser('alice', certs.frontProxyClient)).status, 200);
    t.equal(host.requests.length, n, 'decisions cached');
  });

  t.test('get and watch carry their verb and name', async (t) => {
    host.requests.length = 0;
    const g = await call(base, `${podsPath}/web-1`, { ca, client: certs.frontProxyClient, headers: { 'X-Remote-User': 'gina' } });
    t.equal(g.status, 200, g.body);
    t.same(host.sars().find((s) => s.resourceAttributes?.resource === 'pods')?.resourceAttributes, { verb: 'get', group: '', version: 'v1', resource: 'pods', namespace: 'n1', name: 'web-1' });
    host.requests.length = 0;
    const w = await call(base, `/apis/panoptes.io/v1alpha1/resources/api/v1/pods?watch=1&timeoutSeconds=1`, { ca, client: certs.frontProxyClient, headers: { 'X-Remote-User': 'gina' } });
    t.equal(w.status, 200, w.body);
    const sars = host.sars();
    t.same(sars.find((s) => s.resourceAttributes?.resource === 'pods')?.resourceAttributes, { verb: 'watch', group: '', version: 'v1', resource: 'pods' });
    t.same(sars.find((s) => s.resourceAttributes?.resource === 'clusters')?.resourceAttributes, { verb: 'watch', group: 'panoptes.io', version: 'v1alpha1', resource: 'clusters', subresource: 'resources' }, 'all-clusters view: no cluster name');
  });

  t.test('registering clusters: SubjectAccessReview with the real verb on clusters.panoptes.io', async (t) => {
    const as = (user: string, method: string, path: string, body?: unknown) =>
      call(base, path, { ca, client: certs.frontProxyClient, method, body, headers: { 'X-Remote-User': user, ...(method === 'PATCH' ? { 'Content-Type': 'application/merge-patch+json' } : {}) } });
    const C = '/apis/panoptes.io/v1alpha1/clusters';
    host.requests.length = 0;
    const created = await as('registrar', 'POST', C, { metadata: { name: 'north' }, spec: { server: 'https://north.example' } });
    t.equal(created.status, 201, created.body);
    t.same(host.sars().map((s) => s.resourceAttributes), [{ verb: 'create', group: 'panoptes.io', version: 'v1alpha1', resource: 'clusters' }], 'one review: create, no cluster data check');
    const read = await as('registrar', 'GET', `${C}/north`);
    t.equal(read.status, 403);
    t.match(JSON.parse(read.body), { message: 'clusters.panoptes.io "north" is forbidden: User "registrar" cannot get resource "clusters" in API group "panoptes.io" at the cluster scope: registrar may only create and delete clusters' });
    t.equal((await as('auditor', 'GET', `${C}/north`)).status, 200, 'the auditor reads it');
    const denied = await as('auditor', 'POST', C, { metadata: { name: 'south' }, spec: { server: 'https://south.example' } });
    t.match({ status: denied.status, body: JSON.parse(denied.body) }, { status: 403, body: { message: /User "auditor" cannot create resource "clusters" in API group "panoptes.io"/ } });
    host.requests.length = 0;
    const status = await as('auditor', 'PATCH', `${C}/north/status`, { status: { phase: 'Ready' } });
    t.same(host.sars().map((s) => s.resourceAttributes), [{ verb: 'patch', group: 'panoptes.io', version: 'v1alpha1', resource: 'clusters', subresource: 'status', name: 'north' }]);
    t.equal(status.status, 405, 'allowed by RBAC, still synchro\'s alone');
    t.equal((await as('registrar', 'PATCH', `${C}/north`, { spec: { resources: ['pods'] } })).status, 403, 'patch is its own verb');
    const del = await as('registrar', 'DELETE', `${C}/north`);
    t.equal(del.status, 200, del.body);
    t.match(JSON.parse(del.body), { metadata: { name: 'north', deletionTimestamp: /Z$/ } });
  });

  t.test('exporting services: SubjectAccessReview with the real verb, namespace and name on multiclusterservices.panoptes.io', async (t) => {
    const as = (user: string, method: string, path: string, body?: unknown) =>
      call(base, path, { ca, client: certs.frontProxyClient, method, body, headers: { 'X-Remote-User': user, ...(method === 'PATCH' ? { 'Content-Type': 'application/merge-patch+json' } : {}) } });
    const M = '/apis/panoptes.io/v1alpha1/namespaces/shop/multiclusterservices';
    const mcs = (verb: string, extra: Record<string, string> = {}) => ({ verb, group: 'panoptes.io', version: 'v1alpha1', resource: 'multiclusterservices', namespace: 'shop', ...extra });
    host.requests.length = 0;
    const created = await as('exporter', 'POST', M, { metadata: { name: 'web' }, spec: { consumerClusters: ['a'] } });
    t.equal(created.status, 201, created.body);
    t.same(host.sars().map((s) => s.resourceAttributes), [mcs('create')], 'one review: create in the namespace, no cluster data check');
    host.requests.length = 0;
    t.equal((await as('exporter', 'PATCH', `${M}/web`, { spec: { consumerClusters: null } })).status, 200);
    t.same(host.sars().map((s) => s.resourceAttributes), [mcs('patch', { name: 'web' })]);
    host.requests.length = 0;
    t.equal((await as('exporter', 'GET', `/apis/panoptes.io/v1alpha1/resources/apis/panoptes.io/v1alpha1/namespaces/shop/multiclusterservices/web`)).status, 200, 'read through the all-clusters view');
    t.same(host.sars().map((s) => s.resourceAttributes), [mcs('get', { name: 'web' })], 'its own objects need no per-cluster check in a view');
    const other = await as('exporter', 'POST', '/apis/panoptes.io/v1alpha1/namespaces/bank/multiclusterservices', { metadata: { name: 'vault' } });
    t.equal(other.status, 403);
    t.match(JSON.parse(other.body), { message: 'multiclusterservices.panoptes.io is forbidden: User "exporter" cannot create resource "multiclusterservices" in API group "panoptes.io" in the namespace "bank": exporter may only export the services of shop' });
    const all = await as('exporter', 'GET', '/apis/panoptes.io/v1alpha1/multiclusterservices');
    t.equal(all.status, 403, 'every namespace is another scope');
    host.requests.length = 0;
    t.equal((await as('exporter', 'PUT', `${M}/web/status`, { status: {} })).status, 405, 'allowed by RBAC, still synchro\'s alone');
    t.same(host.sars().map((s) => s.resourceAttributes), [mcs('update', { name: 'web', subresource: 'status' })]);
    t.equal((await as('exporter', 'DELETE', `${M}/web`)).status, 200);
  });

  t.test('the same headers without the front-proxy certificate are not trusted', async (t) => {
    const r = await asUser('alice', undefined);
    t.equal(r.status, 401);
    t.match(JSON.parse(r.body), { kind: 'Status', reason: 'Unauthorized', code: 401 });
  });

  t.test('a front-proxy-CA certificate whose CN is not allowed is not trusted', async (t) => {
    t.equal((await asUser('alice', wrongCN)).status, 401);
  });

  t.test('an expired front-proxy certificate is not trusted', async (t) => {
    const expired = createCert(certs.frontProxyCA, { commonName: 'front-proxy-client', days: 1, shiftMs: -3 * 86_400_000 });
    t.equal((await asUser('alice', expired)).status, 401);
  });

  t.test('a certificate with the allowed CN from another CA is not trusted', async (t) => {
    t.equal((await asUser('alice', lookAlike)).status, 401);
  });

  t.test('SubjectAccessReview denial: 403 Status naming user, verb and resource', async (t) => {
    const r = await asUser('bob', certs.frontProxyClient);
    t.equal(r.status, 403);
    const s = JSON.parse(r.body) as { kind: string; reason: string; code: number; message: string; details: { kind: string; group: string } };
    t.match(s, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Forbidden', code: 403, details: { kind: 'pods', group: '' } });
    t.equal(s.message, 'pods is forbidden: User "bob" cannot list resource "pods" in API group "" in the namespace "n1": no RBAC rule for bob');
  });

  t.test('a cluster denial names the cluster', async (t) => {
    const r = await asUser('eve', certs.frontProxyClient);
    t.equal(r.status, 403);
    t.equal((JSON.parse(r.body) as { message: string }).message, 'clusters.panoptes.io "a" is forbidden: User "eve" cannot list resource "clusters/resources" in API group "panoptes.io" at the cluster scope: eve may not read that cluster');
  });

  t.test('bearer token: TokenReview, cached', async (t) => {
    host.requests.length = 0;
    const r = await call(base, podsPath, { ca, headers: { Authorization: 'Bearer tok-carol' } });
    t.equal(r.status, 200, r.body);
    const tr = host.requests.filter((x) => x.path.endsWith('/tokenreviews'));
    t.equal(tr.length, 1);
    t.match(tr[0].body, { kind: 'TokenReview', spec: { token: 'tok-carol' } });
    t.match(host.sars()[0], { user: 'carol', uid: 'u-carol', groups: ['readers', 'system:authenticated'] });
    await call(base, podsPath, { ca, headers: { Authorization: 'Bearer tok-carol' } });
    t.equal(host.requests.filter((x) => x.path.endsWith('/tokenreviews')).length, 1, 'token answer cached');
    t.equal((await call(base, podsPath, { ca, headers: { Authorization: 'Bearer nope' } })).status, 401);
  });

  t.test('client certificate from the client CA: CN and O', async (t) => {
    host.requests.length = 0;
    const r = await call(base, podsPath, { ca, client: dev, headers: { 'X-Remote-User': 'mallory' } });
    t.equal(r.status, 200, r.body);
    t.match(host.sars()[0], { user: 'dora', groups: ['devs', 'ops', 'system:authenticated'] });
    t.notOk(host.sars().some((s) => s.user === 'mallory'), 'headers from a non-front-proxy peer ignored');
  });

  t.test('always-allow group system:masters: no review', async (t) => {
    host.requests.length = 0;
    t.equal((await call(base, podsPath, { ca, client: certs.admin })).status, 200);
    t.equal(host.sars().length, 0);
  });

  t.test('anonymous rejected; health paths exempt; discovery reviewed as a non-resource path', async (t) => {
    t.equal((await call(base, podsPath, { ca })).status, 401);
    const h = await call(base, '/readyz', { ca });
    t.equal(h.status, 200);
    t.equal(h.body, 'ok');
    t.equal((await call(base, '/livez', { ca })).status, 200);
    host.requests.length = 0;
    t.equal((await call(base, '/apis/panoptes.io/v1alpha1/resources/api/v1', { ca, client: certs.frontProxyClient, headers: { 'X-Remote-User': 'alice' } })).status, 200);
    t.same(host.sars()[0].nonResourceAttributes, { path: '/apis/panoptes.io/v1alpha1/resources/api/v1', verb: 'get' });
  });
  t.test('serving certificate reloaded when the files change', async (t) => {
    const before = await call(base, '/livez', { ca });
    t.equal(before.peerCert, new X509Certificate(certs.serving.cert).fingerprint256);
    t.notOk(secureFiles.tls.check(), 'unchanged files: no reload');
    const next = createCert(certs.servingCA, { commonName: 'panoptes-apiserver-2', hosts: ['127.0.0.1'], usage: 'server' });
    writeFileSync(join(dir, 'tls.key'), next.key);
    writeFileSync(join(dir, 'tls.crt'), next.cert);
    t.ok(secureFiles.tls.check(), 'reloaded');
    const after = await call(base, '/livez', { ca });
    t.equal(after.status, 200);
    t.equal(after.peerCert, new X509Certificate(next.cert).fingerprint256, 'new connections get the new certificate');
  });
});

t.test('anonymous only when enabled; a failed credential is never anonymous', async (t) => {
  const fakeReq = (headers: Record<string, string>) => {
    const distinct: Record<string, string[]> = {};
    for (const [k, v] of Object.entries(headers)) distinct[k.toLowerCase()] = [v];
    return { headers: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v])), headersDistinct: distinct, socket: {}, url: '/x' } as unknown as IncomingMessage;
  };
  const log = logger('test');
  const off = new Authenticator(() => ({ anonymous: false }), log);
  await t.rejects(off.authenticate(fakeReq({})), { reason: 'Unauthorized', code: 401 });
  const on = new Authenticator(() => ({ anonymous: true }), log);
  t.same(await on.authenticate(fakeReq({ 'X-Remote-User': 'root' })), anonymousUser, 'headers from a plain peer ignored: anonymous');
  const client = { post: async () => ({ status: { authenticated: false } }) } as unknown as HostClient;
  const withTokens = new Authenticator(() => ({ anonymous: true, tokenReview: { client, ttlMs: 0 } }), log);
  await t.rejects(withTokens.authenticate(fakeReq({ Authorization: 'Bearer bad' })), { code: 401 }, 'a rejected token is not downgraded to anonymous');
});

t.test('request attributes (kube RequestInfo inside Panoptes paths)', async (t) => {
  const P = '/apis/panoptes.io/v1alpha1/resources';
  t.same(requestAttributes('GET', `${P}/apis/apps/v1/namespaces/web/deployments/d1`, ''), { kind: 'resource', attrs: { verb: 'get', group: 'apps', version: 'v1', resource: 'deployments', namespace: 'web', name: 'd1' }, view: { cluster: '' } });
  t.same(requestAttributes('GET', `${P}/clusters/east/api/v1/namespaces`, 'watch=true'), { kind: 'resource', attrs: { verb: 'watch', group: '', version: 'v1', resource: 'namespaces' }, view: { cluster: 'east' } });
  t.same(requestAttributes('GET', `${P}/clusters/east/api/v1/watch/namespaces/web/pods`, ''), { kind: 'resource', attrs: { verb: 'watch', group: '', version: 'v1', resource: 'pods', namespace: 'web' }, view: { cluster: 'east' } });
  t.same(requestAttributes('GET', `${P}/api/v1/namespaces/web`, ''), { kind: 'resource', attrs: { verb: 'get', group: '', version: 'v1', resource: 'namespaces', namespace: 'web', name: 'web' }, view: { cluster: '' } });
  t.same(requestAttributes('GET', '/apis/panoptes.io/v1alpha1/clusters/east', ''), { kind: 'resource', attrs: { verb: 'get', group: 'panoptes.io', version: 'v1alpha1', resource: 'clusters', name: 'east' } });
  t.same(requestAttributes('GET', `${P}/clusters/east/apis`, ''), { kind: 'nonResource', path: `${P}/clusters/east/apis`, verb: 'get' });
  t.same(requestAttributes('GET', '/version', ''), { kind: 'nonResource', path: '/version', verb: 'get' });
  const C = '/apis/panoptes.io/v1alpha1/clusters';
  const cl = (verb: string, extra: Record<string, string> = {}) => ({ kind: 'resource', attrs: { verb, group: 'panoptes.io', version: 'v1alpha1', resource: 'clusters', ...extra } });
  t.same(requestAttributes('POST', C, 'fieldManager=kubectl'), cl('create'));
  t.same(requestAttributes('PUT', `${C}/east`, ''), cl('update', { name: 'east' }));
  t.same(requestAttributes('PATCH', `${C}/east`, ''), cl('patch', { name: 'east' }));
  t.same(requestAttributes('DELETE', `${C}/east`, ''), cl('delete', { name: 'east' }));
  t.same(requestAttributes('DELETE', C, ''), cl('deletecollection'));
  t.same(requestAttributes('GET', C, 'watch=1'), cl('watch'));
  t.same(requestAttributes('GET', `${C}/east/status`, ''), cl('get', { name: 'east', subresource: 'status' }));
  t.same(requestAttributes('PUT', `${C}/east/status`, ''), cl('update', { name: 'east', subresource: 'status' }));
  t.same(requestAttributes('GET', '/apis/panoptes.io/v1alpha1/watch/clusters/east', ''), cl('watch', { name: 'east' }));
  const M = '/apis/panoptes.io/v1alpha1/namespaces/shop/multiclusterservices';
  const mcs = (verb: string, extra: Record<string, string> = {}) => ({ kind: 'resource', attrs: { verb, group: 'panoptes.io', version: 'v1alpha1', resource: 'multiclusterservices', namespace: 'shop', ...extra } });
  t.same(requestAttributes('POST', M, ''), mcs('create'));
  t.same(requestAttributes('PATCH', `${M}/web`, ''), mcs('patch', { name: 'web' }));
  t.same(requestAttributes('DELETE', `${M}/web`, ''), mcs('delete', { name: 'web' }));
  t.same(requestAttributes('GET', `${M}/web/status`, ''), mcs('get', { name: 'web', subresource: 'status' }));
  t.same(requestAttributes('GET', '/apis/panoptes.io/v1alpha1/watch/namespaces/shop/multiclusterservices/web', ''), mcs('watch', { name: 'web' }));
  t.same(requestAttributes('GET', `${P}/apis/panoptes.io/v1alpha1/namespaces/shop/multiclusterservices`, ''), mcs('list'), 'the all-clusters view: no per-cluster check');
  t.same(requestAttributes('GET', `${P}/clusters/east/apis/panoptes.io/v1alpha1/multiclusterservices`, 'watch=true'), { kind: 'resource', attrs: { verb: 'watch', group: 'panoptes.io', version: 'v1alpha1', resource: 'multiclusterservices' } }, 'a one-cluster view: every namespace');
  const sm = (verb: string, extra: Record<string, string> = {}) => ({ kind: 'resource', attrs: { verb, group: 'panoptes.io', version: 'v1alpha1', resource: 'synchromembers', ...extra } });
  t.same(requestAttributes('GET', '/apis/panoptes.io/v1alpha1/synchromembers/synchro-0', ''), sm('get', { name: 'synchro-0' }));
  t.same(requestAttributes('GET', `${P}/clusters/east/apis/panoptes.io/v1alpha1/synchromembers`, ''), sm('list'), 'synchro members in a one-cluster view: the fleet\'s, no per-cluster check');
  t.same(requestAttributes('POST', `${P}/clusters/east/apis/panoptes.io/v1alpha1/synchromembers`, ''), sm('create'), '...and a write there is no proxied one');
});
