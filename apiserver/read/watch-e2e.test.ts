// Watch end to end: `panoptes all-in-one` (a real process, SQLite) over simulated member
// clusters. The real kubectl `get -w` in both URL prefixes; @kubernetes/client-node's
// makeInformer on the all-clusters view through churn, relabels, a dropped watch, an
// apiserver restart, and a compaction that forces a relist: its cache ends equal to the
// union of the clusters' pods.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect, type Socket, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig, makeInformer, type V1Pod } from '@kubernetes/client-node';
import t from 'tap';
import { writeKubeconfig } from '../../cli/commands/kubeconfig.ts';
import { stringify } from 'yaml';
import { freePort } from '../../storage/testing/postgres.ts';
import { startSimClusters, type SimCluster } from '../../hack/sim/cluster.ts';
import { get } from '../../hack/sim/testutil.ts';
import { setLogLevel } from '../../lib/log.ts';
import { Store } from '../../storage/store.ts';
import { compactNow, emptyStorageUrl } from '../../storage/testing.ts';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');

const P = '/apis/panoptes.io/v1alpha1/resources';
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

async function until(what: string, fn: () => boolean | Promise<boolean>, timeoutMs = 30_000, stepMs = 100): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await Promise.resolve(fn()).catch(() => false)) return;
    await sleep(stepMs);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

/** `panoptes all-in-one` as a process, restartable on the same storage and port. */
class AllInOne {
  proc: ChildProcess | undefined;
  exited: Promise<number | null> = Promise.resolve(0);
  stderr = '';
  constructor(
    readonly storage: string,
    readonly clustersFile: string,
    readonly port: number,
  ) {}

  get base(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(expectedClusters: number): Promise<void> {
    const proc = spawn(process.execPath, ['bin/panoptes.mjs', 'all-in-one', '--storage', this.storage, '--clusters', this.clustersFile, '--insecure-listen', `127.0.0.1:${this.port}`, '--probe-interval', '500ms', '--log-level', 'warn'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    this.proc = proc;
    proc.stderr!.on('data', (d: Buffer) => (this.stderr = (this.stderr + d.toString()).slice(-20_000)));
    this.exited = new Promise((r) => proc.on('exit', (code) => r(code)));
    await until('all-in-one ready and synced', async () => {
      const r = await get(`${this.base}/apis/panoptes.io/v1alpha1/clusters`);
      return r.status === 200 && r.json.items.length === expectedClusters && r.json.items.every((c: { status: { initialSync?: { complete?: boolean } } }) => c.status.initialSync?.complete);
    }, 60_000).catch((err: Error) => {
      throw new Error(`${err.message}; stderr: ${this.stderr.slice(-2000)}`);
    });
  }

  async stop(): Promise<void> {
    const proc = this.proc;
    if (!proc || proc.exitCode !== null) return;
    proc.kill('SIGTERM');
    const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
    await this.exited;
    clearTimeout(timer);
  }
}

/** A TCP proxy in front of the apiserver, whose connections the test can cut (a dropped watch). */
async function proxy(target: () => number): Promise<{ port: number; drop: () => number; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const up = connect(target(), '127.0.0.1');
    for (const s of [client, up]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined);
    }
    client.on('close', () => up.destroy());
    up.on('close', () => client.destroy());
    client.pipe(up);
    up.pipe(client);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    drop() {
      const n = sockets.size;
      for (const s of sockets) s.resetAndDestroy();
      return n;
    },
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

interface KubectlWatch {
  lines: string[];
  stderr(): string;
  kill(): void;
  exited: Promise<number | null>;
}

function kubectlWatch(kubeconfig: string, cacheDir: string, args: string[]): KubectlWatch {
  const p = spawn('kubectl', ['--kubeconfig', kubeconfig, '--cache-dir', cacheDir, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  let buf = '';
  let err = '';
  p.stdout!.setEncoding('utf8');
  p.stdout!.on('data', (d: string) => {
    buf += d;
    const parts = buf.split('\n');
    buf = parts.pop() ?? '';
    lines.push(...parts.filter((l) => l.trim() !== ''));
  });
  p.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((r) => p.on('exit', (code) => r(code)));
  const killer = setTimeout(() => p.kill('SIGKILL'), 60_000); // bounded whatever happens
  void exited.then(() => clearTimeout(killer));
  return { lines, stderr: () => err, kill: () => p.kill('SIGKILL'), exited };
}

const podsOf = (sims: SimCluster[]) =>
  new Set(sims.flatMap((s) => s.store.list('/pods').items.map((p) => `${s.name}/${p.metadata.uid}`)));

t.test('watch end to end: kubectl -w and a client-node informer through faults (all-in-one, SQLite)', async (t) => {
  const sims = await startSimClusters(['east', 'west'], { historySize: 100_000 });
  const dir = mkdtempSync(join(tmpdir(), 'panoptes-watch-e2e-'));
  const { url: storage, cleanup } = await emptyStorageUrl('sqlite');
  const clustersFile = join(dir, 'clusters.yaml');
  writeFileSync(clustersFile, stringify({ clusters: sims.map((s) => ({ name: s.name, server: s.url, resources: ['pods', 'namespaces'] })) }));
  // Churn pods only, with a name prefix per cluster: client-node's cache is keyed by namespace/name.
  sims.forEach((s, i) => {
    s.churn.start({ ratePerSecond: 1, seed: i + 1, namespaces: ['app1', 'app2'], resources: ['pods'], maxObjects: 80, prefix: `${s.name}-churn` });
    s.churn.stop();
    s.churn.step(60);
  });
  const aio = new AllInOne(storage, clustersFile, await freePort());
  const px = await proxy(() => aio.port);
  const watches: KubectlWatch[] = [];
  t.teardown(async () => {
    for (const w of watches) w.kill();
    for (const s of sims) s.churn.stop();
    await px.close();
    await aio.stop();
    await Promise.all(sims.map((s) => s.close()));
    await cleanup();
    rmSync(dir, { recursive: true, force: true });
  });
  await aio.start(sims.length);

  const kubeconfig = join(dir, 'kubeconfig');
  await writeKubeconfig(kubeconfig, { panoptes: { server: aio.base, clusters: sims.map((s) => s.name) } });
  const cacheDir = join(dir, 'cache');

  t.test('kubectl get -w and get NAME -w, in both URL prefixes', async (t) => {
    const east = sims[0];
    const podInfo = east.registry.lookup('', 'v1', 'pods')!;
    east.crud.create(podInfo, 'v1', 'app1', { metadata: { name: 'watched', labels: { app: 'w' } }, spec: { containers: [{ name: 'c', image: 'nginx' }] } });
    await until('the pod in Panoptes', async () => (await get(`${aio.base}${P}/clusters/east/api/v1/namespaces/app1/pods/watched`)).status === 200);
    const all = kubectlWatch(kubeconfig, cacheDir, ['get', 'pods', '-A', '-w']);
    const one = kubectlWatch(kubeconfig, cacheDir, ['--context', 'panoptes-east', 'get', 'pods', '-n', 'app1', '-w']);
    const name = kubectlWatch(kubeconfig, cacheDir, ['get', 'pod', 'watched', '-n', 'app1', '-w']);
    const nameOne = kubectlWatch(kubeconfig, cacheDir, ['--context', 'panoptes-east', 'get', 'pod', 'watched', '-n', 'app1', '-w']);
    watches.push(all, one, name, nameOne);
    const ws = [all, one, name, nameOne];
    await until('the initial tables', () => ws.every((w) => w.lines.some((l) => /\swatched\s/.test(` ${l} `))), 30_000).catch((err: Error) => {
      throw new Error(`${err.message}: ${ws.map((w) => w.lines.slice(0, 3).join(' | ') + ' ' + w.stderr()).join(' || ')}`);
    });
    t.match(all.lines[0], /^NAMESPACE\s+CLUSTER\s+NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE$/, 'all clusters: the Cluster column');
    t.match(one.lines[0], /^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE$/, 'one cluster: none');
    t.match(name.lines[0], /^NAME\s+CLUSTER|^CLUSTER\s+NAME/);
    const before = ws.map((w) => w.lines.length);
    // A change in the member cluster reaches every kubectl: the pod's phase becomes Failed.
    east.crud.patch(podInfo, 'v1', 'app1', 'watched', 'merge', { status: { phase: 'Failed' } }, { subresource: 'status' });
    await until('a line for the change in every kubectl', () => ws.every((w, i) => w.lines.slice(before[i]).some((l) => /watched.*Failed/.test(l))), 20_000).catch((err: Error) => {
      throw new Error(`${err.message}: ${ws.map((w, i) => w.lines.slice(before[i]).join(' | ') + ' ' + w.stderr()).join(' || ')}`);
    });
    t.match(all.lines.slice(before[0]).find((l) => /watched/.test(l)), /^app1\s+east\s+watched\s+0\/1\s+Failed/);
    t.match(nameOne.lines.slice(before[3]).find((l) => /watched/.test(l)), /^watched\s+0\/1\s+Failed/);
    // A pod that is not the watched name does not reach `get NAME -w`.
    const nameLines = name.lines.length;
    east.crud.create(podInfo, 'v1', 'app1', { metadata: { name: 'other' }, spec: { containers: [{ name: 'c', image: 'nginx' }] } });
    await until('the other pod in the all-pods watch', () => all.lines.some((l) => /\sother\s/.test(l)), 20_000);
    await sleep(300);
    t.equal(name.lines.length, nameLines, 'get NAME -w sees only NAME');
    for (const w of ws) w.kill();
    await Promise.all(ws.map((w) => w.exited));
    east.crud.delete(podInfo, 'app1', 'other');
    east.crud.delete(podInfo, 'app1', 'watched');
  });

  t.test('client-node informer through churn, relabels, a dropped watch, a restart and a compaction', async (t) => {
    const kc = new KubeConfig();
    kc.loadFromOptions({ clusters: [{ name: 'p', server: `http://127.0.0.1:${px.port}${P}`, skipTLSVerify: true }], users: [{ name: 'u' }], contexts: [{ name: 'p', cluster: 'p', user: 'u' }], currentContext: 'p' });
    const core = kc.makeApiClient(CoreV1Api);
    let lists = 0;
    let errors = 0;
    let paused = false;
    const informer = makeInformer<V1Pod>(kc, '/api/v1/pods', () => {
      lists++;
      return core.listPodForAllNamespaces();
    });
    // client-node stops on an error other than 410: restart it (from its last rv), as its docs advise.
    informer.on('error', () => {
      errors++;
      if (!paused) setTimeout(() => void informer.start().catch(() => undefined), 300);
    });
    t.teardown(() => {
      paused = true;
      void informer.stop();
    });
    const cache = () => new Set(informer.list().map((p) => `${p.metadata?.annotations?.['panoptes.io/cluster']}/${p.metadata?.uid}`));
    const converged = async (what: string) => {
      let want = podsOf(sims);
      await until(what, () => {
        want = podsOf(sims);
        const got = cache();
        return got.size === want.size && [...want].every((k) => got.has(k));
      }, 30_000).catch((err: Error) => {
        const got = cache();
        throw new Error(`${err.message}: cache ${got.size}, clusters ${want.size}; missing ${[...want].filter((k) => !got.has(k)).slice(0, 5)}; extra ${[...got].filter((k) => !want.has(k)).slice(0, 5)}; errors ${errors}; stderr ${aio.stderr.slice(-1000)}`);
      });
      t.pass(`${what}: the cache equals the union of the clusters (${want.size} pods)`);
    };
    const names = new Set<string>();
    for (const s of sims) for (const p of s.store.list('/pods').items) names.add(`${p.metadata.namespace}/${p.metadata.name}`);
    t.equal(names.size, podsOf(sims).size, 'no namespace/name is in two clusters (client-node keys its cache by them)');

    await informer.start();
    await converged('initial list');
    t.equal(lists, 1);

    // Churn (creates, updates flipping labels and phases, deletes) in both clusters.
    sims.forEach((s) => s.churn.start({ ratePerSecond: 20, seed: 10 + s.port, namespaces: ['app1', 'app2'], resources: ['pods'], maxObjects: 80, prefix: `${s.name}-churn` }));
    await sleep(2000);
    // Relabels: every pod of east gets a new label value.
    const podInfo = sims[0].registry.lookup('', 'v1', 'pods')!;
    for (const p of sims[0].store.list('/pods').items.slice(0, 20)) {
      try {
        sims[0].crud.patch(podInfo, 'v1', p.metadata.namespace ?? '', p.metadata.name ?? '', 'merge', { metadata: { labels: { relabel: 'yes' } } });
      } catch {
        // deleted by churn meanwhile
      }
    }
    await sleep(1000);
    sims.forEach((s) => s.churn.stop());
    await converged('churn and relabels');

    // A dropped watch: every connection through the proxy is reset; the informer re-watches from its last rv.
    sims.forEach((s) => s.churn.start({ ratePerSecond: 20, seed: 20 + s.port, namespaces: ['app1', 'app2'], resources: ['pods'], maxObjects: 80, prefix: `${s.name}-churn` }));
    await sleep(1000);
    const errorsBefore = errors;
    t.ok(px.drop() > 0, 'connections cut');
    await sleep(1500);
    sims.forEach((s) => s.churn.stop());
    await converged('a dropped watch');
    t.ok(errors > errorsBefore, 'the informer saw the drop');
    t.equal(lists, 1, 'resumed from its rv: no relist');

    // An apiserver restart (the all-in-one process), with writes in the clusters meanwhile.
    sims.forEach((s) => s.churn.start({ ratePerSecond: 20, seed: 30 + s.port, namespaces: ['app1', 'app2'], resources: ['pods'], maxObjects: 80, prefix: `${s.name}-churn` }));
    await aio.stop();
    await sleep(1000);
    await aio.start(sims.length);
    await sleep(1000);
    sims.forEach((s) => s.churn.stop());
    await converged('an apiserver restart');
    t.equal(lists, 1, 'resumed from its rv after the restart: no relist');

    // Compaction while the informer is away: it resumes from a compacted rv, gets 410, relists.
    paused = true;
    await informer.stop();
    const rvBefore = Number((informer as unknown as { latestResourceVersion(): string }).latestResourceVersion());
    sims.forEach((s) => s.churn.step(30));
    await until('Panoptes synced the new writes', async () => {
      const r = await get(`${aio.base}${P}/api/v1/pods`);
      return r.status === 200 && r.json.items.length === podsOf(sims).size && Number(r.json.metadata.resourceVersion) > rvBefore;
    });
    await aio.stop();
    const store = await Store.open(storage);
    const compacted = await compactNow(store, { minAgeMs: 0, minCount: 0 });
    await store.close();
    t.ok(compacted.compactedRv > rvBefore, `compacted past the informer's rv (${compacted.compactedRv} > ${rvBefore})`);
    await aio.start(sims.length);
    paused = false;
    await informer.start();
    await converged('a compaction that forces a relist');
    t.equal(lists, 2, 'the 410 made it relist');
  });
});
