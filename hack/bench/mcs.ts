// Benchmark of multi-cluster Services: synchro's dispatcher over simulated clusters, every one
// the provider of some exported Services and a consumer of all the others (the clusters in a
// child process, hack/bench/mcs-sim.ts; synchro in this one).
//
//   node --import tsx hack/bench/mcs.ts [--clusters 20] [--services 50] [--endpoints 3]
//        [--changes 300] [--rate 10] [--resync 10] [--storage sqlite|postgres]
//
// 1. Initial dispatch: --services MultiClusterServices created (each Service provided by one
//    cluster with one slice per cluster of the fleet, consumed by every other), until every
//    consumer holds every slice of every Service it does not provide: time and member writes
//    (a Service per consumer and Service, and clusters × (clusters − 1) × services slices).
// 2. Endpoint changes: --changes times, at --rate per second, an endpoint added to another
//    provider slice; the time from the provider's write to every consumer holding it (both
//    taken in the simulator process, on one clock). Targets: p50 ≤ 300 ms, p99 ≤ 1 s. Member
//    writes per change: exactly one per consumer (clusters − 1), none to the provider.
// 3. Resync: two full passes (--resync seconds apart) of the unchanged fleet write nothing.
// The full pass runs every --resync seconds (default 10; a deployment's is 60 s,
// --mcs-resync-interval), so that several run during the changes too.
// Figures: docs/bench/mcs.json (SQLite) or mcs-postgres.json, and their charts.
import { parseArgs } from 'node:util';
import { setLogLevel } from '../../lib/log.ts';
import { Store } from '../../storage/store.ts';
import { emptyStorageUrl, stopTestPostgres, type Backend } from '../../storage/testing.ts';
import { putMcs } from '../../synchro/mcs/testutil.ts';
import { startSynchro, type SynchroHandle } from '../../synchro/synchro.ts';
import { tempDir, writeClusters } from '../../synchro/testutil.ts';
import type { ChangesResult, WriteCounts } from './mcs-sim.ts';
import { SimProcess } from './sim-process.ts';
import { percentile } from '../fixtures.ts';
import type { McsFigures, McsWriteFigures } from '../report/figures.ts';
import { recordRun } from '../report/record.ts';
import { histogramOf } from '../report/stats.ts';

const { values: args } = parseArgs({
  options: {
    clusters: { type: 'string', default: '20' },
    services: { type: 'string', default: '50' },
    endpoints: { type: 'string', default: '3' },
    changes: { type: 'string', default: '300' },
    rate: { type: 'string', default: '10' },
    resync: { type: 'string', default: '10' },
    storage: { type: 'string', default: 'sqlite' },
  },
});
setLogLevel((process.env.PANOPTES_LOG_LEVEL as 'warn') ?? 'warn');
const nClusters = Number(args.clusters);
const nServices = Number(args.services);
const consumers = nClusters - 1;
const backend = args.storage as Backend;
const resyncMs = Number(args.resync) * 1000;
const targets = { p50Ms: 300, p99Ms: 1000, resyncWrites: 0 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const now = () => performance.timeOrigin + performance.now();
const verdict = (ok: boolean) => (ok ? 'met' : 'MISSED');
const byVerb = (c: WriteCounts): McsWriteFigures => ({ total: c.total, create: c.byVerb.create ?? 0, update: c.byVerb.update ?? 0, delete: c.byVerb.delete ?? 0 });
const describe = (w: McsWriteFigures) => `${w.total} (${w.create} creates, ${w.update} updates, ${w.delete} deletes)`;

/** A counter's value, summed over the series whose labels include `labels`. */
async function counter(synchro: SynchroHandle, name: string, labels: Record<string, string> = {}): Promise<number> {
  const m = synchro.metrics.registry.getSingleMetric(name);
  if (!m) return 0;
  return (await m.get()).values.filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x)).reduce((n, v) => n + v.value, 0);
}

/** The changes of one resource in the change log between two resourceVersions. */
async function countChanges(store: Store, from: number, upTo: number, resource: { group: string; resource: string }): Promise<number> {
  let n = 0;
  for (let rv = from, i = 0; i < 10_000; i++) {
    const page = await store.changesOfResources(rv, upTo, [resource], 5000);
    n += page.length;
    if (page.length < 5000) break;
    rv = page[page.length - 1].rv;
  }
  return n;
}

const sims = await SimProcess.start(undefined, { script: new URL('./mcs-sim.ts', import.meta.url) });
const { urls, names, namespace } = (await sims.call({ cmd: 'start', clusters: nClusters, services: nServices, endpoints: Number(args.endpoints) })) as { urls: string[]; names: string[]; namespace: string };
const { url, cleanup } = await emptyStorageUrl(backend);
const store = await Store.open(url);
const { dir, cleanup: rmDir } = tempDir();
const resources = ['namespaces', 'services', 'discovery.k8s.io/endpointslices', 'multicluster.x-k8s.io/serviceexports', 'multicluster.x-k8s.io/serviceimports', 'apiextensions.k8s.io/customresourcedefinitions'];
writeClusters(`${dir}/clusters.yaml`, urls.map((u, i) => ({ name: names[i], server: u, resources })));
const synchro = await startSynchro({ store, clustersFile: `${dir}/clusters.yaml`, compaction: false, mcs: { resyncIntervalMs: resyncMs } });
let figures: McsFigures | undefined;
try {
  if (!(await synchro.waitForInitialSync(120_000))) throw new Error('the initial sync did not complete in 120 s');
  console.log(`${nClusters} simulated clusters, ${nServices} Services each provided by one cluster with ${nClusters} slices of ${args.endpoints} endpoints and consumed by the ${consumers} others (${backend})`);

  // 1. Initial dispatch.
  const m0 = (await sims.call({ cmd: 'mark' })).mark as number[];
  const t0 = now();
  for (let s = 0; s < nServices; s++) await putMcs(store, namespace, `svc-${String(s).padStart(2, '0')}`, {});
  const done = (await sims.call({ cmd: 'await-dispatch', timeoutMs: 600_000 })) as { complete: boolean; at: number };
  const initialSeconds = (done.at - t0) / 1000;
  const initialWrites = byVerb((await sims.call({ cmd: 'writes', mark: m0 })).counts as WriteCounts);
  const slices = nClusters * consumers * nServices;
  // And the Service Panoptes creates in each consumer of each Service.
  const expected = slices + consumers * nServices;
  console.log(
    `initial dispatch of ${nServices} Services to ${nClusters} clusters: ${done.complete ? '' : 'NOT COMPLETE after '}${initialSeconds.toFixed(1)} s, ${slices} slices (${Math.round(slices / initialSeconds)}/s); ` +
      `member writes ${describe(initialWrites)}: ${initialWrites.total === expected && initialWrites.create === expected ? 'one create per slice and per Service' : `expected ${expected} creates`}`,
  );
  if (!done.complete) throw new Error('the initial dispatch did not complete');

  // Settled: the slices written are synced back; nothing more is written.
  for (let i = 0; i < 60; i++) {
    const m = (await sims.call({ cmd: 'mark' })).mark as number[];
    await sleep(2000);
    if (((await sims.call({ cmd: 'writes', mark: m })).counts as WriteCounts).total === 0) break;
  }

  // 2. Endpoint changes.
  const latency = synchro.metrics.registry.getSingleMetric('panoptes_synchro_mcs_dispatch_latency_seconds')!;
  const sumCount = async () => {
    const v = (await latency.get()).values as Array<{ metricName?: string; value: number }>;
    const pick = (suffix: string) => v.filter((x) => x.metricName === `panoptes_synchro_mcs_dispatch_latency_seconds${suffix}`).reduce((n, x) => n + x.value, 0);
    return [pick('_sum'), pick('_count')];
  };
  const [sum0, count0] = await sumCount();
  const changes = Number(args.changes);
  const rate = Number(args.rate);
  const rv0 = await store.watermark();
  const c0 = performance.now();
  const r = (await sims.call({ cmd: 'changes', count: changes, ratePerSec: rate, timeoutMs: 30_000, settleMs: 3000 })).result as ChangesResult;
  const [sum1, count1] = await sumCount();
  const statusWrites = await countChanges(store, rv0, await store.watermark(), { group: 'panoptes.io', resource: 'multiclusterservices' });
  const statusWritesPerSec = statusWrites / ((performance.now() - c0) / 1000);
  const dispatchLatencyMeanMs = count1 > count0 ? ((sum1 - sum0) / (count1 - count0)) * 1000 : NaN;
  const p50 = percentile(r.allConsumersMs, 50);
  const p99 = percentile(r.allConsumersMs, 99);
  const per = r.writesPerChange;
  const writesPerChange = { exact: per.filter((w) => w === consumers).length, fewer: per.filter((w) => w < consumers).length, more: per.filter((w) => w > consumers).length, min: Math.min(...per), max: Math.max(...per) };
  console.log(
    `endpoint change in a provider -> all ${consumers} consumers updated, ${per.length} changes at ${rate}/s: p50 ${p50.toFixed(0)} ms, p99 ${p99.toFixed(0)} ms, max ${Math.max(...r.allConsumersMs).toFixed(0)} ms` +
      `${r.incomplete ? ` (${r.incomplete} never complete)` : ''}; per consumer p50 ${percentile(r.perConsumerMs, 50).toFixed(0)} ms, p99 ${percentile(r.perConsumerMs, 99).toFixed(0)} ms; ` +
      `the dispatcher's commit-to-write mean ${dispatchLatencyMeanMs.toFixed(0)} ms; targets p50 <= ${targets.p50Ms} ms: ${verdict(p50 <= targets.p50Ms && r.incomplete === 0)}, p99 <= ${targets.p99Ms} ms: ${verdict(p99 <= targets.p99Ms && r.incomplete === 0)}`,
  );
  console.log(`status writes of the ${nServices} MultiClusterServices during the changes: ${statusWrites}, ${statusWritesPerSec.toFixed(1)}/s (each consumer's counts at most every 5 s)`);
  console.log(
    `member writes per endpoint change: ${writesPerChange.exact} of ${per.length} changes exactly ${consumers} (one per consumer), ${writesPerChange.fewer} fewer, ${writesPerChange.more} more (min ${writesPerChange.min}, max ${writesPerChange.max}); ` +
      `to the provider ${r.providerWrites}; anything else ${r.otherWrites}; target exactly ${consumers} and none to the provider: ${verdict(writesPerChange.exact === per.length && r.providerWrites === 0 && r.otherWrites === 0)}`,
  );

  // 3. A resync of the unchanged fleet.
  const m1 = (await sims.call({ cmd: 'mark' })).mark as number[];
  const passes0 = await counter(synchro, 'panoptes_synchro_mcs_passes_total', { trigger: 'resync' });
  const r0 = performance.now();
  const deadline = r0 + resyncMs * 4 + 60_000;
  while ((await counter(synchro, 'panoptes_synchro_mcs_passes_total', { trigger: 'resync' })) < passes0 + 3 && performance.now() < deadline) await sleep(200);
  // The third pass has started: the two before it are complete.
  const passes = (await counter(synchro, 'panoptes_synchro_mcs_passes_total', { trigger: 'resync' })) - passes0 - 1;
  const resyncSeconds = (performance.now() - r0) / 1000;
  const resyncWrites = ((await sims.call({ cmd: 'writes', mark: m1 })).counts as WriteCounts).total;
  console.log(`resync of the unchanged fleet: ${passes} full passes in ${resyncSeconds.toFixed(1)} s wrote ${resyncWrites} times to the members; target 0: ${verdict(passes >= 2 && resyncWrites === 0)}`);

  figures = {
    backend: backend === 'postgres' ? 'postgres' : 'sqlite',
    clusters: nClusters,
    services: nServices,
    endpointsPerSlice: Number(args.endpoints),
    initial: { seconds: initialSeconds, complete: done.complete, slices, writes: initialWrites },
    changes: {
      count: per.length,
      ratePerSec: rate,
      allConsumersMs: r.allConsumersMs,
      perConsumer: histogramOf(r.perConsumerMs),
      incomplete: r.incomplete,
      writesPerChange,
      providerWrites: r.providerWrites,
      otherWrites: r.otherWrites,
      dispatchLatencyMeanMs,
      statusWritesPerSec,
    },
    resync: { passes, seconds: resyncSeconds, writes: resyncWrites },
    targets,
  };
} finally {
  await synchro.stop();
  await store.close();
  await cleanup();
  rmDir();
  await sims.exit();
  await stopTestPostgres();
}
// docs/bench/mcs.json (SQLite, the default), mcs-postgres.json.
if (figures) await recordRun(backend === 'sqlite' ? 'mcs' : `mcs-${backend}`, 'mcs', { ...args }, figures);
