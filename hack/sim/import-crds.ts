// The CRDs of the cluster inventories Panoptes imports from, for a simulated cluster that plays
// the host: Cluster API's `Cluster` (cluster.x-k8s.io, served at v1beta1, namespaced) and
// Karmada's `Cluster` (cluster.karmada.io/v1alpha1, cluster-scoped). Trimmed to what the
// importer reads (names, served versions, scope, short names); their schemas keep unknown
// fields, and no status subresource is declared, so a test writes a Cluster API Cluster's
// status (phase, infrastructureReady, controlPlaneReady) with the object. And SIG Multicluster's
// ClusterProfile (multicluster.x-k8s.io/v1alpha1), as kubernetes-sigs/cluster-inventory-api
// publishes it (config/crd/bases/, copied unchanged into reference/cluster-inventory-api/):
// its schema and its status subresource as upstream declares them.
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import type { Crud } from './crud.ts';
import type { KObject } from './types.ts';

const crd = (group: string, version: string, plural: string, kind: string, scope: 'Namespaced' | 'Cluster'): KObject => ({
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `${plural}.${group}` },
  spec: {
    group,
    scope,
    names: { plural, singular: kind.toLowerCase(), kind, listKind: `${kind}List` },
    versions: [{ name: version, served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
  },
});

/** Cluster API's and Karmada's Cluster CRDs. */
export const importCRDs = (): KObject[] => [crd('cluster.x-k8s.io', 'v1beta1', 'clusters', 'Cluster', 'Namespaced'), crd('cluster.karmada.io', 'v1alpha1', 'clusters', 'Cluster', 'Cluster')];

/** The upstream ClusterProfile CustomResourceDefinition. */
export const clusterProfileCRD = (): KObject => parse(readFileSync(new URL('./reference/cluster-inventory-api/multicluster.x-k8s.io_clusterprofiles.yaml', import.meta.url), 'utf8')) as KObject;

/** Creates them in a cluster, as installing Cluster API, Karmada or the Cluster Inventory API would. */
export function installImportCRDs(crud: Crud): void {
  const info = crud.registry.byId('apiextensions.k8s.io/customresourcedefinitions')!;
  for (const c of [...importCRDs(), clusterProfileCRD()]) crud.create(info, 'v1', undefined, c);
}
