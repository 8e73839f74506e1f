// List benchmark of the apiserver read path:
//   node --import tsx hack/bench/list.ts [--pods 100000] [--clusters 10] [--samples 200]
//        [--storage sqlite|postgres|both] [--skip-kubectl] [--filter-objects 50000] [--filter-rounds 3]
// Simulated clusters get --pods pods in total; synchro copies them into storage (SQLite, then
// PostgreSQL, by default both in one run); then, with synchro stopped, it measures (1) the
// first page (limit=500) through HTTP, as JSON (client-go informers) and as Table (kubectl),
// (2) all pages, and the PostgreSQL / SQLite ratios of both (target: within 1.5x), (3) lists
// with multi-value search filters over --filter-objects ConfigMaps in four more clusters
// (below), first and continue pages apart (target: every continue page within 1.5x of the
// first), and (4) on the first backend, `kubectl get pods -A` over the whole set through
// Panoptes against `kubectl get pods -A` on each simulated cluster one after the other.
import { percentile } from '../fixtures.ts';
import { benchCollections } from './list/search-collections.ts';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { createApiserver } from '../../apiserver/server.ts';
import { setLogLevel } from '../../lib/log.ts';
import { Store } from '../../storage/store.ts';
import { emptyStorageUrl, stopTestPostgres, type Backend } from '../../storage/testing.ts';
import { startSynchro } from '../../synchro/synchro.ts';
import { benchSearchOwners } from './list/search-owners.ts';
import { startSimClusters } from '../sim/cluster.ts';
import type { KObject } from '../sim/types.ts';
import type { ListBackendFigures, ListCpuFigures, ListFilteredFigures, ListKubectlFigures, ListNeighbourFigures } from '../report/figures.ts';
import { spawnPanoptes } from '../panoptes-process.ts';
import { freePort } from '../../storage/testing/postgres.ts';
import { cpuDuring } from './process-cpu.ts';
import { recordRun } from '../report/record.ts';
import { benchSearchTerms } from './list/search-terms.ts';

const { values } = parseArgs({
  options: {
    pods: { type: 'string' },
    clusters: { type: 'string' },
    samples: { type: 'string' },
    storage: { type: 'string' },
    'skip-kubectl': { type: 'boolean' },
    'filter-objects': { type: 'string' },
    'filter-rounds': { type: 'string' },
  },
});
const total = Number(values.pods ?? 100_000);
const nClusters = Number(values.clusters ?? 10);
const samples = Number(values.samples ?? 200);
const filterObjects = Number(values['filter-objects'] ?? 50_000);
const filterRounds = Number(values['filter-rounds'] ?? 3);
const backendsToRun: Backend[] = values.storage === 'sqlite' || values.storage === 'postgres' ? [values.storage] : ['sqlite', 'postgres'];
setLogLevel('warn');

const P = '/apis/panoptes.io/v1alpha1/resources';
const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';

function pod(cluster: number, i: number): KObject {
  const app = `app-${i % 40}`;
  return {
    metadata: {
      name: `${app}-${i.toString(36).padStart(6, '0')}`,
      namespace: `bench-${i % 20}`,
      labels: { app, 'pod-template-hash': 'abc123', tier: i % 2 ? 'web' : 'api' },
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: `${app}-abc123`, uid: `rs-${cluster}-${i % 40}`, controller: true, blockOwnerDeletion: true }],
    },
    spec: {
      nodeName: `node-${i % 30}`,
      restartPolicy: 'Always',
      schedulerName: 'default-scheduler',
      serviceAccountName: 'default',
      containers: [{ name: 'main', image: `registry.example.com/${app}:1.${i % 9}`, ports: [{ containerPort: 8080, protocol: 'TCP' }], resources: { requests: { cpu: '100m', memory: '128Mi' } } }],
    },
    status: {
      phase: i % 50 ? 'Running' : 'Pending',
      podIP: `10.${cluster}.${(i >> 8) & 255}.${i & 255}`,
      podIPs: [{ ip: `10.${cluster}.${(i >> 8) & 255}.${i & 255}` }],
      conditions: [{ type: 'Ready', status: 'True' }],
      containerStatuses: [{ name: 'main', ready: true, restartCount: i % 4 === 0 ? 1 : 0, state: { running: { startedAt: '2026-01-01T00:00:00Z' } } }],
    },
  };
}

/**
 * The ConfigMaps of the filtered lists, shaped like a load test on real clusters: the bulk in
 * one namespace (bench-load), and a few objects in the namespaces every cluster has, which
 * sort after it. f0 holds --filter-objects of them, f1 and f2 half each (the two-cluster list
 * selects as many as the one-cluster list), f3 half as well (the same objects again, not
 * selected: a cluster registered twice).
 */
const filterClusters = () => {
  const half = Math.ceil(filterObjects / 2);
  return [
    { name: 'f0', bulk: filterObjects },
    { name: 'f1', bulk: half },
    { name: 'f2', bulk: half },
    { name: 'f3', bulk: half },
  ];
};
const filterSystemNamespaces = ['default', 'kube-system'];
const filterPerSystemNamespace = 20;

function configMap(namespace: string, i: number): KObject {
  return {
    metadata: { name: `cm-${i.toString(36).padStart(6, '0')}`, namespace, labels: { app: `app-${i % 40}` } },
    data: { 'config.yaml': `replicas: ${i % 7}\nimage: registry.example.com/app-${i % 40}:1.${i % 9}\n`.repeat(4) },
  };
}

/** The filtered lists: each selects about --filter-objects ConfigMaps. */
const filterCases = [
  { name: 'two clusters', query: 'clusters=f1,f2' },
  { name: 'one cluster (reference)', query: 'clusters=f0' },
  { name: 'two clusters, three namespaces', query: 'clusters=f1,f2&namespaces=bench-load,default,kube-system' },
];

function httpGet(url: string, accept?: string): Promise<{ ms: number; bytes: number; status: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: accept ? { Accept: accept } : {} }, (res) => {
      let bytes = 0;
      res.on('data', (c: Buffer) => (bytes += c.length));
      res.on('end', () => resolve({ ms: performance.now() - started, bytes, status: res.statusCode ?? 0 }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

function kubectl(args: string[]): Promise<{ ms: number; lines: number; stderr: string }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    execFile('kubectl', args, { maxBuffer: 512 * 1024 * 1024, timeout: 600_000 }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`kubectl ${args.join(' ')}: ${stderr || err.message}`));
      resolve({ ms: performance.now() - started, lines: stdout.split('\n').filter(Boolean).length, stderr });
    });
  });
}

const pct = percentile;
const filterCount = () => filterClusters().reduce((n, c) => n + c.bulk + filterSystemNamespaces.length * filterPerSystemNamespace, 0);

/** Requests every page of `url` (limit in it) one after the other: each page's time and the items served. */
async function pageThrough(url: string, accept?: string): Promise<{ ms: number[]; items: number; seconds: number }> {
  const started = performance.now();
  const ms: number[] = [];
  let cont = '';
  let items = 0;
  do {
    const t1 = performance.now();
    const body = await new Promise<string>((resolve, reject) => {
      const req = request(`${url}${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`, { headers: accept ? { Accept: accept } : {} }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => (res.statusCode === 200 ? resolve(Buffer.concat(chunks).toString()) : reject(new Error(`${url}: HTTP ${res.statusCode}`))));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end();
    });
    ms.push(performance.now() - t1);
    const list = JSON.parse(body) as { metadata: { continue?: string }; items?: unknown[]; rows?: unknown[] };
    items += (list.items ?? list.rows ?? []).length;
    cont = list.metadata.continue ?? '';
  } while (cont && ms.length < 10_000);
  return { ms, items, seconds: (performance.now() - started) / 1000 };
}

/** Pages through each filtered list --filter-rounds times: first pages and continue pages apart. */
async function measureFiltered(backend: Backend, base: string): Promise<ListFilteredFigures[]> {
  const out: ListFilteredFigures[] = [];
  for (const c of filterCases) {
    const url = `${base}${P}/api/v1/configmaps?limit=500&${c.query}`;
    await pageThrough(url); // warm-up
    const f: ListFilteredFigures = { name: c.name, query: c.query, items: 0, pages: 0, firstPageMs: [], continuePageMs: [], allPagesSeconds: [] };
    for (let round = 0; round < filterRounds; round++) {
      const run = await pageThrough(url);
      [f.items, f.pages] = [run.items, run.ms.length];
      f.firstPageMs.push(run.ms[0]);
      f.continuePageMs.push(...run.ms.slice(1));
      f.allPagesSeconds.push(run.seconds);
    }
    // The p50 of continue pages against the first pages' (a plan that sorts the rows left makes
    // every continue page slower); the p99 also holds the machine's noise (compare the one-cluster list).
    const first = pct(f.firstPageMs, 50);
    const cont = pct(f.continuePageMs, 50);
    console.log(
      `${backend}: ${c.name} (${c.query}), ${f.items} ConfigMaps, ${f.pages} pages of 500, ${filterRounds} rounds: ` +
        `first page p50 ${first.toFixed(1)} ms; continue pages p50 ${cont.toFixed(1)} ms, p99 ${pct(f.continuePageMs, 99).toFixed(1)} ms, max ${Math.max(...f.continuePageMs).toFixed(1)} ms; ` +
        `all pages p50 ${pct(f.allPagesSeconds, 50).toFixed(2)} s; continue / first page p50 ${(cont / first).toFixed(2)}x (target <= 1.5x: ${cont <= 1.5 * first ? 'MET' : 'MISSED'})`,
    );
    out.push(f);
  }
  return out;
}

const cpuTargets = { json: 3, table: 8 };

/**
 * The apiserver's CPU per page of 500 pods: a `panoptes apiserver` process of its own on the same
 * storage, `samples` first pages as JSON and as Table one after the other, then every page as
 * JSON, its process_cpu_seconds_total read before and after each (hack/bench/process-cpu.ts).
 */
async function apiserverCpuPerPage(backend: Backend, storage: string): Promise<ListCpuFigures> {
  const port = await freePort();
  const proc = spawnPanoptes('apiserver', ['apiserver', '--storage', storage, '--insecure-listen', `127.0.0.1:${port}`]);
  try {
    const base = `http://127.0.0.1:${port}`;
    const first = `${base}${P}/api/v1/pods?limit=500`;
    const deadline = Date.now() + 60_000;
    while ((await httpGet(first).catch(() => ({ status: 0 }))).status !== 200) {
      if (Date.now() > deadline) throw new Error(`apiserver on ${backend} did not serve: ${proc.stderr()}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    for (let i = 0; i < 20; i++) await httpGet(first, i % 2 ? TABLE : undefined); // warm-up
    const perPage = async (accept?: string) => (await cpuDuring(base, async () => { for (let i = 0; i < samples; i++) await httpGet(first, accept); })).ms / samples;
    const json = await perPage();
    const table = await perPage(TABLE);
    const all = await cpuDuring(base, () => pageThrough(first));
    const out: ListCpuFigures = { json, table, allPagesJson: all.ms / all.value.ms.length, pages: all.value.ms.length };
    const met = (v: number, target: number) => `${v.toFixed(2)} ms (target <= ${target} ms: ${v <= target ? 'MET' : 'MISSED'})`;
    console.log(`${backend}: apiserver CPU per page of 500 pods (a panoptes apiserver process, process_cpu_seconds_total): first page JSON ${met(json, cpuTargets.json)}, Table ${met(table, cpuTargets.table)}; every page as JSON ${out.allPagesJson.toFixed(2)} ms (${out.pages} pages)`);
    out.neighbour = await busyNeighbour(backend, first);
    return out;
  } finally {
    await proc.stop();
  }
}

const neighbourTarget = 2;

/**
 * The same first pages with a busy neighbour on the same cores: one process per core spinning
 * (CPU-bound work of another tenant), against the same requests just before without it. Their
 * latency ratio says whether the apiserver's work per request is short and bounded (the
 * scheduler then shares the cores fairly) or holds the event loop long enough to queue
 * requests behind it.
 */
async function busyNeighbour(backend: Backend, first: string): Promise<ListNeighbourFigures> {
  const runs = Math.min(samples, 100);
  const sample = async (accept?: string) => {
    const ms: number[] = [];
    for (let i = 0; i < runs; i++) ms.push((await httpGet(first, accept)).ms);
    return { p50: pct(ms, 50), p99: pct(ms, 99) };
  };
  const idle = { json: await sample(), table: await sample(TABLE) };
  const spinners = Array.from({ length: cpus().length }, () => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
  try {
    await new Promise((r) => setTimeout(r, 500)); // the spinners scheduled
    const busy = { json: await sample(), table: await sample(TABLE) };
    const ratio = (f: 'json' | 'table', p: 'p50' | 'p99') => busy[f][p] / idle[f][p];
    const line = (f: 'json' | 'table') =>
      `${f === 'json' ? 'JSON' : 'Table'} p50 ${idle[f].p50.toFixed(1)} -> ${busy[f].p50.toFixed(1)} ms (${ratio(f, 'p50').toFixed(2)}x), p99 ${idle[f].p99.toFixed(1)} -> ${busy[f].p99.toFixed(1)} ms (${ratio(f, 'p99').toFixed(2)}x)`;
    const worst = Math.max(ratio('json', 'p50'), ratio('table', 'p50'));
    console.log(`${backend}: first page with a busy neighbour (${spinners.length} processes spinning on the ${cpus().length} cores, ${runs} requests each): ${line('json')}; ${line('table')}; target p50 within ${neighbourTarget}x of idle: ${worst <= neighbourTarget ? 'MET' : 'MISSED'}`);
    return { spinners: spinners.length, idle, busy };
  } finally {
    for (const s of spinners) s.kill('SIGKILL');
  }
}

/** Syncs the simulated clusters into a fresh store on `backend` and measures the read path over HTTP. */
type Sims = Awaited<ReturnType<typeof startSimClusters>>;

async function measure(backend: Backend, sims: Sims, filterSims: Sims, dir: string) {
  const { url, cleanup } = await emptyStorageUrl(backend);
  const store = await Store.open(url);
  const clustersFile = join(dir, 'clusters.yaml');
  const entries = [...sims.map((s) => ({ name: s.name, server: s.url, resources: ['pods'] })), ...filterSims.map((s) => ({ name: s.name, server: s.url, resources: ['configmaps'] }))];
  writeFileSync(clustersFile, stringify({ clusters: entries }));
  const t0 = performance.now();
  const synchro = await startSynchro({ store, clustersFile });
  if (!(await synchro.waitForInitialSync(600_000))) throw new Error('initial sync did not finish');
  await synchro.stop();
  await store.analyze();
  const setupSeconds = (performance.now() - t0) / 1000;
  const filterNote = filterSims.length ? ` (and ${filterCount()} ConfigMaps in ${filterSims.length} more)` : '';
  console.log(`setup: ${total} pods in ${nClusters} simulated clusters${filterNote} synced to ${backend} in ${setupSeconds.toFixed(1)} s`);

  const api = await createApiserver({ store });
  const base = await api.listen('127.0.0.1', 0);
  const figures = { json: 0, table: 0, pagesJson: 0 };
  const recorded: ListBackendFigures = { backend, setupSeconds, firstPageMs: { json: [], table: [] }, firstPageBytes: { json: 0, table: 0 }, allPages: { json: { pages: 0, seconds: 0 }, table: { pages: 0, seconds: 0 } } };
  const first = `${base}${P}/api/v1/pods?limit=500`;
  for (let i = 0; i < 10; i++) await httpGet(first); // warm-up
  for (const [what, accept] of [['JSON (PodList)', undefined], ['Table (kubectl)', TABLE]] as const) {
    const ms: number[] = [];
    let bytes = 0;
    for (let i = 0; i < samples; i++) {
      const r = await httpGet(first, accept);
      if (r.status !== 200) throw new Error(`first page: HTTP ${r.status}`);
      ms.push(r.ms);
      bytes = r.bytes;
    }
    if (what.startsWith('JSON')) figures.json = pct(ms, 50);
    else figures.table = pct(ms, 50);
    const format = what.startsWith('JSON') ? 'json' : 'table';
    recorded.firstPageMs[format] = ms;
    recorded.firstPageBytes[format] = bytes;
    console.log(`${backend}: first page, limit=500, ${what}: ${samples} sequential requests over HTTP: p50 ${pct(ms, 50).toFixed(1)} ms, p90 ${pct(ms, 90).toFixed(1)} ms, p99 ${pct(ms, 99).toFixed(1)} ms (${(bytes / 1024).toFixed(0)} KiB)${what.startsWith('JSON') ? `; target p50 <= 25 ms: ${pct(ms, 50) <= 25 ? 'MET' : 'MISSED'}` : ''}`);
  }

  for (const [what, accept] of [['JSON', undefined], ['Table', TABLE]] as const) {
    const run = await pageThrough(first, accept);
    const slowest = Math.max(...run.ms);
    if (what === 'JSON') figures.pagesJson = run.seconds * 1000;
    recorded.allPages[what === 'JSON' ? 'json' : 'table'] = { pages: run.ms.length, seconds: run.seconds };
    console.log(`${backend}: all pages, limit=500, ${what}: ${run.ms.length} pages in ${run.seconds.toFixed(2)} s over HTTP (slowest: page ${run.ms.indexOf(slowest)}, ${slowest.toFixed(0)} ms)`);
  }
  recorded.cpuMsPerPage = await apiserverCpuPerPage(backend, url);
  if (filterObjects > 0) recorded.filtered = await measureFiltered(backend, base);
  await benchSearchOwners(backend, store, base, nClusters, samples);

  return {
    figures,
    recorded,
    api: {
      base,
      close: async () => {
        await api.close();
        await store.close();
        await cleanup();
      },
    },
  };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'panoptes-bench-list-'));
  const sims = await startSimClusters(Array.from({ length: nClusters }, (_, i) => `c${i}`), { historySize: 1000 });
  const per = Math.ceil(total / nClusters);
  for (const [ci, c] of sims.entries()) {
    for (let n = 0; n < 20; n++) c.crud.create(c.registry.lookup('', 'v1', 'namespaces')!, 'v1', undefined, { metadata: { name: `bench-${n}` } });
    c.bulkCreate('pods', Array.from({ length: Math.min(per, total - ci * per) }, (_, i) => pod(ci, i)));
  }
  const filterSims = filterObjects > 0 ? await startSimClusters(filterClusters().map((c) => c.name), { historySize: 1000 }) : [];
  for (const [i, c] of filterClusters().entries()) {
    const sim = filterSims[i];
    if (!sim) break;
    sim.crud.create(sim.registry.lookup('', 'v1', 'namespaces')!, 'v1', undefined, { metadata: { name: 'bench-load' } });
    sim.bulkCreate('configmaps', Array.from({ length: c.bulk }, (_, n) => configMap('bench-load', n)));
    for (const ns of filterSystemNamespaces) sim.bulkCreate('configmaps', Array.from({ length: filterPerSystemNamespace }, (_, n) => configMap(ns, n)));
  }
  const figures = new Map<Backend, { json: number; table: number; pagesJson: number }>();
  const recorded: ListBackendFigures[] = [];
  let held: { base: string; close: () => Promise<void> } | undefined;
  for (const backend of backendsToRun) {
    const run = await measure(backend, sims, filterSims, dir);
    figures.set(backend, run.figures);
    recorded.push(run.recorded);
    if (!held) held = run.api;
    else await run.api.close();
  }
  const sq = figures.get('sqlite');
  const pg = figures.get('postgres');
  if (sq && pg) {
    const r = (a: number, b: number) => a / b;
    const ok = (x: number) => (x <= 1.5 ? 'MET' : 'MISSED');
    console.log(`PostgreSQL / SQLite, same data, same run: first page JSON ${r(pg.json, sq.json).toFixed(2)}x (${ok(r(pg.json, sq.json))}), Table ${r(pg.table, sq.table).toFixed(2)}x, all pages JSON ${r(pg.pagesJson, sq.pagesJson).toFixed(2)}x (${ok(r(pg.pagesJson, sq.pagesJson))}); target within 1.5x`);
  }
  await benchSearchTerms({ objects: total, samples: Math.min(samples, 30), backends: backendsToRun });
  await benchCollections({ backends: backendsToRun, objects: total, samples: Math.min(samples, 60) });
  const base = held!.base;
  if (process.env.BENCH_LIST_HOLD) {
    console.log(`holding: ${base}${P} and ${sims.map((s) => s.url).join(' ')}`);
    await new Promise((r) => setTimeout(r, Number(process.env.BENCH_LIST_HOLD) * 1000));
  }
  const record = (kubectl?: ListKubectlFigures) =>
    recordRun('list', 'list', { pods: total, clusters: nClusters, samples, storage: values.storage ?? 'both', 'skip-kubectl': values['skip-kubectl'] ?? false, 'filter-objects': filterObjects, 'filter-rounds': filterRounds }, {
      pods: total,
      clusters: nClusters,
      backends: recorded,
      kubectl,
      targets: { firstPageJsonP50Ms: 25, postgresOverSqlite: 1.5, continueOverFirstPage: 1.5, cpuMsPerPage: cpuTargets },
    });
  if (values['skip-kubectl']) {
    await finish();
    await record();
    return;
  }
  const cache = join(dir, 'kubectl-cache');
  const viaPanoptes = ['--kubeconfig', '/dev/null', '--cache-dir', cache, '--server', `${base}${P}`, 'get', 'pods', '-A'];
  const direct = (s: { url: string }) => ['--kubeconfig', '/dev/null', '--cache-dir', cache, '--server', s.url, 'get', 'pods', '-A'];
  // Warm kubectl's discovery cache for every server first (both sides then pay the same).
  await kubectl([...viaPanoptes.slice(0, 6), 'api-resources']);
  for (const s of sims) await kubectl([...direct(s).slice(0, 6), 'api-resources']);
  let t0 = performance.now();
  const p = await kubectl(viaPanoptes);
  const panoptesMs = performance.now() - t0;
  let directMs = 0;
  let directLines = 0;
  for (const s of sims) {
    const r = await kubectl(direct(s));
    directMs += r.ms;
    directLines += r.lines - 1;
  }
  console.log(`kubectl get pods -A through Panoptes (all clusters, one command): ${p.lines - 1} pods in ${(panoptesMs / 1000).toFixed(2)} s`);
  console.log(`kubectl get pods -A against each of the ${nClusters} clusters, one after the other: ${directLines} pods in ${(directMs / 1000).toFixed(2)} s`);
  console.log(`ratio: Panoptes takes ${(panoptesMs / directMs).toFixed(2)}x the time of the ${nClusters} direct runs (${(directMs / panoptesMs).toFixed(2)}x faster); target faster: ${panoptesMs < directMs ? 'MET' : 'MISSED'}`);
  // kubectl's client-side rate limiter (5 requests/s after a burst of 10) paces its pages of 500:
  // the same comparison with larger pages, on both sides.
  const big = await kubectl([...viaPanoptes, '--chunk-size=5000']);
  let bigDirect = 0;
  for (const s of sims) bigDirect += (await kubectl([...direct(s), '--chunk-size=5000'])).ms;
  console.log(`with --chunk-size=5000 on both sides: Panoptes ${(big.ms / 1000).toFixed(2)} s, ${nClusters} direct runs ${(bigDirect / 1000).toFixed(2)} s, ratio ${(big.ms / bigDirect).toFixed(2)}x (${(bigDirect / big.ms).toFixed(2)}x faster)`);

  await finish();
  await record({ pods: p.lines - 1, clusters: nClusters, panoptesSeconds: panoptesMs / 1000, directSeconds: directMs / 1000, chunked: { chunkSize: 5000, panoptesSeconds: big.ms / 1000, directSeconds: bigDirect / 1000 } });

  async function finish(): Promise<void> {
    await held!.close();
    await Promise.all([...sims, ...filterSims].map((s) => s.close()));
    await stopTestPostgres();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
