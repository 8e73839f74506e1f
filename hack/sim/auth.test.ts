// Authorization in a simulated cluster: a token that may read but not write gets kube's 403
// for every write, with kube-apiserver's message; rules narrow verbs, groups, resources
// (subresources too) and namespaces; nothing changes for a cluster that grants nothing.
import t from 'tap';
import { impersonatorRules, readOnlyUser } from './auth.ts';
import { get, http, simCluster } from './testutil.ts';

const merge = { 'Content-Type': 'application/merge-patch+json' };

t.test('a read-only token: reads work, every write is 403 with kube\'s message', async (t) => {
  const c = await simCluster(t, { workload: true });
  c.auth.grant('ro', readOnlyUser('panoptes'));
  const as = (token: string) => ({ Authorization: `Bearer ${token}` });
  const ro = as('ro');

  t.equal((await get(`${c.url}/api/v1/namespaces/shop/services`, ro)).status, 200);
  t.equal((await get(`${c.url}/apis/discovery.k8s.io/v1/namespaces/shop/endpointslices?watch=true&timeoutSeconds=1`, ro)).status, 200);
  t.equal((await get(`${c.url}/api/v1/namespaces/shop/services/frontend`, ro)).status, 200);
  for (const path of ['/api', '/apis', '/apis/discovery.k8s.io/v1', '/openapi/v2', '/version', '/readyz']) {
    t.equal((await get(`${c.url}${path}`, ro)).status, 200, `${path} stays open`);
  }

  const created = await http('POST', `${c.url}/api/v1/namespaces/shop/services`, { metadata: { name: 'web' }, spec: { ports: [{ port: 80 }] } }, ro);
  t.equal(created.status, 403);
  t.same(created.json, {
    kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', reason: 'Forbidden', code: 403,
    message: 'services is forbidden: User "panoptes" cannot create resource "services" in API group "" in the namespace "shop"',
    details: { group: '', kind: 'services' },
  });
  const slice = c.store.list('discovery.k8s.io/endpointslices', { namespace: 'shop' }).items[0];
  const patched = await http('PATCH', `${c.url}/apis/discovery.k8s.io/v1/namespaces/shop/endpointslices/${slice.metadata.name}`, { metadata: { labels: { a: 'b' } } }, { ...merge, ...ro });
  t.equal(patched.json.message, `endpointslices.discovery.k8s.io "${slice.metadata.name}" is forbidden: User "panoptes" cannot patch resource "endpointslices" in API group "discovery.k8s.io" in the namespace "shop"`);
  t.same(patched.json.details, { name: slice.metadata.name, group: 'discovery.k8s.io', kind: 'endpointslices' });
  const put = await http('PUT', `${c.url}/api/v1/namespaces/shop/services/frontend`, c.store.get('/services', 'shop', 'frontend'), ro);
  t.equal(put.json.message, 'services "frontend" is forbidden: User "panoptes" cannot update resource "services" in API group "" in the namespace "shop"');
  const status = await http('PATCH', `${c.url}/api/v1/namespaces/shop/services/frontend/status`, { status: {} }, { ...merge, ...ro });
  t.equal(status.json.message, 'services "frontend" is forbidden: User "panoptes" cannot patch resource "services/status" in API group "" in the namespace "shop"');
  const del = await http('DELETE', `${c.url}/api/v1/namespaces/shop/services/frontend`, undefined, ro);
  t.equal(del.json.message, 'services "frontend" is forbidden: User "panoptes" cannot delete resource "services" in API group "" in the namespace "shop"');
  const delAll = await http('DELETE', `${c.url}/api/v1/namespaces/shop/configmaps`, undefined, ro);
  t.equal(delAll.json.message, 'configmaps is forbidden: User "panoptes" cannot deletecollection resource "configmaps" in API group "" in the namespace "shop"');
  const ns = await http('POST', `${c.url}/api/v1/namespaces`, { metadata: { name: 'x' } }, ro);
  t.equal(ns.json.message, 'namespaces is forbidden: User "panoptes" cannot create resource "namespaces" in API group "" at the cluster scope');
  t.ok(c.store.get('/services', 'shop', 'frontend'), 'nothing was written');
  t.same(c.auth.denied.map((d) => `${d.user} ${d.verb} ${d.resource}${d.subresource ? `/${d.subresource}` : ''}`), [
    'panoptes create services', 'panoptes patch endpointslices', 'panoptes update services', 'panoptes patch services/status',
    'panoptes delete services', 'panoptes deletecollection configmaps', 'panoptes create namespaces',
  ]);

  // Other clients are as before: no authentication is required, anyone may write.
  t.equal((await http('POST', `${c.url}/api/v1/namespaces/shop/configmaps`, { metadata: { name: 'anyone' } })).status, 201);
  t.equal((await http('POST', `${c.url}/api/v1/namespaces/shop/configmaps`, { metadata: { name: 'other' } }, as('other'))).status, 201);
});

t.test('rules: verbs per resource, group and namespace; tokens still required when set', async (t) => {
  const c = await simCluster(t, { workload: true });
  c.auth.tokens = ['admin'];
  c.auth.grant('dispatcher', {
    name: 'system:serviceaccount:panoptes-system:panoptes-reader',
    rules: [
      { verbs: ['get', 'list', 'watch'] },
      { verbs: ['create', 'update', 'patch', 'delete'], apiGroups: [''], resources: ['services'], namespaces: ['shop'] },
      { verbs: ['*'], apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'] },
    ],
  });
  const d = { Authorization: 'Bearer dispatcher' };
  t.equal((await http('POST', `${c.url}/api/v1/namespaces/shop/services`, { metadata: { name: 'web' }, spec: { ports: [{ port: 80 }] } }, d)).status, 201);
  const elsewhere = await http('POST', `${c.url}/api/v1/namespaces/default/services`, { metadata: { name: 'web' }, spec: { ports: [{ port: 80 }] } }, d);
  t.equal(elsewhere.json.message, 'services is forbidden: User "system:serviceaccount:panoptes-system:panoptes-reader" cannot create resource "services" in API group "" in the namespace "default"');
  const sub = await http('PATCH', `${c.url}/api/v1/namespaces/shop/services/web/status`, { status: {} }, { ...merge, ...d });
  t.equal(sub.status, 403, 'a rule for services does not cover services/status');
  const slice = { metadata: { name: 'x', labels: { 'kubernetes.io/service-name': 'web' } }, addressType: 'IPv4', endpoints: [] };
  t.equal((await http('POST', `${c.url}/apis/discovery.k8s.io/v1/namespaces/default/endpointslices`, slice, d)).status, 201);
  t.equal((await http('POST', `${c.url}/api/v1/namespaces/shop/configmaps`, { metadata: { name: 'c' } }, d)).status, 403);
  t.equal((await get(`${c.url}/api/v1/pods`)).status, 401, 'without a token: 401, as before');
  t.equal((await get(`${c.url}/api/v1/pods`, { Authorization: 'Bearer admin' })).status, 200);
});

t.test('health: a bad token is 401 on every health path; nonResourceURLs narrow the paths a user may get', async (t) => {
  const c = await simCluster(t);
  c.auth.tokens = ['good'];
  for (const path of ['/healthz', '/readyz', '/livez', '/readyz?verbose']) {
    const r = await get(`${c.url}${path}`, { Authorization: 'Bearer wrong' });
    t.equal(r.status, 401, `${path}: 401 for a bad token`);
    t.same(r.json, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'Unauthorized', reason: 'Unauthorized', code: 401 }, `${path}: kube's Status`);
    t.equal((await get(`${c.url}${path}`, { Authorization: 'Bearer good' })).status, 200);
  }
  c.auth.grant('narrow', { name: 'narrow', nonResourceURLs: ['/api', '/api/*', '/apis', '/apis/*', '/version'] });
  const narrow = { Authorization: 'Bearer narrow' };
  for (const path of ['/healthz', '/readyz', '/livez']) {
    const r = await get(`${c.url}${path}`, narrow);
    t.equal(r.status, 403, `${path}: not among its nonResourceURLs`);
    t.same(r.json, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: `forbidden: User "narrow" cannot get path "${path}"`, reason: 'Forbidden', details: {}, code: 403 }, `${path}: kube's Status`);
  }
  for (const path of ['/api', '/api/v1', '/apis/apps/v1', '/version', '/api/v1/namespaces']) t.equal((await get(`${c.url}${path}`, narrow)).status, 200, `${path}: allowed (a resource path is not a non-resource URL)`);
});

t.test('grants over /_sim/auth', async (t) => {
  const c = await simCluster(t);
  const bad = await http('POST', `${c.url}/_sim/auth/grant`, { token: 'x' });
  t.equal(bad.status, 400);
  t.same((await http('POST', `${c.url}/_sim/auth/grant`, { token: 'ro', user: { name: 'viewer', rules: [{ verbs: ['get', 'list', 'watch'] }] } })).json, { granted: 'viewer' });
  const denied = await http('POST', `${c.url}/api/v1/namespaces/default/configmaps`, { metadata: { name: 'c' } }, { Authorization: 'Bearer ro' });
  t.equal(denied.json.message, 'configmaps is forbidden: User "viewer" cannot create resource "configmaps" in API group "" in the namespace "default"');
  t.same((await http('POST', `${c.url}/_sim/auth/revoke?token=ro`)).json, { revoked: true });
  t.equal((await http('POST', `${c.url}/api/v1/namespaces/default/configmaps`, { metadata: { name: 'c' } }, { Authorization: 'Bearer ro' })).status, 201);
});

t.test('impersonation as kube: the caller needs impersonate on users, groups, uids and userextras; then the impersonated user\'s rules apply', async (t) => {
  const c = await simCluster(t, { workload: true });
  c.auth.grant('imp', { name: 'panoptes', rules: impersonatorRules });
  c.auth.grant('ro', readOnlyUser('reader'));
  c.auth.grant('alice-token', { name: 'alice', rules: [{ verbs: ['*'], namespaces: ['shop'] }] });
  const svc = `${c.url}/api/v1/namespaces/shop/services`;
  const asAlice = { Authorization: 'Bearer imp', 'Impersonate-User': 'alice', 'Impersonate-Uid': 'u-1', 'Impersonate-Extra-Example.org%2Fteam': 'blue' };

  const ok = await http('POST', svc, { metadata: { name: 'by-alice' }, spec: { ports: [{ port: 80 }] } }, asAlice);
  t.equal(ok.status, 201, ok.text);
  t.same(c.auth.impersonations.at(-1), { caller: 'panoptes', user: 'alice', uid: 'u-1', groups: [], extra: { 'example.org/team': ['blue'] } });
  const other = await get(`${c.url}/api/v1/namespaces/kube-system/configmaps`, asAlice);
  t.equal(other.status, 403, "alice's rules, not the caller's");
  t.equal(other.json.message, 'configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "kube-system"');
  const nobody = await get(svc, { Authorization: 'Bearer imp', 'Impersonate-User': 'nobody' });
  t.equal(nobody.status, 403, 'a user granted nothing may do nothing');
  const masters = await get(`${c.url}/api/v1/namespaces/kube-system/configmaps`, { Authorization: 'Bearer imp', 'Impersonate-User': 'root', 'Impersonate-Group': 'system:masters' });
  t.equal(masters.status, 200, 'system:masters may do anything');

  const refused = await get(svc, { Authorization: 'Bearer ro', 'Impersonate-User': 'alice' });
  t.equal(refused.status, 403);
  t.equal(refused.json.message, 'users "alice" is forbidden: User "reader" cannot impersonate resource "users" in API group "" at the cluster scope');
  const noGroup = await get(svc, { Authorization: 'Bearer alice-token', 'Impersonate-User': 'alice', 'Impersonate-Group': 'system:masters' });
  t.equal(noGroup.status, 403);
  t.match(noGroup.json.message, 'User "alice" cannot impersonate resource "users"');
  t.notOk(c.auth.impersonations.some((i) => i.caller === 'reader' || i.caller === 'alice'), 'refused impersonations are not recorded as made');

  // A service account's name is checked as the ServiceAccount, in its namespace.
  c.auth.grant('users-only', { name: 'narrow', rules: [{ verbs: ['impersonate'], apiGroups: [''], resources: ['users'] }] });
  const sa = await get(svc, { Authorization: 'Bearer users-only', 'Impersonate-User': 'system:serviceaccount:shop:deployer' });
  t.equal(sa.status, 403);
  t.equal(sa.json.message, 'serviceaccounts "deployer" is forbidden: User "narrow" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "shop"');
  const asSa = await get(svc, { Authorization: 'Bearer imp', 'Impersonate-User': 'system:serviceaccount:shop:deployer' });
  t.equal(asSa.json.message, 'services is forbidden: User "system:serviceaccount:shop:deployer" cannot list resource "services" in API group "" in the namespace "shop"', 'impersonated; the service account itself is granted nothing');
});
