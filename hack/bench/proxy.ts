// npm run bench:proxy: streams through Panoptes' proxy against the same simulated member
// straight. Latency, p50/p99 of each arm, samples alternating: time to the first byte of
// pods/log, an exec of `echo` to its end (connect, upgrade, output, Status, close: WebSocket
// v5.channel.k8s.io), and the round trip of a line through `cat` on an open exec session.
// Load, one apiserver: 200 concurrent `logs -f` streams, then 50 `kubectl port-forward`s
// each echoing 1 KiB every 100 ms: memory per stream (resident set and heap after a full GC,
// over the apiserver's own before) and CPU of the apiserver (a process of its own:
// hack/bench/proxy-apiserver.ts) while they run. The member, synchro, the clients and
// kubectl run elsewhere (this process and kubectl's), so the apiserver's figures are its own.
//
// Options: --samples N (200), --logs N (200), --forwards N (50), --seconds N (10, the CPU window);
// docs/bench/raw/proxy.json is written at these defaults only.
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { createConnection, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { logger, setLogLevel } from '../../lib/log.ts';
import { Store } from '../../storage/store.ts';
import { startSynchro } from '../../synchro/synchro.ts';
import { impersonatorRules } from '../sim/auth.ts';
import { startSimClusters } from '../sim/cluster.ts';
import { forwardedPort, startKubectl } from '../testing/kubectl.ts';
import { execOnce, openExec } from '../testing/ws-exec.ts';

const { values } = parseArgs({ options: { samples: { type: 'string' }, logs: { type: 'string' }, forwards: { type: 'string' }, seconds: { type: 'string' } } });
const samples = Number(values.samples ?? 200);
const logStreams = Number(values.logs ?? 200);
const forwards = Number(values.forwards ?? 50);
const seconds = Number(values.seconds ?? 10);
setLogLevel('error');

const token = 'bench-panoptes';
const P = '/apis/panoptes.io/v1alpha1/resources';
const dir = mkdtempSync(join(tmpdir(), 'panoptes-bench-proxy-'));
const [sim] = await startSimClusters(['east'], { workload: true });
// The direct arm uses this token too: it may do what the proxied user (system:masters) may.
sim.auth.grant(token, { name: 'panoptes', rules: [...impersonatorRules, { verbs: ['*'] }] });
sim.auth.tokens = [token];
sim.streams.logIntervalMs = 100;
const storage = `sqlite:${join(dir, 'panoptes.db')}`;
const store = await Store.open(storage);
writeFileSync(join(dir, 'clusters.yaml'), stringify({ clusters: [{ name: 'east', server: sim.url, token, resources: ['pods', 'namespaces'] }] }));
const synchro = await startSynchro({ store, clustersFile: join(dir, 'clusters.yaml'), log: logger('synchro') });
if (!(await synchro.waitForInitialSync(30_000))) throw new Error('east did not sync');

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Msg = any;
const child = fork(new URL('./proxy-apiserver.ts', import.meta.url), [], {
  execArgv: ['--import', 'tsx', '--expose-gc'],
  env: { ...process.env, PANOPTES_BENCH_PROXY: JSON.stringify({ storage, members: { east: { server: sim.url, token } } }) },
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
});
process.once('exit', () => child.kill()); // also when the run fails
const waiters: Array<{ ok: string; resolve: (m: Msg) => void }> = [];
child.on('message', (m: Msg) => {
  const i = waiters.findIndex((w) => w.ok === m.ok);
  if (i >= 0) waiters.splice(i, 1)[0].resolve(m);
});
const call = (cmd: string, ok = cmd): Promise<Msg> => {
  const p = new Promise<Msg>((resolve) => waiters.push({ ok, resolve }));
  if (cmd !== 'ready') child.send({ cmd });
  return p;
};
const { url } = await call('ready');
const viaPanoptes = `${url}${P}/clusters/east`;
const pod = sim.store.list('/pods', { namespace: 'kube-system' }).items.find((p) => p.metadata.name!.startsWith('coredns-'))!.metadata.name!;
const podPath = `/api/v1/namespaces/kube-system/pods/${pod}`;
const arms = { direct: { base: sim.url, headers: { Authorization: `Bearer ${token}` } }, panoptes: { base: viaPanoptes, headers: {} as Record<string, string> } };
const agent = new Agent({ keepAlive: true, maxSockets: 4 });

function firstByte(u: string, headers: Record<string, string>): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(u, { agent, headers }, (res) => {
      let first = 0;
      res.once('data', () => (first = performance.now() - started));
      res.on('end', () => (res.statusCode === 200 ? resolve(first) : reject(new Error(`${u}: ${res.statusCode}`))));
      res.resume();
    });
    req.on('error', reject);
    req.end();
  });
}

// Panoptes serves the member once the catalog has it.
for (let i = 0; i < 100; i++) {
  if (await firstByte(`${viaPanoptes}${podPath}/log?tailLines=1`, {}).then(() => true, () => false)) break;
  await new Promise((r) => setTimeout(r, 200));
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};
const summary = (xs: number[]) => ({ p50: +pct(xs, 50).toFixed(2), p99: +pct(xs, 99).toFixed(2) });

type Arm = keyof typeof arms;
const latency: Record<string, Record<Arm, number[]>> = { firstLogByte: { direct: [], panoptes: [] }, execEcho: { direct: [], panoptes: [] }, stdinRoundTrip: { direct: [], panoptes: [] } };
const sessions = { direct: await openExec(`${arms.direct.base}${podPath}/exec?command=cat&stdin=true&stdout=true`, arms.direct.headers), panoptes: await openExec(`${arms.panoptes.base}${podPath}/exec?command=cat&stdin=true&stdout=true`, arms.panoptes.headers) };
for (let i = 0; i < samples + 10; i++) {
  for (const arm of (i % 2 ? ['direct', 'panoptes'] : ['panoptes', 'direct']) as Arm[]) {
    const a = arms[arm];
    const log = await firstByte(`${a.base}${podPath}/log?tailLines=1`, a.headers);
    let t = performance.now();
    const r = await execOnce(`${a.base}${podPath}/exec?command=echo&command=x&stdout=true`, a.headers);
    const exec = performance.now() - t;
    if (r.stdout !== 'x\n') throw new Error(`exec ${arm}: ${JSON.stringify(r)}`);
    t = performance.now();
    sessions[arm].write(`line ${i}\n`);
    let echoed = '';
    while (!echoed.endsWith('\n')) echoed += await sessions[arm].read();
    const rt = performance.now() - t;
    if (i < 10) continue; // warm-up
    latency.firstLogByte[arm].push(log);
    latency.execEcho[arm].push(exec);
    latency.stdinRoundTrip[arm].push(rt);
  }
}
for (const s of Object.values(sessions)) await s.finish();

// Load.
interface Stats { rss: number; heapUsed: number; external: number; cpu: { user: number; system: number }; streams: number }
const stats = async (): Promise<Stats> => call('stats');
const cpuPercent = (a: Stats, b: Stats, ms: number) => +((100 * (b.cpu.user + b.cpu.system - a.cpu.user - a.cpu.system)) / 1000 / ms).toFixed(1);
const settle = () => new Promise((r) => setTimeout(r, 2000));
const base0 = await stats();

let logBytes = 0;
const logReqs: Array<ReturnType<typeof request>> = [];
await Promise.all(
  Array.from({ length: logStreams }, () =>
    new Promise<void>((resolve, reject) => {
      const req = request(`${viaPanoptes}${podPath}/log?follow=true&tailLines=1`, { agent: false }, (res) => {
        res.on('data', (d: Buffer) => (logBytes += d.length));
        res.once('data', () => resolve());
        res.on('error', () => undefined);
      });
      req.on('error', (err) => reject(err));
      req.end();
      logReqs.push(req);
    }),
  ),
);
await settle();
const logsOpen = await stats();
let bytesBefore = logBytes;
await new Promise((r) => setTimeout(r, seconds * 1000));
const logsRun = await stats();
const logRate = (logBytes - bytesBefore) / seconds;

const cacheDir = join(dir, 'kubectl-cache');
mkdirSync(cacheDir);
const pfs: Array<ReturnType<typeof startKubectl>> = [];
const ports: number[] = [];
// `:8080`: kubectl picks a free local port and names it.
for (let i = 0; i < forwards; i++) pfs.push(startKubectl({ server: viaPanoptes, cacheDir }, ['-n', 'kube-system', 'port-forward', `pod/${pod}`, ':8080']));
for (const pf of pfs) ports.push(await forwardedPort(pf, 60_000));
let echoed = 0;
const chunk = Buffer.alloc(1024, 7);
const conns: Socket[] = [];
const timers: NodeJS.Timeout[] = [];
for (const port of ports) {
  const c = createConnection({ host: '127.0.0.1', port });
  c.on('data', (d: Buffer) => (echoed += d.length));
  c.on('error', () => undefined);
  conns.push(c);
  timers.push(setInterval(() => c.write(chunk), 100));
}
await settle();
const allOpen = await stats();
bytesBefore = echoed;
const logBefore = logBytes;
await new Promise((r) => setTimeout(r, seconds * 1000));
const allRun = await stats();
const echoRate = (echoed - bytesBefore) / seconds;
const logRate2 = (logBytes - logBefore) / seconds;

for (const t of timers) clearInterval(t);
for (const c of conns) c.destroy();
for (const pf of pfs) pf.kill();
await Promise.all(pfs.map((p) => p.exited));
for (const r of logReqs) r.destroy();

const kib = (n: number) => +(n / 1024).toFixed(1);
const figures = {
  date: new Date().toISOString(),
  samples,
  latencyMs: Object.fromEntries(Object.entries(latency).map(([k, v]) => [k, { direct: summary(v.direct), panoptes: summary(v.panoptes), overheadP50: +(pct(v.panoptes, 50) - pct(v.direct, 50)).toFixed(2) }])),
  load: {
    logStreams,
    forwards,
    baseline: { rssMiB: +(base0.rss / 2 ** 20).toFixed(1), heapMiB: +(base0.heapUsed / 2 ** 20).toFixed(1) },
    perLogStream: { rssKiB: kib((logsOpen.rss - base0.rss) / logStreams), heapKiB: kib((logsOpen.heapUsed - base0.heapUsed) / logStreams) },
    perPortForward: { rssKiB: kib((allOpen.rss - logsOpen.rss) / forwards), heapKiB: kib((allOpen.heapUsed - logsOpen.heapUsed) / forwards) },
    logsOnly: { cpuPercent: cpuPercent(logsOpen, logsRun, seconds * 1000), logKiBPerSecond: kib(logRate) },
    logsAndForwards: { cpuPercent: cpuPercent(allOpen, allRun, seconds * 1000), logKiBPerSecond: kib(logRate2), echoKiBPerSecond: kib(echoRate) },
    streamsOpenInProxy: allOpen.streams,
  },
};
console.log(JSON.stringify(figures, null, 2));
// Recorded for the docs at the documented sizes only (a quick run with smaller ones is not).
if (samples === 200 && logStreams === 200 && forwards === 50 && seconds === 10) {
  writeFileSync(new URL('../../docs/bench/raw/proxy.json', import.meta.url), `${JSON.stringify(figures, null, 2)}\n`);
}

await call('exit');
child.kill();
agent.destroy();
await synchro.stop();
await store.close();
await sim.close();
rmSync(dir, { recursive: true, force: true });
process.exit(0);
