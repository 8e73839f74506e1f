// The Kubernetes Multi-Cluster Services API's CRDs (KEP-1645, group multicluster.x-k8s.io:
// ServiceExport and ServiceImport), as kubernetes-sigs/mcs-api publishes them
// (config/crd/ of a release, copied unchanged into reference/mcs-api/<release>/), for
// simulated clusters that play a member with the MCS-API installed. v0.4.1 serves
// v1alpha1 only (what most installs run); v0.5.0 serves v1alpha1 and stores v1beta1.
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import type { Crud } from './crud.ts';
import type { KObject } from './types.ts';

export const mcsReleases = ['v0.4.1', 'v0.5.0'] as const;
export type McsRelease = (typeof mcsReleases)[number];
/** The release `mcsCRDs: true` installs. */
export const defaultMcsRelease: McsRelease = 'v0.4.1';

/** The ServiceExport and ServiceImport CustomResourceDefinitions of a release. */
export function mcsCRDs(release: McsRelease = defaultMcsRelease): KObject[] {
  return ['serviceexports', 'serviceimports'].map((plural) =>
    parse(readFileSync(new URL(`./reference/mcs-api/${release}/multicluster.x-k8s.io_${plural}.yaml`, import.meta.url), 'utf8')) as KObject);
}

/** Creates them in a cluster, as `kubectl apply -f config/crd/` would. */
export function installMcsCRDs(crud: Crud, release: McsRelease = defaultMcsRelease): void {
  const info = crud.registry.byId('apiextensions.k8s.io/customresourcedefinitions')!;
  for (const crd of mcsCRDs(release)) crud.create(info, 'v1', undefined, crd);
}
