// external.metrics.k8s.io in aggregated mode: requests arrive through the front proxy and
// are authorized by SubjectAccessReview (a fake host cluster records them). The HPA
// controller's service account, allowed by its bootstrap role (get, list, watch on
// external.metrics.k8s.io/* everywhere), reads metrics; a user without a rule gets 403; a user
// allowed in one namespace cannot widen the scope to another or to all namespaces, neither by
// its selector nor through a declared rule's namespaces; an unknown cluster is refused
// without naming the clusters there are.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { makeCertSet } from '../../hack/certs.ts';
import { logger, setLogLevel } from '../../lib/log.ts';
import { openTestStore, podEvent, seedCluster } from '../../storage/testing.ts';
import { secureServingFromFlags } from '../auth/config.ts';
import { authenticationConfigMap, frontProxyGet, startFakeHost } from '../../hack/testing/fakehost.ts';
import { createApiserver } from '../server.ts';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');

const hpa = 'system:serviceaccount:kube-system:horizontal-pod-autoscaler';


t.test('external metrics are authorized like every other request', async (t) => {
  const certs = makeCertSet(['127.0.0.1', 'localhost']);
  const host = await startFakeHost({
    configMap: authenticationConfigMap(certs),
    tokens: {},
    policy: (s) => {
      const a = s.resourceAttributes;
      if (!a || a.group !== 'external.metrics.k8s.io' || !['get', 'list', 'watch'].includes(a.verb)) return 'no rule';
      if (s.user === hpa) return true; // system:controller:horizontal-pod-autoscaler
      if (s.user === 'dev' && a.namespace === 'team-a') return true; // a RoleBinding in team-a
      return 'no RBAC rule';
    },
  });
  const { store, close } = await openTestStore('sqlite');
  const pods = [{ group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, singularName: 'pod' }];
  await seedCluster(store, 'a', { phase: 'Ready', ready: true, apiResources: pods });
  await store.applyBatch('a', [podEvent('ADDED', 'team-a', 'p1', '10', { phase: 'Pending' }), podEvent('ADDED', 'team-a', 'p2', '11'), podEvent('ADDED', 'team-b', 'p3', '12', { phase: 'Pending' })]);
  await seedCluster(store, 'secret-project-x', { phase: 'Ready', ready: true, apiResources: pods });
  const dir = mkdtempSync(join(tmpdir(), 'panoptes-em-auth-'));
  const rules = join(dir, 'metrics.yaml');
  writeFileSync(
    rules,
    [
      'metrics:',
      '  - { name: team-b-pending, resource: pods, namespaces: [team-b], fieldSelector: status.phase=Pending }',
      '  - { name: everywhere-pending, resource: pods, namespaces: all, fieldSelector: status.phase=Pending }',
      '  - { name: here-pending, resource: pods, fieldSelector: status.phase=Pending }',
      '  - { name: team-a-pending, resource: pods, namespaces: [team-a], fieldSelector: status.phase=Pending }',
      '',
    ].join('\n'),
  );
  writeFileSync(join(dir, 'tls.crt'), certs.serving.cert);
  writeFileSync(join(dir, 'tls.key'), certs.serving.key);
  const secure = await secureServingFromFlags({ 'tls-cert-file': join(dir, 'tls.crt'), 'tls-private-key-file': join(dir, 'tls.key') }, logger('test'), { authnClient: host.client(), authzClient: host.client() });
  const api = await createApiserver({ store, secure, log: logger('test'), externalMetrics: { file: rules } });
  const base = await api.listen('127.0.0.1', 0);
  t.teardown(async () => {
    await api.close();
    secure.stop();
    await close();
    await host.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const ca = certs.servingCA.cert;
  const as = (user: string, path: string) => frontProxyGet(base, path, ca, certs.frontProxyClient, user, { Accept: 'application/vnd.kubernetes.protobuf, */*' });
  const EM = '/apis/external.metrics.k8s.io/v1beta1';
  const pending = `?labelSelector=${encodeURIComponent('field.panoptes.io/status.phase=Pending')}`;

  t.test('the HPA controller: one review (the metric in its namespace), then the value', async (t) => {
    host.requests.length = 0;
    const r = await as(hpa, `${EM}/namespaces/team-a/pods${pending}`);
    t.equal(r.status, 200, r.body);
    t.equal(JSON.parse(r.body).items[0].value, '1');
    t.same(
      host.sars().map((s) => s.resourceAttributes),
      [{ verb: 'list', group: 'external.metrics.k8s.io', version: 'v1beta1', resource: 'pods', namespace: 'team-a' }],
      'no per-cluster review: the HPA controller has no panoptes.io rights',
    );
    host.requests.length = 0;
    const all = await as(hpa, `${EM}/namespaces/team-a/pods${pending},search.panoptes.io%2Fall-namespaces`);
    t.equal(all.status, 200, all.body);
    t.equal(JSON.parse(all.body).items[0].value, '2');
    t.same(
      host.sars().map((s) => s.resourceAttributes),
      [{ verb: 'list', group: 'external.metrics.k8s.io', version: 'v1beta1', resource: 'pods' }],
      'all namespaces: reviewed again at the cluster scope (the namespace review is cached)',
    );
  });

  t.test('a user without a rule: 403 Status naming user, verb, metric and namespace', async (t) => {
    const r = await as('eve', `${EM}/namespaces/team-a/pods`);
    t.equal(r.status, 403);
    const s = JSON.parse(r.body);
    t.match(s, { kind: 'Status', reason: 'Forbidden', code: 403, details: { group: 'external.metrics.k8s.io', kind: 'pods' } });
    t.equal(s.message, 'pods.external.metrics.k8s.io is forbidden: User "eve" cannot list resource "pods" in API group "external.metrics.k8s.io" in the namespace "team-a": no RBAC rule');
  });

  t.test('a user allowed in one namespace cannot widen the scope', async (t) => {
    t.equal((await as('dev', `${EM}/namespaces/team-a/pods`)).status, 200);
    t.equal((await as('dev', `${EM}/namespaces/team-a/pods?labelSelector=search.panoptes.io%2Fnamespaces%3Dteam-a`)).status, 200, 'its own namespace named explicitly');
    const other = await as('dev', `${EM}/namespaces/team-a/pods?labelSelector=search.panoptes.io%2Fnamespaces%3Dteam-b`);
    t.equal(other.status, 403);
    t.match(JSON.parse(other.body).message, /cannot list resource "pods" in API group "external.metrics.k8s.io" in the namespace "team-b"/);
    const all = await as('dev', `${EM}/namespaces/team-a/pods?labelSelector=search.panoptes.io%2Fall-namespaces`);
    t.equal(all.status, 403);
    t.match(JSON.parse(all.body).message, /at the cluster scope/);
    t.equal((await as('dev', `${EM}/namespaces/team-b/pods`)).status, 403, 'another namespace in the path');
  });

  t.test("a declared rule's namespaces are authorized as a selector's would be", async (t) => {
    const value = (r: { body: string }) => JSON.parse(r.body).items[0].value as string;
    const here = await as('dev', `${EM}/namespaces/team-a/here-pending`);
    t.equal(here.status, 200, 'a rule reading the request namespace');
    t.equal(value(here), '1');
    const own = await as('dev', `${EM}/namespaces/team-a/team-a-pending`);
    t.equal(own.status, 200, 'a rule naming the request namespace');
    t.equal(value(own), '1');
    host.requests.length = 0;
    const other = await as('dev', `${EM}/namespaces/team-a/team-b-pending`);
    t.equal(other.status, 403, `a rule reading another namespace: ${other.body}`);
    t.equal(JSON.parse(other.body).message, 'team-b-pending.external.metrics.k8s.io is forbidden: User "dev" cannot list resource "team-b-pending" in API group "external.metrics.k8s.io" in the namespace "team-b": no RBAC rule');
    t.same(
      host.sars().map((s) => s.resourceAttributes?.namespace),
      ['team-a', 'team-b'],
      'the request namespace, then the namespace the rule reads',
    );
    const all = await as('dev', `${EM}/namespaces/team-a/everywhere-pending`);
    t.equal(all.status, 403, 'a rule reading all namespaces');
    t.match(JSON.parse(all.body).message, /cannot list resource "everywhere-pending" in API group "external.metrics.k8s.io" at the cluster scope/);
    const narrowed = await as('dev', `${EM}/namespaces/team-a/everywhere-pending?labelSelector=search.panoptes.io%2Fnamespaces%3Dteam-a`);
    t.equal(narrowed.status, 200, 'its own namespace, named by the selector, replaces the rule\'s');
    t.equal(value(narrowed), '1');
    for (const m of ['team-b-pending', 'everywhere-pending']) {
      const r = await as(hpa, `${EM}/namespaces/team-a/${m}`);
      t.equal(r.status, 200, `the HPA controller reads ${m}`);
      t.equal(value(r), m === 'team-b-pending' ? '1' : '2');
    }
  });

  t.test('an unknown cluster: 400 naming only what was asked', async (t) => {
    const r = await as('dev', `${EM}/namespaces/team-a/pods?labelSelector=${encodeURIComponent('search.panoptes.io/clusters in (nope,a)')}`);
    t.equal(r.status, 400);
    t.match(JSON.parse(r.body), { kind: 'Status', reason: 'BadRequest', code: 400, message: 'unknown cluster "nope" in search.panoptes.io/clusters' });
    t.notOk(r.body.includes('secret-project-x'), 'the clusters there are are not listed');
    const known = await as('dev', `${EM}/namespaces/team-a/pods?labelSelector=${encodeURIComponent('search.panoptes.io/clusters=a')}`);
    t.equal(known.status, 200);
  });
});
