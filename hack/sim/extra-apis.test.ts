// What a simulated cluster serves besides its stored resources: metrics.k8s.io (kubectl top),
// the self access reviews (kubectl auth can-i) from the caller's rules or the impersonated
// user's, both in discovery; and server-side apply (kubectl apply --server-side).
import t from 'tap';
import { impersonatorRules } from './auth.ts';
import { get, http, kubectl, simCluster, tempDir } from './testutil.ts';

t.test('metrics.k8s.io: pod and node metrics of the workload, steady, in discovery', async (t) => {
  const c = await simCluster(t, { workload: true });
  const pods = await get(`${c.url}/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods`);
  t.equal(pods.status, 200, pods.text);
  t.equal(pods.json.kind, 'PodMetricsList');
  const running = c.store.list('/pods', { namespace: 'shop' }).items.filter((p) => (p.status as { phase?: string }).phase === 'Running');
  t.equal(pods.json.items.length, running.length, 'one per running pod');
  t.match(pods.json.items[0], { metadata: { namespace: 'shop' }, window: '30s', containers: [{ usage: { cpu: /^\d+m$/, memory: /^\d+Mi$/ } }] });
  t.same((await get(`${c.url}/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods`)).json.items.map((i: { containers: unknown }) => i.containers), pods.json.items.map((i: { containers: unknown }) => i.containers), 'steady');
  const one = await get(`${c.url}/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods/${running[0].metadata.name}`);
  t.equal(one.json.kind, 'PodMetrics');
  t.equal((await get(`${c.url}/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods/nope`)).status, 404);
  const nodes = await get(`${c.url}/apis/metrics.k8s.io/v1beta1/nodes`);
  t.equal(nodes.json.items.length, c.store.list('/nodes').items.length);
  t.ok((await get(`${c.url}/apis`)).json.groups.some((g: { name: string }) => g.name === 'metrics.k8s.io'), 'in discovery');
  t.same((await get(`${c.url}/apis/metrics.k8s.io/v1beta1`)).json.resources.map((r: { name: string; verbs: string[] }) => [r.name, r.verbs]), [['nodes', ['get', 'list']], ['pods', ['get', 'list']]]);
});

t.test('self access reviews answer from the rules of the user, impersonated or not', async (t) => {
  const c = await simCluster(t);
  c.auth.grant('imp', { name: 'panoptes', rules: impersonatorRules });
  c.auth.grant('alice-token', { name: 'alice', rules: [{ verbs: ['get', 'list'], apiGroups: [''], resources: ['pods'], namespaces: ['shop'] }] });
  const ssar = (attrs: Record<string, string>, headers: Record<string, string>) => http('POST', `${c.url}/apis/authorization.k8s.io/v1/selfsubjectaccessreviews`, { apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: { resourceAttributes: attrs } }, headers);
  const asAlice = { Authorization: 'Bearer imp', 'Impersonate-User': 'alice' };
  const yes = await ssar({ verb: 'list', resource: 'pods', namespace: 'shop' }, asAlice);
  t.equal(yes.status, 201, yes.text);
  t.equal(yes.json.status.allowed, true);
  t.equal((await ssar({ verb: 'delete', resource: 'pods', namespace: 'shop' }, asAlice)).json.status.allowed, false);
  t.equal((await ssar({ verb: 'list', resource: 'pods', namespace: 'kube-system' }, asAlice)).json.status.allowed, false);
  const rules = await http('POST', `${c.url}/apis/authorization.k8s.io/v1/selfsubjectrulesreviews`, { spec: { namespace: 'shop' } }, asAlice);
  t.same(rules.json.status.resourceRules, [{ verbs: ['get', 'list'], apiGroups: [''], resources: ['pods'] }]);
});

t.test('server-side apply: creates, then merges; a field manager is required', async (t) => {
  const c = await simCluster(t, { workload: true });
  const url = `${c.url}/api/v1/namespaces/shop/configmaps/ssa`;
  const apply = (data: Record<string, string>, query = '?fieldManager=kubectl') => http('PATCH', `${url}${query}`, `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n${Object.entries(data).map(([k, v]) => `  ${k}: "${v}"`).join('\n')}\n`, { 'Content-Type': 'application/apply-patch+yaml' });
  const made = await apply({ a: '1' });
  t.equal(made.status, 200, made.text);
  t.same(made.json.data, { a: '1' });
  const merged = await apply({ b: '2' });
  t.same(merged.json.data, { a: '1', b: '2' });
  const noManager = await apply({ a: '1' }, '');
  t.equal(noManager.status, 422);
  t.match(noManager.json.message, /fieldManager: Required value/);
});

t.test("kubectl's typed clients: protobuf bodies of ConfigMaps and access reviews are decoded", async (t) => {
  const c = await simCluster(t, { workload: true });
  const cache = tempDir(t);
  const made = await kubectl(c, cache, ['create', 'configmap', 'typed', '-n', 'shop', '--from-literal=a=b', '--from-literal=c=d']);
  t.equal(made.code, 0, made.stderr);
  t.same(c.store.get('/configmaps', 'shop', 'typed')?.data, { a: 'b', c: 'd' });
  const can = await kubectl(c, cache, ['auth', 'can-i', 'create', 'pods', '-n', 'shop']);
  t.equal(can.stdout.trim(), 'yes', can.stderr);
  const other = await http('POST', `${c.url}/api/v1/namespaces/shop/secrets`, Buffer.from('k8s\u0000\n\u000c\n\u0002v1\u0012\u0006Secret').toString('latin1'), { 'Content-Type': 'application/vnd.kubernetes.protobuf' });
  t.equal(other.status, 415, 'other kinds: 415 naming what is decoded');
  t.match(other.json.message, /ConfigMap, SelfSubjectAccessReview, SelfSubjectRulesReview only, not Secret/);
});
