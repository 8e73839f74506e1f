// The watch fan-out over real connections: `panoptes apiserver` as a process on PostgreSQL,
// the watchers in client processes of their own, one socket per watch:
//
//   node --import tsx hack/bench/watch-connections.ts [--over http,h2,https] [--watchers 10000]
//        [--namespaces 1000] [--all 100] [--rate 500] [--seconds 30] [--baseline-seconds 10]
//        [--client-processes 4] [--node-options OPTS] [--snapshots DIR]
//
// The workload of hack/bench/watch-fanout.ts: this process writes --rate pod changes/s
// (~1.5 KB objects) over --namespaces namespaces into storage, as synchro would; --all
// watchers watch every pod and the others one namespace each. Phase 1: one watcher. Phase 2:
// --watchers connections. Printed per phase: delivery latency (write call → line read by the
// client) p50/p99/max, deliveries/s, the apiserver's poll queries/s (its /metrics) and its
// RSS; then the RSS each connection costs (phase 2 − phase 1, per added connection).
//
// --over http: plain HTTP (`--insecure-listen`), one connection per watch. --over h2 and
// --over https: secure serving as an install runs it: a serving certificate from a CA the
// clients trust, authentication and authorization delegated to a host cluster (a stand-in
// kube-apiserver in this process, hack/testing/fakehost.ts, publishing the
// extension-apiserver-authentication ConfigMap and answering SubjectAccessReviews with
// "allowed"), and the clients connecting as kube-apiserver's aggregator does: the
// front-proxy client certificate, the user in X-Remote-User / X-Remote-Group (100 users;
// each watch is authorized once, cached per user, verb and namespace). h2: over HTTP/2, as
// the aggregator proxies (streams of a few TLS connections, up to 1000 each); https: over
// HTTP/1.1, one TLS connection per watch (clients that do not speak HTTP/2).
//
// The apiserver is started as the image starts it (hack/panoptes-process.ts: dist/ when
// built, the Dockerfile's NODE_OPTIONS; --node-options overrides them), with its soft limit
// of open files raised to the hard limit (`ulimit -n`): 10,000 sockets need more than the
// usual 1,024. --snapshots DIR: a heap snapshot of the apiserver at the end of phase 2 (for
// Chrome DevTools' Memory tab).
//
// After a run of every mode asked, the figures go to docs/bench/watch-connections.json and its
// charts (hack/report/).
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { setLogLevel } from '../../lib/log.ts';
import { Store } from '../../storage/store.ts';
import { emptyStorageUrl, seedCluster, stopTestPostgres } from '../../storage/testing.ts';
import { makeCertSet, type CertSet } from '../certs.ts';
import { LatencyHistogram, now, PodWorkload, RateWriter } from './fanout-workload.ts';
import { imageNodeOptions, openFileLimits, procMemory, spawnNode, spawnPanoptes, type PanoptesProcess } from '../panoptes-process.ts';
import { freePort } from '../../storage/testing/postgres.ts';
import { recordRun } from '../report/record.ts';
import type { WatchConnectionsModeFigures, WatchConnectionsPhaseFigures } from '../report/figures.ts';
import { get } from '../sim/testutil.ts';
import { authenticationConfigMap, startFakeHost, type FakeHost } from '../testing/fakehost.ts';

const { values: args } = parseArgs({
  options: {
    over: { type: 'string', default: 'http,h2' },
    watchers: { type: 'string', default: '10000' },
    namespaces: { type: 'string', default: '1000' },
    all: { type: 'string', default: '100' },
    rate: { type: 'string', default: '500' },
    seconds: { type: 'string', default: '30' },
    'baseline-seconds': { type: 'string', default: '10' },
    'client-processes': { type: 'string', default: '4' },
    'node-options': { type: 'string' },
    snapshots: { type: 'string' },
  },
});
setLogLevel('warn');
const nWatchers = Number(args.watchers);
const nNamespaces = Number(args.namespaces);
const nAll = Number(args.all);
const rate = Number(args.rate);
const seconds = Number(args.seconds);
const baselineSeconds = Number(args['baseline-seconds']);
const nClients = Math.max(1, Number(args['client-processes']));
const nodeOptions = args['node-options'] ?? imageNodeOptions();
type Mode = 'http' | 'h2' | 'https';
const modes = args.over.split(',').map((s) => s.trim()) as Mode[];
for (const m of modes) if (!['http', 'h2', 'https'].includes(m)) throw new Error(`--over: http, h2 or https, got ${m}`);
const P = '/apis/panoptes.io/v1alpha1/resources';
const mb = (n: number) => `${(n / 1e6).toFixed(0)} MB`;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const dir = mkdtempSync(join(tmpdir(), 'panoptes-bench-connections-'));

// ---- client processes, over IPC

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Reply = any;

class Clients {
  private waiters = new Map<ChildProcess, Array<{ ok: string; resolve: (m: Reply) => void }>>();
  readonly procs: ChildProcess[] = [];
  private exiting = false;

  async start(n: number): Promise<void> {
    for (let i = 0; i < n; i++) {
      // The clients hold many sockets too: the same raised limit.
      const p = spawnNode(`clients-${i}`, new URL('./watch-clients.ts', import.meta.url).pathname, [], { execArgv: ['--import', 'tsx'], nodeOptions: '', raiseFileLimit: true, ipc: true });
      const child = p.proc;
      child.on('exit', (code, signal) => {
        if (!this.exiting) console.error(`client process ${i} exited (${code ?? signal}): ${p.stderr()}`);
      });
      this.procs.push(child);
      this.waiters.set(child, []);
      child.on('message', (m: Reply) => {
        const list = this.waiters.get(child)!;
        const i = list.findIndex((w) => w.ok === m.ok);
        if (i >= 0) list.splice(i, 1)[0].resolve(m);
      });
    }
    await Promise.all(this.procs.map((c) => this.wait(c, 'ready')));
  }

  private wait(c: ChildProcess, ok: string): Promise<Reply> {
    return new Promise((resolve) => this.waiters.get(c)!.push({ ok, resolve }));
  }

  call(c: ChildProcess, msg: Record<string, unknown> & { cmd: string }): Promise<Reply> {
    const p = this.wait(c, msg.cmd);
    c.send(msg);
    return p;
  }

  all(msg: Record<string, unknown> & { cmd: string }): Promise<Reply[]> {
    return Promise.all(this.procs.map((c) => this.call(c, msg)));
  }

  async exit(): Promise<void> {
    this.exiting = true;
    await Promise.race([this.all({ cmd: 'exit' }), sleep(3000)]);
    for (const c of this.procs) c.kill();
  }
}

// ---- storage and the writer (this process plays synchro)

const { url: storage } = await emptyStorageUrl('postgres');
const store = await Store.open(storage);
await seedCluster(store, 'c1', { phase: 'Ready', ready: true, apiResources: [{ group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, singularName: 'pod' }] });
const workload = new PodWorkload(nNamespaces);
for (const events of workload.initial()) await store.applyBatch('c1', events);

const writer = new RateWriter(store, workload, rate);

// ---- one run: an apiserver, its clients, two phases

interface Server {
  proc: PanoptesProcess;
  base: string;
  /** GET with whatever the mode needs to be let in (as system:masters for /metrics). */
  get(path: string): Promise<{ status: number; text: string }>;
  client: { headers: (i: number) => Record<string, string>; tls?: { ca: string; cert: string; key: string }; h2?: boolean };
  close(): Promise<void>;
}

function tlsGet(url: string, certs: CertSet, headers: Record<string, string>): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(url, { ca: certs.servingCA.cert, cert: certs.frontProxyClient.cert, key: certs.frontProxyClient.key, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
    });
    req.setTimeout(15_000, () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

const serverSpawn = { nodeOptions, raiseFileLimit: true, cwd: dir, execArgv: args.snapshots ? ['--heapsnapshot-signal=SIGUSR2'] : [] };

/** SIGUSR2 to the apiserver; its snapshot file moved to --snapshots. */
async function snapshot(s: Server, name: string): Promise<void> {
  const before = new Set(readdirSync(dir));
  s.proc.proc.kill('SIGUSR2');
  for (let i = 0; i < 600; i++) {
    await sleep(500);
    const file = readdirSync(dir).find((f) => f.endsWith('.heapsnapshot') && !before.has(f));
    if (!file) continue;
    // Written while it grows, after a while at 0 bytes (the snapshot is taken first): wait until its size holds.
    for (let size = -1; size === 0 || size !== statSync(join(dir, file)).size; ) {
      size = statSync(join(dir, file)).size;
      await sleep(2000);
    }
    mkdirSync(args.snapshots!, { recursive: true });
    const target = join(resolve(args.snapshots!), `${name}.heapsnapshot`);
    renameSync(join(dir, file), target);
    console.log(`  heap snapshot: ${target}`);
    return;
  }
}

async function startServer(mode: Mode): Promise<Server> {
  const port = await freePort();
  if (mode === 'http') {
    const proc = spawnPanoptes('apiserver', ['apiserver', '--storage', storage, '--insecure-listen', `127.0.0.1:${port}`], serverSpawn);
    const base = `http://127.0.0.1:${port}`;
    return { proc, base, get: (path) => get(`${base}${path}`), client: { headers: () => ({}) }, close: () => proc.stop() };
  }
  const certs = makeCertSet(['127.0.0.1', 'localhost']);
  const host: FakeHost = await startFakeHost({
    configMap: authenticationConfigMap(certs),
    tokens: {},
    policy: () => true,
  });
  const kubeconfig = join(dir, 'host.kubeconfig');
  writeFileSync(
    kubeconfig,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'host', cluster: { server: host.url, 'certificate-authority-data': Buffer.from(host.ca).toString('base64') } }],
      users: [{ name: 'panoptes', user: { token: host.saToken } }],
      contexts: [{ name: 'host', context: { cluster: 'host', user: 'panoptes' } }],
      'current-context': 'host',
    }),
  );
  writeFileSync(join(dir, 'tls.crt'), certs.serving.cert);
  writeFileSync(join(dir, 'tls.key'), certs.serving.key);
  const proc = spawnPanoptes(
    'apiserver',
    [
      'apiserver', '--storage', storage, '--secure-port', String(port), '--bind-address', '127.0.0.1',
      '--tls-cert-file', join(dir, 'tls.crt'), '--tls-private-key-file', join(dir, 'tls.key'),
      '--authentication-kubeconfig', kubeconfig, '--authorization-kubeconfig', kubeconfig,
    ],
    serverSpawn,
  );
  const base = `https://127.0.0.1:${port}`;
  // The host's request log would grow with every review: keep the count only.
  const reviews = () => host.requests.length;
  return {
    proc,
    base,
    get: (path) => tlsGet(`${base}${path}`, certs, { 'X-Remote-User': 'bench-admin', 'X-Remote-Group': 'system:masters' }),
    client: {
      headers: (i) => ({ 'X-Remote-User': `bench-user-${i % 100}`, 'X-Remote-Group': 'system:authenticated' }),
      tls: { ca: certs.servingCA.cert, cert: certs.frontProxyClient.cert, key: certs.frontProxyClient.key },
      h2: mode === 'h2',
    },
    async close() {
      console.log(`  host cluster: ${reviews()} requests (the ConfigMap, SubjectAccessReviews)`);
      await proc.stop();
      await host.close();
    },
  };
}

async function metric(s: Server, name: string): Promise<number> {
  const r = await s.get('/metrics');
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(r.text);
  return m ? Number(m[1]) : NaN;
}

interface PhaseResult {
  watchers: number;
  seconds: number;
  p50: number;
  p99: number;
  max: number;
  deliveredPerSec: number;
  writtenPerSec: number;
  pollPerSec: number;
  rssEnd: number;
  rssMax: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  cpuPerSec: number;
  clientsCpuPerSec: number;
  ended: Record<string, number>;
}

const MiB = 1048576;
/** RSS max in phase 2 (10^6 bytes), latency p99, poll queries/s of phase 2 against phase 1's. */
const targets = { rssMB: 600, p99Ms: 500, pollWithin: 0.25, cpuMsPer1000Deliveries: 2 };

function phaseFigures(r: PhaseResult): WatchConnectionsPhaseFigures {
  return {
    watchers: r.watchers,
    seconds: r.seconds,
    writtenPerSec: r.writtenPerSec,
    deliveredPerSec: r.deliveredPerSec,
    p50Ms: r.p50,
    p99Ms: r.p99,
    maxMs: r.max,
    pollQueriesPerSec: r.pollPerSec,
    rssMiB: r.rssEnd / MiB,
    rssMaxMiB: r.rssMax / MiB,
    heapUsedMiB: r.heapUsed / MiB,
    heapTotalMiB: r.heapTotal / MiB,
    externalMiB: r.external / MiB,
    cpuCores: r.cpuPerSec,
    clientsCpuCores: r.clientsCpuPerSec,
  };
}

async function phase(label: string, s: Server, clients: Clients, watchers: number, secs: number): Promise<PhaseResult> {
  await sleep(5000); // warm-up: backlogs of the ramp drain
  await clients.all({ cmd: 'reset' });
  const pid = s.proc.proc.pid!;
  const q0 = await metric(s, 'panoptes_watch_poll_queries_total');
  const w0 = writer.written;
  const c0 = procMemory(pid).cpu;
  const clientCpu = () => clients.procs.reduce((n, c) => n + procMemory(c.pid!).cpu, 0);
  const cc0 = clientCpu();
  const t0 = now();
  let rssMax = 0;
  for (let i = 0; i < secs; i++) {
    await sleep(1000);
    rssMax = Math.max(rssMax, procMemory(pid).rss);
  }
  const dt = (now() - t0) / 1000;
  const mem = procMemory(pid);
  const q1 = await metric(s, 'panoptes_watch_poll_queries_total');
  const heapUsed = await metric(s, 'nodejs_heap_size_used_bytes');
  const heapTotal = await metric(s, 'nodejs_heap_size_total_bytes');
  const external = await metric(s, 'nodejs_external_memory_bytes');
  const stats: Reply[] = await clients.all({ cmd: 'stats' });
  const hist = new LatencyHistogram();
  let delivered = 0;
  const ended: Record<string, number> = {};
  for (const st of stats) {
    hist.merge(st.histogram, st.max);
    delivered += st.delivered;
    for (const [k, v] of Object.entries(st.ended as Record<string, number>)) ended[k] = (ended[k] ?? 0) + v;
  }
  const clientsCpu = (clientCpu() - cc0) / dt;
  const r: PhaseResult = {
    watchers,
    seconds: dt,
    p50: hist.quantile(0.5),
    p99: hist.quantile(0.99),
    max: hist.max,
    deliveredPerSec: delivered / dt,
    writtenPerSec: (writer.written - w0) / dt,
    pollPerSec: (q1 - q0) / dt,
    rssEnd: mem.rss,
    rssMax: Math.max(rssMax, mem.rss),
    heapUsed,
    heapTotal,
    external,
    cpuPerSec: (mem.cpu - c0) / dt,
    clientsCpuPerSec: clientsCpu,
    ended,
  };
  console.log(
    `  ${label}: ${watchers} watchers, ${r.writtenPerSec.toFixed(0)} events/s written, ${r.deliveredPerSec.toFixed(0)} deliveries/s; ` +
      `latency p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms, max ${r.max.toFixed(1)} ms; poll queries ${r.pollPerSec.toFixed(1)}/s; ` +
      `apiserver RSS ${mb(r.rssEnd)} (max ${mb(r.rssMax)}; V8 heap ${mb(heapUsed)} used of ${mb(heapTotal)}, external ${mb(external)}), CPU ${(r.cpuPerSec * 100).toFixed(0)}% of a core (the ${clients.procs.length} client processes: ${(clientsCpu * 100).toFixed(0)}%); ` +
      `apiserver CPU per event written ${((r.cpuPerSec / r.writtenPerSec) * 1000).toFixed(2)} ms, per delivery ${((r.cpuPerSec / r.deliveredPerSec) * 1e6).toFixed(1)} µs (target: an event to 1,000 watchers <= ${targets.cpuMsPer1000Deliveries} ms: ${(r.cpuPerSec / r.deliveredPerSec) * 1e6 <= targets.cpuMsPer1000Deliveries ? 'MET' : 'MISSED'})` +
      (Object.keys(ended).length ? `; watches ended: ${JSON.stringify(ended)}` : ''),
  );
  return r;
}

const titles: Record<Mode, string> = {
  http: 'plain HTTP/1.1 (--insecure-listen), a connection per watch',
  h2: 'HTTP/2 over TLS as kube-apiserver proxies (front-proxy certificate, SubjectAccessReview), watches as streams of a few connections',
  https: 'HTTP/1.1 over TLS (front-proxy certificate, SubjectAccessReview), a TLS connection per watch',
};

async function run(mode: Mode): Promise<WatchConnectionsModeFigures> {
  console.log(`\n${titles[mode]}: panoptes apiserver on PostgreSQL, NODE_OPTIONS=${JSON.stringify(nodeOptions)}`);
  const s = await startServer(mode);
  const clients = new Clients();
  try {
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (s.proc.proc.exitCode !== null) throw new Error(`apiserver exited: ${s.proc.stderr()}`);
      const r = await s.get(`${P}/api/v1/pods?limit=1`).catch(() => undefined);
      if (r?.status === 200) break;
      if (Date.now() > deadline) throw new Error(`apiserver not ready: ${r?.status} ${r?.text ?? ''} ${s.proc.stderr()}`);
      await sleep(250);
    }
    const pid = s.proc.proc.pid!;
    const limits = readLimit(pid);
    const rssBefore = procMemory(pid).rss;
    console.log(`  apiserver pid ${pid}: RSS before any watcher ${mb(rssBefore)}; open files limit ${limits}`);
    await clients.start(nClients);
    // Each watch starts at the rv of the moment it is opened, as a client's watch follows its list.
    const watchPath = (rv: number, ns?: string) => `${P}/api/v1${ns ? `/namespaces/${ns}` : ''}/pods?watch=1&resourceVersion=${rv}&allowWatchBookmarks=true&timeoutSeconds=3600`;
    const open = async (c: ChildProcess, namespaces: Array<string | undefined>, user: number) => {
      const rv = await store.watermark();
      const paths = namespaces.map((ns) => watchPath(rv, ns));
      const r = await clients.call(c, { cmd: 'open', base: s.base, paths, headers: s.client.headers(user), tls: s.client.tls, h2: s.client.h2, concurrency: 50 });
      if (r.failed) console.log(`  ${r.failed} watches failed to open: ${r.firstError}`);
      return r.opened as number;
    };
    await open(clients.procs[0], [undefined], 0);
    const one = await phase('phase 1', s, clients, 1, baselineSeconds);

    // The other watchers, in batches of 100 (one user each) spread over the client processes;
    // those on every pod last: each receives every event (--rate per second), and while the
    // same two cores also open thousands of connections, the clients can fall behind them by
    // more than a watcher's queue holds (10,000 events), which closes them as slow.
    const scopes: Array<string | undefined> = [];
    for (let i = 0; i < nWatchers - nAll; i++) scopes.push(`ns${i % nNamespaces}`);
    const t0 = now();
    const batches: Array<Promise<number>> = [];
    const perBatch = 100;
    const queues = clients.procs.map(() => [] as Array<[Array<string | undefined>, number]>);
    let b = 0;
    for (; b * perBatch < scopes.length; b++) queues[b % clients.procs.length].push([scopes.slice(b * perBatch, (b + 1) * perBatch), b]);
    // The watchers on every pod: last, shared out over the client processes.
    for (const [i, q] of queues.entries()) {
      const n = Math.floor((nAll - 1) / queues.length) + (i < (nAll - 1) % queues.length ? 1 : 0);
      if (n > 0) q.push([new Array<undefined>(n).fill(undefined), b++]);
    }
    for (const [i, c] of clients.procs.entries()) {
      batches.push(
        (async () => {
          let n = 0;
          for (const [batch, b] of queues[i]) n += await open(c, batch, b);
          return n;
        })(),
      );
    }
    const opened = 1 + (await Promise.all(batches)).reduce((a, b) => a + b, 0);
    const openSeconds = (now() - t0) / 1000;
    const serverSide = await metric(s, 'panoptes_watch_watchers');
    const sessions = (await clients.all({ cmd: 'stats' })).reduce((n: number, st: Reply) => n + st.sessions, 0);
    console.log(`  opened ${opened - 1} more watches${s.client.h2 ? ` (HTTP/2 streams over ${sessions} TLS connections)` : ' (a connection each)'} in ${openSeconds.toFixed(1)} s (${serverSide} watchers open on the server); RSS ${mb(procMemory(pid).rss)}`);
    const many = await phase('phase 2', s, clients, opened, seconds);
    const slow = await metric(s, 'panoptes_watch_watchers_closed_slow_total');
    if (args.snapshots) await snapshot(s, `apiserver-${mode}-${opened}`);
    const perConnection = (many.rssEnd - one.rssEnd) / Math.max(1, opened - 1);
    console.log(`  per ${s.client.h2 ? 'watch (stream)' : 'connection'}: ${(perConnection / 1024).toFixed(1)} KiB of RSS ((${mb(many.rssEnd)} - ${mb(one.rssEnd)}) / ${opened - 1}); watchers closed as slow: ${slow}`);
    const ok = (b: boolean) => (b ? 'MET' : 'MISSED');
    const pollRatio = many.pollPerSec / one.pollPerSec;
    console.log(
      `  targets with ${opened} watches: RSS <= ${targets.rssMB} MB: ${ok(many.rssMax <= targets.rssMB * 1e6 && opened >= nWatchers)} (max ${mb(many.rssMax)}); ` +
        `p99 <= ${targets.p99Ms} ms: ${ok(many.p99 <= targets.p99Ms)} (${many.p99.toFixed(1)} ms); poll rate unchanged (within ${targets.pollWithin * 100}%): ${ok(Math.abs(pollRatio - 1) <= targets.pollWithin)} (${one.pollPerSec.toFixed(1)}/s -> ${many.pollPerSec.toFixed(1)}/s)`,
    );
    console.log(
      `  ${JSON.stringify({ mode, connections: opened, p50Ms: +many.p50.toFixed(1), p99Ms: +many.p99.toFixed(1), pollQueriesPerSec1: +one.pollPerSec.toFixed(1), pollQueriesPerSecN: +many.pollPerSec.toFixed(1), rssMB1: Math.round(one.rssEnd / 1e6), rssMBN: Math.round(many.rssEnd / 1e6), rssMaxMB: Math.round(many.rssMax / 1e6), perConnectionKiB: +(perConnection / 1024).toFixed(1) })}`,
    );
    return {
      mode,
      connections: opened,
      ...(s.client.h2 ? { tlsConnections: sessions } : {}),
      openSeconds,
      rssBeforeMiB: rssBefore / MiB,
      phases: [phaseFigures(one), phaseFigures(many)],
      perConnectionKiB: perConnection / 1024,
      closedSlow: slow,
      // the clients count from their start: up to the end of phase 2
      ended: many.ended,
    };
  } finally {
    await clients.exit();
    await s.close();
  }
}

/** The apiserver's own `Max open files` (after the raise). */
function readLimit(pid: number): string {
  try {
    const line = readFileSync(`/proc/${pid}/limits`, 'utf8').split('\n').find((l) => l.startsWith('Max open files'));
    return line ? line.replace(/\s+/g, ' ').replace('Max open files ', 'soft ').replace(/ (\d+|unlimited) files/, ', hard $1') : '?';
  } catch {
    return '?';
  }
}

const limits = openFileLimits();
console.log(
  `watch fan-out over real connections: ${nWatchers} watchers (${nAll} on every pod, the rest one namespace each), ${rate} events/s over ${nNamespaces} namespaces, ${nClients} client processes; ` +
    `open files: soft ${limits.soft}, hard ${limits.hard}${limits.hard < nWatchers + 200 ? ' (NOT ENOUGH for the server: raise the hard limit)' : ''}`,
);
writer.start();
const recorded: WatchConnectionsModeFigures[] = [];
try {
  for (const mode of modes) recorded.push(await run(mode));
} finally {
  await writer.stop();
  await store.close();
  await stopTestPostgres();
  rmSync(dir, { recursive: true, force: true });
}
await recordRun('watch-connections', 'watch-connections', { ...args, 'node-options': nodeOptions, snapshots: args.snapshots === undefined ? undefined : true }, {
  watchers: nWatchers,
  all: nAll,
  namespaces: nNamespaces,
  ratePerSec: rate,
  clientProcesses: nClients,
  nodeOptions,
  modes: recorded,
  targets,
});
