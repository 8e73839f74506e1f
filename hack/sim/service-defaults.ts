// What kube-apiserver fills in on a Service and an EndpointSlice it is written, and the
// Service's allocations: the defaults of the v1 API (SetDefaults_Service, SetDefaults_ServicePort,
// SetDefaults_EndpointPort), the IP family fields and the clusterIP and nodePorts the
// registry allocates (pkg/registry/core/service/storage/alloc.go), kept on an update that
// leaves them out (patchAllocatedValues), refused when taken or out of range, with kube's
// 422s. The cluster is single-stack IPv4: services from 10.96.0.0/12, node ports 30000-32767.
import { invalidObject, fieldInvalid } from '../../kube/field-errors.ts';
import type { Store } from './store.ts';
import { isObject, type JsonObject, type KObject } from './types.ts';

/** kube-apiserver's --service-cluster-ip-range as kind sets it. */
export const serviceCIDR = '10.96.0.0/12';
const serviceBase = (10 << 24) | (96 << 16);
const serviceSize = 1 << 20;
/** --service-node-port-range default. */
const nodePortRange = [30000, 32767] as const;

const ipToInt = (ip: string): number | undefined => {
  const p = ip.split('.').map(Number);
  return p.length === 4 && p.every((x) => Number.isInteger(x) && x >= 0 && x <= 255) ? ((p[0] << 24) | (p[1] << 16) | (p[2] << 8) | p[3]) >>> 0 : undefined;
};
const intToIp = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');

const specOf = (o: KObject | undefined): JsonObject => (o && isObject(o.spec) ? o.spec : {});
const portsOf = (spec: JsonObject): JsonObject[] => (Array.isArray(spec.ports) ? spec.ports.filter(isObject) : []);
const needsClusterIP = (spec: JsonObject) => spec.type !== 'ExternalName' && spec.clusterIP !== 'None';
const needsNodePorts = (spec: JsonObject) => spec.type === 'NodePort' || spec.type === 'LoadBalancer';

/**
 * The v1 defaults of a Service, and on an update what the old one had allocated when the new
 * one leaves it out. Returns the new spec.
 */
export function defaultService(obj: KObject, old?: KObject): JsonObject {
  const spec: JsonObject = { ...specOf(obj) };
  const prev = specOf(old);
  spec.type ??= 'ClusterIP';
  spec.sessionAffinity ??= 'None';
  if (spec.sessionAffinity === 'ClientIP' && !isObject(spec.sessionAffinityConfig)) spec.sessionAffinityConfig = { clientIP: { timeoutSeconds: 10800 } };
  if (Array.isArray(spec.ports)) {
    spec.ports = spec.ports.map((p) => {
      if (!isObject(p)) return p;
      const port: JsonObject = { ...p, protocol: p.protocol ?? 'TCP' };
      if (port.targetPort === undefined || port.targetPort === 0 || port.targetPort === '') port.targetPort = port.port;
      return port;
    });
  }
  if (spec.type !== 'ExternalName') spec.internalTrafficPolicy ??= 'Cluster';
  if (needsNodePorts(spec)) spec.externalTrafficPolicy ??= 'Cluster';
  normalizeClusterIPs(spec, old ? prev : undefined);
  if (old && needsClusterIP(prev) && needsClusterIP(spec)) {
    // patchAllocatedValues: a PUT without the allocated values keeps them.
    if (spec.clusterIP === undefined || spec.clusterIP === '') spec.clusterIP = prev.clusterIP;
    if (!Array.isArray(spec.clusterIPs) || spec.clusterIPs.length === 0) spec.clusterIPs = prev.clusterIPs;
  }
  if (old && needsNodePorts(prev) && needsNodePorts(spec) && Array.isArray(spec.ports)) {
    const oldPorts = portsOf(prev);
    spec.ports = spec.ports.map((p) => {
      if (!isObject(p) || (p.nodePort !== undefined && p.nodePort !== 0)) return p;
      const same = oldPorts.find((o) => o.port === p.port && (o.protocol ?? 'TCP') === p.protocol);
      return same?.nodePort ? { ...p, nodePort: same.nodePort } : p;
    });
  }
  if (spec.type !== 'ExternalName') {
    if (old && spec.ipFamilyPolicy === undefined) spec.ipFamilyPolicy = prev.ipFamilyPolicy;
    if (old && spec.ipFamilies === undefined) spec.ipFamilies = prev.ipFamilies;
    const headlessNoSelector = spec.clusterIP === 'None' && !(isObject(spec.selector) && Object.keys(spec.selector).length > 0);
    // initIPFamilyFields: a headless Service without selector is assumed dual-stack; the families
    // are what this single-stack cluster has.
    spec.ipFamilyPolicy ??= headlessNoSelector ? 'RequireDualStack' : 'SingleStack';
    spec.ipFamilies ??= ['IPv4'];
  }
  return spec;
}

const sameIPs = (a: unknown, b: unknown) => JSON.stringify(Array.isArray(a) ? a : []) === JSON.stringify(Array.isArray(b) ? b : []);

/** NormalizeClusterIPs (the Service strategy): what a client that sets only clusterIP, or only changes it, means for clusterIPs. */
function normalizeClusterIPs(spec: JsonObject, prev: JsonObject | undefined): void {
  const ip = typeof spec.clusterIP === 'string' ? spec.clusterIP : '';
  const ips = Array.isArray(spec.clusterIPs) ? spec.clusterIPs : [];
  if (!prev) {
    if (ip !== '' && ips.length === 0) spec.clusterIPs = [ip];
    return;
  }
  const oldIP = typeof prev.clusterIP === 'string' ? prev.clusterIP : '';
  const oldIPs = Array.isArray(prev.clusterIPs) ? prev.clusterIPs : [];
  if (oldIPs.length > 0 && ips.length === 0 && oldIP === ip) spec.clusterIPs = oldIPs;
  if (oldIP !== ip) {
    if (oldIP !== '' && ip === '') {
      if (sameIPs(oldIPs, spec.clusterIPs)) delete spec.clusterIPs;
    } else if (sameIPs(oldIPs, spec.clusterIPs)) {
      spec.clusterIPs = [ip];
    }
  }
}

function failure(obj: KObject, field: string, value: unknown, why: string): never {
  throw invalidObject({ group: '', kind: 'Service' }, obj.metadata.name ?? '', [fieldInvalid(field, value, why)]);
}

/**
 * The clusterIP (from 10.96.0.0/12, the next free one after the last given, as kind's range
 * starts its dynamic block low) and nodePorts of a new or changed Service; the spec with them.
 */
export function allocateService(store: Store, obj: KObject, cursor: { next: number }): JsonObject {
  const spec: JsonObject = { ...specOf(obj) };
  const name = obj.metadata.name;
  const others = store.list('/services').items.filter((s) => !(s.metadata.namespace === obj.metadata.namespace && s.metadata.name === name));
  if (needsClusterIP(spec)) {
    const used = new Set(others.map((s) => specOf(s).clusterIP).filter((ip): ip is string => typeof ip === 'string'));
    const requested = typeof spec.clusterIP === 'string' ? spec.clusterIP : '';
    if (requested === '') {
      let ip: string | undefined;
      for (let i = 0; i < serviceSize && !ip; i++) {
        const n = cursor.next++ % serviceSize;
        if (n === 0 || n === serviceSize - 1) continue;
        const candidate = intToIp((serviceBase + n) >>> 0);
        if (!used.has(candidate)) ip = candidate;
      }
      if (!ip) failure(obj, 'spec.clusterIPs', [], 'failed to allocate a serviceIP: range is full');
      spec.clusterIP = ip;
      spec.clusterIPs = [ip];
    } else {
      const n = ipToInt(requested);
      const ips = Array.isArray(spec.clusterIPs) ? spec.clusterIPs : [requested];
      if (n === undefined || n - serviceBase <= 0 || n - serviceBase >= serviceSize - 1) {
        failure(obj, 'spec.clusterIPs', ips, `failed to allocate IP ${requested}: the provided IP (${requested}) is not in the valid range. The range of valid IPs is ${serviceCIDR}`);
      }
      if (used.has(requested)) failure(obj, 'spec.clusterIPs', ips, `failed to allocate IP ${requested}: provided IP is already allocated`);
      spec.clusterIPs = ips;
    }
  } else if (spec.clusterIP === 'None') {
    spec.clusterIPs = ['None'];
  }
  if (needsNodePorts(spec) && Array.isArray(spec.ports)) {
    const used = new Set(others.flatMap((s) => portsOf(specOf(s)).map((p) => p.nodePort)).filter((p) => typeof p === 'number'));
    spec.ports = spec.ports.map((p, i) => {
      if (!isObject(p)) return p;
      if (typeof p.nodePort === 'number' && p.nodePort !== 0) {
        if (p.nodePort < nodePortRange[0] || p.nodePort > nodePortRange[1]) {
          failure(obj, `spec.ports[${i}].nodePort`, p.nodePort, `provided port is not in the valid range. The range of valid ports is ${nodePortRange[0]}-${nodePortRange[1]}`);
        }
        if (used.has(p.nodePort)) failure(obj, `spec.ports[${i}].nodePort`, p.nodePort, 'provided port is already allocated');
        used.add(p.nodePort);
        return p;
      }
      let port = nodePortRange[0];
      while (used.has(port) && port <= nodePortRange[1]) port++;
      used.add(port);
      return { ...p, nodePort: port };
    });
  }
  return spec;
}

/** SetDefaults_EndpointPort (name "", protocol TCP); empty endpoints and ports are stored as null, as they come back from etcd. */
export function defaultEndpointSlice(obj: KObject): void {
  if (Array.isArray(obj.ports)) {
    obj.ports = obj.ports.map((p) => (isObject(p) ? { ...p, name: p.name ?? '', protocol: p.protocol ?? 'TCP' } : p));
  }
  for (const k of ['endpoints', 'ports'] as const) {
    if (obj[k] === undefined || (Array.isArray(obj[k]) && (obj[k] as unknown[]).length === 0)) obj[k] = null;
  }
}
