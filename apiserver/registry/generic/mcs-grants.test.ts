// Granting multi-cluster Service roles in aggregated mode: a registrar who may create, update
// and patch Clusters (and ClusterSources) registers them, but a write that makes one a provider
// or a consumer is also reviewed as `update` on clusters/multiclusterservices (or
// clustersources/multiclusterservices) of that object: refused with 403 (nothing written)
// unless the operator granted it; revoking needs nothing more; a write that changes nothing
// of the roles is not reviewed for them.
import t from 'tap';
import { startSecureApiserver } from '../../../hack/testing/secure-apiserver.ts';
import { setLogLevel } from '../../../lib/log.ts';
import { openTestStore } from '../../../storage/testing.ts';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');

t.test('granting a Cluster or a ClusterSource multi-cluster Service roles needs the operator\'s right', async (t) => {
  const { store, close } = await openTestStore('sqlite');
  const api = await startSecureApiserver(store, (s) => {
    const a = s.resourceAttributes;
    if (!a || a.group !== 'panoptes.io') return 'no rule';
    // The registrar (panoptes:cluster-registrar, panoptes:cluster-importer): every verb on clusters and clustersources.
    if ((a.resource === 'clusters' || a.resource === 'clustersources') && !a.subresource) return s.user === 'registrar' || s.user === 'operator' ? true : 'no rule';
    // The operator also holds panoptes:multicluster-services-grantor.
    if (a.subresource === 'multiclusterservices' && a.verb === 'update') return s.user === 'operator' ? true : 'no RBAC rule';
    return 'no rule';
  });
  t.teardown(async () => {
    await api.close();
    await close();
  });
  const { as, host } = api;
  const C = '/apis/panoptes.io/v1alpha1/clusters';
  const S = '/apis/panoptes.io/v1alpha1/clustersources';
  const cluster = (name: string, roles?: Record<string, boolean>) => ({ apiVersion: 'panoptes.io/v1alpha1', kind: 'Cluster', metadata: { name }, spec: { server: 'https://10.0.0.1:6443', ...(roles ? { multiClusterServices: roles } : {}) } });
  const grantReviews = () => host.sars().filter((s) => s.resourceAttributes?.subresource === 'multiclusterservices');

  const plain = await as('registrar', 'POST', C, cluster('plain'));
  t.equal(plain.status, 201, plain.body);
  t.same(grantReviews(), [], 'a Cluster that grants nothing: no review of the grant');

  const denied = await as('registrar', 'POST', C, cluster('rogue', { provider: true }));
  t.equal(denied.status, 403, 'the registrar may register a cluster, not make it a provider');
  t.match(JSON.parse(denied.body), {
    reason: 'Forbidden',
    message: /^clusters\.panoptes\.io "rogue" is forbidden: User "registrar" cannot update resource "clusters\/multiclusterservices" in API group "panoptes\.io" at the cluster scope: no RBAC rule: granting spec\.multiClusterServices\.provider needs update on clusters\/multiclusterservices \(the role panoptes:multicluster-services-grantor\)/,
  });
  t.match(grantReviews().at(-1), { user: 'registrar', resourceAttributes: { verb: 'update', group: 'panoptes.io', resource: 'clusters', subresource: 'multiclusterservices', name: 'rogue' } });
  t.equal((await as('registrar', 'GET', `${C}/rogue`)).status, 404, 'nothing written');

  const patch = await as('registrar', 'PATCH', `${C}/plain`, { spec: { multiClusterServices: { consumer: true } } });
  t.equal(patch.status, 403, 'a patch that grants: refused the same');
  t.equal(JSON.parse((await as('registrar', 'GET', `${C}/plain`)).body).spec.multiClusterServices, undefined, 'nothing written');

  const granted = await as('operator', 'PATCH', `${C}/plain`, { spec: { multiClusterServices: { provider: true, consumer: true } } });
  t.equal(granted.status, 200, granted.body);
  t.same(JSON.parse(granted.body).spec.multiClusterServices, { provider: true, consumer: true }, 'the operator grants it');
  const relabel = await as('registrar', 'PATCH', `${C}/plain`, { metadata: { labels: { team: 'a' } } });
  t.equal(relabel.status, 200, 'a write that keeps the roles as they are needs no grant');
  const revoke = await as('registrar', 'PATCH', `${C}/plain`, { spec: { multiClusterServices: { provider: false } } });
  t.equal(revoke.status, 200, 'revoking needs nothing more');
  t.same(JSON.parse(revoke.body).spec.multiClusterServices, { provider: false, consumer: true });
  const bad = await as('operator', 'PATCH', `${C}/plain`, { spec: { multiClusterServices: { provider: 'yes' } } });
  t.equal(bad.status, 422, 'validated');
  t.match(JSON.parse(bad.body).message, /spec\.multiClusterServices\.provider: Invalid value: "yes": must be true or false/);

  const source = (roles?: Record<string, boolean>) => ({ apiVersion: 'panoptes.io/v1alpha1', kind: 'ClusterSource', metadata: { name: 'capi' }, spec: { type: 'clusterAPI', namespaces: ['capi'], ...(roles ? { defaults: { multiClusterServices: roles } } : {}) } });
  const importer = await as('registrar', 'POST', S, source({ provider: true }));
  t.equal(importer.status, 403, 'a ClusterSource whose Clusters would be providers: the grant is the operator\'s too');
  t.match(JSON.parse(importer.body).message, /cannot update resource "clustersources\/multiclusterservices".*granting spec\.defaults\.multiClusterServices\.provider needs update on clustersources\/multiclusterservices/);
  t.equal((await as('registrar', 'POST', S, source())).status, 201, 'one that grants nothing: created');
  t.equal((await as('operator', 'PATCH', `${S}/capi`, { spec: { defaults: { multiClusterServices: { consumer: true } } } })).status, 200, 'the operator grants it');
});
