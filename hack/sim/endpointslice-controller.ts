// kube-controller-manager's EndpointSlice controller: for every Service with a selector, the
// EndpointSlices (managed-by endpointslice-controller.k8s.io) listing the pods it selects,
// grouped by their resolved ports, at most maxEndpointsPerSlice endpoints per slice, placed
// as kube's reconciler places them (existing slices kept and filled before new ones are made,
// a placeholder slice when nothing is selected). Slices managed by anyone else are never
// touched, and a Service without a selector (or of type ExternalName) gets none.
// Ref: pkg/controller/endpointslice/endpointslice_controller.go (syncService),
// staging/src/k8s.io/endpointslice/reconciler.go and utils.go (podToEndpoint,
// getEndpointPorts, newEndpointSlice, setEndpointSliceLabels, getSliceToFill),
// staging/src/k8s.io/endpointslice/util/controller_utils.go (ShouldPodBeInEndpoints).
import type { Crud } from './crud.ts';
import { controllerManager, info } from './deployment-controller.ts';
import { isPodReady, isTerminal } from './pod-placement.ts';
import { isObject, kubeTime, stable, type JsonObject, type KObject } from './types.ts';

export const endpointSliceController = 'endpointslice-controller.k8s.io';
/** kube-controller-manager's --max-endpoints-per-slice default. */
export const defaultMaxEndpointsPerSlice = 100;

const labelServiceName = 'kubernetes.io/service-name';
const labelManagedBy = 'endpointslice.kubernetes.io/managed-by';
const labelHeadless = 'service.kubernetes.io/headless';
const triggerTimeAnnotation = 'endpoints.kubernetes.io/last-change-trigger-time';
const slicesId = 'discovery.k8s.io/endpointslices';

type AddressType = 'IPv4' | 'IPv6';

interface Port {
  name: string;
  port: number;
  protocol: string;
  appProtocol?: string;
}

interface Slice {
  /** Empty for a slice to create. */
  name: string;
  stored?: KObject;
  addressType: AddressType;
  ports: Port[];
  endpoints: JsonObject[];
  labels: Record<string, string>;
}

const specOf = (o: KObject): JsonObject => (isObject(o.spec) ? o.spec : {});

/** The Service's selector as kube's controller sees it: absent, null and {} all mean none. */
function selectorOf(svc: KObject): Record<string, string> | undefined {
  const sel = specOf(svc).selector;
  return isObject(sel) && Object.keys(sel).length > 0 ? (sel as Record<string, string>) : undefined;
}

/** Whether a Service selects a pod (labels.Set(selector).AsSelector()). */
export function serviceSelects(svc: KObject, pod: KObject | undefined): boolean {
  const sel = selectorOf(svc);
  if (!sel || !pod || pod.metadata.namespace !== svc.metadata.namespace) return false;
  return Object.entries(sel).every(([k, v]) => pod.metadata.labels?.[k] === v);
}

const isIPv6 = (ip: string) => ip.includes(':');

/** getAddressTypesForService: the Service's ipFamilies, or the family of its clusterIP, or both when headless. */
function addressTypes(svc: KObject): AddressType[] {
  const spec = specOf(svc);
  const families = Array.isArray(spec.ipFamilies) ? spec.ipFamilies : [];
  const out = new Set<AddressType>();
  for (const f of families) if (f === 'IPv4' || f === 'IPv6') out.add(f);
  if (out.size) return [...out];
  const ip = typeof spec.clusterIP === 'string' ? spec.clusterIP : '';
  if (ip !== '' && ip !== 'None') return [isIPv6(ip) ? 'IPv6' : 'IPv4'];
  return ['IPv4', 'IPv6'];
}

/** ShouldPodBeInEndpoints(pod, includeTerminating=true): not terminal and has an address. */
function shouldBeInEndpoints(pod: KObject): boolean {
  if (isTerminal(pod)) return false;
  const status = isObject(pod.status) ? pod.status : {};
  return (typeof status.podIP === 'string' && status.podIP !== '') || (Array.isArray(status.podIPs) && status.podIPs.length > 0);
}

function podIPs(pod: KObject): string[] {
  const status = isObject(pod.status) ? pod.status : {};
  const list = Array.isArray(status.podIPs) ? status.podIPs.filter(isObject).map((p) => String(p.ip)) : [];
  return list.length ? list : typeof status.podIP === 'string' && status.podIP ? [status.podIP] : [];
}

/** FindPort: a numeric targetPort as it is; a named one from the pod's containers (and restartable init containers) with the same protocol. */
function findPort(pod: KObject, sp: JsonObject): number | undefined {
  const target = sp.targetPort ?? sp.port;
  if (typeof target === 'number') return target;
  if (typeof target !== 'string') return undefined;
  const spec = specOf(pod);
  const containers = [
    ...(Array.isArray(spec.containers) ? spec.containers : []),
    ...(Array.isArray(spec.initContainers) ? spec.initContainers.filter((c) => isObject(c) && c.restartPolicy === 'Always') : []),
  ].filter(isObject);
  for (const c of containers) {
    for (const p of Array.isArray(c.ports) ? c.ports.filter(isObject) : []) {
      if (p.name === target && (p.protocol ?? 'TCP') === (sp.protocol ?? 'TCP') && typeof p.containerPort === 'number') return p.containerPort;
    }
  }
  return undefined;
}

/** getEndpointPorts: the Service's ports with their target resolved for this pod; a port that does not resolve is left out. */
function endpointPorts(svc: KObject, pod: KObject): Port[] {
  const spec = specOf(svc);
  const ports = Array.isArray(spec.ports) ? spec.ports.filter(isObject) : [];
  const out: Port[] = [];
  for (const sp of ports) {
    const port = findPort(pod, sp);
    if (port === undefined) continue;
    out.push({ name: typeof sp.name === 'string' ? sp.name : '', port, protocol: typeof sp.protocol === 'string' ? sp.protocol : 'TCP', ...(typeof sp.appProtocol === 'string' ? { appProtocol: sp.appProtocol } : {}) });
  }
  return out;
}

/** endpointsliceutil.NewPortMapKey: the same ports in any order group together. */
function portKey(ports: Port[]): string {
  return stable([...ports].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.port - b.port)));
}

function storedPorts(slice: KObject): Port[] {
  return (Array.isArray(slice.ports) ? slice.ports.filter(isObject) : []).map((p) => ({
    name: typeof p.name === 'string' ? p.name : '',
    port: Number(p.port),
    protocol: typeof p.protocol === 'string' ? p.protocol : 'TCP',
    ...(typeof p.appProtocol === 'string' ? { appProtocol: p.appProtocol } : {}),
  }));
}

/** podToEndpoint */
function podToEndpoint(pod: KObject, node: KObject | undefined, svc: KObject, type: AddressType): JsonObject {
  const spec = specOf(svc);
  const serving = isPodReady(pod);
  const terminating = pod.metadata.deletionTimestamp !== undefined;
  const ready = spec.publishNotReadyAddresses === true || (serving && !terminating);
  const podSpec = specOf(pod);
  const ep: JsonObject = {
    addresses: podIPs(pod).filter((ip) => isIPv6(ip) === (type === 'IPv6')),
    conditions: { ready, serving, terminating },
  };
  if (typeof podSpec.hostname === 'string' && podSpec.hostname !== '' && podSpec.subdomain === svc.metadata.name) ep.hostname = podSpec.hostname;
  ep.targetRef = { kind: 'Pod', namespace: pod.metadata.namespace, name: pod.metadata.name, uid: pod.metadata.uid };
  if (typeof podSpec.nodeName === 'string' && podSpec.nodeName !== '') ep.nodeName = podSpec.nodeName;
  const zone = node?.metadata.labels?.['topology.kubernetes.io/zone'];
  if (zone) ep.zone = zone;
  return ep;
}

/** The endpoint's identity in kube's EndpointSet: its addresses, hostname and target pod. */
function endpointKey(ep: JsonObject): string {
  const ref = isObject(ep.targetRef) ? ep.targetRef : {};
  const addresses = Array.isArray(ep.addresses) ? [...ep.addresses].map(String).sort() : [];
  return stable({ addresses, hostname: ep.hostname, namespace: ref.namespace, name: ref.name });
}

/** setEndpointSliceLabels: the Service's labels but the reserved ones, the headless mark, service-name and managed-by. */
function sliceLabels(svc: KObject): Record<string, string> {
  const reserved = [labelServiceName, labelManagedBy, labelHeadless];
  const labels = Object.fromEntries(Object.entries(svc.metadata.labels ?? {}).filter(([k]) => !reserved.includes(k)));
  const ip = specOf(svc).clusterIP;
  if (ip === 'None' || ip === '' || ip === undefined) labels[labelHeadless] = '';
  labels[labelServiceName] = svc.metadata.name!;
  labels[labelManagedBy] = endpointSliceController;
  return labels;
}

/** Whether the slice is owned by this Service (ownedBy: its uid, kind Service, apiVersion v1). */
function ownedByService(slice: KObject, svc: KObject): boolean {
  return (slice.metadata.ownerReferences ?? []).some((r) => r.uid === svc.metadata.uid && r.kind === 'Service' && r.apiVersion === 'v1');
}

interface Plan {
  create: Slice[];
  update: Slice[];
  delete: KObject[];
}

function fromStored(slice: KObject, labels: Record<string, string>): Slice {
  return {
    name: slice.metadata.name!,
    stored: slice,
    addressType: slice.addressType as AddressType,
    ports: storedPorts(slice),
    endpoints: Array.isArray(slice.endpoints) ? slice.endpoints.filter(isObject) : [],
    labels,
  };
}

/** reconcileByPortMapping: keep and update what is still desired, fill updated slices, then one unchanged slice that takes the rest, then new slices. */
function reconcilePortMapping(existing: KObject[], desired: Map<string, JsonObject>, ports: Port[], type: AddressType, labels: Record<string, string>, max: number): Plan {
  const plan: Plan = { create: [], update: [], delete: [] };
  const unchanged: Slice[] = [];
  const toUpdate: Slice[] = [];
  for (const stored of existing) {
    const slice = fromStored(stored, labels);
    const kept: JsonObject[] = [];
    let changed = false;
    for (const ep of slice.endpoints) {
      const key = endpointKey(ep);
      const want = desired.get(key);
      if (!want) continue;
      kept.push(want);
      if (stable(want) !== stable(ep)) changed = true;
      desired.delete(key);
    }
    const labelsChanged = stable(stored.metadata.labels ?? {}) !== stable(labels);
    if (changed || kept.length !== slice.endpoints.length) {
      if (kept.length === 0) plan.delete.push(stored);
      else toUpdate.push({ ...slice, endpoints: kept });
    } else if (labelsChanged) {
      toUpdate.push(slice);
    } else {
      unchanged.push(slice);
    }
  }
  const rest = [...desired.values()].sort((a, b) => (endpointKey(a) < endpointKey(b) ? -1 : 1));
  if (rest.length && toUpdate.length) {
    for (const slice of [...toUpdate].sort((a, b) => b.endpoints.length - a.endpoints.length)) {
      while (rest.length && slice.endpoints.length < max) slice.endpoints.push(rest.shift()!);
    }
  }
  while (rest.length) {
    let fill: Slice | undefined;
    if (rest.length < max && unchanged.length) {
      // getSliceToFill: the slice closest to full once the rest is added.
      let closest = max;
      for (const s of unchanged) {
        const diff = max - (rest.length + s.endpoints.length);
        if (diff >= 0 && diff < closest) {
          closest = diff;
          fill = s;
        }
      }
    }
    if (fill) {
      unchanged.splice(unchanged.indexOf(fill), 1);
      fill = { ...fill, endpoints: [...fill.endpoints] };
    } else {
      fill = { name: '', addressType: type, ports, endpoints: [], labels };
    }
    while (rest.length && fill.endpoints.length < max) fill.endpoints.push(rest.shift()!);
    (fill.name ? toUpdate : plan.create).push(fill);
  }
  plan.update = toUpdate;
  return plan;
}

/** reconcileByAddressType: the slices of one address type, by port mapping, with the placeholder when none would be left. */
function reconcileAddressType(crud: Crud, svc: KObject, pods: KObject[], existing: KObject[], type: AddressType, max: number): Plan {
  const plan: Plan = { create: [], update: [], delete: [] };
  const labels = sliceLabels(svc);
  const existingByPorts = new Map<string, KObject[]>();
  for (const slice of existing) {
    if (!ownedByService(slice, svc)) {
      plan.delete.push(slice);
      continue;
    }
    const key = portKey(storedPorts(slice));
    existingByPorts.set(key, [...(existingByPorts.get(key) ?? []), slice]);
  }
  const desired = new Map<string, { ports: Port[]; endpoints: Map<string, JsonObject> }>();
  for (const pod of pods) {
    if (!shouldBeInEndpoints(pod)) continue;
    const ports = endpointPorts(svc, pod);
    const key = portKey(ports);
    const nodeName = specOf(pod).nodeName;
    const node = typeof nodeName === 'string' && nodeName ? crud.store.get('/nodes', undefined, nodeName) : undefined;
    // A pod on a node that does not exist is left out (and kube retries), unless not-ready addresses are published.
    if (typeof nodeName === 'string' && nodeName && !node && specOf(svc).publishNotReadyAddresses !== true) continue;
    const ep = podToEndpoint(pod, node, svc, type);
    if ((ep.addresses as string[]).length === 0) continue;
    if (!desired.has(key)) desired.set(key, { ports, endpoints: new Map() });
    desired.get(key)!.endpoints.set(endpointKey(ep), ep);
  }
  for (const [key, want] of desired) {
    const p = reconcilePortMapping(existingByPorts.get(key) ?? [], want.endpoints, want.ports, type, labels, max);
    plan.create.push(...p.create);
    plan.update.push(...p.update);
    plan.delete.push(...p.delete);
  }
  for (const [key, slices] of existingByPorts) if (!desired.has(key)) plan.delete.push(...slices);
  if (existing.length === plan.delete.length && plan.create.length === 0) {
    const placeholder: Slice = { name: '', addressType: type, ports: [], endpoints: [], labels };
    const only = plan.delete.length === 1 ? plan.delete[0] : undefined;
    const same = only && only.metadata.namespace === svc.metadata.namespace && stable(only.metadata.labels ?? {}) === stable(labels) &&
      only.addressType === type && (Array.isArray(only.endpoints) ? only.endpoints.length : 0) === 0 && storedPorts(only).length === 0;
    if (same) plan.delete = [];
    else plan.create.push(placeholder);
  }
  return plan;
}

/** The slice as the controller writes it; empty endpoints and ports are stored as null, as kube-apiserver returns them. */
function sliceBody(svc: KObject, s: Slice): KObject {
  const base: KObject = s.stored
    ? { ...s.stored, metadata: { ...s.stored.metadata } }
    : {
        metadata: {
          generateName: `${svc.metadata.name}-`,
          ownerReferences: [{ apiVersion: 'v1', kind: 'Service', name: svc.metadata.name!, uid: svc.metadata.uid!, controller: true, blockOwnerDeletion: true }],
        },
      };
  base.metadata.labels = s.labels;
  base.metadata.annotations = { ...base.metadata.annotations, [triggerTimeAnnotation]: kubeTime() };
  return {
    ...base,
    addressType: s.addressType,
    endpoints: s.endpoints.length ? s.endpoints : null,
    ports: s.ports.length ? s.ports : null,
  };
}

/** syncService: brings the EndpointSlices the controller manages for one Service to the pods it selects. */
export function syncService(crud: Crud, namespace: string, name: string, maxEndpointsPerSlice = defaultMaxEndpointsPerSlice): void {
  const svc = crud.store.get('/services', namespace, name);
  if (!svc) return;
  if (specOf(svc).type === 'ExternalName' || !selectorOf(svc)) return;
  const sliceInfo = info(crud, slicesId);
  const pods = crud.store.list('/pods', { namespace }).items.filter((p) => serviceSelects(svc, p));
  const existing = crud.store.list(slicesId, { namespace }).items.filter((s) =>
    s.metadata.labels?.[labelServiceName] === name && s.metadata.labels?.[labelManagedBy] === endpointSliceController && !s.metadata.deletionTimestamp);
  const types = addressTypes(svc);
  const plan: Plan = { create: [], update: [], delete: existing.filter((s) => !types.includes(s.addressType as AddressType)) };
  for (const type of types) {
    const p = reconcileAddressType(crud, svc, pods, existing.filter((s) => s.addressType === type), type, maxEndpointsPerSlice);
    plan.create.push(...p.create);
    plan.update.push(...p.update);
    plan.delete.push(...p.delete);
  }
  // finalize: a slice to create takes the place of one to delete (same address type, owned by this Service).
  for (let i = 0; i < plan.delete.length && plan.create.length > 0;) {
    const old = plan.delete[i];
    const slice = plan.create[plan.create.length - 1];
    if (old.addressType === slice.addressType && ownedByService(old, svc)) {
      plan.create.pop();
      plan.update.push({ ...slice, name: old.metadata.name!, stored: old });
      plan.delete.splice(i, 1);
    } else {
      i++;
    }
  }
  const opts = { fieldManager: controllerManager };
  if (!svc.metadata.deletionTimestamp) {
    for (const s of plan.create) crud.create(sliceInfo, 'v1', namespace, sliceBody(svc, s), opts);
  }
  for (const s of plan.update) crud.update(sliceInfo, 'v1', namespace, s.name, sliceBody(svc, s), opts);
  for (const s of plan.delete) {
    if (crud.store.get(slicesId, namespace, s.metadata.name!)) crud.delete(sliceInfo, namespace, s.metadata.name!, {});
  }
}

/** The Service an EndpointSlice event concerns, when the controller manages the slice. */
export function managedSliceService(slice: KObject | undefined): string | undefined {
  if (!slice || slice.metadata.labels?.[labelManagedBy] !== endpointSliceController) return undefined;
  return slice.metadata.labels?.[labelServiceName];
}
