// The simulated fleet of the multi-cluster Services end-to-end tests, and what they read of it:
// five member clusters with their controllers on (east provides, west has the MCS-API CRDs and
// a Service of its own to export, lab has a Service of its own in the way, north is a spare
// consumer, audit lets Panoptes read but not write; each has its own default/kubernetes), a
// clusters.yaml over them, a kubeconfig
// with a context per cluster and the Panoptes contexts, the real kubectl, and the writes each
// cluster receives.
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { dispatchedSliceName, labels as mcsLabels, managedByLabel, managedByValue } from '../../api/multicluster-service.ts';
import { writeKubeconfig } from '../../cli/commands/kubeconfig.ts';
import { recordWrites, type ReceivedWrite } from '../../synchro/mcs/testutil.ts';
import { writeClusters } from '../../synchro/testutil.ts';
import { readOnlyUser } from '../sim/auth.ts';
import { startSimCluster, type SimCluster } from '../sim/cluster.ts';
import type { JsonObject, KObject } from '../sim/types.ts';
import { addApp } from '../sim/workload.ts';

export const SLICES = 'discovery.k8s.io/endpointslices';
export const IMPORTS = 'multicluster.x-k8s.io/serviceimports';
export const NS = 'shop';
/** Another tenant's namespace. */
export const QUOTA_NS = 'tenant-b';
/** The token Panoptes uses for audit, where it may get, list and watch, and nothing else. */
export const readOnlyToken = 'audit-read-only';

export const fleetNames = ['east', 'west', 'lab', 'north', 'audit'] as const;
export type FleetName = (typeof fleetNames)[number];

export interface KubectlRun {
  code: number;
  stdout: string;
  stderr: string;
}

export interface McsFleet {
  sims: Record<FleetName, SimCluster>;
  dir: string;
  clustersFile: string;
  /** kubectl with the fleet's kubeconfig (contexts sim-<name>, panoptes, panoptes-<name>; written by `useKubeconfig`). */
  kubectl(args: string[], timeoutMs?: number): Promise<KubectlRun>;
  /** Writes the kubeconfig: the simulated clusters' contexts and Panoptes' at `panoptesUrl`. */
  useKubeconfig(panoptesUrl: string): Promise<void>;
  /** A mark of how many writes each cluster has received, and the writes since a mark. */
  mark(): Record<FleetName, number>;
  since(mark: Record<FleetName, number>): Record<FleetName, ReceivedWrite[]>;
  /** A file in the fleet's directory holding `doc` as YAML (for kubectl apply -f). */
  file(name: string, doc: unknown): string;
  close(): Promise<void>;
}

const info = (sim: SimCluster, id: string) => {
  const i = sim.registry.byId(id);
  if (!i) throw new Error(`${sim.name} has no ${id}`);
  return i;
};

/** Two Ready nodes with pod networks of their own (`10.<n>.1.0/24`, `10.<n>.2.0/24`), so each cluster's pod addresses tell where they come from. */
function nodes(sim: SimCluster, n: number): void {
  for (const i of [1, 2]) {
    sim.crud.create(info(sim, '/nodes'), 'v1', undefined, {
      metadata: { name: `${sim.name}-node-${i}`, labels: { 'kubernetes.io/hostname': `${sim.name}-node-${i}`, 'topology.kubernetes.io/zone': `zone-${i}` } },
      spec: { podCIDR: `10.${n}.${i}.0/24` },
      status: { conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'kubelet is posting ready status' }] },
    }, { keepStatus: true });
  }
}

/** The Services east exports: `web` (the main one), `api` (to consumers where it cannot land), and one per not-Ready policy. */
export const eastApps: Array<[string, number]> = [['web', 2], ['api', 1], ['keep', 1], ['grace', 1], ['drop', 1]];

export async function startMcsFleet(dir: string): Promise<McsFleet> {
  const started: SimCluster[] = [];
  try {
    for (const name of fleetNames) started.push(await startSimCluster({ name, mcsCRDs: name === 'west' }));
  } catch (err) {
    await Promise.all(started.map((s) => s.close()));
    throw err;
  }
  const sims = Object.fromEntries(started.map((s) => [s.name, s])) as Record<FleetName, SimCluster>;
  for (const s of started) s.crud.create(info(s, '/namespaces'), 'v1', undefined, { metadata: { name: NS } });
  nodes(sims.east, 1);
  for (const [name, replicas] of eastApps) addApp(sims.east.crud, NS, name, replicas);
  // A second tenant's namespace, whose quota in lab is full (hack/testing/mcs-e2e.ts).
  for (const s of [sims.east, sims.lab, sims.west]) s.crud.create(info(s, '/namespaces'), 'v1', undefined, { metadata: { name: QUOTA_NS } });
  addApp(sims.east.crud, QUOTA_NS, 'app', 1);
  nodes(sims.west, 2);
  addApp(sims.west.crud, NS, 'reports', 2);
  // lab's own Service api, which Panoptes did not create: a conflict, never touched.
  sims.lab.crud.create(info(sims.lab, '/services'), 'v1', NS, { metadata: { name: 'api', namespace: NS, labels: { team: 'lab' } }, spec: { ports: [{ name: 'http', port: 80, targetPort: 9090 }] } });
  sims.audit.auth.grant(readOnlyToken, readOnlyUser('panoptes'));
  // Every member's own API server Service and its endpoints, as kube keeps them.
  for (const s of started) {
    s.crud.create(info(s, '/services'), 'v1', 'default', { metadata: { name: 'kubernetes', namespace: 'default', labels: { component: 'apiserver', provider: 'kubernetes' } }, spec: { ports: [{ name: 'https', port: 443, protocol: 'TCP', targetPort: 6443 }] } });
    s.crud.create(info(s, SLICES), 'v1', 'default', {
      metadata: { name: 'kubernetes', namespace: 'default', labels: { [mcsLabels.serviceName]: 'kubernetes', [mcsLabels.endpointSliceManagedBy]: 'endpointslicemirroring-controller.k8s.io' } },
      addressType: 'IPv4',
      endpoints: [{ addresses: [`192.168.${fleetNames.indexOf(s.name as FleetName) + 1}.10`], conditions: { ready: true } }],
      ports: [{ name: 'https', port: 6443, protocol: 'TCP' }],
    });
  }
  for (const s of started) await s.controllers.settle();
  const rec = new Map(started.map((s) => [s.name, recordWrites(s)]));

  const clustersFile = join(dir, 'clusters.yaml');
  writeClusters(clustersFile, started.map((s) => ({ name: s.name, server: s.url, ...(s.name === 'audit' ? { token: readOnlyToken } : {}) })));
  const kubeconfig = join(dir, 'kubeconfig');
  const cache = join(dir, 'kube-cache');
  return {
    sims,
    dir,
    clustersFile,
    kubectl: (args, timeoutMs = 60_000) =>
      new Promise((resolve) => {
        execFile('kubectl', ['--kubeconfig', kubeconfig, '--cache-dir', cache, ...args], { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
          const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
          resolve({ code, stdout, stderr });
        });
      }),
    useKubeconfig: (panoptesUrl) => writeKubeconfig(kubeconfig, { sims: started.map((s) => ({ name: s.name, url: s.url })), panoptes: { server: panoptesUrl, clusters: [...fleetNames] } }),
    mark: () => Object.fromEntries(started.map((s) => [s.name, rec.get(s.name)!.writes.length])) as Record<FleetName, number>,
    since: (mark) => Object.fromEntries(started.map((s) => [s.name, rec.get(s.name)!.writes.slice(mark[s.name as FleetName])])) as Record<FleetName, ReceivedWrite[]>,
    file: (name, doc) => {
      const path = join(dir, name);
      writeFileSync(path, stringify(doc));
      return path;
    },
    close: async () => {
      await Promise.all(started.map((s) => s.close()));
    },
  };
}

// --- Reading the clusters.

const isManaged = (o: KObject) => o.metadata.labels?.[managedByLabel] === managedByValue;

/** Panoptes' slices of Service `svc` in `sim`. */
export const dispatchedSlices = (sim: SimCluster, svc: string, namespace = NS): KObject[] =>
  sim.store.list(SLICES, { namespace }).items.filter((s) => isManaged(s) && s.metadata.labels?.[mcsLabels.serviceName] === svc);

/** The slices kube's EndpointSlice controller keeps for Service `svc` of `sim`. */
export const ownSlices = (sim: SimCluster, svc: string, namespace = NS): KObject[] =>
  sim.store.list(SLICES, { namespace }).items.filter((s) => s.metadata.labels?.[mcsLabels.endpointSliceManagedBy] === 'endpointslice-controller.k8s.io' && s.metadata.labels?.[mcsLabels.serviceName] === svc);

/** Every object Panoptes wrote into `sim` (Services, EndpointSlices, ServiceImports), as `Kind/name`. */
export function everythingDispatched(sim: SimCluster): string[] {
  const out: string[] = [];
  for (const id of ['/services', SLICES, IMPORTS]) {
    if (!sim.registry.byId(id)) continue;
    for (const o of sim.store.list(id).items) if (isManaged(o)) out.push(`${o.kind}/${o.metadata.namespace}/${o.metadata.name}`);
  }
  return out.sort();
}

const endpointsOf = (s: KObject): JsonObject[] => (Array.isArray(s.endpoints) ? (s.endpoints as JsonObject[]) : []);

/** The addresses of every endpoint of the slices, sorted. */
export const addresses = (slices: KObject[]): string[] => slices.flatMap((s) => endpointsOf(s).flatMap((e) => (Array.isArray(e.addresses) ? (e.addresses as string[]) : []))).sort();

/** A provider's endpoint as a consumer holds it during the provider's grace period: going away (not ready, serving as it was, terminating). */
function goingAway(e: JsonObject): JsonObject {
  const c = (e.conditions ?? {}) as JsonObject;
  return { ...e, conditions: { ...c, ready: false, serving: typeof c.serving === 'boolean' ? c.serving : c.ready !== false, terminating: true } };
}

/**
 * Panoptes' slices of `svc` in `consumer` hold exactly the provider's slices, endpoints as they
 * are (and `ready` as the provider-ready annotation says, if given); `grace`: the endpoints as
 * going away, as they are kept during a KeepForGracePeriod grace.
 */
export function mirrors(consumer: SimCluster, provider: SimCluster, svc: string, ready?: 'true' | 'false', namespace = NS, grace = false): boolean {
  const want = ownSlices(provider, svc, namespace).filter((s) => endpointsOf(s).length > 0);
  const have = dispatchedSlices(consumer, svc, namespace).filter((s) => s.metadata.labels?.[mcsLabels.sourceCluster] === provider.name);
  if (want.length !== have.length) return false;
  return want.every((w) => {
    const h = have.find((x) => x.metadata.name === dispatchedSliceName(provider.name, w.metadata.name!));
    const expected = grace ? endpointsOf(w).map(goingAway) : endpointsOf(w);
    return h !== undefined && JSON.stringify(endpointsOf(h)) === JSON.stringify(expected) && (ready === undefined || h.metadata.annotations?.['panoptes.io/provider-ready'] === ready);
  });
}

/** The rows of `kubectl get mcs` (NAME and the columns after it), by name. */
export function mcsRows(stdout: string): Map<string, Record<string, string>> {
  const [head, ...rows] = stdout.trim().split('\n');
  const columns = head.trim().split(/\s+/);
  const out = new Map<string, Record<string, string>>();
  for (const row of rows) {
    const cells = row.trim().split(/\s+/);
    const rec = Object.fromEntries(columns.map((c, i) => [c, cells[i] ?? '']));
    out.set(rec.NAME, rec);
  }
  return out;
}

/** The writes of one Service's objects (its name, and its slices `<provider>-<name>-<5>-<hash>`) among `writes`. */
export const writesOf = (writes: ReceivedWrite[], svc: string): ReceivedWrite[] =>
  writes.filter((w) => (w.resource === SLICES && new RegExp(`^[a-z0-9-]+-${svc}-[a-z0-9]{5}-[0-9a-f]{12}$`).test(w.name)) || ((w.resource === '/services' || w.resource === IMPORTS) && w.name === svc));
