// The proxy over HTTP with simulated members: requests reach the member as the requesting
// user (kube impersonation headers), authorized first by Panoptes on clusters/proxy; the
// member's RBAC refuses what the user may not do there; a member refusing the impersonation
// is a 403 naming the missing permission; the client's own Impersonate-* and credentials are
// not forwarded; a member that is not Ready is a 503 with Retry-After at once; the
// all-clusters view answers writes and subresources with a 405 naming the one-cluster URL;
// the development mode (no authentication) refuses to proxy unless the operator named a user.
import { request } from 'node:https';
import t from 'tap';
import { makeCertSet } from '../../hack/certs.ts';
import { simCluster, http } from '../../hack/sim/testutil.ts';
import { impersonatorRules, readVerbs } from '../../hack/sim/auth.ts';
import { authenticationConfigMap, startFakeHost } from '../../hack/testing/fakehost.ts';
import { logger, setLogLevel } from '../../lib/log.ts';
import { openTestStore, podEvent, seedCluster } from '../../storage/testing.ts';
import { secureServingFromFlags } from '../auth/config.ts';
import { createApiserver } from '../server.ts';
import { memberTarget } from './member-request.ts';
import type { MemberCredentials } from './members.ts';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');

const P = '/apis/panoptes.io/v1alpha1/resources';
const podsResource = { group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, singularName: 'pod' };
const deployResource = { group: 'apps', version: 'apps/v1'.split('/')[1], resource: 'deployments', kind: 'Deployment', namespaced: true, singularName: 'deployment' };

interface Res {
  status: number;
  body: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
  headers: Record<string, string | string[] | undefined>;
}

function call(base: string, ca: string, client: { cert: string; key: string }, method: string, path: string, headers: Record<string, string | string[]>, body?: unknown): Promise<Res> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const h = { ...(data ? { 'Content-Type': 'application/json' } : {}), ...headers };
    const req = request(base + path, { method, ca, cert: client.cert, key: client.key, headers: h, agent: false, timeout: 10_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, body: text, json, headers: res.headers });
      });
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(data);
  });
}

t.test('proxied requests go to the member as the user (TLS, front proxy)', async (t) => {
  const certs = makeCertSet(['127.0.0.1', 'localhost']);
  const host = await startFakeHost({
    configMap: authenticationConfigMap(certs),
    tokens: { 'carol-token': { name: 'carol', uid: 'u-carol', groups: ['devs'], extra: {} } },
    policy: (s) => (s.user === 'mallory' && s.resourceAttributes?.subresource === 'proxy' ? 'mallory may not use the proxy' : true),
  });
  // east lets Panoptes impersonate; west lets it only read.
  const east = await simCluster(t, { name: 'east', controllers: false });
  east.auth.grant('panoptes-east', { name: 'panoptes', rules: [...impersonatorRules, { verbs: readVerbs }] });
  east.auth.grant('alice-own-token', { name: 'alice', rules: [{ verbs: ['*'], apiGroups: ['', 'apps'], namespaces: ['shop'] }] });
  east.auth.grant('bob-own-token', { name: 'bob', rules: [{ verbs: readVerbs }] });
  east.crud.create(east.registry.lookup('', 'v1', 'namespaces')!, 'v1', undefined, { metadata: { name: 'shop' } }, {});
  const west = await simCluster(t, { name: 'west', controllers: false });
  west.auth.grant('panoptes-west', { name: 'panoptes-reader', rules: [{ verbs: readVerbs }] });

  const { store, close: closeStore } = await openTestStore('sqlite');
  for (const name of ['east', 'west']) await seedCluster(store, name, { phase: 'Ready', ready: true, apiResources: [podsResource, deployResource] });
  await seedCluster(store, 'away', { phase: 'Unreachable', ready: false, message: 'connection refused', apiResources: [podsResource] });
  const servers: Record<string, { url: string; token: string }> = { east: { url: east.url, token: 'panoptes-east' }, west: { url: west.url, token: 'panoptes-west' }, away: { url: 'http://127.0.0.1:1', token: 'x' } };
  const credentials: MemberCredentials = {
    lookup: async (name) => {
      const s = servers[name];
      return s ? { connection: { server: s.url, token: s.token }, fingerprint: `${s.url}|${s.token}` } : undefined;
    },
  };
  const secure = await secureServingFromFlags({ 'bind-address': '127.0.0.1', 'secure-port': '0' }, logger('test'), { authnClient: host.client(), authzClient: host.client() });
  const api = await createApiserver({ store, catalogOptions: { refreshMs: 200 }, secure, log: logger('test'), proxy: { credentials } });
  const base = await api.listen('127.0.0.1', 0);
  t.teardown(async () => {
    await api.close();
    secure.stop();
    await closeStore();
    await host.close();
  });
  const ca = secure.tls.certificate;
  const as = (user: string, method: string, path: string, body?: unknown, extra: Record<string, string | string[]> = {}) =>
    call(base, ca, certs.frontProxyClient, method, path, { 'X-Remote-User': user, 'X-Remote-Group': ['devs'], 'X-Remote-Extra-Example.org%2fteam': 'blue', ...extra }, body);
  const cm = (name: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { k: 'v' } });

  await t.test('a write reaches the member impersonating the user; Panoptes reviewed clusters/proxy only', async (t) => {
    host.requests.length = 0;
    const r = await as('alice', 'POST', `${P}/clusters/east/api/v1/namespaces/shop/configmaps`, cm('one'), {
      // A client's own attempt to choose who it is, and a credential of its own: neither goes on.
      'Impersonate-User': 'system:admin',
      'Impersonate-Group': 'system:masters',
    });
    t.equal(r.status, 201, r.body);
    t.equal(r.json.metadata.name, 'one');
    t.ok(east.crud.get(east.registry.lookup('', 'v1', 'configmaps')!, 'shop', 'one'), 'created in the member');
    t.same(east.auth.impersonations.at(-1), { caller: 'panoptes', user: 'alice', groups: ['devs', 'system:authenticated'], extra: { 'example.org/team': ['blue'] } });
    t.notOk(east.auth.impersonations.some((i) => i.user === 'system:admin' || i.groups.includes('system:masters')), "the client's Impersonate-* headers were not forwarded");
    t.same(
      host.sars().map((s) => s.resourceAttributes),
      [{ verb: 'create', group: 'panoptes.io', version: 'v1alpha1', resource: 'clusters', subresource: 'proxy', name: 'east' }],
      'one review, on clusters/proxy of that cluster with the request verb',
    );
    t.notOk(east.auth.seen.includes('client-token'));
  });

  await t.test("a client's own X-Remote-Uid, passed on by a v1.28 aggregator, is no UID at the member", async (t) => {
    // The host's ConfigMap is a v1.28 kube-apiserver's: it names no requestheader-uid-headers.
    const r = await as('alice', 'POST', `${P}/clusters/east/api/v1/namespaces/shop/configmaps`, cm('uid'), { 'X-Remote-Uid': 'anything' });
    t.equal(r.status, 201, r.body);
    t.same(east.auth.impersonations.at(-1), { caller: 'panoptes', user: 'alice', groups: ['devs', 'system:authenticated'], extra: { 'example.org/team': ['blue'] } }, 'no Impersonate-Uid');
    t.notOk(east.auth.impersonations.some((i) => i.uid === 'anything'), 'the forged UID reached no member');
    east.crud.delete(east.registry.lookup('', 'v1', 'configmaps')!, 'shop', 'uid');
  });

  await t.test('a UID the TokenReview gave is forwarded (Impersonate-Uid)', async (t) => {
    east.auth.grant('carol-own-token', { name: 'carol', rules: [{ verbs: ['*'], apiGroups: [''], namespaces: ['shop'] }] });
    const r = await call(base, ca, certs.frontProxyClient, 'POST', `${P}/clusters/east/api/v1/namespaces/shop/configmaps`, { Authorization: 'Bearer carol-token' }, cm('by-carol'));
    t.equal(r.status, 201, r.body);
    t.same(east.auth.impersonations.at(-1), { caller: 'panoptes', user: 'carol', uid: 'u-carol', groups: ['devs', 'system:authenticated'], extra: {} }, "the member sees the TokenReview's UID");
    east.crud.delete(east.registry.lookup('', 'v1', 'configmaps')!, 'shop', 'by-carol');
  });

  await t.test('every write verb and patch type, and a subresource', async (t) => {
    host.requests.length = 0;
    const base = `${P}/clusters/east/api/v1/namespaces/shop/configmaps`;
    const put = await as('alice', 'PUT', `${base}/one`, { ...cm('one'), data: { k: 'v2' } });
    t.equal(put.status, 200, put.body);
    t.equal(put.json.data.k, 'v2');
    const merge = await as('alice', 'PATCH', `${base}/one`, { data: { m: '1' } }, { 'Content-Type': 'application/merge-patch+json' });
    t.equal(merge.status, 200, merge.body);
    t.same(merge.json.data, { k: 'v2', m: '1' });
    const json = await as('alice', 'PATCH', `${base}/one`, [{ op: 'add', path: '/data/j', value: '2' }], { 'Content-Type': 'application/json-patch+json' });
    t.equal(json.status, 200, json.body);
    t.equal(json.json.data.j, '2');
    const del = await as('alice', 'DELETE', `${base}/one`);
    t.equal(del.status, 200, del.body);
    t.notOk(east.store.list(east.registry.lookup('', 'v1', 'configmaps')!.id, { namespace: 'shop' }).items.some((o) => o.metadata.name === 'one'), 'deleted in the member');
    t.equal((await as('alice', 'POST', base, cm('two'))).status, 201);
    const dc = await as('alice', 'DELETE', base);
    t.equal(dc.status, 200, dc.body);
    t.equal(dc.json.kind, 'ConfigMapList', 'deletecollection answered by the member');
    t.same(new Set(host.sars().map((s) => s.resourceAttributes?.verb)), new Set(['update', 'patch', 'delete', 'deletecollection']), 'the verb of each request as kube derives it (create: cached since the first test)');

    const deployments = east.registry.lookup('apps', 'v1', 'deployments')!;
    const labels = { app: 'web' };
    east.crud.create(deployments, 'v1', 'shop', { metadata: { name: 'web' }, spec: { replicas: 1, selector: { matchLabels: labels }, template: { metadata: { labels }, spec: { containers: [{ name: 'web', image: 'web:1' }] } } } }, {});
    const scale = await as('alice', 'PATCH', `${P}/clusters/east/apis/apps/v1/namespaces/shop/deployments/web/scale`, { spec: { replicas: 3 } }, { 'Content-Type': 'application/merge-patch+json' });
    t.equal(scale.status, 200, scale.body);
    t.equal(scale.json.kind, 'Scale');
    t.equal((east.crud.get(deployments, 'shop', 'web').spec as { replicas: number }).replicas, 3, 'scaled in the member');
    const got = await as('alice', 'GET', `${P}/clusters/east/apis/apps/v1/namespaces/shop/deployments/web/scale`);
    t.equal(got.status, 200, got.body);
    t.equal(got.json.spec.replicas, 3, 'a subresource read of a synced resource is the member\'s');
  });

  await t.test('a read of a resource Panoptes does not sync goes to the member', async (t) => {
    east.crud.create(east.registry.lookup('', 'v1', 'configmaps')!, 'v1', 'shop', cm('three'), {});
    const r = await as('alice', 'GET', `${P}/clusters/east/api/v1/namespaces/shop/configmaps`);
    t.equal(r.status, 200, r.body);
    t.same(r.json.items.map((i: { metadata: { name: string } }) => i.metadata.name), ['three']);
    t.equal(east.auth.impersonations.at(-1)?.user, 'alice');
  });

  await t.test("the member's RBAC decides: a user it does not allow is refused by the member", async (t) => {
    const r = await as('bob', 'POST', `${P}/clusters/east/api/v1/namespaces/shop/configmaps`, cm('bobs'));
    t.equal(r.status, 403, r.body);
    t.match(r.json.message, 'configmaps is forbidden: User "bob" cannot create resource "configmaps" in API group "" in the namespace "shop"');
    t.ok(east.auth.denied.some((d) => d.user === 'bob'), 'refused in the member, as bob');
  });

  await t.test("a stale resourceVersion is judged by the member, after its RBAC: a user it refuses learns nothing of the object", async (t) => {
    const pods = east.registry.lookup('', 'v1', 'pods')!;
    east.crud.create(pods, 'v1', 'shop', { metadata: { name: 'p' }, spec: { containers: [{ name: 'c', image: 'i' }] } }, {});
    // Storage holds two versions of it (member rvs 100 and 105); the first is stale.
    const first = (await store.applyBatch('east', [podEvent('ADDED', 'shop', 'p', '100')])).changes[0].rv;
    await store.applyBatch('east', [podEvent('MODIFIED', 'shop', 'p', '105')]);
    const put = (user: string, rv: string) => as(user, 'PUT', `${P}/clusters/east/api/v1/namespaces/shop/pods/p`, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'shop', resourceVersion: rv }, spec: { containers: [{ name: 'c', image: 'i2' }] } });
    for (const rv of [String(first), '99999']) {
      const bob = await put('bob', rv);
      t.equal(bob.status, 403, `bob, rv ${rv}: ${bob.body}`);
      t.match(bob.json.message, 'pods "p" is forbidden: User "bob" cannot update resource "pods"', "the member's refusal, not a Conflict that tells the object is there");
      const alice = await put('alice', rv);
      t.equal(alice.status, 409, `alice, rv ${rv}: ${alice.body}`);
      t.match(alice.json.message, 'Operation cannot be fulfilled on pods "p"', "the member's own Conflict");
    }
    t.equal(east.auth.denied.filter((d) => d.user === 'bob' && d.verb === 'update').length, 2, 'both reached the member as bob');
  });

  await t.test('a user Panoptes does not allow on clusters/proxy never reaches the member', async (t) => {
    const before = east.auth.impersonations.length;
    const r = await as('mallory', 'DELETE', `${P}/clusters/east/api/v1/namespaces/shop/configmaps/three`);
    t.equal(r.status, 403, r.body);
    t.match(r.json.message, 'clusters.panoptes.io "east" is forbidden: User "mallory" cannot delete resource "clusters/proxy" in API group "panoptes.io"');
    t.equal(east.auth.impersonations.length, before, 'nothing reached the member');
    t.ok(east.crud.get(east.registry.lookup('', 'v1', 'configmaps')!, 'shop', 'three'), 'still there');
  });

  await t.test('a member that refuses the impersonation: 403 naming the permission', async (t) => {
    const r = await as('alice', 'POST', `${P}/clusters/west/api/v1/namespaces/default/configmaps`, cm('x'));
    t.equal(r.status, 403, r.body);
    t.match(r.json.message, /cluster "west" refuses to let Panoptes act as user "alice": .*impersonate on users, groups, uids and userextras/);
    t.match(r.json.message, 'User "panoptes-reader" cannot impersonate resource "users"');
  });

  await t.test('a member that is not Ready: 503 with Retry-After, at once', async (t) => {
    // At once: answered from the Cluster's phase (the message says so), without a try to reach it.
    const r = await as('alice', 'POST', `${P}/clusters/away/api/v1/namespaces/default/configmaps`, cm('x'));
    t.equal(r.status, 503, r.body);
    t.equal(r.headers['retry-after'], '5');
    t.match(r.json.message, /cluster "away" cannot be reached through the proxy now: it is not Ready \(phase Unreachable: connection refused\)/);
  });

  await t.test('unknown clusters are 404; the all-clusters view answers writes and subresources with 405 naming the one-cluster URL', async (t) => {
    const u = await as('alice', 'POST', `${P}/clusters/nowhere/api/v1/namespaces/default/configmaps`, cm('x'));
    t.equal(u.status, 404, u.body);
    const w = await as('alice', 'POST', `${P}/api/v1/namespaces/default/configmaps`, cm('x'));
    t.equal(w.status, 405, w.body);
    t.match(w.json.message, `${P}/clusters/<cluster>/api/v1/namespaces/default/configmaps`);
    const s = await as('alice', 'GET', `${P}/apis/apps/v1/namespaces/shop/deployments/web/scale`);
    t.equal(s.status, 405, s.body);
    t.match(s.json.message, `of the subresource scale is served for one cluster at a time, through the proxy to that member: ${P}/clusters/<cluster>/apis/apps/v1/namespaces/shop/deployments/web/scale`);
  });

  await t.test('memberTarget: what a connection upgrade opens its member request with', async (t) => {
    const alice = { name: 'alice', uid: 'u-a', groups: ['devs'], extra: {} };
    const target = await memberTarget(api.deps, 'east', alice, 'create');
    t.equal(target.path(['api', 'v1', 'namespaces', 'shop', 'pods', 'web', 'exec'], 'command=sh'), '/api/v1/namespaces/shop/pods/web/exec?command=sh');
    t.throws(() => target.path(['api', 'v1', 'namespaces', '..\\..', 'pods'], ''), /invalid path segment/, 'the segments are checked again');
    const h = await target.headers({ connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-protocol': 'v5.channel.k8s.io', authorization: 'Bearer client', 'impersonate-user': 'root' });
    t.same(h, { 'sec-websocket-protocol': 'v5.channel.k8s.io', Authorization: 'Bearer panoptes-east', 'Impersonate-User': 'alice', 'Impersonate-Uid': 'u-a', 'Impersonate-Group': ['devs'] }, 'the upgrade headers are the upgrade path\'s to set again');
    await t.rejects(memberTarget(api.deps, 'nowhere', alice, 'create'), { reason: 'NotFound', message: /clusters.panoptes.io "nowhere" not found/ });
    await t.rejects(memberTarget(api.deps, 'east', { name: 'mallory', groups: [], extra: {} }, 'create'), { reason: 'Forbidden', message: /clusters\/proxy/ });
    await t.rejects(memberTarget(api.deps, 'away', alice, 'create'), { reason: 'ServiceUnavailable', message: /not Ready/, details: { retryAfterSeconds: 5 } });
  });

  await t.test('reads of synced resources still come from storage', async (t) => {
    const before = east.auth.impersonations.length;
    const r = await as('alice', 'GET', `${P}/clusters/east/api/v1/namespaces/shop/pods`);
    t.equal(r.status, 200, r.body);
    t.equal(r.json.kind, 'PodList');
    t.equal(east.auth.impersonations.length, before, 'not proxied');
  });
});

t.test('development mode (no authentication): refused unless the operator names the user', async (t) => {
  const east = await simCluster(t, { name: 'east', controllers: false });
  const { store, close } = await openTestStore('sqlite');
  t.teardown(close);
  await seedCluster(store, 'east', { phase: 'Ready', ready: true, apiResources: [podsResource] });
  const credentials: MemberCredentials = { lookup: async () => ({ connection: { server: east.url }, fingerprint: east.url }) };
  const path = `${P}/clusters/east/api/v1/namespaces/default/configmaps`;

  const refusing = await createApiserver({ store, log: logger('test'), proxy: { credentials } });
  const r = await http('POST', (await refusing.listen('127.0.0.1', 0)) + path, { metadata: { name: 'a' } }, { 'Impersonate-User': 'system:admin' });
  await refusing.close();
  t.equal(r.status, 403, r.text);
  t.match(r.json.message, /authenticates nobody.*--insecure-proxy-user/);
  t.equal(east.auth.impersonations.length, 0, 'nothing reached the member');
  t.notOk(east.crud.store.list(east.registry.lookup('', 'v1', 'configmaps')!.id, { namespace: 'default' }).items.some((o) => o.metadata.name === 'a'));

  const named = await createApiserver({ store, log: logger('test'), proxy: { credentials, unauthenticatedUser: { name: 'dev', groups: ['developers'], extra: {} } } });
  t.teardown(() => named.close());
  const ok = await http('POST', (await named.listen('127.0.0.1', 0)) + path, { metadata: { name: 'a' } }, { 'Impersonate-User': 'system:admin' });
  t.equal(ok.status, 201, ok.text);
  t.same(east.auth.impersonations, [{ caller: '', user: 'dev', groups: ['developers'], extra: {} }], 'as the named user, not as the client asked');
});
