// End to end: the kubeconfig `panoptes sim --kubeconfig` writes (plain http:// contexts that
// kubectl uses as they are) feeds `panoptes all-in-one --kubeconfig` directly: every context
// becomes a Ready member cluster whose status warns about plain HTTP, and its objects are
// synced and kept in sync. Real processes, read with kubectl.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { freePort } from '../storage/testing/postgres.ts';
import { get } from '../hack/sim/testutil.ts';
import { tempDir, waitUntil } from './testutil.ts';

const bin = new URL('../bin/panoptes.mjs', import.meta.url).pathname;

function start(t: Test, args: string[]) {
  const proc: ChildProcess = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((r) => proc.on('exit', (code) => r(code)));
  t.teardown(async () => {
    proc.kill('SIGTERM');
    const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  });
  return { output: () => out };
}

interface ClusterObject {
  metadata: { name: string };
  status: { phase?: string; ready?: boolean; server?: string; warnings?: string[]; initialSync?: { complete?: boolean; objects?: number } };
}

t.test('all-in-one --kubeconfig from panoptes sim --kubeconfig: plain-http contexts sync', async (t) => {
  const { dir, cleanup } = tempDir();
  t.teardown(cleanup);
  const kubeconfig = join(dir, 'kubeconfig');
  const sim = start(t, ['sim', '--clusters', 'a,b', '--base-port', '0', '--workload', '--kubeconfig', kubeconfig]);
  await waitUntil('the simulated clusters', () => sim.output().includes('Ctrl-C to stop.'), 30_000).catch((err: Error) => {
    throw new Error(`${err.message}; output: ${sim.output()}`);
  });
  const kubectl = (args: string[]) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile('kubectl', ['--cache-dir', join(dir, 'cache'), ...args], { timeout: 30_000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => resolve({ code: err ? 1 : 0, stdout, stderr }));
    });

  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const aio = start(t, ['all-in-one', '--kubeconfig', kubeconfig, '--contexts', 'all', '--storage', `sqlite:${join(dir, 'panoptes.db')}`, '--insecure-listen', `127.0.0.1:${port}`, '--probe-interval', '500ms', '--log-level', 'warn']);
  let clusters: ClusterObject[] = [];
  await waitUntil('both contexts Ready and synced', async () => {
    const r = await get(`${base}/apis/panoptes.io/v1alpha1/clusters`);
    clusters = r.status === 200 ? (r.json.items as ClusterObject[]) : [];
    return clusters.length === 2 && clusters.every((c) => c.status.phase === 'Ready' && c.status.initialSync?.complete);
  }, 60_000).catch((err: Error) => {
    throw new Error(`${err.message}; clusters: ${JSON.stringify(clusters).slice(0, 2000)}; output: ${aio.output().slice(-3000)}`);
  });
  t.same(clusters.map((c) => c.metadata.name), ['sim-a', 'sim-b'], 'one member per context');
  for (const c of clusters) {
    t.match(c.status, { phase: 'Ready', ready: true, server: /^http:\/\/127\.0\.0\.1:\d+\/$/, warnings: [/is plain HTTP: the connection is neither encrypted nor authenticated/] }, `${c.metadata.name}: Ready, with the plain-HTTP warning`);
  }
  const warnings = aio
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { level: string; component: string; cluster?: string; msg: string })
    .filter((l) => l.level === 'warn' && l.component === 'synchro' && l.msg.includes('is plain HTTP'));
  t.same(warnings.map((w) => w.cluster).sort(), ['sim-a', 'sim-b'], 'one warning per cluster in the log');

  // The same pods directly (kubectl with the simulator's own kubeconfig) and through Panoptes.
  const through = ['--kubeconfig', '/dev/null', '--server', `${base}/apis/panoptes.io/v1alpha1/resources`];
  const direct = async () => {
    const names: string[] = [];
    for (const ctx of ['sim-a', 'sim-b']) {
      const r = await kubectl(['--kubeconfig', kubeconfig, '--context', ctx, 'get', 'pods', '-A', '-o', 'custom-columns=NS:.metadata.namespace,NAME:.metadata.name', '--no-headers']);
      t.equal(r.code, 0, r.stderr);
      names.push(...r.stdout.trim().split('\n').map((l) => `${ctx} ${l.trim().split(/\s+/).join(' ')}`));
    }
    return names.sort();
  };
  const viaPanoptes = async () => {
    const r = await kubectl([...through, 'get', 'pods', '-A', '-o', "custom-columns=CLUSTER:.metadata.annotations['panoptes\\.io/cluster'],NS:.metadata.namespace,NAME:.metadata.name", '--no-headers']);
    t.equal(r.code, 0, r.stderr);
    return r.stdout.trim().split('\n').map((l) => l.trim().split(/\s+/).join(' ')).sort();
  };
  const want = await direct();
  t.ok(want.length > 10, `the workload has pods (${want.length})`);
  t.same(await viaPanoptes(), want, 'every pod of both clusters, synced');

  // Live changes keep flowing over the watch.
  t.equal((await kubectl(['--kubeconfig', kubeconfig, '--context', 'sim-b', 'create', 'configmap', 'over-http', '-n', 'default', '--from-literal=a=b'])).code, 0);
  await waitUntil('the new configmap through Panoptes', async () => (await kubectl([...through, 'get', 'configmaps', '-n', 'default', 'over-http', '-o', 'name'])).stdout.includes('configmap/over-http'), 20_000);
  t.pass('a configmap created in sim-b is served by Panoptes');
});
