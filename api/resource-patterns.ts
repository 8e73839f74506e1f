// Resource patterns: how a Cluster (and a clusters.yaml entry) names what to sync.
//
// `*` (every listable resource), `GROUP/*` (every resource of a group), `GROUP/RESOURCE`, or
// kubectl's `RESOURCE.GROUP`. The core group is written `core`, `` (as in `/pods`) or left out
// (`pods`). Custom resources match like built-in ones, so `*` and `example.com/*` pick CRDs up
// as they appear. Secrets are only synced when named explicitly (`secrets`, `core/secrets`),
// never through a wildcard. `*` is what the member stores itself — its built-in resources and
// CRDs: the resources of aggregated APIs (an APIService with a service: metrics-server,
// Clusterpedia, ...) and Panoptes' own groups (`ownGroups`: on a host cluster that is also a
// member, `*` would sync Panoptes into itself) are synced only through a pattern that names
// their group (`panoptes.io/clusters`, `clusterpedia.io/*`).

export interface ResourcePattern {
  /** '' for the core group, '*' for any. */
  group: string;
  /** '*' for any. */
  resource: string;
  /** The text it was parsed from. */
  text: string;
}

/** What synchro syncs when a cluster names no resources. */
export const defaultResources: readonly string[] = [
  'namespaces',
  'nodes',
  'pods',
  'services',
  'endpoints',
  'configmaps',
  'serviceaccounts',
  'persistentvolumes',
  'persistentvolumeclaims',
  'apps/deployments',
  'apps/replicasets',
  'apps/statefulsets',
  'apps/daemonsets',
  'batch/jobs',
  'batch/cronjobs',
  'networking.k8s.io/ingresses',
  'networking.k8s.io/networkpolicies',
  'policy/poddisruptionbudgets',
  'autoscaling/horizontalpodautoscalers',
  'apiextensions.k8s.io/customresourcedefinitions',
  // Multi-cluster Services (synchro/mcs/): the providers' slices, the MCS-API's ServiceExports
  // (exports) and ServiceImports (what the dispatcher keeps in consumers). A cluster without
  // the MCS-API CRDs simply serves none of them.
  'discovery.k8s.io/endpointslices',
  'multicluster.x-k8s.io/serviceexports',
  'multicluster.x-k8s.io/serviceimports',
];

/** Panoptes' own API groups, which `*` leaves out wherever they are served. */
export const ownGroups: readonly string[] = ['panoptes.io', 'external.metrics.k8s.io'];

const dns1123 = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export class PatternError extends Error {
  override name = 'PatternError';
}

/** Parses one pattern; throws a PatternError saying what is wrong. */
export function parsePattern(text: string): ResourcePattern {
  const s = text.trim();
  if (s === '*') return { group: '*', resource: '*', text: s };
  let group: string;
  let resource: string;
  if (s.includes('/')) {
    const parts = s.split('/');
    if (parts.length !== 2) throw new PatternError(`resource ${JSON.stringify(text)}: use GROUP/RESOURCE, GROUP/*, RESOURCE.GROUP or *`);
    [group, resource] = parts;
    if (group === 'core' || group === 'v1') group = '';
  } else {
    const dot = s.indexOf('.');
    group = dot < 0 ? '' : s.slice(dot + 1);
    resource = dot < 0 ? s : s.slice(0, dot);
  }
  if (resource === '') throw new PatternError(`resource ${JSON.stringify(text)}: the resource is empty`);
  if (group !== '' && group !== '*' && !dns1123.test(group)) throw new PatternError(`resource ${JSON.stringify(text)}: ${JSON.stringify(group)} is not a valid API group`);
  if (group === '*' && resource !== '*') throw new PatternError(`resource ${JSON.stringify(text)}: a wildcard group needs a wildcard resource (use *)`);
  if (resource !== '*' && !/^[a-z0-9][a-z0-9.-]*$/.test(resource)) throw new PatternError(`resource ${JSON.stringify(text)}: ${JSON.stringify(resource)} is not a resource name (lowercase plural, e.g. deployments)`);
  return { group, resource, text: s };
}
