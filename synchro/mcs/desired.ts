// The desired state of one exported Service (a namespace/name), computed from storage alone:
// pure, no I/O, so that every synchro member holding a consumer's lease computes the same
// plan from the same rows. The inputs are what Panoptes already holds: the
// MultiClusterService (or the MCS-API ServiceExports found in members), every cluster's
// Service and EndpointSlices of that name, and the clusters' phases. The output is, per
// consumer cluster, the Service to ensure (or why none), the EndpointSlices to dispatch (one
// per provider slice, named by dispatchedSliceName) and the ServiceImport where the consumer
// has the CRD; everything else Panoptes dispatched for that Service is to be deleted.
import {
  annotations,
  dispatchedSliceName,
  dispatchManagedBy,
  labels,
  listed,
  managedByLabel,
  managedByValue,
  mcsApi,
  providerNotReadyOf,
  providerReadyAnnotation,
  type McsProviderStatus,
  type MultiClusterServicePort,
  type MultiClusterServiceSpec,
  type MultiClusterServiceStatus,
} from '../../api/multicluster-service.ts';
import type { KubeObject } from '../../storage/types.ts';

/** A Service of one namespace and name, the unit of dispatch. */
export interface ServiceKey {
  namespace: string;
  name: string;
}

export const keyString = (k: ServiceKey): string => `${k.namespace}/${k.name}`;

/** What the dispatcher knows of a member cluster, from its row in the clusters table. */
export interface ClusterView {
  name: string;
  /** Its data is current: Ready, or starting under a new owner (Pending, not NotSynced). */
  ready: boolean;
  /** Since when it is not (RFC 3339), for the grace period. */
  notReadySince?: string;
  /** Its phase and reason, for messages. */
  phase: string;
  /** It serves ServiceImports (multicluster.x-k8s.io/v1alpha1): the CRD is there. */
  serviceImports: boolean;
}

/** The MultiClusterService of a key, as the plan needs it. */
export interface McsView {
  uid: string;
  generation: number;
  spec: MultiClusterServiceSpec;
  deleting: boolean;
  status?: MultiClusterServiceStatus;
}

/** One object of a member, as storage holds it. */
export interface ClusterObject {
  cluster: string;
  object: KubeObject;
  /** The member's resourceVersion of it, as synced. */
  upstreamRv?: string;
}

export interface KeyInputs {
  key: ServiceKey;
  /** ms since the epoch: grace periods are measured against it. */
  now: number;
  clusters: ClusterView[];
  mcs?: McsView;
  /** Clusters holding a ServiceExport of this namespace/name (used when there is no MultiClusterService). */
  exporters: string[];
  /** Every cluster's Service of this namespace/name. */
  services: ClusterObject[];
  /** Every cluster's EndpointSlices of this namespace labelled kubernetes.io/service-name=<name> (dispatched ones too: they are skipped). */
  slices: ClusterObject[];
  /** How long a deletion waits for a consumer that is not Ready (default awayGraceDefaultMs). */
  awayGraceMs?: number;
}

export const awayGraceDefaultMs = 300_000;

export type ServicePlan =
  /** A Service Panoptes creates and keeps (no selector, its ports from the providers). */
  | { kind: 'ensure'; object: KubeObject }
  /** The consumer provides the Service itself: its own Service stays as it is. */
  | { kind: 'provider' }
  /** The consumer has a Service Panoptes did not create and does not provide it: nothing is dispatched there. */
  | { kind: 'conflict'; message: string }
  /** Nothing to dispatch: no provider has the Service (or no port is left after the spec's filter). */
  | { kind: 'none'; reason: string; message: string };

export interface ConsumerPlan {
  cluster: string;
  service: ServicePlan;
  /** The dispatched EndpointSlices, by name. */
  slices: Map<string, KubeObject>;
  /** Where the consumer has the CRD. */
  serviceImport?: KubeObject;
}

export interface KeyPlan {
  key: ServiceKey;
  /** What exports it: a MultiClusterService, ServiceExports in members, or nothing (everything dispatched for it goes). */
  source?: 'MultiClusterService' | 'ServiceExport';
  deleting: boolean;
  /** The MultiClusterService's generation the plan was made from. */
  generation?: number;
  /** The consumer clusters (known clusters the spec names; none is left out while deleting). */
  consumerSet: string[];
  /** What each consumer should hold (empty while deleting: everything goes). */
  consumers: Map<string, ConsumerPlan>;
  providers: McsProviderStatus[];
  /** Providers whose endpoints are dispatched now. */
  dispatching: string[];
  /** When the plan changes by itself (a grace period ends), ms since the epoch. */
  recheckAt?: number;
  /**
   * While deleting: the consumers the deletion does not wait for, since they cannot be cleaned
   * now: no longer registered, or not Ready for longer than the grace. What Panoptes dispatched
   * there is removed when they are back (a full pass plans every key of what it dispatched).
   */
  away: string[];
}

type Obj = Record<string, unknown>;
const isRecord = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Whether an object carries Panoptes' managed-by mark: the only objects ever updated or deleted. */
export const isManaged = (o: KubeObject | undefined): boolean => o?.metadata?.labels?.[managedByLabel] === managedByValue;

/** A slice Panoptes dispatched (never collected back as a provider's). */
export const isDispatchedSlice = (o: KubeObject): boolean => isManaged(o) || o.metadata?.labels?.[labels.endpointSliceManagedBy] === dispatchManagedBy;

interface ServicePort {
  name?: string;
  protocol?: string;
  port: number;
  appProtocol?: string;
}

const portsOf = (svc: KubeObject): ServicePort[] => {
  const spec = isRecord(svc.spec) ? svc.spec : {};
  return (Array.isArray(spec.ports) ? spec.ports : []).filter(isRecord).filter((p) => typeof p.port === 'number') as unknown as ServicePort[];
};

/** A Service port the spec's filter selects (no filter: every port). */
function selected(filter: MultiClusterServicePort[] | undefined, p: ServicePort): boolean {
  if (!filter) return true;
  return filter.some((f) => (f.name === undefined || f.name === (p.name ?? '')) && (f.port === undefined || f.port === p.port));
}

/** A Service port as Panoptes writes it: name, protocol, port and appProtocol (targetPort defaults to port; a Service without a selector takes its endpoints' ports from its slices). */
function servicePort(p: ServicePort): ServicePort {
  return { ...(p.name ? { name: p.name } : {}), protocol: p.protocol ?? 'TCP', port: p.port, ...(p.appProtocol ? { appProtocol: p.appProtocol } : {}) };
}

/** The ports of every provider's Service, filtered, each name and each port/protocol once (the first provider by name wins). */
function mergedPorts(providerServices: ClusterObject[], filter: MultiClusterServicePort[] | undefined): ServicePort[] {
  const out: ServicePort[] = [];
  const names = new Set<string>();
  const numbers = new Set<string>();
  for (const s of providerServices) {
    for (const p of portsOf(s.object)) {
      if (!selected(filter, p)) continue;
      const port = servicePort(p);
      const number = `${port.port}/${port.protocol}`;
      if (names.has(port.name ?? '') || numbers.has(number)) continue;
      names.add(port.name ?? '');
      numbers.add(number);
      out.push(port);
    }
  }
  // kube requires a name on every port of a Service with several: ValidateService in
  // k8s.io/kubernetes pkg/apis/core/validation/validation.go passes requireName = len(ports) > 1
  // to validateServicePort ("spec.ports[i].name: Required value").
  return out.length > 1 ? out.filter((p) => p.name) : out;
}

const headless = (svc: KubeObject): boolean => isRecord(svc.spec) && svc.spec.clusterIP === 'None';

/** When a provider stopped being Ready: the earlier of its cluster's transition and what the status recorded while it stayed not Ready. */
function notReadySince(view: ClusterView, recorded: McsProviderStatus | undefined): string | undefined {
  if (view.ready) return undefined;
  const times = [view.notReadySince, recorded && !recorded.ready ? recorded.notReadySince : undefined].filter((t): t is string => typeof t === 'string' && !Number.isNaN(Date.parse(t)));
  if (times.length === 0) return undefined;
  return times.reduce((a, b) => (Date.parse(a) <= Date.parse(b) ? a : b));
}

const readyEndpoints = (slice: KubeObject): number =>
  (Array.isArray(slice.endpoints) ? slice.endpoints : []).filter((e) => !isRecord(e) || !isRecord(e.conditions) || e.conditions.ready !== false).length;

/** The slice dispatched for provider `cluster`'s slice `src`, its ports filtered to `portNames` (undefined: all), or undefined when no port is left. */
function dispatchedSlice(key: ServiceKey, cluster: string, src: KubeObject, portNames: Set<string> | undefined, provider: { ready: boolean; lastSync: string }): KubeObject | undefined {
  const srcPorts = (Array.isArray(src.ports) ? src.ports : []).filter(isRecord);
  const ports = portNames ? srcPorts.filter((p) => portNames.has(typeof p.name === 'string' ? p.name : '')) : srcPorts;
  if (portNames && srcPorts.length > 0 && ports.length === 0) return undefined;
  const srcName = src.metadata?.name ?? '';
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name: dispatchedSliceName(cluster, srcName),
      namespace: key.namespace,
      labels: {
        [labels.serviceName]: key.name,
        [labels.mcsServiceName]: key.name,
        [labels.sourceCluster]: cluster,
        [labels.endpointSliceManagedBy]: dispatchManagedBy,
        [managedByLabel]: managedByValue,
      },
      annotations: {
        [annotations.source]: `${cluster}/${key.namespace}/${srcName}`,
        [annotations.providerLastSync]: provider.lastSync,
        [providerReadyAnnotation]: String(provider.ready),
      },
    },
    addressType: src.addressType,
    endpoints: Array.isArray(src.endpoints) ? src.endpoints : [],
    ports,
  };
}

const iso = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** The plan of one key: see the module comment. */
export function planKey(inputs: KeyInputs): KeyPlan {
  const { key, mcs } = inputs;
  const views = new Map(inputs.clusters.map((c) => [c.name, c]));
  const known = [...views.keys()].sort();
  const source: KeyPlan['source'] = mcs ? 'MultiClusterService' : inputs.exporters.some((c) => views.has(c)) ? 'ServiceExport' : undefined;
  const empty: KeyPlan = { key, source, deleting: mcs?.deleting ?? false, generation: mcs?.generation, consumerSet: [], consumers: new Map(), providers: [], dispatching: [], away: [] };
  if (!source) return empty;

  // Providers: the clusters the spec names (or that export it) whose Service is their own.
  const ownServices = inputs.services.filter((s) => views.has(s.cluster) && !isManaged(s.object)).sort((a, b) => a.cluster.localeCompare(b.cluster));
  const mayProvide = (c: string) => (mcs ? listed(mcs.spec.providerClusters, c) : inputs.exporters.includes(c));
  const providerServices = ownServices.filter((s) => mayProvide(s.cluster));
  const providerNames = providerServices.map((s) => s.cluster);
  const consumerSet = mcs ? known.filter((c) => listed(mcs.spec.consumerClusters, c)) : known;
  const plan: KeyPlan = { ...empty, consumerSet };

  const policy = mcs ? providerNotReadyOf(mcs.spec) : providerNotReadyOf({});
  const recorded = new Map((mcs?.status?.providers ?? []).map((p) => [p.cluster, p]));
  const sliceOf = (c: string) => inputs.slices.filter((s) => s.cluster === c && !isDispatchedSlice(s.object));
  const dispatching: string[] = [];
  for (const c of providerNames) {
    const view = views.get(c)!;
    const since = notReadySince(view, recorded.get(c));
    plan.providers.push({ cluster: c, endpoints: sliceOf(c).reduce((n, s) => n + readyEndpoints(s.object), 0), ready: view.ready, ...(since ? { notReadySince: since } : {}) });
    if (view.ready || policy.policy === 'Keep') {
      dispatching.push(c);
      continue;
    }
    if (policy.policy === 'RemoveImmediately') continue;
    // KeepForGracePeriod, measured from when the provider stopped being Ready (now, when nobody recorded it).
    const graceEnds = (since ? Date.parse(since) : inputs.now) + policy.gracePeriodSeconds * 1000;
    if (inputs.now < graceEnds) {
      dispatching.push(c);
      plan.recheckAt = Math.min(plan.recheckAt ?? Infinity, graceEnds);
    }
  }
  plan.dispatching = dispatching;
  for (const p of plan.providers) p.dispatched = dispatching.includes(p.cluster);
  if (plan.deleting) {
    const grace = inputs.awayGraceMs ?? awayGraceDefaultMs;
    for (const c of new Set([...consumerSet, ...(mcs?.status?.consumers ?? []).map((e) => e.cluster)])) {
      const view = views.get(c);
      if (view?.ready) continue;
      const since = view?.notReadySince ? Date.parse(view.notReadySince) : Number.NaN;
      const ends = Number.isNaN(since) ? inputs.now : since + grace;
      if (inputs.now >= ends) plan.away.push(c);
      else plan.recheckAt = Math.min(plan.recheckAt ?? Infinity, ends);
    }
    plan.away.sort();
    return plan;
  }

  const ports = mergedPorts(providerServices, mcs?.spec.ports);
  const allHeadless = providerServices.length > 0 && providerServices.every((s) => headless(s.object));
  const portNames = mcs?.spec.ports ? new Set(ports.map((p) => p.name ?? '')) : undefined;
  const none = (reason: string, message: string): ServicePlan => ({ kind: 'none', reason, message });
  const nothing: ServicePlan | undefined =
    providerServices.length === 0
      ? none('NoProviderService', `no provider cluster has Service ${keyString(key)}${mcs?.spec.providerClusters?.length ? ` (providers: ${mcs.spec.providerClusters.join(', ')})` : ''}`)
      : ports.length === 0 && !allHeadless
        ? none('NoPorts', `no port of the providers' Service ${keyString(key)} is selected by spec.ports`)
        : undefined;

  // The slices of each dispatching provider, as every consumer but the provider itself gets them.
  const sliceSets = new Map<string, KubeObject[]>();
  for (const c of dispatching) {
    const view = views.get(c)!;
    const provider = { ready: view.ready, lastSync: view.ready ? iso(inputs.now) : (plan.providers.find((p) => p.cluster === c)?.notReadySince ?? iso(inputs.now)) };
    const out: KubeObject[] = [];
    for (const s of sliceOf(c).sort((a, b) => (a.object.metadata?.name ?? '').localeCompare(b.object.metadata?.name ?? ''))) {
      const d = dispatchedSlice(key, c, s.object, portNames, provider);
      if (d) out.push(d);
    }
    sliceSets.set(c, out);
  }

  const serviceObject: KubeObject = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: key.name, namespace: key.namespace, labels: { [managedByLabel]: managedByValue } },
    spec: { type: 'ClusterIP', ...(allHeadless ? { clusterIP: 'None' } : {}), ports },
  };
  const serviceImport: KubeObject = {
    apiVersion: `${mcsApi.group}/${mcsApi.version}`,
    kind: 'ServiceImport',
    metadata: { name: key.name, namespace: key.namespace, labels: { [managedByLabel]: managedByValue } },
    spec: { type: allHeadless ? 'Headless' : 'ClusterSetIP', ports },
    status: { clusters: dispatching.map((cluster) => ({ cluster })) },
  };

  for (const c of consumerSet) {
    const own = ownServices.find((s) => s.cluster === c);
    let service: ServicePlan;
    if (nothing) service = nothing;
    else if (providerNames.includes(c)) service = { kind: 'provider' };
    else if (own) service = { kind: 'conflict', message: `cluster ${c} has a Service ${keyString(key)} that Panoptes did not create (no label ${managedByLabel}=${managedByValue}) and that is not a provider of it: nothing is dispatched there` };
    else service = { kind: 'ensure', object: serviceObject };
    const slices = new Map<string, KubeObject>();
    if (service.kind === 'ensure' || service.kind === 'provider') {
      for (const [p, set] of sliceSets) if (p !== c) for (const s of set) slices.set(s.metadata!.name!, s);
    }
    const withImport = (service.kind === 'ensure' || service.kind === 'provider') && views.get(c)!.serviceImports;
    plan.consumers.set(c, { cluster: c, service, slices, ...(withImport ? { serviceImport } : {}) });
  }
  return plan;
}
