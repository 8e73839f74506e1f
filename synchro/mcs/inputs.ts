// The dispatcher's reads of storage: the clusters' phases and what they serve, the
// MultiClusterServices and ServiceExports, and for one key every cluster's Service,
// EndpointSlices, ServiceImport and namespace. Nothing here decides anything (desired.ts does).
import { labels, managedByLabel, managedByValue, mcsApi, mcsResource, type MultiClusterServiceSpec, type MultiClusterServiceStatus } from '../../api/multicluster-service.ts';
import type { OwnObjectState } from '../../storage/own-objects.ts';
import type { Store } from '../../storage/store.ts';
import type { ClusterRecord, KubeObject, ListQuery, StoredObject } from '../../storage/types.ts';
import { isDuplicateStatus } from '../identity.ts';
import { notSyncedReason } from '../not-synced.ts';
import { keyString, type ClusterObject, type ClusterView, type KeyInputs, type McsView, type ServiceKey } from './desired.ts';

type Obj = Record<string, unknown>;
const isRecord = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The resources whose changes move a plan (and that a consumer's view is made of). */
export const kinds = {
  services: { group: '', resource: 'services' },
  endpointSlices: { group: 'discovery.k8s.io', resource: 'endpointslices' },
  serviceExports: { group: mcsApi.group, resource: mcsApi.serviceExports },
  serviceImports: { group: mcsApi.group, resource: mcsApi.serviceImports },
  namespaces: { group: '', resource: 'namespaces' },
  crds: { group: 'apiextensions.k8s.io', resource: 'customresourcedefinitions' },
} as const;

/** The ServiceImport CRD's name. */
export const serviceImportCrd = `${mcsApi.serviceImports}.${mcsApi.group}`;

/** A cluster as the dispatcher sees it, with the resources it syncs (`group/resource`). */
export interface DispatchCluster extends ClusterView {
  synced: ReadonlySet<string>;
}

/**
 * A cluster's view from its status (the clusters table row or its Cluster object's status):
 * Ready when its data is current — Ready, or Pending while a new owner starts (not NotSynced,
 * which means nobody syncs it) — and since when it is not.
 */
export function clusterView(name: string, status: Obj, crdVersions?: readonly string[]): DispatchCluster {
  const phase = typeof status.phase === 'string' ? status.phase : 'Pending';
  const reason = typeof status.reason === 'string' ? status.reason : '';
  const ready = phase === 'Ready' || (phase === 'Pending' && reason !== notSyncedReason);
  const api = (Array.isArray(status.apiResources) ? status.apiResources : []).filter(isRecord);
  const synced = new Set(api.map((r) => `${String(r.group ?? '')}/${String(r.resource ?? '')}`));
  const imports = api.some((r) => r.group === mcsApi.group && r.resource === mcsApi.serviceImports && r.version === mcsApi.version) || (crdVersions ?? []).includes(mcsApi.version);
  const since = typeof status.lastTransitionTime === 'string' ? status.lastTransitionTime : undefined;
  return { name, ready, phase: reason ? `${phase} (${reason})` : phase, serviceImports: imports, synced, ...(!ready && since ? { notReadySince: since } : {}) };
}

/** The served versions of each cluster's stored ServiceImport CRD. */
async function serviceImportCrds(store: Store): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  for (const row of (await store.list({ ...kinds.crds, names: [serviceImportCrd] })).items) {
    const crd = JSON.parse(row.object) as KubeObject;
    const versions = (isRecord(crd.spec) && Array.isArray(crd.spec.versions) ? crd.spec.versions : []).filter(isRecord).filter((v) => v.served !== false).map((v) => String(v.name));
    out.set(row.cluster, versions);
  }
  return out;
}

/** Every registered cluster's view; a duplicate registration of a member (synced under another name) is not one: nothing is dispatched to it or from it. */
export async function readClusters(store: Store): Promise<DispatchCluster[]> {
  const crds = await serviceImportCrds(store);
  return (await store.listClusters()).filter((r) => !isDuplicateStatus(r.status)).map((r: ClusterRecord) => clusterView(r.name, r.status, crds.get(r.name)));
}

export interface McsState extends McsView {
  key: ServiceKey;
  object: KubeObject;
}

export function mcsState(o: OwnObjectState): McsState {
  const md = o.object.metadata ?? {};
  return {
    key: { namespace: o.namespace, name: o.name },
    uid: o.uid,
    generation: Number(md.generation ?? 1) || 1,
    spec: (isRecord(o.object.spec) ? o.object.spec : {}) as MultiClusterServiceSpec,
    deleting: typeof md.deletionTimestamp === 'string' && md.deletionTimestamp !== '',
    status: (isRecord(o.object.status) ? o.object.status : undefined) as MultiClusterServiceStatus | undefined,
    object: o.object,
  };
}

export async function readMcs(store: Store, key?: ServiceKey): Promise<McsState[]> {
  if (key) {
    const o = await store.getOwnObject({ resource: mcsResource, ...key });
    return o ? [mcsState(o)] : [];
  }
  return (await store.listOwnObjects(mcsResource)).map(mcsState);
}

/** The clusters holding a ServiceExport of each key (of one key, or all). */
export async function readExports(store: Store, key?: ServiceKey): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  const q: ListQuery = { ...kinds.serviceExports, ...(key ? { namespaces: [key.namespace], names: [key.name] } : {}) };
  for (const row of (await store.list(q)).items) {
    const k = keyString(row);
    out.set(k, [...(out.get(k) ?? []), row.cluster].sort());
  }
  return out;
}

/** The keys of everything Panoptes dispatched into `clusters` (what may have to be deleted although nothing exports it any more). */
export async function managedKeys(store: Store, clusters: string[]): Promise<ServiceKey[]> {
  if (clusters.length === 0) return [];
  const selector = [{ key: managedByLabel, operator: 'in' as const, values: [managedByValue] }];
  const keys = new Map<string, ServiceKey>();
  for (const kind of [kinds.services, kinds.serviceImports, kinds.endpointSlices]) {
    for (const row of (await store.list({ ...kind, clusters, labelSelector: selector })).items) {
      const obj = kind === kinds.endpointSlices ? (JSON.parse(row.object) as KubeObject) : undefined;
      const name = obj ? obj.metadata?.labels?.[labels.serviceName] : row.name;
      if (name) keys.set(`${row.namespace}/${name}`, { namespace: row.namespace, name });
    }
  }
  return [...keys.values()];
}

const toClusterObject = (row: StoredObject): ClusterObject => ({ cluster: row.cluster, object: JSON.parse(row.object) as KubeObject, upstreamRv: row.upstreamRv });

/** Everything about one key the plan and the consumers' views need. */
export interface KeyRows extends KeyInputs {
  clusters: DispatchCluster[];
  serviceImports: ClusterObject[];
  /** The clusters where the key's namespace exists (among those that sync namespaces). */
  namespaceIn: Set<string>;
}

export async function readKey(store: Store, key: ServiceKey, base: Omit<KeyInputs, 'key' | 'services' | 'slices' | 'clusters'> & { clusters: DispatchCluster[] }): Promise<KeyRows> {
  const one = { namespaces: [key.namespace], names: [key.name] };
  const [services, slices, imports, namespaces] = await Promise.all([
    store.list({ ...kinds.services, ...one }),
    store.list({ ...kinds.endpointSlices, namespaces: [key.namespace], labelSelector: [{ key: labels.serviceName, operator: 'in', values: [key.name] }] }),
    store.list({ ...kinds.serviceImports, ...one }),
    store.list({ ...kinds.namespaces, names: [key.namespace] }),
  ]);
  return {
    ...base,
    key,
    services: services.items.map(toClusterObject),
    slices: slices.items.map(toClusterObject),
    serviceImports: imports.items.map(toClusterObject),
    namespaceIn: new Set(namespaces.items.map((r) => r.cluster)),
  };
}
