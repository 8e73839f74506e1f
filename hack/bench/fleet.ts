// A fleet on one machine: a thousand simulated clusters (a small, realistic mix of objects
// each: hack/bench/fleet-sim.ts, in a process of their own), PostgreSQL, several `panoptes
// synchro` members sharing the clusters and several `panoptes apiserver` replicas, every one a
// process started as the image starts it (hack/panoptes-process.ts).
//
//   node --import tsx hack/bench/fleet.ts [--clusters 1000] [--objects-per-cluster 1000]
//        [--synchros 3] [--apiservers 2] [--watchers 1000] [--samples 100] [--ready-timeout 900]
//        [--initial-sync-concurrency N]  (synchro's flag; default synchro's own)
//
// Printed, with their targets:
// - the time until every cluster is Ready (its initial sync complete; target <= 5 minutes);
// - each process's RSS when idle, and synchro's per cluster and per object above a member with
//   no cluster (target: <= 0.5 MiB per cluster plus <= 1 KiB per object);
// - first and continue pages (limit=500) p50/p99 for the all-clusters view and for one
//   cluster, a label-selected page and a collection page (target: first pages <= 30 ms p50);
// - watch delivery to --watchers watchers spread over the replicas (a pod touched at 20/s in
//   random clusters, member write → line at the client);
// - storage bytes per object.
// Where a target is missed, the figures say which resource stopped it.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { setLogLevel } from '../../lib/log.ts';
import { Store } from '../../storage/store.ts';
import { storedSizes } from '../../storage/sizes.ts';
import { emptyStorageUrl, stopTestPostgres } from '../../storage/testing.ts';
import { percentile } from '../fixtures.ts';
import { SimProcess } from './sim-process.ts';
import { killChildren, procMemory, spawnPanoptes, type PanoptesProcess } from '../panoptes-process.ts';
import { freePort } from '../../storage/testing/postgres.ts';
import { cpuMs } from './process-cpu.ts';
import type { FleetFigures } from '../report/figures.ts';
import { recordRun } from '../report/record.ts';

const { values: args } = parseArgs({
  options: {
    clusters: { type: 'string', default: '1000' },
    'objects-per-cluster': { type: 'string', default: '1000' },
    synchros: { type: 'string', default: '3' },
    apiservers: { type: 'string', default: '2' },
    watchers: { type: 'string', default: '1000' },
    samples: { type: 'string', default: '100' },
    'ready-timeout': { type: 'string', default: '900' },
    'initial-sync-concurrency': { type: 'string' },
  },
});
setLogLevel('warn');
const nClusters = Number(args.clusters);
const perCluster = Number(args['objects-per-cluster']);
const nSynchros = Number(args.synchros);
const nApiservers = Number(args.apiservers);
const nWatchers = Number(args.watchers);
const samples = Number(args.samples);
const P = '/apis/panoptes.io/v1alpha1';
const R = `${P}/resources`;
const MiB = 1048576;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const now = () => performance.timeOrigin + performance.now();
const f1 = (n: number) => n.toFixed(1);
const targets = { readySeconds: 300, synchroMiBPerCluster: 0.5, synchroKiBPerObject: 1, firstPageP50Ms: 30 };

const agent = new Agent({ keepAlive: true, maxSockets: 4 });
function get(url: string, accept?: string): Promise<{ status: number; body: string; ms: number }> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(url, { agent, headers: accept ? { Accept: accept } : {} }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString(), ms: performance.now() - t0 }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

interface Serving {
  proc: PanoptesProcess;
  base: string;
}

async function apiserver(storage: string): Promise<Serving> {
  const port = await freePort();
  const proc = spawnPanoptes('apiserver', ['apiserver', '--storage', storage, '--insecure-listen', `127.0.0.1:${port}`], { raiseFileLimit: true });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    if ((await get(`${base}/readyz`).catch(() => ({ status: 0 }))).status === 200) return { proc, base };
    await sleep(200);
  }
  throw new Error(`apiserver did not start: ${proc.stderr()}`);
}

async function synchro(storage: string, clustersFile: string, identity: string): Promise<Serving> {
  const port = await freePort();
  const slots = args['initial-sync-concurrency'] ? ['--initial-sync-concurrency', args['initial-sync-concurrency']] : [];
  const proc = spawnPanoptes('synchro', ['synchro', '--storage', storage, '--clusters', clustersFile, '--identity', identity, '--metrics-listen', `127.0.0.1:${port}`, ...slots], { raiseFileLimit: true });
  return { proc, base: `http://127.0.0.1:${port}` };
}

const rssOf = (s: Serving) => procMemory(s.proc.proc.pid!).rss;

interface ClusterList {
  items: Array<{ metadata: { name: string }; status?: { initialSync?: { complete?: boolean }; conditions?: Array<{ type: string; status: string }> } }>;
}

async function readyCount(base: string): Promise<number> {
  const r = await get(`${base}${P}/clusters`);
  if (r.status !== 200) return 0;
  return (JSON.parse(r.body) as ClusterList).items.filter((c) => c.status?.initialSync?.complete === true).length;
}

/** `samples` sequential GETs of `url`: latencies (ms), sorted, and the last body. */
async function timed(url: string, accept?: string): Promise<{ ms: number[]; body: string }> {
  const ms: number[] = [];
  let body = '';
  for (let i = 0; i < samples; i++) {
    const r = await get(url, accept);
    if (r.status !== 200) throw new Error(`${url}: HTTP ${r.status} ${r.body.slice(0, 300)}`);
    ms.push(r.ms);
    body = r.body;
  }
  return { ms: ms.sort((a, b) => a - b), body };
}

/** The first page and continue pages of `url` (limit in it): first pages `samples` times, continue pages by paging `samples` pages deep. */
async function pages(what: string, url: string): Promise<{ what: string; firstMs: number[]; continueMs: number[]; items: number }> {
  const first = await timed(url);
  // A List carries its continue token in metadata; a CollectionResource at its top level.
  type Page = { metadata?: { continue?: string }; continue?: string; items: unknown[] };
  const tokenOf = (p: Page) => p.metadata?.continue ?? p.continue;
  const page = JSON.parse(first.body) as Page;
  const continueMs: number[] = [];
  let cont = tokenOf(page);
  for (let i = 0; i < samples && cont; i++) {
    const r = await get(`${url}&continue=${encodeURIComponent(cont)}`);
    if (r.status !== 200) throw new Error(`${url} continue: HTTP ${r.status}`);
    continueMs.push(r.ms);
    cont = tokenOf(JSON.parse(r.body) as Page);
  }
  continueMs.sort((a, b) => a - b);
  const p = (xs: number[], q: number) => f1(percentile(xs, q));
  console.log(`  ${what}: first page p50 ${p(first.ms, 50)} / p99 ${p(first.ms, 99)} ms (${page.items.length} items${tokenOf(page) ? ', more' : ''}); continue pages p50 ${p(continueMs, 50)} / p99 ${p(continueMs, 99)} ms (${continueMs.length} pages); target first page p50 <= ${targets.firstPageP50Ms} ms: ${percentile(first.ms, 50) <= targets.firstPageP50Ms ? 'MET' : 'MISSED'}`);
  return { what, firstMs: first.ms, continueMs, items: page.items.length };
}

/** A watch over HTTP that records when each touched seq arrives. */
function watch(url: string, arrivals: Map<number, number[]>): Promise<() => void> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent: false }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`${url}: ${res.statusCode}`));
      let partial = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        const t = now();
        partial += chunk;
        let nl: number;
        while ((nl = partial.indexOf('\n')) >= 0) {
          const line = partial.slice(0, nl);
          partial = partial.slice(nl + 1);
          const m = /"bench\/seq":"(\d+)"/.exec(line);
          if (m) (arrivals.get(Number(m[1])) ?? arrivals.set(Number(m[1]), []).get(Number(m[1]))!).push(t);
        }
      });
      res.on('error', () => undefined);
      resolve(() => req.destroy());
    });
    req.on('error', reject);
    req.end();
  });
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'panoptes-bench-fleet-'));
  const procs: Serving[] = [];
  let sim: SimProcess | undefined;
  try {
    console.log(`fleet: ${nClusters} simulated clusters of about ${perCluster} objects, PostgreSQL, ${nSynchros} synchro members, ${nApiservers} apiservers (processes on this machine)`);
    const { url: storage } = await emptyStorageUrl('postgres');

    // A member with no cluster: the baseline of a synchro's RSS.
    const emptyFile = join(dir, 'none.yaml');
    writeFileSync(emptyFile, stringify({ clusters: [] }));
    const idle = await synchro(storage, emptyFile, 'baseline');
    await sleep(15_000);
    const baselineRss = rssOf(idle);
    await idle.proc.stop();
    console.log(`  synchro with no cluster: RSS ${f1(baselineRss / MiB)} MiB`);

    let t = performance.now();
    sim = await SimProcess.start(undefined, { script: new URL('./fleet-sim.ts', import.meta.url) });
    const { urls } = (await sim.call({ cmd: 'start', clusters: nClusters, objectsPerCluster: perCluster })) as { urls: string[] };
    console.log(`  ${nClusters} simulated clusters started in ${f1((performance.now() - t) / 1000)} s`);
    const resources = ['namespaces', 'pods', 'configmaps', 'services', 'apps/deployments', 'apps/replicasets'];
    const clustersFile = join(dir, 'clusters.yaml');
    writeFileSync(clustersFile, stringify({ clusters: urls.map((server, i) => ({ name: `fleet-${i}`, server, resources: [...resources] })) }));

    const apis: Serving[] = [];
    for (let i = 0; i < nApiservers; i++) apis.push(await apiserver(storage));
    procs.push(...apis);
    const apiRssStart = apis.map(rssOf);

    t = performance.now();
    const members: Serving[] = [];
    for (let i = 0; i < nSynchros; i++) members.push(await synchro(storage, clustersFile, `member-${i}`));
    procs.push(...members);
    let ready = 0;
    const timeout = Number(args['ready-timeout']) * 1000;
    let lastPrint = 0;
    let maxSynchroRss = 0;
    while (performance.now() - t < timeout) {
      await sleep(2000);
      ready = await readyCount(apis[0].base).catch(() => ready);
      maxSynchroRss = Math.max(maxSynchroRss, ...members.map(rssOf));
      if (performance.now() - lastPrint > 15_000) {
        lastPrint = performance.now();
        console.log(`  ${f1((performance.now() - t) / 1000)} s: ${ready}/${nClusters} clusters Ready; synchro RSS ${members.map((m) => f1(rssOf(m) / MiB)).join(' ')} MiB`);
      }
      if (ready >= nClusters) break;
    }
    const readySeconds = (performance.now() - t) / 1000;
    console.log(`every cluster Ready: ${ready}/${nClusters} in ${f1(readySeconds)} s; target <= ${targets.readySeconds} s: ${ready >= nClusters && readySeconds <= targets.readySeconds ? 'MET' : 'MISSED'}`);

    const store = await Store.open(storage);
    const sizes = await storedSizes(store.conn);
    const objects = sizes.objects;
    console.log(`  storage: ${objects} objects, ${f1(sizes.databaseBytes / MiB)} MiB, ${Math.round(sizes.databaseBytes / Math.max(1, objects))} bytes per object (database size over objects; every table, index and the change log)`);

    // Idle: RSS after 30 s without changes.
    await sleep(30_000);
    const synchroRss = members.map(rssOf);
    const perMemberClusters = nClusters / nSynchros;
    const perMemberObjects = objects / nSynchros;
    const above = synchroRss.map((r) => r - baselineRss);
    const meanAbove = above.reduce((a, b) => a + b, 0) / above.length;
    const allowed = targets.synchroMiBPerCluster * MiB * perMemberClusters + targets.synchroKiBPerObject * 1024 * perMemberObjects;
    console.log(
      `synchro RSS idle: ${synchroRss.map((r) => f1(r / MiB)).join(', ')} MiB (max during the sync ${f1(maxSynchroRss / MiB)}); above a member with no cluster: ${f1(meanAbove / MiB)} MiB each for ~${Math.round(perMemberClusters)} clusters and ~${Math.round(perMemberObjects)} objects = ` +
        `${f1(meanAbove / MiB / perMemberClusters)} MiB per cluster, or ${f1(meanAbove / 1024 / perMemberObjects)} KiB per object; target <= ${targets.synchroMiBPerCluster} MiB per cluster + ${targets.synchroKiBPerObject} KiB per object (${f1(allowed / MiB)} MiB here): ${meanAbove <= allowed ? 'MET' : 'MISSED'}`,
    );
    const synchroCpu = await Promise.all(members.map((m) => cpuMs(m.base).catch(() => NaN)));
    await sleep(10_000);
    const synchroCpu2 = await Promise.all(members.map((m) => cpuMs(m.base).catch(() => NaN)));
    console.log(`  synchro CPU idle: ${synchroCpu2.map((c, i) => `${f1(((c - synchroCpu[i]) / 10_000) * 100)}%`).join(', ')} of a core`);

    // Pages, on the first replica.
    const a = apis[0].base;
    console.log(`pages (limit=500, ${samples} sequential requests each, keep-alive):`);
    const cluster = `fleet-${Math.floor(nClusters / 2)}`;
    const pageFigures = [
      await pages('all clusters, pods', `${a}${R}/api/v1/pods?limit=500`),
      await pages(`one cluster (${cluster}), pods`, `${a}${R}/clusters/${cluster}/api/v1/pods?limit=500`),
      // suite-0: every cluster's first group of 86 objects has it, whatever --objects-per-cluster (suite-1 begins with the second).
      await pages('all clusters, pods with labelSelector tier=web,app.kubernetes.io/part-of=suite-0', `${a}${R}/api/v1/pods?limit=500&labelSelector=${encodeURIComponent('tier=web,app.kubernetes.io/part-of=suite-0')}`),
      await pages('all clusters, collection workloads', `${a}${P}/collectionresources/workloads?limit=500`),
    ];
    const apiRss = apis.map(rssOf);
    console.log(`apiserver RSS: ${apiRssStart.map((r) => f1(r / MiB)).join(', ')} MiB at start, ${apiRss.map((r) => f1(r / MiB)).join(', ')} MiB after the pages`);

    // Watch delivery: watchers spread over the replicas, a pod touched at 20/s in random clusters.
    const list = JSON.parse((await get(`${a}${R}/api/v1/pods?limit=1`)).body) as { metadata: { resourceVersion: string } };
    const arrivals = new Map<number, number[]>();
    const closers: Array<() => void> = [];
    for (let i = 0; i < nWatchers; i++) closers.push(await watch(`${apis[i % apis.length].base}${R}/api/v1/pods?watch=1&resourceVersion=${list.metadata.resourceVersion}`, arrivals));
    await sleep(2000);
    const sent = new Map<number, number>();
    const touches = 200;
    const started = now();
    for (let seq = 1; seq <= touches; seq++) {
      const due = started + (seq * 1000) / 20;
      if (due > now()) await sleep(due - now());
      sent.set(seq, now());
      await sim.call({ cmd: 'touch', cluster: Math.floor(Math.random() * nClusters), seq });
    }
    await sleep(3000);
    const lat: number[] = [];
    let missing = 0;
    for (const [seq, at] of sent) {
      const got = arrivals.get(seq) ?? [];
      missing += nWatchers - got.length;
      for (const x of got) lat.push(x - at);
    }
    lat.sort((x, y) => x - y);
    for (const c of closers) c();
    console.log(`watch: ${nWatchers} watchers of every pod over ${nApiservers} replicas, ${touches} pod changes at 20/s in random clusters: member write -> at the client p50 ${f1(percentile(lat, 50))} / p99 ${f1(percentile(lat, 99))} ms, ${lat.length} deliveries${missing ? `, ${missing} MISSING` : ''}`);
    // The idle figure above is 30 s after the sync: V8 gives the sync's garbage back over minutes.
    const synchroRssLater = members.map(rssOf);
    const meanLater = synchroRssLater.reduce((x, r) => x + r - baselineRss, 0) / synchroRssLater.length;
    console.log(
      `synchro RSS ${f1((performance.now() - t) / 60_000)} min after the start: ${synchroRssLater.map((r) => f1(r / MiB)).join(', ')} MiB; above a member with no cluster ${f1(meanLater / MiB / perMemberClusters)} MiB per cluster; target (${f1(allowed / MiB)} MiB here): ${meanLater <= allowed ? 'MET' : 'MISSED'}`,
    );
    await store.close();

    await recordRun('fleet', 'fleet', { ...args }, {
      clusters: nClusters,
      objects,
      synchros: nSynchros,
      apiservers: nApiservers,
      readySeconds,
      ready,
      synchroBaselineMiB: baselineRss / MiB,
      synchroRssMiB: synchroRss.map((r) => r / MiB),
      synchroRssLaterMiB: synchroRssLater.map((r) => r / MiB),
      apiserverRssMiB: apiRss.map((r) => r / MiB),
      bytesPerObject: sizes.databaseBytes / Math.max(1, objects),
      pages: pageFigures,
      watch: { watchers: nWatchers, changes: touches, ms: lat, missing },
      targets,
    } satisfies FleetFigures);
  } finally {
    for (const p of procs) await p.proc.stop().catch(() => undefined);
    await sim?.exit();
    killChildren();
    agent.destroy();
    await stopTestPostgres();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
