// The simulated clusters of hack/bench/mcs.ts, in their own process (they do not share the
// dispatcher's event loop), driven over IPC. Namespace `bench`, Services svc-00...: each is
// provided by one cluster (svc-<s> by cluster s mod the clusters), which has it with one
// EndpointSlice per cluster of the fleet as kube's EndpointSlice controller writes them, and
// consumed by every other cluster (which has no Service of that name of its own: Panoptes
// creates it; static clusters: only what is written here changes). Every write a cluster
// receives is recorded; the time a change is written in a provider and the time each
// consumer holds it are both taken here, on one clock.
import { dispatchedSliceName, labels } from '../../api/multicluster-service.ts';
import { recordWrites, type ReceivedWrite } from '../../synchro/mcs/testutil.ts';
import { Random } from '../sim/random.ts';
import { startSimClusters, type SimCluster } from '../sim/cluster.ts';
import type { JsonObject, KObject } from '../sim/types.ts';

const benchNamespace = 'bench';
const SLICES = 'discovery.k8s.io/endpointslices';

export type McsSimMsg =
  | { cmd: 'start'; clusters: number; services: number; endpoints: number }
  | { cmd: 'await-dispatch'; timeoutMs: number }
  | { cmd: 'mark' }
  | { cmd: 'writes'; mark: number[] }
  | { cmd: 'changes'; count: number; ratePerSec: number; timeoutMs: number; settleMs: number }
  | { cmd: 'exit' };

/** What a change phase measured. */
export interface ChangesResult {
  /** Per change: provider write to the last of the consumers holding it (ms); changes never complete are left out. */
  allConsumersMs: number[];
  /** Per change and consumer: provider write to that consumer holding it (ms). */
  perConsumerMs: number[];
  incomplete: number;
  /** Per change: member writes of its dispatched slice, in every cluster. */
  writesPerChange: number[];
  /** Writes the providers received of their own changes' slices (must be 0). */
  providerWrites: number;
  /** Writes of anything else during the phase (must be 0). */
  otherWrites: number;
}

/** Writes summed: by verb and by resource. */
export interface WriteCounts {
  total: number;
  byVerb: Record<string, number>;
  byResource: Record<string, number>;
}

let clusters: SimCluster[] = [];
let recorders: Array<ReturnType<typeof recordWrites>> = [];
let services = 0;
let endpointsPerSlice = 0;
const send = (m: unknown) => process.send!(m);
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const svcName = (s: number) => `svc-${String(s).padStart(2, '0')}`;
/** The provider of Service `s`. */
const providerOf = (s: number) => s % clusters.length;
/** Its slices: one per cluster of the fleet, as many as the fleet dispatches per Service when every cluster provided one. */
const slicesPerService = () => clusters.length;
const sliceName = (s: number, k: number) => `${svcName(s)}-${String(k).padStart(2, '0')}abc`;

/** The endpoints of slice `k` of Service `s`: `n` pods, addresses 10.<k>.<s>.<v*16 + i + 1>. */
function endpoints(k: number, s: number, n: number, v: number): JsonObject[] {
  const c = providerOf(s);
  return Array.from({ length: n }, (_, i) => ({
    addresses: [`10.${k}.${s}.${v * 16 + i + 1}`],
    conditions: { ready: true, serving: true, terminating: false },
    nodeName: `${clusters[c].name}-node-${i % 3}`,
    targetRef: { kind: 'Pod', namespace: benchNamespace, name: `${svcName(s)}-${k}-${v}-${i}` },
  }));
}

function info(c: SimCluster, id: string) {
  return c.registry.byId(id)!;
}

/** Writes slice `k` of Service `s` in its provider (unrecorded: the provider's own controller). */
function writeSlice(s: number, k: number, eps: JsonObject[]): void {
  const c = providerOf(s);
  const sim = clusters[c];
  const crud = recorders[c].fixture;
  const body: KObject = {
    metadata: { name: sliceName(s, k), namespace: benchNamespace, labels: { [labels.serviceName]: svcName(s), [labels.endpointSliceManagedBy]: 'endpointslice-controller.k8s.io' } },
    addressType: 'IPv4',
    endpoints: eps,
    ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
  };
  const old = sim.store.get(SLICES, benchNamespace, sliceName(s, k));
  if (old) crud.update(info(sim, SLICES), 'v1', benchNamespace, sliceName(s, k), { ...body, metadata: { ...body.metadata, resourceVersion: old.metadata.resourceVersion } });
  else crud.create(info(sim, SLICES), 'v1', benchNamespace, body);
}

/** The name of slice `k` of Service `s` in its consumers. */
const dispatchedName = (s: number, k: number) => dispatchedSliceName(clusters[providerOf(s)].name, sliceName(s, k));

/** Every consumer holds every slice of every Service it does not provide, as its provider has it. */
function dispatchedEverywhere(): boolean {
  for (const [c, sim] of clusters.entries()) {
    const held = new Map(sim.store.list(SLICES, { namespace: benchNamespace }).items.map((o) => [o.metadata.name!, o]));
    for (let s = 0; s < services; s++) {
      const p = providerOf(s);
      if (p === c) continue;
      for (let k = 0; k < slicesPerService(); k++) {
        const want = clusters[p].store.get(SLICES, benchNamespace, sliceName(s, k));
        const have = held.get(dispatchedName(s, k));
        if (!want || !have || JSON.stringify(have.endpoints) !== JSON.stringify(want.endpoints)) return false;
      }
    }
  }
  return true;
}

function counts(writes: ReceivedWrite[][]): WriteCounts {
  const out: WriteCounts = { total: 0, byVerb: {}, byResource: {} };
  for (const w of writes.flat()) {
    out.total++;
    out.byVerb[w.verb] = (out.byVerb[w.verb] ?? 0) + 1;
    out.byResource[w.resource] = (out.byResource[w.resource] ?? 0) + 1;
  }
  return out;
}

const mark = () => recorders.map((r) => r.writes.length);
const since = (m: number[]) => recorders.map((r, i) => r.writes.slice(m[i]));

async function changes(count: number, ratePerSec: number, timeoutMs: number, settleMs: number): Promise<ChangesResult> {
  // Each provider slice changes at most once, in a fixed random order: every write of a dispatched slice in the phase is one change's.
  const rng = new Random(20);
  const pairs: Array<[number, number]> = [];
  for (let s = 0; s < services; s++) for (let k = 0; k < slicesPerService(); k++) pairs.push([s, k]);
  for (let i = pairs.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [pairs[i], pairs[j]] = [pairs[j], pairs[i]];
  }
  const n = Math.min(count, pairs.length);
  interface Pending {
    provider: number;
    t0: number;
    expected: string;
    arrived: Map<number, number>;
  }
  const pending = new Map<string, Pending>();
  const unsubscribe = clusters.map((sim, c) =>
    sim.store.subscribe(SLICES, (e) => {
      if (e.type === 'DELETED' || e.object.metadata.namespace !== benchNamespace) return;
      const p = pending.get(e.object.metadata.name!);
      if (!p || p.arrived.has(c) || JSON.stringify(e.object.endpoints) !== p.expected) return;
      p.arrived.set(c, now() - p.t0);
    }),
  );
  const before = mark();
  const names: string[] = [];
  const start = performance.now();
  for (let k = 0; k < n; k++) {
    const wait = start + (k * 1000) / ratePerSec - performance.now();
    if (wait > 0) await sleep(wait);
    const [s, slice] = pairs[k];
    const eps = endpoints(slice, s, endpointsPerSlice + 1, 1);
    const name = dispatchedName(s, slice);
    names.push(name);
    pending.set(name, { provider: providerOf(s), t0: now(), expected: JSON.stringify(eps), arrived: new Map() });
    writeSlice(s, slice, eps);
  }
  const consumers = clusters.length - 1;
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline && [...pending.values()].some((p) => p.arrived.size < consumers)) await sleep(20);
  await sleep(settleMs);
  for (const u of unsubscribe) u();
  const writes = since(before);
  const byName = new Map<string, number>();
  let providerWrites = 0;
  let otherWrites = 0;
  for (const [c, list] of writes.entries()) {
    for (const w of list) {
      const p = pending.get(w.name);
      if (w.resource !== SLICES || !p) otherWrites++;
      else if (p.provider === c) providerWrites++;
      else byName.set(w.name, (byName.get(w.name) ?? 0) + 1);
    }
  }
  const done = [...pending.values()].filter((p) => p.arrived.size === consumers);
  return {
    allConsumersMs: done.map((p) => Math.max(...p.arrived.values())),
    perConsumerMs: [...pending.values()].flatMap((p) => [...p.arrived.values()]),
    incomplete: n - done.length,
    writesPerChange: names.map((name) => byName.get(name) ?? 0),
    providerWrites,
    otherWrites,
  };
}

process.on('message', async (m: McsSimMsg) => {
  switch (m.cmd) {
    case 'start': {
      services = m.services;
      endpointsPerSlice = m.endpoints;
      const names = Array.from({ length: m.clusters }, (_, i) => `c${String(i).padStart(2, '0')}`);
      clusters = await startSimClusters(names, { historySize: 200_000, controllers: false });
      recorders = clusters.map((c) => recordWrites(c));
      for (const [c, sim] of clusters.entries()) recorders[c].fixture.create(info(sim, '/namespaces'), 'v1', undefined, { metadata: { name: benchNamespace } });
      for (let s = 0; s < services; s++) {
        const p = providerOf(s);
        recorders[p].fixture.create(info(clusters[p], '/services'), 'v1', benchNamespace, {
          metadata: { name: svcName(s), namespace: benchNamespace },
          spec: { selector: { app: svcName(s) }, ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }] },
        });
        for (let k = 0; k < slicesPerService(); k++) writeSlice(s, k, endpoints(k, s, endpointsPerSlice, 0));
      }
      send({ ok: 'start', urls: clusters.map((c) => c.url), names, namespace: benchNamespace });
      break;
    }
    case 'await-dispatch': {
      const deadline = performance.now() + m.timeoutMs;
      let complete = dispatchedEverywhere();
      while (!complete && performance.now() < deadline) {
        await sleep(100);
        complete = dispatchedEverywhere();
      }
      send({ ok: 'await-dispatch', complete, at: now() });
      break;
    }
    case 'mark':
      send({ ok: 'mark', mark: mark() });
      break;
    case 'writes':
      send({ ok: 'writes', counts: counts(since(m.mark)) });
      break;
    case 'changes':
      send({ ok: 'changes', result: await changes(m.count, m.ratePerSec, m.timeoutMs, m.settleMs) });
      break;
    case 'exit':
      await Promise.all(clusters.map((c) => c.close()));
      send({ ok: 'exit' });
      process.exit(0);
  }
});
send({ ok: 'ready' });
