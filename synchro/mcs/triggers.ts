// Which exported Services a change of the log concerns: pure. The dispatcher follows only the
// resources listed here (Store.changesOfResources) and turns each change into the keys to plan
// again, or "all" when something every plan depends on moved (a cluster's readiness, the
// ServiceImport CRD, a namespace appearing, the roles a Cluster is granted).
import { mcsRolesOf } from '../../api/mcs-roles.ts';
import { labels, mcsResource } from '../../api/multicluster-service.ts';
import { canonicalJson } from '../../kube/patch.ts';
import { ownGroup, ownObjectsCluster } from '../../storage/own-objects.ts';
import type { Change, KubeObject } from '../../storage/types.ts';
import type { ServiceKey } from './desired.ts';
import { clusterObjects, clusterView, kinds, serviceImportCrd } from './inputs.ts';

/** The Cluster objects' resource (clusters.panoptes.io). */
const clustersResource = clusterObjects;

/** Every resource whose changes the dispatcher follows. */
export const followed: ReadonlyArray<{ group: string; resource: string }> = [
  kinds.services,
  kinds.endpointSlices,
  kinds.serviceExports,
  kinds.serviceImports,
  kinds.namespaces,
  kinds.crds,
  { group: ownGroup, resource: mcsResource },
  { group: ownGroup, resource: clustersResource },
];

export type Trigger = { all: true } | { all: false; key: ServiceKey };

type Obj = Record<string, unknown>;
const isRecord = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const parse = (text: string | null): KubeObject | undefined => (text ? (JSON.parse(text) as KubeObject) : undefined);

/** What of a MultiClusterService moves its plan: not its status (the dispatchers' own writes). */
function mcsDigest(o: KubeObject | undefined): string {
  const md = o?.metadata ?? {};
  return canonicalJson([md.uid ?? null, md.generation ?? null, md.deletionTimestamp ?? null, md.finalizers ?? null, o?.spec ?? null]);
}

/** What of a Cluster object moves plans: readiness (and since when), what it syncs and serves, whether its initial sync is done, the roles its spec grants. */
function clusterDigest(o: KubeObject | undefined): string {
  const status = isRecord(o?.status) ? o.status : {};
  const v = clusterView(o?.metadata?.name ?? '', status, undefined, mcsRolesOf(o?.spec));
  const initial = isRecord(status.initialSync) ? status.initialSync.complete === true : false;
  return canonicalJson([v.ready, v.notReadySince ?? null, v.serviceImports, [...v.synced].sort(), initial, v.roles]);
}

/** The triggers of one change (none: it moves no plan). */
export function triggersOf(change: Change): Trigger[] {
  const key = (name: string): Trigger => ({ all: false, key: { namespace: change.namespace, name } });
  if (change.cluster === ownObjectsCluster) {
    if (change.group !== ownGroup) return [];
    if (change.resource === mcsResource) return change.type !== 'MODIFIED' || mcsDigest(parse(change.object)) !== mcsDigest(parse(change.prevObject)) ? [key(change.name)] : [];
    if (change.resource === clustersResource) return change.type !== 'MODIFIED' || clusterDigest(parse(change.object)) !== clusterDigest(parse(change.prevObject)) ? [{ all: true }] : [];
    return [];
  }
  const is = (k: { group: string; resource: string }) => change.group === k.group && change.resource === k.resource;
  if (is(kinds.services) || is(kinds.serviceExports) || is(kinds.serviceImports)) return [key(change.name)];
  if (is(kinds.endpointSlices)) {
    const names = new Set([parse(change.object), parse(change.prevObject)].map((o) => o?.metadata?.labels?.[labels.serviceName]).filter((n): n is string => typeof n === 'string' && n !== ''));
    return [...names].map(key);
  }
  if (is(kinds.namespaces)) return change.type === 'ADDED' ? [{ all: true }] : [];
  if (is(kinds.crds)) return change.name === serviceImportCrd ? [{ all: true }] : [];
  return [];
}
