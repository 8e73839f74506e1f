// synchromembers.panoptes.io in aggregated mode: authorized as any request, by a
// SubjectAccessReview of get or list on synchromembers (in a one-cluster view too, with no
// per-cluster check: the members belong to the fleet).
import t from 'tap';
import { startSecureApiserver } from '../../../hack/testing/secure-apiserver.ts';
import { setLogLevel } from '../../../lib/log.ts';
import { openTestStore, seedCluster } from '../../../storage/testing.ts';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');

t.test('reading the synchro members needs get or list of synchromembers', async (t) => {
  const { store, close } = await openTestStore('sqlite');
  await seedCluster(store, 'east', { phase: 'Ready', ready: true, apiResources: [] });
  await store.heartbeat({ id: 'synchro-0', host: 'h', pid: 1, instance: 'i', configError: 'clusters.yaml: not valid YAML' }, 0);
  const api = await startSecureApiserver(store, (s) => {
    const a = s.resourceAttributes;
    if (!a) return 'no rule';
    if (s.user === 'ops' && a.group === 'panoptes.io' && a.resource === 'synchromembers' && (a.verb === 'get' || a.verb === 'list')) return true;
    return 'no RBAC rule';
  });
  t.teardown(async () => {
    await api.close();
    await close();
  });
  const host = api.host;
  const as = (user: string, path: string) => api.as(user, 'GET', path);
  const SM = '/apis/panoptes.io/v1alpha1/synchromembers';

  const list = await as('ops', SM);
  t.equal(list.status, 200, list.body);
  t.match(JSON.parse(list.body).items, [{ metadata: { name: 'synchro-0' }, status: { state: 'Out', configError: 'clusters.yaml: not valid YAML' } }]);
  t.equal((await as('ops', `${SM}/synchro-0`)).status, 200);

  host.requests.length = 0;
  const denied = await as('dev', SM);
  t.equal(denied.status, 403);
  t.match(JSON.parse(denied.body), { reason: 'Forbidden', message: /cannot list resource "synchromembers" in API group "panoptes\.io" at the cluster scope/ });
  t.notMatch(denied.body, /not valid YAML/, 'nothing of the members');
  t.ok(host.sars().some((s) => s.user === 'dev' && s.resourceAttributes?.resource === 'synchromembers' && s.resourceAttributes.verb === 'list'), 'reviewed as a list of synchromembers');
  t.equal((await as('dev', `${SM}/synchro-0`)).status, 403, 'a get too');

  host.requests.length = 0;
  const view = await as('ops', `/apis/panoptes.io/v1alpha1/resources/clusters/east${SM}`);
  t.equal(view.status, 200, `a one-cluster view: the same review, no per-cluster one: ${view.body}`);
  t.notOk(host.sars().some((s) => s.resourceAttributes?.resource === 'clusters'), 'no review of clusters/resources');
});
