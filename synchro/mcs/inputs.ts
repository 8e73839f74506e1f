// The dispatcher's reads of storage: the clusters' phases and what they serve, the roles
// their Cluster objects grant (api/mcs-roles.ts) and the consumers' own address ranges, the
// MultiClusterServices and ServiceExports, and for one key every cluster's Service,
// EndpointSlices, ServiceImport and namespace. Nothing here decides anything (desired.ts does).
import { mcsRolesOf, type McsRoles } from '../../api/mcs-roles.ts';
import { installationLabel, labels, managedByLabel, managedByValue, mcsApi, mcsResource, type MultiClusterServiceSpec, type MultiClusterServiceStatus } from '../../api/multicluster-service.ts';
import type { OwnObjectState } from '../../storage/own-objects.ts';
import type { Store } from '../../storage/store.ts';
import type { ClusterRecord, KubeObject, ListQuery, StoredObject } from '../../storage/types.ts';
import { isDuplicateStatus } from '../cluster/identity.ts';
import { notSyncedReason } from '../membership/not-synced.ts';
import type { ConsumerRanges } from './addresses.ts';
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
  nodes: { group: '', resource: 'nodes' },
  serviceCidrs: { group: 'networking.k8s.io', resource: 'servicecidrs' },
} as const;

/** The Cluster objects (own objects of panoptes.io): their spec says the roles each cluster is granted. */
export const clusterObjects = 'clusters';

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
export function clusterView(name: string, status: Obj, crdVersions?: readonly string[], roles: McsRoles = { provider: false, consumer: false }): DispatchCluster {
  const phase = typeof status.phase === 'string' ? status.phase : 'Pending';
  const reason = typeof status.reason === 'string' ? status.reason : '';
  const ready = phase === 'Ready' || (phase === 'Pending' && reason !== notSyncedReason);
  const api = (Array.isArray(status.apiResources) ? status.apiResources : []).filter(isRecord);
  const synced = new Set(api.map((r) => `${String(r.group ?? '')}/${String(r.resource ?? '')}`));
  const imports = api.some((r) => r.group === mcsApi.group && r.resource === mcsApi.serviceImports && r.version === mcsApi.version) || (crdVersions ?? []).includes(mcsApi.version);
  const since = typeof status.lastTransitionTime === 'string' ? status.lastTransitionTime : undefined;
  return { name, ready, phase: reason ? `${phase} (${reason})` : phase, serviceImports: imports, synced, roles, ...(!ready && since ? { notReadySince: since } : {}) };
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

/**
 * Every cluster's own pod ranges (its Nodes' spec.podCIDRs) and service ranges (its
 * ServiceCIDRs, where it has and syncs them), of `clusters`: what no provider address
 * dispatched to it may be inside.
 */
async function readRanges(store: Store, clusters: string[]): Promise<Map<string, ConsumerRanges>> {
  const out = new Map<string, ConsumerRanges>();
  if (clusters.length === 0) return out;
  const of = (c: string) => out.get(c) ?? (out.set(c, { pods: [], services: [] }).get(c) as ConsumerRanges);
  const strings = (v: unknown) => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : typeof v === 'string' ? [v] : []);
  const [nodes, cidrs] = await Promise.all([store.list({ ...kinds.nodes, clusters }), store.list({ ...kinds.serviceCidrs, clusters })]);
  for (const row of nodes.items) {
    const spec = (JSON.parse(row.object) as KubeObject).spec;
    const ranges = isRecord(spec) ? [...new Set([...strings(spec.podCIDRs), ...strings(spec.podCIDR)])] : [];
    of(row.cluster).pods.push(...ranges.filter((r) => !of(row.cluster).pods.includes(r)));
  }
  for (const row of cidrs.items) {
    const spec = (JSON.parse(row.object) as KubeObject).spec;
    of(row.cluster).services.push(...(isRecord(spec) ? strings(spec.cidrs) : []));
  }
  return out;
}

/**
 * Every registered cluster's view, with the roles its Cluster object grants (none without
 * one) and, for `consumers` (those this member writes to), their own address ranges; a
 * duplicate registration of a member (synced under another name) is not one: nothing is
 * dispatched to it or from it.
 */
export async function readClusters(store: Store, consumers: string[] = []): Promise<DispatchCluster[]> {
  const [crds, objects, rows, ranges] = await Promise.all([serviceImportCrds(store), store.listOwnObjects(clusterObjects), store.listClusters(), readRanges(store, consumers)]);
  const roles = new Map(objects.map((o) => [o.name, mcsRolesOf(o.object.spec)]));
  return rows
    .filter((r) => !isDuplicateStatus(r.status))
    .map((r: ClusterRecord) => {
      const v = clusterView(r.name, r.status, crds.get(r.name), roles.get(r.name));
      const own = ranges.get(r.name);
      return own ? { ...v, ranges: own } : v;
    });
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

/**
 * The keys of everything this installation dispatched into `clusters`, and of what Panoptes
 * wrote there before installations had ids (what may have to be deleted although nothing
 * exports it any more); not another installation's.
 */
export async function managedKeys(store: Store, clusters: string[], installation: string): Promise<ServiceKey[]> {
  if (clusters.length === 0) return [];
  const selector = [{ key: managedByLabel, operator: 'in' as const, values: [managedByValue] }];
  const keys = new Map<string, ServiceKey>();
  for (const kind of [kinds.services, kinds.serviceImports, kinds.endpointSlices]) {
    for (const row of (await store.list({ ...kind, clusters, labelSelector: selector })).items) {
      const l = (JSON.parse(row.object) as KubeObject).metadata?.labels ?? {};
      if (l[installationLabel] !== undefined && l[installationLabel] !== installation) continue;
      const name = kind === kinds.endpointSlices ? l[labels.serviceName] : row.name;
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
  /** The newest watermark the rows were read at: changes up to it are in them. */
  readAt: number;
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
    readAt: Math.max(services.resourceVersion, slices.resourceVersion, imports.resourceVersion, namespaces.resourceVersion),
  };
}
