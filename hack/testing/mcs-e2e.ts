// Multi-cluster Services end to end, as a user sees them: the real `panoptes` processes over
// the simulated fleet of mcs-fleet.ts, MultiClusterServices written with kubectl through
// Panoptes, and what the member clusters hold read with kubectl against them directly. One
// scenario, run on each deployment (PostgreSQL with two synchro members, SQLite with the
// all-in-one): export, scale the provider up and down, add and remove a consumer, a Service
// of a consumer's own in the way (a conflict, untouched), a consumer that may not write
// (Forbidden, nothing written), a ServiceExport in a member, a crash of a process that
// dispatches in the middle (its consumers taken over, nothing lost or written twice), a
// dispatched slice deleted by hand (repaired), the provider unreachable under each policy, and
// the MultiClusterServices deleted (kubectl waits; everything dispatched is gone). Every wait
// is bounded.
import type { Test } from 'tap';
import { parse } from 'yaml';
import { dispatchedSliceName, dispatchManagedBy, installationLabel, managedByLabel, managedByValue, type MultiClusterServiceStatus } from '../../api/multicluster-service.ts';
import { StatusError } from '../../kube/status.ts';
import { emptyStorageUrl, type Backend } from '../../storage/testing.ts';
import { spawnPanoptes, tempDir, waitUntil, type PanoptesProcess } from '../../synchro/testutil.ts';
import { freePort } from '../../storage/testing/postgres.ts';
import { get } from '../sim/testutil.ts';
import type { KObject } from '../sim/types.ts';
import {
  addresses,
  dispatchedSlices,
  everythingDispatched,
  fleetNames,
  IMPORTS,
  mcsRows,
  mirrors,
  NS,
  ownSlices,
  QUOTA_NS,
  readOnlyToken,
  SLICES,
  writesOf,
  type FleetName,
  startMcsFleet,
  type McsFleet,
} from './mcs-fleet.ts';

/** The Panoptes deployment under test. */
export interface PanoptesUnderTest {
  /** The apiserver's base URL (plain HTTP). */
  url: string;
  leaseTtlMs: number;
  /** The dispatcher's full-pass period the processes were started with. */
  resyncMs: number;
  /** Every /metrics text of the running processes, concatenated. */
  metrics(): Promise<string>;
  /** The log lines of every process so far. */
  logs(): string[];
  /**
   * SIGKILL of a process that dispatches to `consumers` (another one, or the same one
   * restarted, takes over); resolves once it is dead, with the identity it ran as.
   */
  crash(consumers: string[]): Promise<{ member: string }>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** fn()'s value once it is truthy (every 100 ms, at most timeoutMs). */
const until = <T>(what: string, fn: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 30_000): Promise<T> => waitUntil(what, fn, timeoutMs, 100) as Promise<T>;

interface ClusterOwner {
  member?: string;
  epoch?: number;
}

/** The lease TTL and dispatcher resync of the processes under test, and their flags (with a 500 ms probe). */
export const e2eTimings = { leaseTtlMs: 5000, resyncMs: 1000 };
export const e2eFlags = ['--lease-ttl', `${e2eTimings.leaseTtlMs}ms`, '--mcs-resync-interval', `${e2eTimings.resyncMs}ms`, '--probe-interval', '500ms'];

/**
 * The fleet, an empty storage on `backend`, where the apiserver listens, and `spawn` for the
 * `panoptes` processes (SIGKILLed at teardown, with the fleet and the storage).
 */
export async function e2eSetup(t: Test, backend: Backend) {
  const { dir, cleanup } = tempDir();
  const fleet = await startMcsFleet(dir);
  const { url: storage, cleanup: dropStorage } = await emptyStorageUrl(backend);
  const listen = `127.0.0.1:${await freePort()}`;
  const procs: PanoptesProcess[] = [];
  t.teardown(async () => {
    for (const p of procs) p.child.kill('SIGKILL');
    await Promise.all(procs.map((p) => p.exited));
    await fleet.close();
    await dropStorage();
    cleanup();
  });
  const base = `http://${listen}`;
  return {
    fleet,
    storage,
    listen,
    base,
    spawn(name: string, args: string[]): PanoptesProcess {
      const p = spawnPanoptes(name, args);
      procs.push(p);
      return p;
    },
    logs: () => procs.flatMap((p) => p.log),
    serving: () => waitUntil('the apiserver serving', async () => (await get(`${base}/readyz`)).status === 200, 60_000),
  };
}

/** The Cluster objects' status as the apiserver serves it: phase, initial sync, owner. */
export async function clusters(url: string): Promise<Map<string, { phase?: string; synced: boolean; owner: ClusterOwner }>> {
  const r = await get(`${url}/apis/panoptes.io/v1alpha1/clusters`);
  const items = (r.json?.items ?? []) as Array<{ metadata: { name: string }; status?: { phase?: string; initialSync?: { complete?: boolean }; owner?: ClusterOwner } }>;
  return new Map(items.map((c) => [c.metadata.name, { phase: c.status?.phase, synced: c.status?.initialSync?.complete === true, owner: c.status?.owner ?? {} }]));
}

/** A metric's value (the sum over the series whose labels include `labels`). */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (!Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

/** The full passes (resyncs) each process's dispatcher has started, in the order of the metrics texts. */
function resyncCounts(text: string): number[] {
  const out: number[] = [];
  for (const line of text.split('\n')) if (line.startsWith('panoptes_synchro_mcs_passes_total{') && line.includes('trigger="resync"')) out.push(Number(line.slice(line.lastIndexOf(' ') + 1)));
  return out;
}

/**
 * Resolves once every dispatching process made `n` full passes (resyncs) after the call: it
 * started the one after them (passes run one at a time, counted as they start). What "nothing
 * is written by a resync" waits for, rather than a time resyncs are thought to fit in.
 */
async function resyncs(panoptes: PanoptesUnderTest, n: number): Promise<void> {
  const from = resyncCounts(await panoptes.metrics());
  await until(`${n} resyncs`, async () => {
    const now = resyncCounts(await panoptes.metrics());
    return now.length === from.length && now.length > 0 && now.every((c, i) => c >= from[i] + n + 1);
  }, 60_000 + n * panoptes.resyncMs);
}

const mcs = (name: string, spec: Record<string, unknown>, namespace = NS) => ({ apiVersion: 'panoptes.io/v1alpha1', kind: 'MultiClusterService', metadata: { name, namespace }, spec });

export async function mcsScenario(t: Test, fleet: McsFleet, panoptes: PanoptesUnderTest): Promise<void> {
  const { sims, kubectl } = fleet;
  const { east, west, lab, north, audit } = sims;
  const ok = async (args: string[], timeoutMs?: number) => {
    const r = await kubectl(args, timeoutMs);
    if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: exit ${r.code}: ${r.stderr}`);
    return r.stdout;
  };
  const json = async (args: string[]) => JSON.parse(await ok([...args, '-o', 'json']));
  const table = async () => mcsRows(await ok(['--context', 'panoptes', 'get', 'mcs', '-n', NS]));
  /** Waits until `kubectl get mcs` shows these cells for `name`. */
  const row = (name: string, want: Record<string, string>, timeoutMs = 30_000) =>
    until(`kubectl get mcs: ${name} ${JSON.stringify(want)}`, async () => {
      const r = (await table()).get(name);
      return r && Object.entries(want).every(([k, v]) => r[k] === v) ? r : undefined;
    }, timeoutMs);
  const status = async (name: string): Promise<MultiClusterServiceStatus> => (parse(await ok(['--context', 'panoptes', 'get', 'mcs', name, '-n', NS, '-o', 'yaml'])) as { status?: MultiClusterServiceStatus }).status ?? {};
  const condition = (st: MultiClusterServiceStatus, cluster: string, type: string) => st.consumers?.find((c) => c.cluster === cluster)?.conditions.find((c) => c.type === type);
  const scale = (replicas: number, name = 'web') => ok(['--context', 'sim-east', 'scale', 'deploy', name, '-n', NS, `--replicas=${replicas}`]);
  const followed = (consumers: typeof west[], n: number, svc = 'web') =>
    until(`${n} endpoints of east's ${svc} in ${consumers.map((c) => c.name).join(', ')}`, () => addresses(ownSlices(east, svc)).length === n && consumers.every((c) => mirrors(c, east, svc)), 30_000);
  const labService = lab.store.get('/services', NS, 'api')!;
  /** The installation's id, as every Cluster's status shows it. */
  let installation = '';

  await t.test('every member cluster Ready and synced', async (t) => {
    const all = await until('five clusters Ready and synced', async () => {
      const cs = await clusters(panoptes.url);
      return cs.size === 5 && [...cs.values()].every((c) => c.phase === 'Ready' && c.synced) ? cs : undefined;
    }, 90_000);
    t.same([...all.keys()].sort(), ['audit', 'east', 'lab', 'north', 'west']);
    installation = (await get(`${panoptes.url}/apis/panoptes.io/v1alpha1/clusters/west`)).json?.status?.installation;
    t.match(installation, /^[0-9a-f]{12}$/, 'the installation id in the status');
  });

  await t.test('a MultiClusterService named default/kubernetes: refused, nothing added to any member\'s own', async (t) => {
    const before = fleet.mark();
    const file = fleet.file('kubernetes.yaml', { apiVersion: 'panoptes.io/v1alpha1', kind: 'MultiClusterService', metadata: { name: 'kubernetes', namespace: 'default' }, spec: {} });
    t.match(await ok(['--context', 'panoptes', 'apply', '-f', file]), /multiclusterservice\.panoptes\.io\/kubernetes created/);
    const st = await until('the refusal in its status', async () => {
      const s = (parse(await ok(['--context', 'panoptes', 'get', 'mcs', 'kubernetes', '-n', 'default', '-o', 'yaml'])) as { status?: MultiClusterServiceStatus }).status;
      return s?.consumers?.length === 5 && s.consumers.every((c) => c.conditions.some((x) => x.reason === 'SystemService')) ? s : undefined;
    });
    t.match(st.consumers?.[0].conditions[0].message, /default\/kubernetes is the API server's Service: Panoptes dispatches no system Service unless the operator allows it/);
    await resyncs(panoptes, 2);
    const w = fleet.since(before);
    for (const c of fleetNames) t.same(w[c].filter((x) => x.namespace === 'default'), [], `${c}: nothing written next to its own kubernetes Service`);
    const del = await kubectl(['--context', 'panoptes', 'delete', 'mcs', 'kubernetes', '-n', 'default', '--timeout', '60s'], 90_000);
    t.equal(del.code, 0, del.stderr);
  });

  await t.test('kubectl apply of MultiClusterServices: the Service, its slices and the ServiceImport in the consumers', async (t) => {
    const before = fleet.mark();
    const file = fleet.file('mcs.yaml', {
      apiVersion: 'v1',
      kind: 'List',
      items: [
        mcs('web', { providerClusters: ['east'], consumerClusters: ['west', 'lab'], ports: [{ name: 'http' }] }),
        mcs('api', { providerClusters: ['east'], consumerClusters: ['west', 'lab', 'audit'] }),
        mcs('keep', { providerClusters: ['east'], consumerClusters: ['west', 'lab'], providerNotReady: { policy: 'Keep' } }),
        mcs('grace', { providerClusters: ['east'], consumerClusters: ['west', 'lab'], providerNotReady: { policy: 'KeepForGracePeriod', gracePeriodSeconds: 4 } }),
        mcs('drop', { providerClusters: ['east'], consumerClusters: ['west', 'lab'], providerNotReady: { policy: 'RemoveImmediately' } }),
      ],
    });
    t.match(await ok(['--context', 'panoptes', 'apply', '-f', file]), /multiclusterservice\.panoptes\.io\/web created/);
    await followed([west, lab], 2);
    for (const svc of ['keep', 'grace', 'drop']) await followed([west, lab], 1, svc);
    await row('web', { PROVIDERS: '1', CONSUMERS: '2', ENDPOINTS: '2', READY: '2/2' });
    await row('api', { PROVIDERS: '1', CONSUMERS: '3', ENDPOINTS: '1', READY: '1/3' });
    for (const svc of ['keep', 'grace', 'drop']) await row(svc, { PROVIDERS: '1', CONSUMERS: '2', ENDPOINTS: '1', READY: '2/2' });

    // What a consumer holds, through kubectl against it.
    const provided = (await json(['--context', 'sim-east', 'get', 'endpointslices', '-n', NS, '-l', 'kubernetes.io/service-name=web,endpointslice.kubernetes.io/managed-by=endpointslice-controller.k8s.io'])).items as KObject[];
    t.equal(provided.length, 1, "east's own slice of web");
    for (const consumer of ['west', 'lab']) {
      const slices = (await json(['--context', `sim-${consumer}`, 'get', 'endpointslices', '-n', NS, '-l', 'multicluster.kubernetes.io/service-name=web'])).items as KObject[];
      t.same(slices.map((s) => s.metadata.name), [dispatchedSliceName('east', provided[0].metadata.name!)], `${consumer}: one slice, named <provider>-<slice>-<hash of the pair>`);
      const [s] = slices;
      t.match(s.metadata.labels, {
        'kubernetes.io/service-name': 'web',
        'multicluster.kubernetes.io/service-name': 'web',
        'multicluster.kubernetes.io/source-cluster': 'east',
        'endpointslice.kubernetes.io/managed-by': dispatchManagedBy,
        [managedByLabel]: managedByValue,
        [installationLabel]: installation,
      }, `${consumer}: labelled for kube-proxy, DNS and the MCS-API, and with the installation that wrote it`);
      t.match(s.metadata.annotations, { 'panoptes.io/source': `east/${NS}/${provided[0].metadata.name}`, 'panoptes.io/provider-ready': 'true', 'panoptes.io/provider-last-sync': /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/ });
      t.equal(s.addressType, 'IPv4');
      t.same(s.endpoints, provided[0].endpoints, `${consumer}: the provider's endpoints as they are`);
      t.same(s.ports, provided[0].ports);
      t.match(addresses([s]), [/^10\.1\.[12]\.\d+$/, /^10\.1\.[12]\.\d+$/], "east's pod addresses");
      const svc = await json(['--context', `sim-${consumer}`, 'get', 'service', 'web', '-n', NS]);
      t.match(svc, { metadata: { labels: { [managedByLabel]: managedByValue } }, spec: { type: 'ClusterIP', ports: [{ name: 'http', port: 80, protocol: 'TCP' }], clusterIP: /^10\./ } });
      t.notOk(svc.spec.selector, `${consumer}: a Service without a selector (its endpoints are the dispatched slices)`);
    }
    const imp = await json(['--context', 'sim-west', 'get', 'serviceimports', 'web', '-n', NS]);
    t.match(imp, { apiVersion: 'multicluster.x-k8s.io/v1alpha1', metadata: { labels: { [managedByLabel]: managedByValue } }, spec: { type: 'ClusterSetIP', ports: [{ name: 'http', port: 80, protocol: 'TCP' }] }, status: { clusters: [{ cluster: 'east' }] } });
    const noCrd = await kubectl(['--context', 'sim-lab', 'get', 'serviceimports', '-n', NS]);
    t.not(noCrd.code, 0, 'lab has no ServiceImport CRD...');
    t.notOk(lab.registry.byId(IMPORTS), '...and got no ServiceImport');
    const wide = await ok(['--context', 'panoptes', 'get', 'clusters', '-o', 'wide']);
    t.match(wide, new RegExp(`\\nwest\\s.*\\sprovider,consumer\\s+${installation}\\s`), 'kubectl get clusters -o wide: the roles clusters.yaml grants, and the installation');
    const w = fleet.since(before);
    for (const svc of ['web', 'api', 'keep', 'grace', 'drop']) t.same(writesOf(w.east, svc), [], `nothing of ${svc} written to its provider`);
    t.same(writesOf(w.north, 'web'), [], 'nothing to a cluster that is not a consumer');
  });

  await t.test('kubectl scale in east: the consumers follow, up and down', async (t) => {
    await scale(4);
    await followed([west, lab], 4);
    await row('web', { ENDPOINTS: '4', READY: '2/2' });
    await scale(1);
    await followed([west, lab], 1);
    await row('web', { ENDPOINTS: '1', READY: '2/2' });
    // A consumer's counts are written at most every 5 s (statusCountsIntervalMs): the status
    // catches up with what the consumers hold within it.
    const st = await until("the consumers' counts in the status", async () => {
      const s = await status('web');
      return s.consumers?.every((c) => c.endpoints === 1) ? s : undefined;
    }, 15_000);
    t.match(st.consumers, [{ cluster: 'lab', endpoints: 1, endpointSlices: 1, serviceApplied: true }, { cluster: 'west', endpoints: 1, endpointSlices: 1, serviceApplied: true }]);
    t.match(st.providers, [{ cluster: 'east', endpoints: 1, ready: true }]);
  });

  await t.test('a consumer added and removed by patching the MultiClusterService', async (t) => {
    await ok(['--context', 'panoptes', 'patch', 'mcs', 'web', '-n', NS, '--type', 'merge', '-p', JSON.stringify({ spec: { consumerClusters: ['west', 'lab', 'north'] } })]);
    await followed([north], 1);
    t.ok(north.store.get('/services', NS, 'web'), 'north has the Service');
    await row('web', { CONSUMERS: '3', READY: '3/3' });
    await ok(['--context', 'panoptes', 'patch', 'mcs', 'web', '-n', NS, '--type', 'json', '-p', JSON.stringify([{ op: 'replace', path: '/spec/consumerClusters', value: ['west', 'lab'] }])]);
    await until('north cleaned of web', () => !everythingDispatched(north).some((o) => o.includes('/web')));
    await row('web', { CONSUMERS: '2', READY: '2/2' });
    await until("north's entry gone from the status", async () => !(await status('web')).consumers?.some((c) => c.cluster === 'north'));
    t.ok(mirrors(west, east, 'web') && mirrors(lab, east, 'web'), 'the others keep theirs');
  });

  await t.test("a Service of a consumer's own (conflict, untouched) and a consumer that may not write (Forbidden, nothing written)", async (t) => {
    const st = await until('api: conflict in lab, Forbidden in audit', async () => {
      const s = await status('api');
      return condition(s, 'lab', 'ServiceApplied')?.reason === 'ServiceConflict' && condition(s, 'audit', 'ServiceApplied')?.reason === 'Forbidden' ? s : undefined;
    });
    t.match(condition(st, 'lab', 'ServiceApplied'), { status: 'False', message: /cluster lab has a Service shop\/api that Panoptes did not create/ });
    t.match(condition(st, 'audit', 'EndpointSlicesDispatched'), { status: 'False', reason: 'Forbidden', message: /manifests\/member-cluster\/dispatcher/ });
    t.match(st.consumers?.find((c) => c.cluster === 'audit')?.lastError, /^Forbidden: .*forbidden: User "panoptes" cannot create resource "services"/);
    t.match(condition(st, 'west', 'EndpointSlicesDispatched'), { status: 'True' });
    const wide = mcsRows(await ok(['--context', 'panoptes', 'get', 'mcs', 'api', '-n', NS, '-o', 'wide']));
    t.match(wide.get('api'), { READY: '1/3' });
    t.ok(mirrors(west, east, 'api'), 'west got api');
    const now = lab.store.get('/services', NS, 'api')!;
    t.equal(now.metadata.resourceVersion, labService.metadata.resourceVersion, "lab's own Service untouched");
    t.same(dispatchedSlices(lab, 'api'), [], 'no slices of api in lab');
    t.same(everythingDispatched(audit), [], 'nothing written to audit');
    // Forbidden is not a retry storm: the consumer waits out a backoff (10 s, growing).
    const denied = audit.auth.denied.length;
    t.ok(denied >= 1, 'audit refused a write');
    await sleep(5000);
    t.ok(audit.auth.denied.length - denied <= 3, `${audit.auth.denied.length - denied} writes refused in 5 s`);
    t.ok(audit.auth.seen.every((tok) => tok === readOnlyToken), 'audit saw only its own token');
  });

  await t.test("another tenant's full quota in lab holds back its own Service only, and its status names only its own object", async (t) => {
    const crud = lab.crud;
    const create = crud.create;
    crud.create = (info, version, ns, body, opts) => {
      if (ns === QUOTA_NS) throw new StatusError('Forbidden', `${info.resource} "${(body as KObject).metadata?.name}" is forbidden: exceeded quota: compute, requested: count/${info.resource}=1, used: count/${info.resource}=5, limited: count/${info.resource}=5`);
      return create(info, version, ns, body, opts);
    };
    t.teardown(() => {
      crud.create = create;
    });
    const file = fleet.file('tenant.yaml', mcs('app', { providerClusters: ['east'], consumerClusters: ['west', 'lab'] }, QUOTA_NS));
    t.match(await ok(['--context', 'panoptes', 'apply', '-f', file]), /multiclusterservice\.panoptes\.io\/app created/);
    const tenant = async () => (parse(await ok(['--context', 'panoptes', 'get', 'mcs', 'app', '-n', QUOTA_NS, '-o', 'yaml'])) as { status?: MultiClusterServiceStatus }).status ?? {};
    const st = await until("lab's refusal in tenant-b's status", async () => {
      const s = await tenant();
      return s.consumers?.find((c) => c.cluster === 'lab')?.lastError && condition(s, 'west', 'EndpointSlicesDispatched')?.status === 'True' ? s : undefined;
    });
    t.match(st.consumers?.find((c) => c.cluster === 'lab')?.lastError, /^Forbidden: writing Service tenant-b\/app in cluster lab: HTTP 403 Forbidden: services "app" is forbidden: exceeded quota: compute/, 'its own object\'s error, not RBAC');
    // Meanwhile lab follows shop's web as before: one tenant's refusal blocks no other.
    await scale(2);
    await followed([west, lab], 2);
    t.notMatch(JSON.stringify(await status('web')), /tenant-b|exceeded quota/, "shop's status names nothing of tenant-b");
    crud.create = create;
    await until('lab gets tenant-b\'s app once the quota allows it', () => mirrors(lab, east, 'app', undefined, QUOTA_NS), 60_000);
    const del = await kubectl(['--context', 'panoptes', 'delete', 'mcs', 'app', '-n', QUOTA_NS, '--timeout', '60s'], 90_000);
    t.equal(del.code, 0, del.stderr);
  });

  await t.test('a ServiceExport in west exports its Service to every other cluster', async (t) => {
    const file = fleet.file('export.yaml', { apiVersion: 'multicluster.x-k8s.io/v1alpha1', kind: 'ServiceExport', metadata: { name: 'reports', namespace: NS } });
    t.match(await ok(['--context', 'sim-west', 'apply', '-f', file]), /serviceexport\.multicluster\.x-k8s\.io\/reports created/);
    await until('reports in east, lab and north', () => [east, lab, north].every((c) => mirrors(c, west, 'reports') && dispatchedSlices(c, 'reports').length === 1));
    // west provides it itself: its own Service is used as it is, nothing of Panoptes' beside it.
    t.notOk(west.store.get(IMPORTS, NS, 'reports'), 'west, the provider, gets no ServiceImport');
    t.same(everythingDispatched(west).filter((o) => o.includes('reports')), [], 'nor anything else of reports');
    t.same(everythingDispatched(audit), [], 'still nothing written to audit');
    const eastSlices = await json(['--context', 'sim-east', 'get', 'endpointslices', '-n', NS, '-l', 'multicluster.kubernetes.io/source-cluster=west']);
    t.same(addresses(eastSlices.items), addresses(ownSlices(west, 'reports')), "east holds west's endpoints");
    await ok(['--context', 'sim-west', 'delete', 'serviceexport', 'reports', '-n', NS]);
    await until('reports gone everywhere', () => [east, west, lab, north].every((c) => !everythingDispatched(c).some((o) => o.endsWith('/reports') || o.includes('west-reports-'))));
    t.ok(west.store.get('/services', NS, 'reports'), "west's own Service stays");
  });

  await t.test('metrics and logs of the dispatcher', async (t) => {
    const m = await panoptes.metrics();
    t.ok(metricValue(m, 'panoptes_synchro_mcs_writes_total', { cluster: 'west', kind: 'EndpointSlice', verb: 'create' }) >= 1, 'writes per consumer');
    t.ok(metricValue(m, 'panoptes_synchro_mcs_writes_total', { cluster: 'lab', kind: 'EndpointSlice', verb: 'update' }) >= 1, 'updates per consumer');
    t.equal(metricValue(m, 'panoptes_synchro_mcs_writes_total', { cluster: 'east', kind: 'EndpointSlice', verb: 'create' }), 1, "east got one slice: west's reports");
    t.ok(metricValue(m, 'panoptes_synchro_mcs_errors_total', { cluster: 'audit', reason: 'Forbidden' }) >= 1, 'errors by reason');
    t.ok(metricValue(m, 'panoptes_synchro_mcs_conflicts_total', { cluster: 'lab', kind: 'Service' }) >= 1, 'conflicts');
    t.ok(metricValue(m, 'panoptes_synchro_mcs_dispatch_latency_seconds_count') >= 1, 'dispatch latency observed');
    const batches = panoptes.logs().filter((l) => l.includes('"dispatch batch"'));
    t.ok(batches.some((l) => l.includes('"consumer":"west"') && l.includes('"service":"shop/web"')), 'one log line per batch, naming consumer and Service');
    t.ok(batches.some((l) => l.includes('"consumer":"audit"') && l.includes('Forbidden')), 'the Forbidden batch logged with its error');
  });

  await t.test('a process that dispatches dies in the middle: its consumers are taken over, nothing lost or written twice', async (t) => {
    const owners = await clusters(panoptes.url);
    const { member } = await panoptes.crash(['west', 'lab']);
    const held = [...owners].filter(([, c]) => c.owner.member === member).map(([name]) => name);
    t.ok(held.some((c) => c === 'west' || c === 'lab'), `the crashed ${member} held consumers: ${held.join(', ')}`);
    await scale(3); // a change while nobody holds those consumers
    // Taken over: another owner under a newer epoch (bounded generously; the time is not the point).
    const moved = await until('its clusters taken over', async () => {
      const now = await clusters(panoptes.url);
      return held.every((c) => now.get(c)?.owner.member && now.get(c)!.owner.member !== member && (now.get(c)!.owner.epoch ?? 0) > (owners.get(c)!.owner.epoch ?? 0)) ? now : undefined;
    }, panoptes.leaseTtlMs + 60_000);
    t.ok(moved.size === 5, 'every cluster still listed');
    await until('Ready under the new owner', async () => {
      const now = await clusters(panoptes.url);
      return held.every((c) => now.get(c)?.phase === 'Ready');
    });
    await followed([west, lab], 3);
    await row('web', { ENDPOINTS: '3', READY: '2/2' });

    // Settled: a resync writes nothing; one provider change is one write per consumer.
    await resyncs(panoptes, 2);
    const quiet = fleet.mark();
    await resyncs(panoptes, 2);
    const none = fleet.since(quiet);
    for (const name of ['east', 'west', 'lab', 'north', 'audit'] as FleetName[]) {
      t.same(['web', 'api', 'keep', 'grace', 'drop'].flatMap((svc) => writesOf(none[name], svc)), [], `${name}: nothing written by two resyncs of a settled fleet`);
    }
    const mark = fleet.mark();
    await scale(2);
    await followed([west, lab], 2);
    await resyncs(panoptes, 2);
    const w = fleet.since(mark);
    const sliceName = ownSlices(east, 'web')[0].metadata.name!;
    const providerUpdates = w.east.filter((x) => x.resource === SLICES && x.name === sliceName && x.verb === 'update').length;
    t.ok(providerUpdates >= 1, `east's controller updated its slice ${providerUpdates} time(s)`);
    t.same(writesOf(w.east, 'web'), [], 'nothing written to the provider');
    for (const c of ['west', 'lab'] as FleetName[]) {
      const mine = writesOf(w[c], 'web');
      t.ok(mine.length >= 1 && mine.length <= providerUpdates && mine.every((x) => x.verb === 'update' && x.name === dispatchedSliceName('east', sliceName)), `${c}: ${mine.map((x) => `${x.verb} ${x.name}`).join(', ')}: one update per provider change, none twice`);
    }
  });

  await t.test('a dispatched slice deleted by hand in a consumer is repaired', async (t) => {
    const [slice] = dispatchedSlices(lab, 'web');
    t.match(await ok(['--context', 'sim-lab', 'delete', 'endpointslice', slice.metadata.name!, '-n', NS]), /deleted/);
    const back = await until('the slice back in lab', () => {
      const s = lab.store.get(SLICES, NS, slice.metadata.name!);
      return s && s.metadata.uid !== slice.metadata.uid ? s : undefined;
    }, panoptes.resyncMs + 20_000);
    t.same(back.endpoints, slice.endpoints, 'with the same endpoints');
    t.ok(mirrors(lab, east, 'web'));
  });

  await t.test('the provider unreachable, under each providerNotReady policy', async (t) => {
    const downAt = Date.now();
    await east.faults.down({ mode: 'refuse', forMs: 120_000 });
    t.teardown(() => east.faults.up());
    await until('east Unreachable', async () => (await clusters(panoptes.url)).get('east')?.phase === 'Unreachable');
    await until('RemoveImmediately: drop has no endpoints left in the consumers', () => [west, lab].every((c) => dispatchedSlices(c, 'drop').length === 0));
    const marked = await until('Keep: keep marked provider-ready=false', () => [west, lab].every((c) => mirrors(c, east, 'keep', 'false')));
    t.ok(marked);
    const graceLeft = [west, lab].every((c) => dispatchedSlices(c, 'grace').length === 1);
    const graceElapsed = Date.now() - downAt;
    if (graceElapsed < 3000) t.ok(graceLeft, `KeepForGracePeriod: grace still dispatched ${graceElapsed} ms after the outage began`);
    await until('KeepForGracePeriod: grace removed after its 4 s', () => [west, lab].every((c) => dispatchedSlices(c, 'grace').length === 0), 30_000);
    t.ok(Date.now() - downAt >= 3500, `grace removed ${Date.now() - downAt} ms after the outage began (grace 4 s)`);
    t.ok([west, lab].every((c) => mirrors(c, east, 'web', 'false', NS, true)), 'the default (KeepForGracePeriod, 300 s) keeps web, marked, its endpoints going away (ready false, terminating)');
    for (const svc of ['drop', 'grace']) t.ok([west, lab].every((c) => c.store.get('/services', NS, svc)), `${svc}: the Service stays`);
    const keep = await until('keep: east not Ready in the status', async () => {
      const s = await status('keep');
      return s.providers?.[0]?.ready === false ? s : undefined;
    });
    t.match(keep.providers, [{ cluster: 'east', ready: false, notReadySince: /Z$/ }]);
    const wide = await until('kubectl get mcs -o wide: east not Ready, its endpoints removed or kept', async () => {
      const out = await ok(['--context', 'panoptes', 'get', 'mcs', '-n', NS, '-o', 'wide']);
      const removed = (svc: string) => new RegExp(`^${svc}\\s+1\\s+2\\s+0\\s+2/2\\s.*provider east not Ready since \\S+Z: its endpoints are removed`, 'm').test(out);
      const kept = (svc: string, n: number) => new RegExp(`^${svc}\\s+1\\s+2\\s+${n}\\s+2/2\\s.*provider east not Ready since \\S+Z: its endpoints are kept`, 'm').test(out);
      return removed('drop') && removed('grace') && kept('keep', 1) && kept('web', 2) ? out : undefined;
    });
    t.comment(wide);
    const stale = dispatchedSlices(west, 'keep')[0].metadata.annotations!;
    t.ok(Date.parse(stale['panoptes.io/provider-last-sync']) <= Date.now(), 'provider-last-sync says since when');

    await east.faults.up();
    await until('east Ready again', async () => (await clusters(panoptes.url)).get('east')?.phase === 'Ready', 40_000);
    for (const svc of ['web', 'keep', 'grace', 'drop']) await until(`${svc} back, provider-ready=true`, () => [west, lab].every((c) => mirrors(c, east, svc, 'true')));
    await row('drop', { ENDPOINTS: '1', READY: '2/2' });
  });

  await t.test('kubectl delete: waits for the cleanup; everything dispatched is gone', async (t) => {
    const del = await kubectl(['--context', 'panoptes', 'delete', 'mcs', 'web', '-n', NS, '--timeout', '60s'], 90_000);
    t.equal(del.code, 0, del.stderr);
    t.match(del.stdout, /multiclusterservice\.panoptes\.io "web" deleted/);
    for (const c of [west, lab]) t.same(everythingDispatched(c).filter((o) => o.includes('/web') || o.includes('east-web-')), [], `${c.name}: nothing of web left when kubectl returns`);
    const gone = await kubectl(['--context', 'panoptes', 'get', 'mcs', 'web', '-n', NS]);
    t.match(gone.stderr, /NotFound|not found/);
    const all = await kubectl(['--context', 'panoptes', 'delete', 'mcs', '--all', '-n', NS, '--timeout', '60s'], 90_000);
    t.equal(all.code, 0, all.stderr);
    for (const c of Object.values(sims)) t.same(everythingDispatched(c), [], `${c.name}: nothing Panoptes dispatched is left`);
    t.equal(lab.store.get('/services', NS, 'api')?.metadata.resourceVersion, labService.metadata.resourceVersion, "lab's own Service still untouched");
    t.equal((await ok(['--context', 'panoptes', 'get', 'mcs', '-A', '-o', 'name'])).trim(), '', 'no MultiClusterService left');
  });
}
