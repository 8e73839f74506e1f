// Who may provide and consume multi-cluster Services, by a Cluster's source: clusters.yaml
// (the operator's file) both unless it says false; the API and ClusterSources neither unless
// true; what a write grants that was not granted before; validation.
import t from 'tap';
import { describeRoles, importedMcsRoles, mcsRolesOf, validateMcsRoles, widenedRoles } from './mcs-roles.ts';
import { validateClusterSpec } from './cluster.ts';
import { validateClusterSourceSpec } from './cluster-source.ts';

t.test('the roles of a Cluster, by its source', async (t) => {
  t.same(mcsRolesOf({ source: 'file', server: 'https://x' }), { provider: true, consumer: true }, 'clusters.yaml: both');
  t.same(mcsRolesOf({ source: 'file', multiClusterServices: { provider: false } }), { provider: false, consumer: true }, 'clusters.yaml: unless it says false');
  t.same(mcsRolesOf({ source: 'api', server: 'https://x' }), { provider: false, consumer: false }, 'the API: neither');
  t.same(mcsRolesOf({ server: 'https://x' }), { provider: false, consumer: false }, 'no source is the API');
  t.same(mcsRolesOf({ source: 'api', multiClusterServices: { consumer: true } }), { provider: false, consumer: true }, 'the API: what the spec grants');
  t.same(mcsRolesOf({ source: 'clustersource/capi', server: 'https://x' }), { provider: false, consumer: false }, 'imported: neither');
  t.same(mcsRolesOf({ source: 'api', multiClusterServices: { provider: 'true' } }), { provider: false, consumer: false }, 'only booleans count');
  t.same(mcsRolesOf(undefined), { provider: false, consumer: false });
  t.same(importedMcsRoles({ defaults: { multiClusterServices: { provider: true } } }), { provider: true, consumer: false }, 'a ClusterSource grants what its defaults say');
  t.same(importedMcsRoles({}), { provider: false, consumer: false });
});

t.test('what a write grants, and the words of the Table', async (t) => {
  const none = { provider: false, consumer: false };
  t.same(widenedRoles(none, { provider: true, consumer: true }), ['provider', 'consumer']);
  t.same(widenedRoles({ provider: true, consumer: true }, { provider: false, consumer: true }), [], 'revoking grants nothing');
  t.same(widenedRoles(none, none), []);
  t.equal(describeRoles({ provider: true, consumer: true }), 'provider,consumer');
  t.equal(describeRoles({ provider: false, consumer: true }), 'consumer');
  t.equal(describeRoles(none), 'none');
});

t.test('validation: an object of two booleans, in a Cluster and in a ClusterSource\'s defaults', async (t) => {
  t.same(validateMcsRoles(undefined, 'spec.multiClusterServices'), []);
  t.match(validateMcsRoles('yes', 'spec.multiClusterServices'), [{ field: 'spec.multiClusterServices', detail: /must be an object with provider and\/or consumer/ }]);
  t.match(validateClusterSpec({ server: 'https://10.0.0.1:6443', multiClusterServices: { provider: 1 } }), [{ field: 'spec.multiClusterServices.provider', detail: 'must be true or false' }]);
  t.same(validateClusterSpec({ server: 'https://10.0.0.1:6443', multiClusterServices: { provider: true, consumer: false } }), []);
  t.match(validateClusterSourceSpec({ type: 'clusterAPI', namespaces: ['capi'], defaults: { multiClusterServices: { consumer: 'no' } } }), [{ field: 'spec.defaults.multiClusterServices.consumer', detail: 'must be true or false' }]);
});
