// The desired state of one exported Service (a namespace/name), computed from storage alone:
// pure, no I/O, so that every synchro member holding a consumer's lease computes the same
// plan from the same rows. The inputs are what Panoptes already holds: the
// MultiClusterService (or the MCS-API ServiceExports found in members), every cluster's
// Service and EndpointSlices of that name, the clusters' phases, the roles the operator
// granted them (api/mcs-roles.ts: only a provider's endpoints are dispatched, only into a
// consumer) and the consumers' own address ranges. The output is, per consumer cluster, the
// Service to ensure (or why none), the EndpointSlices to dispatch (one per provider slice,
// named by dispatchedSliceName, without the endpoints kube would refuse or that would reach
// the consumer's own pods: addresses.ts) and the ServiceImport where the consumer has the
// CRD; everything else this installation dispatched for that Service is to be deleted. A
// consumer whose own Service has that name gets nothing (a conflict), also when it provides
// the Service itself: Panoptes adds nothing to a Service it did not create. System Services
// (kube-*, default/kubernetes) are dispatched only where the operator allows them.
import type { McsRoles } from '../../api/mcs-roles.ts';
import {
  annotations,
  dispatchedSliceName,
  dispatchManagedBy,
  labels,
  listed,
  mcsApi,
  providerNotReadyOf,
  providerReadyAnnotation,
  systemServiceProblem,
  type McsProviderStatus,
  type MultiClusterServicePort,
  type MultiClusterServiceSpec,
  type MultiClusterServiceStatus,
} from '../../api/multicluster-service.ts';
import type { KubeObject } from '../../storage/types.ts';
import { allowedEndpoints, parseRanges, type ConsumerRanges } from './addresses.ts';
import { isPanoptes, ownLabels } from './ownership.ts';

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
  /** What the operator granted it (api/mcs-roles.ts mcsRolesOf its Cluster's spec). */
  roles: McsRoles;
  /** Its own pod and service ranges, where known: no provider address inside them is dispatched to it. */
  ranges?: ConsumerRanges;
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
  /** How long a deletion waits for a consumer that is not Ready, or whose cleanup keeps failing (default awayGraceDefaultMs). */
  awayGraceMs?: number;
  /** This installation's id (Store.installationId): on everything it dispatches. */
  installation: string;
  /** System Services the operator allows (namespaces, or namespace/name: --mcs-allow-system-services). */
  allowedSystemServices?: readonly string[];
}

export const awayGraceDefaultMs = 300_000;

export type ServicePlan =
  /** A Service Panoptes creates and keeps (no selector, its ports from the providers). */
  | { kind: 'ensure'; object: KubeObject }
  /** The consumer provides the Service itself: its own Service stays as it is, and nothing is added to it. */
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
  /** Provider endpoints left out of its slices, each `address why` (addresses.ts), and how many. */
  refused: { endpoints: number; examples: string[] };
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
  /** Clusters the spec (or a ServiceExport) names for a role the operator did not grant them: why each takes no part. */
  ungranted: string[];
}

type Obj = Record<string, unknown>;
const isRecord = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A slice Panoptes dispatched, by any installation (never collected back as a provider's). */
export const isDispatchedSlice = (o: KubeObject): boolean => isPanoptes(o) || o.metadata?.labels?.[labels.endpointSliceManagedBy] === dispatchManagedBy;

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

/**
 * An endpoint of a provider kept for its grace period, as kube marks an endpoint that is going
 * away (EndpointSlice conditions, KEP-1672): `ready: false` and `terminating: true`, `serving` as
 * the provider last said (absent: its `ready`, absent too: true, as kube-proxy reads it). So
 * kube-proxy sends it no traffic while any ready endpoint is left (another provider's, or the
 * consumer's own), and only then falls back to it (KEP-1669, serving and terminating); cluster
 * DNS publishes only ready endpoints of a headless Service.
 */
function inGrace(e: unknown): unknown {
  if (!isRecord(e)) return e;
  const c = isRecord(e.conditions) ? e.conditions : {};
  const serving = typeof c.serving === 'boolean' ? c.serving : c.ready !== false;
  return { ...e, conditions: { ...c, ready: false, serving, terminating: true } };
}

/**
 * The slice dispatched for provider `cluster`'s slice `src`, its ports filtered to `portNames`
 * (undefined: all), or undefined when no port is left; the endpoints of a provider in its grace
 * period are marked as going away (inGrace), every other's are as the provider has them.
 */
function dispatchedSlice(key: ServiceKey, cluster: string, src: KubeObject, portNames: Set<string> | undefined, provider: { ready: boolean; lastSync: string; grace: boolean }, installation: string): KubeObject | undefined {
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
        ...ownLabels(installation),
      },
      annotations: {
        [annotations.source]: `${cluster}/${key.namespace}/${srcName}`,
        [annotations.providerLastSync]: provider.lastSync,
        [providerReadyAnnotation]: String(provider.ready),
      },
    },
    addressType: src.addressType,
    endpoints: Array.isArray(src.endpoints) ? (provider.grace ? src.endpoints.map(inGrace) : src.endpoints) : [],
    ports,
  };
}

const iso = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** The plan of one key: see the module comment. */
export function planKey(inputs: KeyInputs): KeyPlan {
  const { key, mcs, installation } = inputs;
  const views = new Map(inputs.clusters.map((c) => [c.name, c]));
  const known = [...views.keys()].sort();
  const granted = (c: string, role: keyof McsRoles) => views.get(c)?.roles[role] === true;
  // A ServiceExport exports only from a provider the operator granted.
  const exporters = inputs.exporters.filter((c) => granted(c, 'provider'));
  const system = systemServiceProblem(key, inputs.allowedSystemServices);
  const source: KeyPlan['source'] = mcs ? 'MultiClusterService' : exporters.length > 0 && !system ? 'ServiceExport' : undefined;
  const empty: KeyPlan = { key, source, deleting: mcs?.deleting ?? false, generation: mcs?.generation, consumerSet: [], consumers: new Map(), providers: [], dispatching: [], away: [], ungranted: [] };
  if (!source) return empty;

  // Who the spec names for a role the operator did not grant (named explicitly, or exporting).
  const ungranted = (role: keyof McsRoles, named: string[]) =>
    named.filter((c) => views.has(c) && !granted(c, role)).map((c) => `${c} is not a ${role} (spec.multiClusterServices.${role} of Cluster ${c} is not true)`);
  const plan: KeyPlan = {
    ...empty,
    ungranted: [...new Set([...ungranted('provider', mcs ? (mcs.spec.providerClusters ?? []) : inputs.exporters), ...ungranted('consumer', mcs?.spec.consumerClusters ?? [])])],
  };

  // Providers: the granted clusters the spec names (or that export it) whose Service is their own.
  const ownServices = inputs.services.filter((s) => views.has(s.cluster) && !isPanoptes(s.object)).sort((a, b) => a.cluster.localeCompare(b.cluster));
  const mayProvide = (c: string) => granted(c, 'provider') && (mcs ? listed(mcs.spec.providerClusters, c) : exporters.includes(c));
  const providerServices = ownServices.filter((s) => mayProvide(s.cluster));
  const providerNames = providerServices.map((s) => s.cluster);
  plan.consumerSet = known.filter((c) => granted(c, 'consumer') && (mcs ? listed(mcs.spec.consumerClusters, c) : true));

  const policy = mcs ? providerNotReadyOf(mcs.spec) : providerNotReadyOf({});
  const recorded = new Map((mcs?.status?.providers ?? []).map((p) => [p.cluster, p]));
  const sliceOf = (c: string) => inputs.slices.filter((s) => s.cluster === c && !isDispatchedSlice(s.object));
  const dispatching: string[] = [];
  /** Providers kept only for their grace period (KeepForGracePeriod, not Ready): their endpoints are going away. */
  const inGracePeriod = new Set<string>();
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
      inGracePeriod.add(c);
      plan.recheckAt = Math.min(plan.recheckAt ?? Infinity, graceEnds);
    }
  }
  plan.dispatching = dispatching;
  for (const p of plan.providers) p.dispatched = dispatching.includes(p.cluster);
  if (plan.deleting) {
    planAway(plan, inputs);
    return plan;
  }

  const ports = mergedPorts(providerServices, mcs?.spec.ports);
  const allHeadless = providerServices.length > 0 && providerServices.every((s) => headless(s.object));
  const portNames = mcs?.spec.ports ? new Set(ports.map((p) => p.name ?? '')) : undefined;
  const none = (reason: string, message: string): ServicePlan => ({ kind: 'none', reason, message });
  const nothing: ServicePlan | undefined = system
    ? none('SystemService', `${keyString(key)} is not dispatched: ${system}`)
    : providerServices.length === 0
      ? none('NoProviderService', `no provider cluster has Service ${keyString(key)}${mcs?.spec.providerClusters?.length ? ` (providers: ${mcs.spec.providerClusters.join(', ')})` : ''}`)
      : ports.length === 0 && !allHeadless
        ? none('NoPorts', `no port of the providers' Service ${keyString(key)} is selected by spec.ports`)
        : undefined;

  // The slices of each dispatching provider, as every consumer but the provider itself gets them.
  const sliceSets = new Map<string, KubeObject[]>();
  for (const c of dispatching) {
    const view = views.get(c)!;
    const provider = { ready: view.ready, lastSync: view.ready ? iso(inputs.now) : (plan.providers.find((p) => p.cluster === c)?.notReadySince ?? iso(inputs.now)), grace: inGracePeriod.has(c) };
    const out: KubeObject[] = [];
    for (const s of sliceOf(c).sort((a, b) => (a.object.metadata?.name ?? '').localeCompare(b.object.metadata?.name ?? ''))) {
      const d = dispatchedSlice(key, c, s.object, portNames, provider, installation);
      if (d) out.push(d);
    }
    sliceSets.set(c, out);
  }

  const serviceObject: KubeObject = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: key.name, namespace: key.namespace, labels: ownLabels(installation) },
    spec: { type: 'ClusterIP', ...(allHeadless ? { clusterIP: 'None' } : {}), ports },
  };
  const serviceImport: KubeObject = {
    apiVersion: `${mcsApi.group}/${mcsApi.version}`,
    kind: 'ServiceImport',
    metadata: { name: key.name, namespace: key.namespace, labels: ownLabels(installation) },
    spec: { type: allHeadless ? 'Headless' : 'ClusterSetIP', ports },
    status: { clusters: dispatching.map((cluster) => ({ cluster })) },
  };

  // What a consumer may be given of each slice: the same for every consumer whose own ranges are
  // not known (the addresses kube refuses alone), computed once for them.
  const unranged = new Map<KubeObject, { slice: KubeObject; refused: string[] }>();
  const allowedFor = (consumer: string, ranges: ConsumerRanges | undefined) => {
    const parsed = parseRanges(ranges);
    const cache = parsed.cidrs.length === 0 ? unranged : new Map<KubeObject, { slice: KubeObject; refused: string[] }>();
    return (s: KubeObject) => {
      let r = cache.get(s);
      if (!r) {
        const { endpoints, refused } = allowedEndpoints(s, consumer, parsed);
        r = { slice: refused.length ? { ...s, endpoints } : s, refused };
        cache.set(s, r);
      }
      return r;
    };
  };

  for (const c of plan.consumerSet) {
    const own = ownServices.find((s) => s.cluster === c);
    let service: ServicePlan;
    if (nothing) service = nothing;
    else if (providerNames.includes(c)) service = { kind: 'provider' };
    else if (own) service = { kind: 'conflict', message: `cluster ${c} has a Service ${keyString(key)} that Panoptes did not create and that is not a provider of it: nothing is dispatched there` };
    else service = { kind: 'ensure', object: serviceObject };
    const cp: ConsumerPlan = { cluster: c, service, slices: new Map(), refused: { endpoints: 0, examples: [] } };
    // Only into a Service of Panoptes' own: a consumer's own Service (a provider's too) gets no slices.
    if (service.kind === 'ensure') {
      const allowed = allowedFor(c, views.get(c)!.ranges);
      for (const [p, set] of sliceSets) {
        if (p === c) continue;
        for (const s of set) {
          const { slice, refused } = allowed(s);
          cp.slices.set(s.metadata!.name!, slice);
          cp.refused.endpoints += refused.length;
          for (const r of refused) if (cp.refused.examples.length < 3) cp.refused.examples.push(`${s.metadata?.annotations?.[annotations.source]}: ${r}`);
        }
      }
      if (views.get(c)!.serviceImports) cp.serviceImport = serviceImport;
    }
    plan.consumers.set(c, cp);
  }
  return plan;
}

/**
 * A deleting plan's consumers it does not wait for (KeyPlan.away): not registered any more,
 * not Ready for longer than the grace, or Ready but with a cleanup that keeps failing for
 * longer than the grace (its entry's failingSince): what Panoptes dispatched there is removed
 * when it can be, since a full pass plans every key of what it dispatched into each consumer.
 */
function planAway(plan: KeyPlan, inputs: KeyInputs): void {
  const views = new Map(inputs.clusters.map((c) => [c.name, c]));
  const grace = inputs.awayGraceMs ?? awayGraceDefaultMs;
  const entries = new Map((inputs.mcs?.status?.consumers ?? []).map((e) => [e.cluster, e]));
  for (const c of new Set([...plan.consumerSet, ...entries.keys()])) {
    const view = views.get(c);
    const failing = view?.ready ? entries.get(c)?.failingSince : undefined;
    if (view?.ready && !failing) continue;
    const since = Date.parse((view?.ready ? failing : view?.notReadySince) ?? '');
    const ends = Number.isNaN(since) ? inputs.now : since + grace;
    if (inputs.now >= ends) plan.away.push(c);
    else plan.recheckAt = Math.min(plan.recheckAt ?? Infinity, ends);
  }
  plan.away.sort();
}
