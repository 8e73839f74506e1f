// Helpers for the dispatcher's tests: provider fixtures in simulated clusters, the writes a
// simulated cluster receives (counted where its HTTP handler calls its registry), and
// MultiClusterService objects written as the apiserver writes them.
import { managedByLabel, managedByValue, mcsFinalizer, mcsResource, type MultiClusterServiceSpec } from '../../api/multicluster-service.ts';
import { startSimCluster, type SimCluster } from '../../hack/sim/cluster.ts';
import type { KObject } from '../../hack/sim/types.ts';
import type { Store } from '../../storage/store.ts';
import { openTestStore, type Backend } from '../../storage/testing.ts';
import type { KubeObject } from '../../storage/types.ts';
import { startSynchro, type SynchroHandle } from '../synchro.ts';
import { fastTimings, tempDir, waitUntil, writeClusters } from '../testutil.ts';

/** What the dispatcher's tests sync: what a plan and a consumer's view are made of. */
export const resources = ['namespaces', 'services', 'discovery.k8s.io/endpointslices', 'multicluster.x-k8s.io/serviceexports', 'multicluster.x-k8s.io/serviceimports', 'apiextensions.k8s.io/customresourcedefinitions'];

/** The dispatcher's timings in tests: a resync every 1.5 s, short backoffs. */
export const mcsTimings = { resyncIntervalMs: 1500, pollIntervalMs: 200, statusCountsIntervalMs: 200, forbiddenBackoff: { initialMs: 1500, maxMs: 6000 }, errorBackoff: { initialMs: 200, maxMs: 1000 }, awayConsumerGraceMs: 4000 };

/** How many full passes (resyncs) `synchro`'s dispatcher has started. */
async function resyncsStarted(synchro: SynchroHandle): Promise<number> {
  const metric = await synchro.metrics.registry.getSingleMetric('panoptes_synchro_mcs_passes_total')!.get();
  return metric.values.filter((v) => v.labels.trigger === 'resync').reduce((sum, v) => sum + v.value, 0);
}

/**
 * Resolves once each of `synchros` has made `n` full passes (resyncs) after the call: it has
 * started the one after them (passes run one at a time, counted as they start). What "nothing
 * is written on a resync" waits for, rather than for a time a resync is thought to fit in.
 */
export async function resyncs(synchros: SynchroHandle | SynchroHandle[], n: number, timeoutMs = 60_000): Promise<void> {
  const all = Array.isArray(synchros) ? synchros : [synchros];
  const from = await Promise.all(all.map(resyncsStarted));
  await waitUntil(`${n} resyncs`, async () => (await Promise.all(all.map(resyncsStarted))).every((c, i) => c >= from[i] + n + 1), timeoutMs, 20);
}

/** One write a simulated cluster received. */
export interface ReceivedWrite {
  verb: 'create' | 'update' | 'patch' | 'delete';
  /** `group/resource` as the sim's registry names it (`/services`, `discovery.k8s.io/endpointslices`). */
  resource: string;
  namespace?: string;
  name: string;
  subresource?: string;
}

/**
 * Records every write `sim` receives from now on through its HTTP API (its Crud's create,
 * update, patch and delete), failed ones too. Returns the list and `fixture`, the unrecorded
 * Crud, for the test's own writes.
 */
export function recordWrites(sim: SimCluster): { writes: ReceivedWrite[]; fixture: SimCluster['crud']; count(filter?: Partial<ReceivedWrite>): number } {
  const writes: ReceivedWrite[] = [];
  const crud = sim.crud;
  const fixture = Object.create(crud) as SimCluster['crud'];
  const original = { create: crud.create.bind(crud), update: crud.update.bind(crud), patch: crud.patch.bind(crud), delete: crud.delete.bind(crud) };
  fixture.create = original.create;
  fixture.update = original.update;
  fixture.patch = original.patch;
  fixture.delete = original.delete;
  crud.create = (info, version, namespace, body, opts) => {
    const name = (body as KObject)?.metadata?.name ?? '';
    writes.push({ verb: 'create', resource: info.id, namespace, name });
    return original.create(info, version, namespace, body, opts);
  };
  crud.update = (info, version, namespace, name, body, opts) => {
    writes.push({ verb: 'update', resource: info.id, namespace, name, ...(opts?.subresource ? { subresource: opts.subresource } : {}) });
    return original.update(info, version, namespace, name, body, opts);
  };
  crud.patch = (info, version, namespace, name, type, patch, opts) => {
    writes.push({ verb: 'patch', resource: info.id, namespace, name });
    return original.patch(info, version, namespace, name, type, patch, opts);
  };
  crud.delete = (info, namespace, name, opts) => {
    writes.push({ verb: 'delete', resource: info.id, namespace, name });
    return original.delete(info, namespace, name, opts);
  };
  const count = (filter: Partial<ReceivedWrite> = {}) => writes.filter((w) => Object.entries(filter).every(([k, v]) => (w as unknown as Record<string, unknown>)[k] === v)).length;
  return { writes, fixture, count };
}

/**
 * Simulated clusters of these names, every write they receive from now on recorded: `fx(sim)`
 * writes for the test itself (unrecorded), `writes()` marks where the records are, `since(mark)`
 * the writes each received after it. Static clusters (no controllers): the tests write the
 * providers' slices themselves, as kube's EndpointSlice controller would (`provide`,
 * `setEndpoints`); a running controller would take those slices of a Service whose selector
 * matches no pod as its own and empty them.
 */
export async function simFleet(names: string[]) {
  const sims: SimCluster[] = [];
  // Static clusters: the tests play kube's EndpointSlice controller themselves (provide, setEndpoints), slice by slice.
  for (const n of names) sims.push(await startSimCluster({ name: n, controllers: false }));
  const rec = new Map(sims.map((s) => [s.name, recordWrites(s)]));
  return {
    sims,
    fx: (s: SimCluster) => rec.get(s.name)!.fixture,
    writes: (): Record<string, number> => Object.fromEntries(sims.map((s) => [s.name, rec.get(s.name)!.writes.length])),
    since: (mark: Record<string, number>): Record<string, ReceivedWrite[]> => Object.fromEntries(sims.map((s) => [s.name, rec.get(s.name)!.writes.slice(mark[s.name])])),
  };
}

const info = (sim: SimCluster, id: string) => {
  const i = sim.registry.byId(id);
  if (!i) throw new Error(`${sim.name} has no ${id}`);
  return i;
};

/** Creates the namespace in `sim` unless it exists. */
export function ensureNamespace(sim: SimCluster, crud: SimCluster['crud'], name: string): void {
  if (!sim.store.get('/namespaces', undefined, name)) crud.create(info(sim, '/namespaces'), 'v1', undefined, { metadata: { name } });
}

/** A provider's Service (with a selector, as an application's) and its EndpointSlice with `ips` as ready endpoints on port 8080. */
export function provide(sim: SimCluster, crud: SimCluster['crud'], namespace: string, name: string, ips: string[], slice = `${name}-abcde`): void {
  ensureNamespace(sim, crud, namespace);
  if (!sim.store.get('/services', namespace, name)) {
    crud.create(info(sim, '/services'), 'v1', namespace, { metadata: { name, namespace }, spec: { selector: { app: name }, ports: [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 8080 }] } });
  }
  setEndpoints(sim, crud, namespace, name, ips, slice);
}

/** Annotates Service `name` with `value`: a change of the key that moves no plan. */
export function annotateService(sim: SimCluster, crud: SimCluster['crud'], namespace: string, name: string, value: string): void {
  crud.patch(info(sim, '/services'), 'v1', namespace, name, 'merge', { metadata: { annotations: { 'example.com/touched': value } } });
}

/** Creates or replaces the provider's slice `slice` of Service `name` with `ips` (kube's EndpointSlice controller's labels). */
export function setEndpoints(sim: SimCluster, crud: SimCluster['crud'], namespace: string, name: string, ips: string[], slice = `${name}-abcde`): void {
  const i = info(sim, 'discovery.k8s.io/endpointslices');
  const body = {
    metadata: { name: slice, namespace, labels: { 'kubernetes.io/service-name': name, 'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io' } },
    addressType: 'IPv4',
    endpoints: ips.map((ip, n) => ({ addresses: [ip], conditions: { ready: true, serving: true, terminating: false }, nodeName: `${sim.name}-node-${n}`, targetRef: { kind: 'Pod', namespace, name: `${name}-${n}` } })),
    ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
  };
  const old = sim.store.get(i.id, namespace, slice);
  if (old) crud.update(i, 'v1', namespace, slice, { ...body, metadata: { ...body.metadata, resourceVersion: old.metadata.resourceVersion } });
  else crud.create(i, 'v1', namespace, body);
}

/** A CRD of the MCS-API (multicluster.x-k8s.io/v1alpha1, with a status subresource), as its manifests define it. */
function installMcsApiCrd(sim: SimCluster, crud: SimCluster['crud'], kind: string, shortName: string): void {
  const plural = `${kind.toLowerCase()}s`;
  crud.create(info(sim, 'apiextensions.k8s.io/customresourcedefinitions'), 'v1', undefined, {
    metadata: { name: `${plural}.multicluster.x-k8s.io` },
    spec: {
      group: 'multicluster.x-k8s.io',
      scope: 'Namespaced',
      names: { plural, singular: kind.toLowerCase(), kind, listKind: `${kind}List`, shortNames: [shortName] },
      versions: [{ name: 'v1alpha1', served: true, storage: true, subresources: { status: {} }, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
    },
  });
}

export const installServiceImportCrd = (sim: SimCluster, crud: SimCluster['crud']) => installMcsApiCrd(sim, crud, 'ServiceImport', 'svcim');
export const installServiceExportCrd = (sim: SimCluster, crud: SimCluster['crud']) => installMcsApiCrd(sim, crud, 'ServiceExport', 'svcex');

const mcsRef = (namespace: string, name: string) => ({ resource: mcsResource, namespace, name });

/** Creates or updates (its spec, generation + 1) a MultiClusterService, as the apiserver would write it (with the finalizer). */
export async function putMcs(store: Store, namespace: string, name: string, spec: MultiClusterServiceSpec): Promise<void> {
  await store.writeOwnObjectWithoutLease(mcsRef(namespace, name), (cur) => {
    const md = cur?.object.metadata;
    const object: KubeObject = {
      apiVersion: 'panoptes.io/v1alpha1',
      kind: 'MultiClusterService',
      metadata: {
        name,
        namespace,
        uid: md?.uid ?? `uid-mcs-${namespace}-${name}`,
        generation: Number(md?.generation ?? 0) + 1,
        creationTimestamp: md?.creationTimestamp ?? new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
        finalizers: [mcsFinalizer],
      },
      spec,
      ...(cur?.object.status ? { status: cur.object.status } : {}),
    };
    return { action: 'put', object };
  });
}

/** Marks a MultiClusterService deleted (deletionTimestamp), as the apiserver does for an object with finalizers. */
export async function deleteMcs(store: Store, namespace: string, name: string): Promise<void> {
  await store.writeOwnObjectWithoutLease(mcsRef(namespace, name), (cur) =>
    cur ? { action: 'put', object: { ...cur.object, metadata: { ...cur.object.metadata, deletionTimestamp: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z') } } } : { action: 'none' },
  );
}

export async function getMcs(store: Store, namespace: string, name: string): Promise<KubeObject | undefined> {
  return (await store.getOwnObject(mcsRef(namespace, name)))?.object;
}

/** The objects Panoptes dispatched into `sim` (its own store), by resource id. */
export function dispatched(sim: SimCluster, id: string, namespace?: string): KObject[] {
  if (!sim.registry.byId(id)) return [];
  return sim.store.list(id, { namespace }).items.filter((o) => o.metadata.labels?.[managedByLabel] === managedByValue);
}

/**
 * One synchro over `sims` on a fresh store of `backend` (each cluster syncing `resources`, or
 * what `entry` gives it), the dispatcher at the tests' timings; `teardown` receives what stops
 * it all (the simulated clusters too). Resolves once the initial sync is done.
 */
export async function dispatchOver(backend: Backend, sims: SimCluster[], teardown: (stop: () => Promise<void>) => void, entry: (s: SimCluster) => Record<string, unknown> = () => ({})): Promise<{ store: Store; synchro: SynchroHandle }> {
  const { store, close } = await openTestStore(backend);
  const { dir, cleanup } = tempDir();
  const file = `${dir}/clusters.yaml`;
  writeClusters(file, sims.map((s) => ({ name: s.name, server: s.url, resources, ...entry(s) })));
  const synchro = await startSynchro({ store, clustersFile: file, timings: fastTimings, compaction: false, shards: { leaseTtlMs: 3000 }, mcs: mcsTimings });
  teardown(async () => {
    await synchro.stop();
    await Promise.all(sims.map((s) => s.close()));
    await close();
    cleanup();
  });
  if (!(await synchro.waitForInitialSync(30_000))) throw new Error('no initial sync within 30 s');
  return { store, synchro };
}
