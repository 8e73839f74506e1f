// The MultiClusterService kind's strategy for the registry of own objects
// (apiserver/registry/generic/own-object.ts): namespaced, named after the Service it exports (a DNS-1035 label),
// its spec validated and served from the allowlist of api/multicluster-service.ts (shared with
// synchro's dispatcher), the finalizer `panoptes.io/mcs-dispatch` (synchro releases it once
// every consumer cluster is cleaned up). Nothing of it is secret. Stored as an own object
// (storage/own-objects.ts); synchro writes its status as the holder of each consumer cluster's lease.
import { mcsFinalizer, mcsKind as mcsKindName, mcsNameProblem, mcsResource, mcsShape, servedMcsSpec, validateMultiClusterServiceSpec } from '../../../api/multicluster-service.ts';
import type { OwnObjectState } from '../../../storage/own-objects.ts';
import type { Obj, OwnKind } from '../generic/own-object.ts';
import { ownInfo } from '../../discovery/panoptes-group.ts';

export const mcsInfo = ownInfo(mcsResource, mcsKindName, true, ['mcs']);

export const mcsKind: OwnKind<OwnObjectState, never> = {
  info: mcsInfo,
  finalizer: mcsFinalizer,
  shape: mcsShape,
  servedSpec: (spec) => servedMcsSpec(spec) as Obj,
  nameProblem: mcsNameProblem,
  shapeSpec: (body) => ({ spec: servedMcsSpec(body.spec) as Obj, errors: validateMultiClusterServiceSpec(body.spec) }),
  write(store, namespace, name, decide) {
    return store.writeOwnObjectWithoutLease({ resource: mcsInfo.resource, namespace, name }, (cur) => {
      const w = decide(cur);
      return w.action === 'put' ? { action: 'put', object: w.object } : w;
    });
  },
};
