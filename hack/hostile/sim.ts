// Hostile objects in a simulated member cluster (hack/sim/): stored as a member's etcd would
// hold them, without the simulator's own validation (bulkCreate), as a non-validating
// aggregated API server or a kube-apiserver at its limits would serve them.
import type { SimCluster } from '../sim/cluster.ts';
import type { KObject } from '../sim/types.ts';
import { blobResource, hostileBlobs, hostileConfigMaps } from './objects.ts';

/** The CRD of the Blob custom resource: anything under spec and status (x-kubernetes-preserve-unknown-fields). */
export const blobCRD: KObject = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `${blobResource.resource}.${blobResource.group}` },
  spec: {
    group: blobResource.group,
    scope: 'Namespaced',
    names: { plural: blobResource.resource, singular: 'blob', kind: blobResource.kind, listKind: `${blobResource.kind}List` },
    versions: [
      {
        name: blobResource.version,
        served: true,
        storage: true,
        schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
      },
    ],
  },
};

export interface HostileLoad {
  namespace: string;
  configMaps: KObject[];
  blobs: KObject[];
}

/** Creates `namespace`, the Blob CRD and every hostile object in `sim`; returns them as the member holds them. */
export function loadHostile(sim: SimCluster, namespace: string): HostileLoad {
  const ns = sim.registry.lookup('', 'v1', 'namespaces')!;
  if (!sim.store.get(ns.id, undefined, namespace)) sim.crud.create(ns, 'v1', undefined, { metadata: { name: namespace } });
  const crds = sim.registry.lookup('apiextensions.k8s.io', 'v1', 'customresourcedefinitions')!;
  if (!sim.store.get(crds.id, undefined, blobCRD.metadata.name!)) sim.crud.create(crds, 'v1', undefined, blobCRD);
  sim.bulkCreate('configmaps', hostileConfigMaps(namespace) as KObject[]);
  sim.bulkCreate(`${blobResource.group}/${blobResource.resource}`, hostileBlobs(namespace) as KObject[]);
  const list = (id: string) => sim.store.list(id).items.filter((o) => o.metadata.namespace === namespace);
  return {
    namespace,
    configMaps: list('/configmaps'),
    blobs: list(`${blobResource.group}/${blobResource.resource}`),
  };
}
