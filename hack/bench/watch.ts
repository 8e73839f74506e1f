// Watch latency end to end, over HTTP:
//
//   node --import tsx hack/bench/watch.ts [--writes 300] [--rate 20] [--visible-writes 200]
//        [--watchers 200] [--scale-seconds 8] [--only sqlite|postgres|scale]
//
// 1. Latency from a write in a simulated member cluster to the event at a Panoptes watch
//    client (HTTP, all-clusters view), p50/p99/max, next to a watch opened directly on the
//    simulated cluster (the same writes, the same client code), and their ratio:
//    - SQLite, `panoptes all-in-one` as one process;
//    - PostgreSQL (a throwaway server), `panoptes synchro` and `panoptes apiserver` as
//      separate processes (NOTIFY carries the wake-up between them).
//    The writes are --writes pod updates at --rate/s, spread over the pods of the cluster;
//    each carries its send time in an annotation. Targets: p99 <= 150 ms, and at most 5 ms
//    (p50) and 15 ms (p99) above the direct watch.
//    Then write -> visible: --visible-writes pod updates, one at a time; after each, a list
//    of that pod through Panoptes (HTTP, keep-alive, fieldSelector metadata.name) is repeated
//    until it shows the write. Targets: p50 <= 10 ms on PostgreSQL, <= 12 ms on SQLite.
// 2. Scale-out on PostgreSQL: 1 and then 3 `panoptes apiserver` processes; for each, one
//    watcher and then --watchers watchers (spread over the replicas) while synchro writes;
//    poll query rate read from each replica's /metrics (panoptes_watch_poll_queries_total).
// The simulated cluster and the watch clients live in this process; Panoptes in child processes
// started as the image starts them (hack/panoptes-process.ts).
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { killChildren, spawnPanoptes, type PanoptesProcess } from '../panoptes-process.ts';
import { freePort } from '../../storage/testing/postgres.ts';
import { startSimCluster, type SimCluster } from '../sim/cluster.ts';
import { get } from '../sim/testutil.ts';
import { setLogLevel } from '../../lib/log.ts';
import { readMarks } from '../../lib/trace.ts';
import { cpuMs } from './process-cpu.ts';
import { Store } from '../../storage/store.ts';
import { emptyStorageUrl, stopTestPostgres } from '../../storage/testing.ts';
import type { WatchFigures, WatchLatencyFigures, WatchScaleFigures } from '../report/figures.ts';
import { recordRun } from '../report/record.ts';

const { values: args } = parseArgs({
  options: {
    writes: { type: 'string', default: '300' },
    rate: { type: 'string', default: '20' },
    'visible-writes': { type: 'string', default: '200' },
    pods: { type: 'string', default: '200' },
    watchers: { type: 'string', default: '200' },
    'scale-seconds': { type: 'string', default: '8' },
    only: { type: 'string' },
  },
});
setLogLevel('warn');
const nWrites = Number(args.writes);
const rate = Number(args.rate);
const nPods = Number(args.pods);
const nWatchers = Number(args.watchers);
const nVisible = Number(args['visible-writes']);
const scaleSeconds = Number(args['scale-seconds']);
const P = '/apis/panoptes.io/v1alpha1/resources';
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const now = () => performance.timeOrigin + performance.now();
const dir = mkdtempSync(join(tmpdir(), 'panoptes-bench-watch-'));

async function until(what: string, fn: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await fn().catch(() => false)) return;
    await sleep(200);
  }
  throw new Error(`timed out waiting for ${what}`);
}

// ---- child processes

const panoptes = (argv: string[]): PanoptesProcess => spawnPanoptes(argv[0], argv);

async function synced(base: string, cluster: string): Promise<void> {
  await until(`${base} synced ${cluster}`, async () => {
    const r = await get(`${base}/apis/panoptes.io/v1alpha1/clusters/${cluster}`);
    return r.status === 200 && r.json.status?.initialSync?.complete === true && (await get(`${base}${P}/api/v1/pods?limit=1`)).status === 200;
  });
}

// ---- watch clients

interface Client {
  /** seq → arrival time (ms since the epoch, high resolution). */
  arrivals: Map<number, number>;
  close(): void;
}

/** A watch over HTTP; records when each bench write (annotation bench/seq) arrives. */
function watchClient(url: string): Promise<Client> {
  return new Promise((resolve, reject) => {
    const arrivals = new Map<number, number>();
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
          if (m && !arrivals.has(Number(m[1]))) arrivals.set(Number(m[1]), t);
        }
      });
      res.on('error', () => undefined);
      resolve({ arrivals, close: () => req.destroy() });
    });
    req.on('error', reject);
    req.end();
  });
}

// ---- the writes

let seq = 0;
const sent = new Map<number, number>();

function seedPods(sim: SimCluster): string[] {
  const info = sim.registry.lookup('', 'v1', 'pods')!;
  const ns = sim.registry.lookup('', 'v1', 'namespaces')!;
  sim.crud.create(ns, 'v1', undefined, { metadata: { name: 'bench' } });
  const names: string[] = [];
  for (let i = 0; i < nPods; i++) {
    const name = `bench-${i}`;
    sim.crud.create(info, 'v1', 'bench', { metadata: { name, labels: { app: 'bench' } }, spec: { containers: [{ name: 'c', image: 'nginx:1.27', resources: {} }] } });
    names.push(name);
  }
  return names;
}

/** --writes pod updates at --rate/s; returns their seqs. */
async function writeAtRate(sim: SimCluster, names: string[], writes: number): Promise<number[]> {
  const info = sim.registry.lookup('', 'v1', 'pods')!;
  const seqs: number[] = [];
  const start = now();
  for (let i = 0; i < writes; i++) {
    const due = start + (i * 1000) / rate;
    const wait = due - now();
    if (wait > 0) await sleep(wait);
    const s = ++seq;
    sent.set(s, now());
    sim.crud.patch(info, 'v1', 'bench', names[i % names.length], 'merge', { metadata: { annotations: { 'bench/seq': String(s) } } });
    seqs.push(s);
  }
  return seqs;
}

function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

interface Latency {
  n: number;
  missing: number;
  p50: number;
  p99: number;
  max: number;
  /** Every latency, sorted (ms). */
  ms: number[];
}

function latencies(client: Client, seqs: number[]): Latency {
  const ms: number[] = [];
  let missing = 0;
  for (const s of seqs) {
    const at = client.arrivals.get(s);
    if (at === undefined) missing++;
    else ms.push(at - sent.get(s)!);
  }
  ms.sort((a, b) => a - b);
  return { n: ms.length, missing, p50: quantile(ms, 0.5), p99: quantile(ms, 0.99), max: ms[ms.length - 1] ?? NaN, ms };
}

const f = (n: number) => n.toFixed(1);
const show = (what: string, l: Latency) => `${what}: p50 ${f(l.p50)} ms, p99 ${f(l.p99)} ms, max ${f(l.max)} ms (${l.n} events${l.missing ? `, ${l.missing} MISSING` : ''})`;

/** The path's stages in order, as lib/trace.ts marks them (a stage a setup does not pass is skipped). */
const stages: Array<[string, string]> = [
  ['received', 'synchro received it from the member'],
  ['taken', 'its round began (queued)'],
  ['locked', 'rv lock taken'],
  ['decided', 'stored rows read, changes decided'],
  ['rows-written', 'rows written (COMMIT next)'],
  ['committed', 'committed'],
  ['notified', 'the apiserver was told'],
  ['polling', 'its poll began'],
  ['read', 'read (poll answered, or the notification itself)'],
  ['dispatched', 'dispatched to the watchers'],
  ['written', 'written to the socket'],
];

/**
 * Where the time goes, per bench write: from the processes' trace marks (PANOPTES_TRACE_FILE,
 * lib/trace.ts) of the change that carries the write's seq. write → committed is the member
 * write to the commit of its change; committed → at the client is the rest.
 */
async function breakdown(storage: string, traceFile: string, client: Client, seqs: number[], fromRv: number): Promise<{ text: string[]; toCommit: number[]; toClient: number[]; stages: Record<string, number[]> }> {
  const store = await Store.open(storage);
  const rvOf = new Map<number, number>();
  try {
    for (let after = fromRv, i = 0; i < 1000; i++) {
      const changes = await store.changesAfter(after, 1000);
      if (changes.length === 0) break;
      for (const c of changes) {
        const s = Number((JSON.parse(c.object) as { metadata?: { annotations?: Record<string, string> } }).metadata?.annotations?.['bench/seq']);
        if (Number.isFinite(s) && !rvOf.has(s)) rvOf.set(s, c.rv);
      }
      after = changes[changes.length - 1].rv;
    }
  } finally {
    await store.close();
  }
  await sleep(500); // the processes append their marks every 200 ms
  const marks = readMarks(existsSync(traceFile) ? readFileSync(traceFile, 'utf8') : '');
  const present = stages.filter(([s]) => marks.has(s));
  const steps = new Map<string, number[]>();
  const toCommit: number[] = [];
  const toClient: number[] = [];
  for (const s of seqs) {
    const rv = rvOf.get(s);
    const at = client.arrivals.get(s);
    if (rv === undefined || at === undefined) continue;
    const times: Array<[string, number]> = [['write', sent.get(s)!]];
    for (const [stage] of present) {
      const t = marks.get(stage)!.get(rv);
      if (t !== undefined) times.push([stage, t]);
    }
    times.push(['client', at]);
    for (let i = 1; i < times.length; i++) {
      const k = `${times[i - 1][0]} -> ${times[i][0]}`;
      (steps.get(k) ?? steps.set(k, []).get(k)!).push(times[i][1] - times[i - 1][1]);
    }
    const committed = marks.get('committed')?.get(rv);
    if (committed !== undefined) {
      toCommit.push(committed - sent.get(s)!);
      toClient.push(at - committed);
    }
  }
  for (const v of steps.values()) v.sort((a, b) => a - b);
  toCommit.sort((a, b) => a - b);
  toClient.sort((a, b) => a - b);
  const text = [`write -> committed in storage p50 ${f(quantile(toCommit, 0.5))} / p99 ${f(quantile(toCommit, 0.99))} ms; committed -> at the client p50 ${f(quantile(toClient, 0.5))} / p99 ${f(quantile(toClient, 0.99))} ms`];
  text.push('  where the time goes (p50 / p99 ms, per write; stages marked by the processes, lib/trace.ts):');
  const label = new Map(stages);
  for (const [k, v] of steps) {
    const to = k.split(' -> ')[1];
    text.push(`    ${k.padEnd(24)} ${f(quantile(v, 0.5)).padStart(6)} / ${f(quantile(v, 0.99)).padStart(6)}   ${to === 'client' ? 'at the watch client (HTTP)' : label.get(to) ?? ''}`);
  }
  return { text, toCommit, toClient, stages: Object.fromEntries(steps) };
}

async function latencyRun(setup: 'sqlite' | 'postgres', title: string, sim: SimCluster, names: string[], panoptesBase: string, storage: string, traceFile: string, cpuOf: Record<string, string>): Promise<WatchLatencyFigures> {
  const start = await get(`${panoptesBase}${P}/api/v1/namespaces/bench/pods?limit=1`);
  const direct = await watchClient(`${sim.url}/api/v1/namespaces/bench/pods?watch=1&resourceVersion=${sim.store.resourceVersion}`);
  const viaPanoptes = await watchClient(`${panoptesBase}${P}/api/v1/namespaces/bench/pods?watch=1&resourceVersion=${start.json.metadata.resourceVersion}`);
  await sleep(300);
  const cpu0 = await cpuAll(cpuOf);
  const seqs = await writeAtRate(sim, names, nWrites);
  const last = seqs[seqs.length - 1];
  const deadline = Date.now() + 10_000;
  while ((!viaPanoptes.arrivals.has(last) || !direct.arrivals.has(last)) && Date.now() < deadline) await sleep(50);
  await sleep(200);
  const cpu1 = await cpuAll(cpuOf);
  const d = latencies(direct, seqs);
  const p = latencies(viaPanoptes, seqs);
  direct.close();
  viaPanoptes.close();
  console.log(`\n${title}: ${nWrites} pod updates at ${rate}/s in one simulated cluster`);
  console.log(`  ${show('watch on the simulated cluster', d)}`);
  console.log(`  ${show('watch through Panoptes (HTTP)  ', p)}`);
  const parts = await breakdown(storage, traceFile, viaPanoptes, seqs, Number(start.json.metadata.resourceVersion));
  for (const line of parts.text) console.log(`  ${line}`);
  console.log(`  ratio Panoptes/direct: p50 ${f(p.p50 / d.p50)}x, p99 ${f(p.p99 / d.p99)}x; target p99 <= 150 ms: ${p.p99 <= 150 && p.missing === 0 ? 'MET' : 'MISSED'}`);
  const cpuPerEvent = Object.fromEntries(Object.keys(cpuOf).map((k) => [k, (cpu1[k] - cpu0[k]) / nWrites]));
  console.log(`  CPU per event (each process's process_cpu_seconds_total, everything it did while the writes went on, over ${nWrites} events): ${Object.entries(cpuPerEvent).map(([k, v]) => `${k} ${v.toFixed(2)} ms`).join(', ')}`);
  const above = { p50: p.p50 - d.p50, p99: p.p99 - d.p99 };
  const aboveMet = above.p50 <= aboveTargetMs.p50 && above.p99 <= aboveTargetMs.p99 && p.missing === 0;
  console.log(`  above the direct watch: p50 +${f(above.p50)} ms, p99 +${f(above.p99)} ms; target at most +${aboveTargetMs.p50} / +${aboveTargetMs.p99} ms: ${aboveMet ? 'MET' : 'MISSED'}`);
  if (parts.toClient.length > 0) {
    const c = { p50: quantile(parts.toClient, 0.5), p99: quantile(parts.toClient, 0.99) };
    const met = c.p50 <= floorTargetMs.p50 && c.p99 <= floorTargetMs.p99;
    console.log(`  committed -> at the client: p50 ${f(c.p50)} ms, p99 ${f(c.p99)} ms; target at most ${floorTargetMs.p50} / ${floorTargetMs.p99} ms: ${met ? 'MET' : 'MISSED'}`);
  }
  const visibleMs = nVisible > 0 ? await visibleRun(setup, sim, names, panoptesBase) : undefined;
  return { setup, title, writes: nWrites, ratePerSec: rate, directMs: d.ms, panoptesMs: p.ms, missing: { direct: d.missing, panoptes: p.missing }, toCommitMs: parts.toCommit, toClientMs: parts.toClient, stagesMs: parts.stages, cpuMsPerEvent: cpuPerEvent, ...(visibleMs ? { visibleMs } : {}) };
}

/** The body of a GET over a keep-alive agent (a list client reuses its connection, as kubectl and informers do). */
function getText(url: string, agent: Agent): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`${url}: ${res.statusCode} ${body.slice(0, 200)}`))));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

const visibleTargetMs = { sqlite: 12, postgres: 8 };
/** Through Panoptes at most this much above the direct watch, and committed -> at the client at most this (the path's floor: one wake-up, one read, one encode, one write). */
const aboveTargetMs = { p50: 2, p99: 10 };
const floorTargetMs = { p50: 1.5, p99: 5 };

/**
 * Write -> visible in a list: one pod update at a time in the member cluster, then the list of
 * that pod through Panoptes, repeated at once until it shows the write (each list's own time
 * bounds the resolution). Returns the latencies (ms), sorted.
 */
async function visibleRun(setup: 'sqlite' | 'postgres', sim: SimCluster, names: string[], panoptesBase: string): Promise<number[]> {
  const info = sim.registry.lookup('', 'v1', 'pods')!;
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const ms: number[] = [];
  const lists: number[] = [];
  try {
    for (let i = 0; i < nVisible; i++) {
      const name = names[i % names.length];
      const url = `${panoptesBase}${P}/api/v1/namespaces/bench/pods?fieldSelector=${encodeURIComponent(`metadata.name=${name}`)}`;
      await getText(url, agent);
      const s = ++seq;
      const marker = `"bench/seq":"${s}"`;
      const t0 = now();
      sim.crud.patch(info, 'v1', 'bench', name, 'merge', { metadata: { annotations: { 'bench/seq': String(s) } } });
      let n = 0;
      for (; n < 10_000 && now() - t0 < 10_000; n++) if ((await getText(url, agent)).includes(marker)) break;
      if (n === 10_000 || now() - t0 >= 10_000) throw new Error(`write ${s} not visible within 10 s`);
      ms.push(now() - t0);
      lists.push(n + 1);
      await sleep(20);
    }
  } finally {
    agent.destroy();
  }
  ms.sort((a, b) => a - b);
  const p50 = quantile(ms, 0.5);
  console.log(`  write -> visible in a list through Panoptes (${nVisible} writes, one at a time; ${f(lists.reduce((a, b) => a + b, 0) / lists.length)} lists each on average): p50 ${f(p50)} ms, p90 ${f(quantile(ms, 0.9))} ms, p99 ${f(quantile(ms, 0.99))} ms; target p50 <= ${visibleTargetMs[setup]} ms: ${p50 <= visibleTargetMs[setup] ? 'MET' : 'MISSED'}`);
  return ms;
}

// ---- metrics

/** process_cpu_seconds_total (ms) of each named process, by its base URL. */
async function cpuAll(bases: Record<string, string>): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const [k, base] of Object.entries(bases)) out[k] = await cpuMs(base);
  return out;
}

async function pollQueries(base: string): Promise<number> {
  const text = (await get(`${base}/metrics`)).text;
  const m = /^panoptes_watch_poll_queries_total (\S+)$/m.exec(text);
  return m ? Number(m[1]) : NaN;
}

async function scaleRun(storage: string, sim: SimCluster, names: string[]): Promise<WatchScaleFigures[]> {
  console.log(`\nScale-out on PostgreSQL: poll queries per replica process (panoptes_watch_poll_queries_total on each /metrics), synchro writing ${rate} pod updates/s`);
  console.log('  replicas | watchers | poll queries/s per replica        | total/s | events delivered | latency p50 / p99');
  const out: WatchScaleFigures[] = [];
  for (const nReplicas of [1, 3]) {
    const replicas: Array<{ base: string; stop: () => Promise<void> }> = [];
    for (let i = 0; i < nReplicas; i++) {
      const port = await freePort();
      const p = panoptes(['apiserver', '--storage', storage, '--insecure-listen', `127.0.0.1:${port}`]);
      const base = `http://127.0.0.1:${port}`;
      await until(`replica ${i}`, async () => (await get(`${base}${P}/api/v1/pods?limit=1`)).status === 200);
      replicas.push({ base, stop: p.stop });
    }
    for (const watchers of [1, nWatchers]) {
      const rv = (await get(`${replicas[0].base}${P}/api/v1/pods?limit=1`)).json.metadata.resourceVersion as string;
      const clients: Client[] = [];
      for (let i = 0; i < watchers; i++) clients.push(await watchClient(`${replicas[i % nReplicas].base}${P}/api/v1/namespaces/bench/pods?watch=1&resourceVersion=${rv}`));
      await sleep(500);
      const before = await Promise.all(replicas.map((r) => pollQueries(r.base)));
      const t0 = now();
      const seqs = await writeAtRate(sim, names, Math.round(rate * scaleSeconds));
      const after = await Promise.all(replicas.map((r) => pollQueries(r.base)));
      const secs = (now() - t0) / 1000;
      await sleep(500);
      const perReplica = after.map((a, i) => (a - before[i]) / secs);
      const delivered = clients.reduce((n, c) => n + seqs.filter((s) => c.arrivals.has(s)).length, 0);
      const ms = clients.flatMap((c) => seqs.filter((s) => c.arrivals.has(s)).map((s) => c.arrivals.get(s)! - sent.get(s)!)).sort((a, b) => a - b);
      console.log(
        `  ${String(nReplicas).padStart(8)} | ${String(watchers).padStart(8)} | ${perReplica.map((r) => r.toFixed(1).padStart(6)).join(' ').padEnd(33)} | ${perReplica.reduce((a, b) => a + b, 0).toFixed(1).padStart(7)} | ${`${delivered}/${seqs.length * watchers}`.padStart(16)} | ${f(quantile(ms, 0.5))} / ${f(quantile(ms, 0.99))} ms`,
      );
      out.push({ replicas: nReplicas, watchers, pollQueriesPerSecPerReplica: perReplica, delivered, expected: seqs.length * watchers, p50Ms: quantile(ms, 0.5), p99Ms: quantile(ms, 0.99) });
      for (const c of clients) c.close();
      await sleep(300);
    }
    for (const r of replicas) await r.stop();
  }
  return out;
}

// ---- main

const recorded: WatchFigures = { latency: [], targets: { p99Ms: 150 } };
try {
  const only = args.only;
  if (!only || only === 'sqlite') {
    const sim = await startSimCluster({ name: 'bench-a', historySize: 100_000 });
    const names = seedPods(sim);
    const clusters = join(dir, 'clusters-sqlite.yaml');
    writeFileSync(clusters, stringify({ clusters: [{ name: sim.name, server: sim.url, resources: ['pods', 'namespaces'] }] }));
    const { url: storage, cleanup } = await emptyStorageUrl('sqlite');
    const port = await freePort();
    const traceFile = join(dir, 'trace-sqlite.jsonl');
    process.env.PANOPTES_TRACE_FILE = traceFile;
    const aio = panoptes(['all-in-one', '--storage', storage, '--clusters', clusters, '--insecure-listen', `127.0.0.1:${port}`]);
    const base = `http://127.0.0.1:${port}`;
    await synced(base, sim.name);
    recorded.latency.push(await latencyRun('sqlite', 'SQLite, panoptes all-in-one (one process)', sim, names, base, storage, traceFile, { 'all-in-one': base }));
    await aio.stop();
    await sim.close();
    await cleanup();
  }
  if (!only || only === 'postgres' || only === 'scale') {
    const sim = await startSimCluster({ name: 'bench-b', historySize: 100_000 });
    const names = seedPods(sim);
    const clusters = join(dir, 'clusters-pg.yaml');
    writeFileSync(clusters, stringify({ clusters: [{ name: sim.name, server: sim.url, resources: ['pods', 'namespaces'] }] }));
    const { url: storage } = await emptyStorageUrl('postgres');
    const traceFile = join(dir, 'trace-postgres.jsonl');
    process.env.PANOPTES_TRACE_FILE = traceFile;
    const synchroMetrics = `127.0.0.1:${await freePort()}`;
    const synchro = panoptes(['synchro', '--storage', storage, '--clusters', clusters, '--metrics-listen', synchroMetrics]);
    if (!only || only === 'postgres') {
      const port = await freePort();
      const api = panoptes(['apiserver', '--storage', storage, '--insecure-listen', `127.0.0.1:${port}`]);
      const base = `http://127.0.0.1:${port}`;
      await synced(base, sim.name);
      recorded.latency.push(await latencyRun('postgres', 'PostgreSQL, panoptes synchro + panoptes apiserver (separate processes)', sim, names, base, storage, traceFile, { synchro: `http://${synchroMetrics}`, apiserver: base }));
      await api.stop();
    }
    if (!only || only === 'scale') recorded.scale = await scaleRun(storage, sim, names);
    await synchro.stop();
    await sim.close();
  }
  await recordRun(args.only ? `watch-${args.only}` : 'watch', 'watch', { ...args }, recorded);
} finally {
  killChildren();
  await stopTestPostgres();
  rmSync(dir, { recursive: true, force: true });
}
