// The ClusterSource kind's strategy for the registry of own objects (apiserver/registry/generic/own-object.ts):
// cluster-scoped, named as a DNS label (the name is in every imported Cluster's
// spec.source), its spec validated and served from the allowlist of api/cluster-source.ts,
// the finalizer `panoptes.io/import` (synchro's importer releases it once the source's
// Clusters are gone). Nothing of it is secret: it names where credentials are, never holds them.
// Granting its Clusters multi-cluster Service roles (spec.defaults.multiClusterServices) also
// needs `update` on `clustersources/multiclusterservices` of that ClusterSource.
import { clusterSourceFinalizer, clusterSourceKind as clusterSourceKindName, clusterSourceResource, clusterSourceShape, servedClusterSourceSpec, validateClusterSourceSpec } from '../../../api/cluster-source.ts';
import { importedMcsRoles } from '../../../api/mcs-roles.ts';
import { dnsLabelProblem } from '../../../kube/names.ts';
import type { OwnObjectState } from '../../../storage/own-objects.ts';
import { grantPrivileges } from '../generic/mcs-grants.ts';
import type { OwnKind } from '../generic/own-object.ts';
import { ownInfo } from '../../discovery/panoptes-group.ts';

export const clusterSourceInfo = ownInfo(clusterSourceResource, clusterSourceKindName, false);

export const clusterSourceKind: OwnKind<OwnObjectState, never> = {
  info: clusterSourceInfo,
  finalizer: clusterSourceFinalizer,
  shape: clusterSourceShape,
  servedSpec: servedClusterSourceSpec,
  nameProblem(name) {
    const why = dnsLabelProblem(name);
    return why && `a ClusterSource name is part of its Clusters' spec.source: ${why}`;
  },
  shapeSpec: (body) => ({ spec: servedClusterSourceSpec(body.spec), errors: validateClusterSourceSpec(body.spec) }),
  privileges: (current, next, name) => grantPrivileges(clusterSourceInfo.resource, name, importedMcsRoles(current?.object.spec), importedMcsRoles(next.spec)),
  write(store, _namespace, name, decide) {
    return store.writeOwnObjectWithoutLease({ resource: clusterSourceInfo.resource, namespace: '', name }, (cur) => {
      const w = decide(cur);
      return w.action === 'put' ? { action: 'put', object: w.object } : w;
    });
  },
};
