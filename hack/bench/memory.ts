// Resident memory of the real processes, idle after syncing two member clusters:
//
//   node --import tsx hack/bench/memory.ts [--clusters 2] [--configmaps 2000] [--bytes 1024]
//        [--idle-seconds 30] [--burst 50000] [--only postgres|sqlite] [--baseline DIR]
//        [--node-options OPTS] [--openapi] [--snapshots DIR]
//
// Simulated member clusters (a child process of their own) with the demo workload and
// --configmaps ConfigMaps of about --bytes of JSON each, registered through one kubeconfig per
// cluster (as an install does). Then, for each backend:
//   - PostgreSQL (a throwaway server): `panoptes synchro` and `panoptes apiserver` processes;
//   - SQLite: `panoptes all-in-one`;
// each started with `node bin/panoptes.mjs` and the NODE_OPTIONS of the Dockerfile's `ENV`, as
// the image runs it (build first, `npm run build`: without dist/ the processes compile
// their TypeScript through tsx at start, as a checkout does). The benchmark waits for the
// initial sync of every cluster, reads what a user would (discovery, every ConfigMap in pages
// of 500, one get, a short watch), lets the processes idle for --idle-seconds and prints each
// one's RSS (VmRSS of /proc/<pid>/status, with RssAnon and RssFile), the CPU time it used
// (from start to the end of the idle time), and what its /metrics say of the heap (used,
// total) and of memory outside it (external: Buffers, native).
//
// Then the burst: --burst ConfigMaps created at once in the first cluster (0: none). Once
// every one is served (the list's count), the processes idle --idle-seconds again and the
// same figures are printed as "post-burst", with the highest RSS seen from the burst on.
// Each setup gets simulated clusters of its own, so that every one syncs the same objects.
//
// --baseline DIR: the same run with another checkout's bin/panoptes.mjs (for example the
// commit before a change, with its node_modules and its own Dockerfile), side by side.
// --node-options OPTS: this checkout once more with these NODE_OPTIONS instead of the
// image's ('' for V8's defaults). --snapshots DIR: a heap snapshot of each process after the
// idle time (started with --heapsnapshot-signal=SIGUSR2), for Chrome DevTools' Memory tab.
// --openapi: the reads also fetch what kubectl explain and apply do: /openapi/v2 (JSON and
// protobuf) and every /openapi/v3 group version of the all-clusters view, which fills the
// apiserver's OpenAPI caches.
//
// Targets: RSS ≤ 110 MB (105 MiB) for apiserver, idle and post-burst; ≤ 130 MB for synchro;
// ≤ 210 MB (200 MiB) for all-in-one post-burst. After a run that completed, the
// figures go to docs/bench/memory.json (memory-<backend>.json with --only) and its charts
// (hack/report/).
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { SimProcess } from './sim-process.ts';
import { imageNodeOptions, procMemory as procStatus, repoRoot, spawnPanoptes, type PanoptesProcess } from '../panoptes-process.ts';
import { freePort } from '../../storage/testing/postgres.ts';
import { recordRun } from '../report/record.ts';
import type { MemoryProcessFigures, MemorySetupFigures } from '../report/figures.ts';
import { get } from '../sim/testutil.ts';
import { emptyStorageUrl, stopTestPostgres } from '../../storage/testing.ts';

const { values: args } = parseArgs({
  options: {
    clusters: { type: 'string', default: '2' },
    configmaps: { type: 'string', default: '2000' },
    bytes: { type: 'string', default: '1024' },
    'idle-seconds': { type: 'string', default: '30' },
    burst: { type: 'string', default: '50000' },
    only: { type: 'string' },
    baseline: { type: 'string' },
    'node-options': { type: 'string' },
    openapi: { type: 'boolean', default: false },
    snapshots: { type: 'string' },
  },
});
if (args.only !== undefined && args.only !== 'postgres' && args.only !== 'sqlite') throw new Error(`--only: postgres or sqlite, got ${args.only}`);
const nClusters = Number(args.clusters);
const nConfigMaps = Number(args.configmaps);
const idleSeconds = Number(args['idle-seconds']);
const burst = Number(args.burst);
const P = '/apis/panoptes.io/v1alpha1/resources';
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const mib = (bytes: number) => `${(bytes / 1048576).toFixed(0)} MiB`;
const dir = mkdtempSync(join(tmpdir(), 'panoptes-bench-memory-'));
/** RSS, in MB (10^6 bytes). */
const targets = { apiserver: 110, synchro: 130, 'all-in-one': 210 };
/** The target of a process, idle (all-in-one: post-burst only) or post-burst. */
const targetOf = (name: string, postBurst = false): number | undefined =>
  name === 'apiserver' || name === 'synchro' || (name === 'all-in-one' && postBurst) ? targets[name] : undefined;
const MiB = 1048576;

async function until(what: string, fn: () => Promise<boolean>, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await fn().catch(() => false)) return;
    await sleep(250);
  }
  throw new Error(`timed out waiting for ${what}`);
}

// ---- processes

interface Memory {
  /** CPU seconds (user + system) since the process started. */
  cpu: number;
  rss: number;
  anon: number;
  file: number;
  heapUsed?: number;
  heapTotal?: number;
  external?: number;
}

interface Setup {
  /** What the figures call it: "this checkout", "baseline <directory name>". */
  name: string;
  label: string;
  /** A checkout: bin/panoptes.mjs and node_modules. */
  root: string;
  nodeOptions: string;
}

const panoptes = (setup: Setup, name: string, argv: string[]): PanoptesProcess =>
  spawnPanoptes(name, argv, { root: setup.root, nodeOptions: setup.nodeOptions, cwd: dir, execArgv: args.snapshots ? ['--heapsnapshot-signal=SIGUSR2'] : [] });

/** The process's own view, from the standard metrics on /metrics when it serves them. */
async function heapMetrics(metricsUrl: string): Promise<Partial<Memory>> {
  const r = await get(metricsUrl).catch(() => undefined);
  if (!r || r.status !== 200) return {};
  const value = (name: string) => {
    const m = new RegExp(`^${name} (\\S+)`, 'm').exec(r.text);
    return m ? Number(m[1]) : undefined;
  };
  return { heapUsed: value('nodejs_heap_size_used_bytes'), heapTotal: value('nodejs_heap_size_total_bytes'), external: value('nodejs_external_memory_bytes') };
}

// ---- reading what a user would

async function use(base: string): Promise<number> {
  for (const path of ['/apis', '/api/v1', `${P}/api`, `${P}/api/v1`, `${P}/apis`, '/apis/panoptes.io/v1alpha1/clusters']) {
    const r = await get(`${base}${path}`);
    if (r.status !== 200) throw new Error(`${path}: ${r.status}`);
  }
  let items = 0;
  let bytes = 0;
  let cont = '';
  let first = '';
  for (let page = 0; page < 1000; page++) {
    const r = await get(`${base}${P}/api/v1/configmaps?limit=500${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`);
    if (r.status !== 200) throw new Error(`list configmaps: ${r.status}`);
    for (const o of r.json.items as Array<{ metadata: { name: string; namespace: string } }>) {
      items++;
      bytes += JSON.stringify(o).length;
      if (!first && o.metadata.name.startsWith('cm-')) first = `${o.metadata.namespace}/${o.metadata.name}`;
    }
    cont = r.json.metadata.continue ?? '';
    if (!cont) break;
  }
  if (args.openapi) {
    await get(`${base}${P}/openapi/v2`);
    await get(`${base}${P}/openapi/v2`, { Accept: 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf' });
    const root = await get(`${base}${P}/openapi/v3`);
    for (const { serverRelativeURL } of Object.values(root.json.paths as Record<string, { serverRelativeURL: string }>)) {
      const r = await get(`${base}${serverRelativeURL}`);
      if (r.status !== 200) throw new Error(`${serverRelativeURL}: ${r.status}`);
    }
  }
  const [ns, name] = first.split('/');
  const one = await get(`${base}${P}/clusters/bench-0/api/v1/namespaces/${ns}/configmaps/${name}`);
  if (one.status !== 200) throw new Error(`get configmap: ${one.status}`);
  await new Promise<void>((resolve, reject) => {
    const req = request(`${base}${P}/api/v1/configmaps?watch=1&timeoutSeconds=1&allowWatchBookmarks=true`, (res) => {
      res.resume();
      res.on('end', resolve);
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
  return bytes / Math.max(1, items);
}

// ---- one setup: processes started, synced, used, idle, measured

interface Measured {
  name: string;
  memory: Memory;
  /** RSS sampled every second while idle. */
  idle: number[];
  /** After the burst was served and the idle time that followed; max: the highest RSS from the burst on. */
  postBurst?: { memory: Memory; max: number; idle: number[] };
}

/** Simulated clusters with the workload, and clusters.yaml registering them (one kubeconfig each, as an install does). */
async function startClusters(): Promise<{ sim: SimProcess; clustersFile: string }> {
  const sim = await SimProcess.start(nClusters, { workload: true });
  for (let i = 0; i < nClusters; i++) await sim.call({ cmd: 'bulk', cluster: i, count: nConfigMaps, namespaces: 20, bytes: Number(args.bytes) });
  const clusters = sim.urls.map((server, i) => {
    const name = `bench-${i}`;
    const file = join(dir, `${name}.kubeconfig`);
    writeFileSync(
      file,
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name, cluster: { server } }],
        users: [{ name: 'synchro', user: { token: 'unused-on-plain-http' } }],
        contexts: [{ name, context: { cluster: name, user: 'synchro' } }],
        'current-context': name,
      }),
    );
    return { name, kubeconfig: file };
  });
  const clustersFile = join(dir, 'clusters.yaml');
  writeFileSync(clustersFile, stringify({ clusters }));
  return { sim, clustersFile };
}

/** ConfigMaps served in the all-clusters view (the list's count). */
async function configMapsServed(base: string): Promise<number> {
  const l = await get(`${base}${P}/api/v1/configmaps?limit=1`);
  return l.status === 200 ? (l.json.metadata.remainingItemCount ?? 0) + l.json.items.length : -1;
}

/** RSS of each process every second for `seconds`. */
async function sampleIdle(procs: Array<{ p: PanoptesProcess }>, seconds: number): Promise<Map<string, number[]>> {
  const samples = new Map<string, number[]>();
  for (let s = 0; s < seconds; s++) {
    await sleep(1000);
    for (const { p } of procs) {
      const list = samples.get(p.name) ?? [];
      list.push(procStatus(p.proc.pid!).rss);
      samples.set(p.name, list);
    }
  }
  return samples;
}

function printMemory(name: string, memory: Memory, during: number[], what = 'while idle'): void {
  console.log(
    `  ${name.padEnd(10)} RSS ${mib(memory.rss)} (anonymous ${mib(memory.anon)}, file-backed ${mib(memory.file)}); CPU ${memory.cpu.toFixed(1)} s` +
      (memory.heapUsed !== undefined ? `; heap used ${mib(memory.heapUsed)} of ${mib(memory.heapTotal ?? NaN)}, external ${mib(memory.external ?? NaN)}` : '') +
      `; ${what} min ${mib(Math.min(...during))}, max ${mib(Math.max(...during))}`,
  );
}

async function measure(setup: Setup, backend: 'postgres' | 'sqlite', expected: number, label: string): Promise<{ syncSeconds: number; configMapBytes: number; burstSeconds?: number; measured: Measured[] }> {
  const { sim, clustersFile } = await startClusters();
  const { url: storage, cleanup } = await emptyStorageUrl(backend);
  const apiPort = await freePort();
  const base = `http://127.0.0.1:${apiPort}`;
  const procs: Array<{ p: PanoptesProcess; metrics: string }> = [];
  try {
    if (backend === 'postgres') {
      const metricsPort = await freePort();
      procs.push({ p: panoptes(setup, 'synchro', ['synchro', '--storage', storage, '--clusters', clustersFile, '--metrics-listen', `127.0.0.1:${metricsPort}`]), metrics: `http://127.0.0.1:${metricsPort}/metrics` });
      procs.push({ p: panoptes(setup, 'apiserver', ['apiserver', '--storage', storage, '--insecure-listen', `127.0.0.1:${apiPort}`]), metrics: `${base}/metrics` });
    } else {
      procs.push({ p: panoptes(setup, 'all-in-one', ['all-in-one', '--storage', storage, '--clusters', clustersFile, '--insecure-listen', `127.0.0.1:${apiPort}`]), metrics: `${base}/metrics` });
    }
    const t0 = Date.now();
    await until(`${label}: initial sync`, async () => {
      for (const { p } of procs) if (p.proc.exitCode !== null) throw new Error(`${p.name} exited: ${p.stderr()}`);
      const r = await get(`${base}/apis/panoptes.io/v1alpha1/clusters`);
      if (r.status !== 200) return false;
      const items = r.json.items as Array<{ status?: { initialSync?: { complete?: boolean } } }>;
      if (items.length !== nClusters || !items.every((c) => c.status?.initialSync?.complete === true)) return false;
      return (await configMapsServed(base)) >= expected;
    });
    const syncSeconds = (Date.now() - t0) / 1000;
    const avg = await use(base);
    const startup = procs.map(({ p }) => `${p.name} pid ${p.proc.pid}`).join(', ');
    console.log(`${label}: initial sync of ${nClusters} clusters in ${syncSeconds.toFixed(1)} s (${startup}); ConfigMaps served ${avg.toFixed(0)} bytes of JSON on average; idling ${idleSeconds} s`);
    const samples = await sampleIdle(procs, idleSeconds);
    const out: Measured[] = [];
    for (const { p, metrics } of procs) {
      const memory: Memory = { ...procStatus(p.proc.pid!), ...(await heapMetrics(metrics)) };
      const during = samples.get(p.name)!;
      out.push({ name: p.name, memory, idle: during });
      printMemory(p.name, memory, during);
    }
    if (args.snapshots) await snapshots(procs.map(({ p }) => p), `${label.replace(/[^a-z0-9]+/gi, '-')}`);
    if (burst <= 0) return { syncSeconds, configMapBytes: avg, measured: out };

    // The burst: created at once upstream, synced, served; the highest RSS sampled meanwhile.
    const max = new Map(procs.map(({ p }) => [p.name, 0]));
    const sampleMax = () => {
      for (const { p } of procs) max.set(p.name, Math.max(max.get(p.name)!, procStatus(p.proc.pid!).rss));
    };
    const b0 = Date.now();
    // In calls of 2,000, each once the one before the last is served: the simulator writes a
    // call's events to a watch at once and closes a watch with more than 16 MiB unsent as
    // slow, and synchro's re-watch would get every event since at once again. So the burst
    // goes as fast as synchro takes it.
    let served = 0;
    for (let done = 0, call = 0; done < burst; done += 2000, call++) {
      await until(`${label}: the burst served up to ${done - 2000}`, async () => {
        sampleMax();
        served = await configMapsServed(base);
        return served >= expected + done - 2000;
      }, 120_000);
      await sim.call({ cmd: 'bulk', cluster: 0, count: Math.min(2000, burst - done), namespaces: 20, bytes: Number(args.bytes), prefix: `burst-${call}-` });
    }
    const progress = setInterval(() => console.log(`  ... ${served} of ${expected + burst} ConfigMaps served`), 15_000);
    try {
      await until(`${label}: the burst served`, async () => {
        sampleMax();
        served = await configMapsServed(base);
        return served >= expected + burst;
      }, 300_000);
    } finally {
      clearInterval(progress);
    }
    const burstSeconds = (Date.now() - b0) / 1000;
    console.log(`${label}: ${burst} ConfigMaps created in bench-0, served after ${burstSeconds.toFixed(1)} s; idling ${idleSeconds} s`);
    const after = await sampleIdle(procs, idleSeconds);
    for (const [i, { p, metrics }] of procs.entries()) {
      const memory: Memory = { ...procStatus(p.proc.pid!), ...(await heapMetrics(metrics)) };
      const during = after.get(p.name)!;
      const highest = Math.max(max.get(p.name)!, ...during, memory.rss);
      out[i].postBurst = { memory, max: highest, idle: during };
      printMemory(p.name, memory, during, `post-burst (max ${mib(highest)} from the burst on), idle`);
    }
    if (args.snapshots) await snapshots(procs.map(({ p }) => p), `${label.replace(/[^a-z0-9]+/gi, '-')}-post-burst`);
    return { syncSeconds, configMapBytes: avg, burstSeconds, measured: out };
  } finally {
    for (const { p } of procs.reverse()) await p.stop();
    await cleanup();
    await sim.exit();
  }
}

/** SIGUSR2 to each process (started with --heapsnapshot-signal); the file moved to --snapshots. */
async function snapshots(procs: PanoptesProcess[], prefix: string): Promise<void> {
  const out = resolve(args.snapshots!);
  mkdirSync(out, { recursive: true });
  for (const p of procs) {
    const before = new Set(readdirSync(dir));
    p.proc.kill('SIGUSR2');
    let file: string | undefined;
    await until(`${p.name}: heap snapshot`, async () => {
      file = readdirSync(dir).find((f) => f.endsWith('.heapsnapshot') && !before.has(f));
      if (!file) return false;
      await sleep(500);
      return true;
    });
    const target = join(out, `${prefix}-${p.name}.heapsnapshot`);
    renameSync(join(dir, file!), target);
    console.log(`  heap snapshot of ${p.name}: ${target}`);
  }
}

// ---- main

const here = repoRoot;
const built = existsSync(join(here, 'dist/.built'));
let recorded: MemorySetupFigures[] = [];
if (!built) console.log('NOTE: no build (npm run build): the processes compile their TypeScript through tsx, as in a checkout');
const setups: Setup[] = [];
if (args.baseline) {
  const b = resolve(args.baseline);
  if (!existsSync(join(b, 'bin/panoptes.mjs'))) throw new Error(`--baseline ${b}: no bin/panoptes.mjs there`);
  setups.push({ name: `baseline ${basename(b)}`, label: `baseline ${b}`, root: b, nodeOptions: imageNodeOptions(b) });
}
setups.push({ name: 'this checkout', label: 'this checkout', root: here, nodeOptions: imageNodeOptions(here) });
if (args['node-options'] !== undefined) setups.push({ name: 'this checkout', label: 'this checkout', root: here, nodeOptions: args['node-options'] });
for (const s of setups) s.label += ` (NODE_OPTIONS=${JSON.stringify(s.nodeOptions)})`;
try {
  console.log(`${nClusters} simulated clusters per setup, each with the demo workload and ${nConfigMaps} ConfigMaps (about ${args.bytes} bytes of JSON each)${burst > 0 ? `, then a burst of ${burst} more in the first` : ''}; node ${process.version}`);

  const results: Array<{ setup: Setup; backend: 'postgres' | 'sqlite'; syncSeconds: number; configMapBytes: number; burstSeconds?: number; measured: Measured[] }> = [];
  for (const backend of ['postgres', 'sqlite'] as const) {
    if (args.only && args.only !== backend) continue;
    for (const setup of setups) {
      const m = await measure(setup, backend, nClusters * nConfigMaps, `${backend}, ${setup.label}`);
      results.push({ setup, backend, ...m });
    }
  }
  console.log('\nRSS after the initial sync and the reads, idle:');
  for (const r of results) {
    for (const m of r.measured) {
      const target = targetOf(m.name);
      const verdict = target === undefined ? '' : `; target <= ${target} MB: ${m.memory.rss <= target * 1e6 ? 'MET' : 'MISSED'}`;
      console.log(`  ${r.backend.padEnd(8)} ${r.setup.label.padEnd(Math.max(...setups.map((x) => x.label.length)))}  ${m.name.padEnd(10)} ${(m.memory.rss / 1e6).toFixed(0).padStart(4)} MB (${mib(m.memory.rss)}), CPU ${m.memory.cpu.toFixed(1)} s${verdict}`);
    }
  }
  if (burst > 0) {
    console.log(`\nRSS after a burst of ${burst} creates, served, then ${idleSeconds} s idle (max: the highest from the burst on):`);
    for (const r of results) {
      for (const m of r.measured) {
        if (!m.postBurst) continue;
        const { memory, max } = m.postBurst;
        const target = targetOf(m.name, true);
        const verdict = target === undefined ? '' : `; target <= ${target} MB: ${memory.rss <= target * 1e6 ? 'MET' : 'MISSED'}`;
        console.log(`  ${r.backend.padEnd(8)} ${r.setup.label.padEnd(Math.max(...setups.map((x) => x.label.length)))}  ${m.name.padEnd(10)} ${(memory.rss / 1e6).toFixed(0).padStart(4)} MB (${mib(memory.rss)}; anonymous ${mib(memory.anon)}, file-backed ${mib(memory.file)}), max ${mib(max)}${verdict}`);
      }
    }
  }
  recorded = results.map(
    (r): MemorySetupFigures => ({
      backend: r.backend,
      setup: r.setup.name,
      nodeOptions: r.setup.nodeOptions,
      syncSeconds: r.syncSeconds,
      configMapBytes: r.configMapBytes,
      burstSeconds: r.burstSeconds,
      processes: r.measured.map(processFigures),
    }),
  );
} finally {
  await stopTestPostgres();
  rmSync(dir, { recursive: true, force: true });
}
await recordRun(args.only ? `memory-${args.only}` : 'memory', 'memory', { ...args, baseline: args.baseline === undefined ? undefined : basename(resolve(args.baseline)), snapshots: args.snapshots === undefined ? undefined : true }, {
  clusters: nClusters,
  configMaps: nConfigMaps,
  bytes: Number(args.bytes),
  idleSeconds,
  burst,
  built,
  runs: recorded,
  targets: { rssMB: targets },
});

function processName(name: string): MemoryProcessFigures['process'] {
  if (name === 'synchro' || name === 'apiserver' || name === 'all-in-one') return name;
  throw new Error(`not a panoptes process: ${name}`);
}

function processFigures(m: Measured): MemoryProcessFigures {
  const miB = (bytes: number | undefined) => (bytes === undefined || !Number.isFinite(bytes) ? undefined : bytes / MiB);
  const pb = m.postBurst;
  return {
    process: processName(m.name),
    rssMiB: m.memory.rss / MiB,
    anonMiB: m.memory.anon / MiB,
    fileMiB: m.memory.file / MiB,
    idleRssMiB: { min: Math.min(...m.idle, m.memory.rss) / MiB, max: Math.max(...m.idle, m.memory.rss) / MiB },
    cpuSeconds: m.memory.cpu,
    heapUsedMiB: miB(m.memory.heapUsed),
    heapTotalMiB: miB(m.memory.heapTotal),
    externalMiB: miB(m.memory.external),
    postBurst: pb && {
      rssMiB: pb.memory.rss / MiB,
      anonMiB: pb.memory.anon / MiB,
      fileMiB: pb.memory.file / MiB,
      maxRssMiB: pb.max / MiB,
      heapUsedMiB: miB(pb.memory.heapUsed),
      heapTotalMiB: miB(pb.memory.heapTotal),
      externalMiB: miB(pb.memory.external),
    },
  };
}
