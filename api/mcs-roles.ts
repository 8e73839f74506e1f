// Who may provide and who may consume multi-cluster Services: the one rule every path asks
// (the dispatcher's plan, the apiserver's writes of Clusters and ClusterSources, the importer,
// clusters.yaml, the Table of clusters). A cluster's roles are granted by the operator, cluster
// by cluster, in `spec.multiClusterServices: {provider, consumer}` — never by whoever can
// register or import a cluster:
//   - a clusters.yaml entry (spec.source: file, the operator's own file): both, unless the
//     entry says false;
//   - a Cluster of the API: neither, unless its spec says true, and a write that grants a role
//     needs `update` on `clusters/multiclusterservices` of that Cluster besides the write itself
//     (apiserver/registry/generic/own-writes.ts; revoking needs nothing more);
//   - a Cluster a ClusterSource imports: what the ClusterSource's spec.defaults.multiClusterServices
//     says (neither unless true), granted the same way on `clustersources/multiclusterservices`.
// A provider's endpoints are dispatched into consumers; a consumer is written to with
// Panoptes' own identity. A cluster that is not a provider is no provider of any
// MultiClusterService and its ServiceExports export nothing; one that is not a consumer gets
// nothing dispatched. Pure: no I/O.
import { fieldInvalid, type FieldError } from '../kube/field-errors.ts';

export interface McsRoles {
  /** Its Services' endpoints may be dispatched into other clusters. */
  provider: boolean;
  /** Panoptes may write dispatched Services, EndpointSlices and ServiceImports into it. */
  consumer: boolean;
}

export const mcsRoleNames = ['provider', 'consumer'] as const;
export type McsRole = (typeof mcsRoleNames)[number];

/** The spec field (of a Cluster; of a ClusterSource's spec.defaults). */
export const mcsRolesField = 'multiClusterServices';

/** The subresource whose `update` a write that grants a role needs (clusters/…, clustersources/…). */
export const mcsGrantSubresource = 'multiclusterservices';

/** The role of manifests/base/rbac.yaml that holds that right. */
export const mcsGrantorRole = 'panoptes:multicluster-services-grantor';

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** What a `multiClusterServices` value says, over the defaults of its source. */
function rolesOver(value: unknown, byDefault: boolean): McsRoles {
  const v = isRecord(value) ? value : {};
  return { provider: typeof v.provider === 'boolean' ? v.provider : byDefault, consumer: typeof v.consumer === 'boolean' ? v.consumer : byDefault };
}

/** The roles a Cluster's spec (served: with its `source`) grants. */
export function mcsRolesOf(spec: unknown): McsRoles {
  const s = isRecord(spec) ? spec : {};
  return rolesOver(s[mcsRolesField], s.source === 'file');
}

/** The roles a ClusterSource gives the Clusters it imports (spec.defaults.multiClusterServices). */
export function importedMcsRoles(sourceSpec: unknown): McsRoles {
  const defaults = isRecord(sourceSpec) && isRecord(sourceSpec.defaults) ? sourceSpec.defaults : {};
  return rolesOver(defaults[mcsRolesField], false);
}

/** The roles `after` grants that `before` did not: a write that makes them needs the grant right. */
export function widenedRoles(before: McsRoles, after: McsRoles): McsRole[] {
  return mcsRoleNames.filter((r) => after[r] && !before[r]);
}

/** `provider, consumer`, `consumer`, ... or `none`: the Table's words. */
export function describeRoles(r: McsRoles): string {
  const on = mcsRoleNames.filter((n) => r[n]);
  return on.length ? on.join(',') : 'none';
}

/** Problems of a `multiClusterServices` value at `path`: an object of two booleans. */
export function validateMcsRoles(v: unknown, path: string): FieldError[] {
  if (v === undefined) return [];
  if (!isRecord(v)) return [fieldInvalid(path, v, 'must be an object with provider and/or consumer (true or false)')];
  const errs: FieldError[] = [];
  for (const [k, x] of Object.entries(v)) {
    if (!(mcsRoleNames as readonly string[]).includes(k)) continue; // unknown fields are the decoder's (pruned, or Strict's 400)
    if (typeof x !== 'boolean') errs.push(fieldInvalid(`${path}.${k}`, x, 'must be true or false'));
  }
  return errs;
}
