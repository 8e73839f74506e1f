// Where a new pod of a simulated cluster runs and what its kubelet reports: the scheduler's
// choice of node and the address the node's pod network gives it, then a Running, Ready
// status. Shared by the demo workload (its pods at start) and the ReplicaSet controller (the
// pods it creates), so both place pods the same way.
import type { Store } from './store.ts';
import { isObject, kubeTime, type JsonObject, type KObject } from './types.ts';

/** A pod is terminal once Succeeded or Failed: it holds no node slot and no address. */
export function isTerminal(pod: KObject): boolean {
  const phase = isObject(pod.status) ? pod.status.phase : undefined;
  return phase === 'Succeeded' || phase === 'Failed';
}

/** The pod's Ready condition is True (podutil.IsPodReady). */
export function isPodReady(pod: KObject): boolean {
  const conditions = isObject(pod.status) && Array.isArray(pod.status.conditions) ? pod.status.conditions : [];
  return conditions.some((c) => isObject(c) && c.type === 'Ready' && c.status === 'True');
}

function nodeReady(node: KObject): boolean {
  const conditions = isObject(node.status) && Array.isArray(node.status.conditions) ? node.status.conditions : [];
  return conditions.some((c) => isObject(c) && c.type === 'Ready' && c.status === 'True');
}

function ipv4ToInt(ip: string): number | undefined {
  const parts = ip.split('.');
  if (parts.length !== 4 || !parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) <= 255)) return undefined;
  return parts.reduce((n, p) => n * 256 + Number(p), 0);
}

const intToIpv4 = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');

/** The usable pod addresses of an IPv4 CIDR: from .2 (host-local IPAM keeps the first for the bridge) to the last before broadcast. */
function cidrRange(cidr: string): { first: number; last: number } | undefined {
  const m = /^([\d.]+)\/(\d{1,2})$/.exec(cidr);
  const base = m ? ipv4ToInt(m[1]) : undefined;
  const bits = m ? Number(m[2]) : NaN;
  if (base === undefined || !(bits >= 8 && bits <= 30)) return undefined;
  const size = 2 ** (32 - bits);
  const network = base - (base % size);
  return { first: network + 2, last: network + size - 2 };
}

/** When a node has no podCIDR, pods get addresses from the cluster's pod network (kind's default). */
const clusterPodCIDR = '10.244.0.0/16';

export interface PlacedPod {
  /** Empty when no node can take the pod: it stays Pending, as kube-scheduler leaves an unschedulable pod. */
  nodeName?: string;
  status: JsonObject;
}

/**
 * Places pods one after the other: kube-scheduler's spread, simplified (the Ready,
 * schedulable node running the fewest pods; ties by name), and an address from that node's
 * podCIDR not held by a pod that still runs. Reads nodes and pods once, then keeps its own
 * tally, so placing many pods costs one pass over the store.
 */
export class Placer {
  private readonly nodes: KObject[];
  private readonly load = new Map<string, number>();
  private readonly used = new Set<string>();

  constructor(store: Store) {
    this.nodes = store.list('/nodes').items.filter((n) => nodeReady(n) && !(isObject(n.spec) && n.spec.unschedulable === true));
    for (const n of this.nodes) this.load.set(n.metadata.name!, 0);
    for (const p of store.list('/pods').items) {
      if (isTerminal(p)) continue;
      const node = isObject(p.spec) ? p.spec.nodeName : undefined;
      if (typeof node === 'string' && this.load.has(node)) this.load.set(node, this.load.get(node)! + 1);
      const ip = isObject(p.status) ? p.status.podIP : undefined;
      if (typeof ip === 'string') this.used.add(ip);
    }
  }

  /**
   * A node and a Running, Ready status for a pod with these containers (Pending without a node
   * when none fits). `nodeName` pins the pod to that node, as a DaemonSet's pods are.
   */
  place(containers: unknown, nodeName?: string): PlacedPod {
    let best: KObject | undefined;
    for (const n of this.nodes) {
      if (nodeName !== undefined && n.metadata.name !== nodeName) continue;
      if (!best || this.load.get(n.metadata.name!)! < this.load.get(best.metadata.name!)!) best = n;
    }
    if (!best) return { status: { phase: 'Pending', qosClass: 'BestEffort' } };
    const name = best.metadata.name!;
    const ip = this.allocate(best);
    if (!ip) return { status: { phase: 'Pending', qosClass: 'BestEffort' } };
    this.load.set(name, this.load.get(name)! + 1);
    return { nodeName: name, status: runningStatus(best, ip, containers) };
  }

  private allocate(node: KObject): string | undefined {
    const cidr = isObject(node.spec) && typeof node.spec.podCIDR === 'string' ? node.spec.podCIDR : clusterPodCIDR;
    const range = cidrRange(cidr) ?? cidrRange(clusterPodCIDR)!;
    for (let n = range.first; n <= range.last; n++) {
      const ip = intToIpv4(n);
      if (!this.used.has(ip)) {
        this.used.add(ip);
        return ip;
      }
    }
    return undefined;
  }
}

function hostIP(node: KObject): string | undefined {
  const addresses = isObject(node.status) && Array.isArray(node.status.addresses) ? node.status.addresses : [];
  const internal = addresses.find((a) => isObject(a) && a.type === 'InternalIP');
  return isObject(internal) && typeof internal.address === 'string' ? internal.address : undefined;
}

/** What the kubelet reports for a started pod: Running, every condition True, its address. */
function runningStatus(node: KObject, podIP: string, containers: unknown): JsonObject {
  const now = kubeTime();
  const host = hostIP(node);
  const list = Array.isArray(containers) ? containers.filter(isObject) : [];
  return {
    phase: 'Running',
    conditions: ['Initialized', 'Ready', 'ContainersReady', 'PodScheduled'].map((type) => ({ type, status: 'True', lastProbeTime: null, lastTransitionTime: now })),
    ...(host ? { hostIP: host, hostIPs: [{ ip: host }] } : {}),
    podIP,
    podIPs: [{ ip: podIP }],
    startTime: now,
    qosClass: 'BestEffort',
    containerStatuses: list.map((c) => ({ name: c.name, image: c.image, imageID: '', ready: true, started: true, restartCount: 0, state: { running: { startedAt: now } } })),
  };
}
