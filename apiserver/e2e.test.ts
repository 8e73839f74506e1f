// End to end: `panoptes all-in-one` (a real process) over simulated member clusters, read by
// the real kubectl and by @kubernetes/client-node. SQLite in full; PostgreSQL for the core.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import t, { type Test } from 'tap';
import { writeKubeconfig } from '../cli/commands/kubeconfig.ts';
import { stringify } from 'yaml';
import { freePort } from '../storage/testing/postgres.ts';
import { startSimClusters, type SimCluster } from '../hack/sim/cluster.ts';
import { get } from '../hack/sim/testutil.ts';
import { emptyStorageUrl, stopTestPostgres, type Backend } from '../storage/testing.ts';

const P = '/apis/panoptes.io/v1alpha1/resources';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

async function until(what: string, fn: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await fn().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function allInOne(t: Test, backend: Backend, sims: SimCluster[]) {
  const dir = mkdtempSync(join(tmpdir(), 'panoptes-e2e-'));
  const { url: storage, cleanup } = await emptyStorageUrl(backend);
  const clusters = join(dir, 'clusters.yaml');
  writeFileSync(clusters, stringify({ clusters: sims.map((s) => ({ name: s.name, server: s.url, resources: ['*'] })) }));
  const port = await freePort();
  const proc: ChildProcess = spawn(process.execPath, ['bin/panoptes.mjs', 'all-in-one', '--storage', storage, '--clusters', clusters, '--insecure-listen', `127.0.0.1:${port}`, '--probe-interval', '500ms', '--log-level', 'warn'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((r) => proc.on('exit', (code) => r(code)));
  t.teardown(async () => {
    proc.kill('SIGTERM');
    const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
    await cleanup();
    rmSync(dir, { recursive: true, force: true });
  });
  const base = `http://127.0.0.1:${port}`;
  let last = '';
  await until('all-in-one ready and synced', async () => {
    const r = await get(`${base}/apis/panoptes.io/v1alpha1/clusters`);
    last = r.text.slice(0, 2000);
    return r.status === 200 && r.json.items.length === sims.length && r.json.items.every((c: { status: { initialSync?: { complete?: boolean } } }) => c.status.initialSync?.complete);
  }, 60_000).catch((err: Error) => {
    throw new Error(`${err.message}; last answer: ${last}; stderr: ${stderr.slice(-2000)}`);
  });
  const kubeconfig = join(dir, 'kubeconfig');
  await writeKubeconfig(kubeconfig, { panoptes: { server: base, clusters: sims.map((s) => s.name) } });
  const kubectl = (args: string[], timeoutMs = 60_000): Promise<Run> =>
    new Promise((resolve) => {
      execFile('kubectl', ['--kubeconfig', kubeconfig, '--cache-dir', join(dir, 'cache'), ...args], { timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
        resolve({ code: err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0, stdout, stderr });
      });
    });
  return { base, kubectl, stderr: () => stderr };
}

t.test('all-in-one over simulated clusters, SQLite', async (t) => {
  const sims = await startSimClusters(['east', 'west'], { workload: true });
  t.teardown(() => Promise.all(sims.map((s) => s.close())));
  const { base, kubectl } = await allInOne(t, 'sqlite', sims);
  const upstreamPods = sims.reduce((n, s) => n + s.store.list('/pods').items.length, 0);

  const pods = await kubectl(['get', 'pods', '-A']);
  t.equal(pods.code, 0, pods.stderr);
  const lines = pods.stdout.trim().split('\n');
  t.match(lines[0], /^NAMESPACE\s+CLUSTER\s+NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE$/);
  t.equal(lines.length - 1, upstreamPods, 'every pod of every cluster');
  t.ok(lines.some((l) => /\seast\s/.test(l)) && lines.some((l) => /\swest\s/.test(l)));

  const chunked = await kubectl(['get', 'pods', '-A', '--chunk-size=7', '-o', 'name']);
  t.equal(chunked.stdout.trim().split('\n').length, upstreamPods, '--chunk-size pages through everything');

  const labelled = await kubectl(['get', 'pods', '-A', '-l', 'app=frontend', '-o', 'json']);
  const items = JSON.parse(labelled.stdout).items as Array<{ metadata: { labels: Record<string, string> } }>;
  t.ok(items.length > 0 && items.every((i) => i.metadata.labels.app === 'frontend'), '-l');

  const search = await kubectl(['get', 'pods', '-A', '-l', 'search.panoptes.io/clusters in (west)', '-o', 'json']);
  const west = JSON.parse(search.stdout).items as Array<{ metadata: { annotations: Record<string, string> } }>;
  t.ok(west.length > 0 && west.every((i) => i.metadata.annotations['panoptes.io/cluster'] === 'west'), 'search label key through kubectl -l');

  const fs = await kubectl(['get', 'pods', '-A', '--field-selector', 'status.phase=Running,metadata.namespace=shop', '-o', 'name']);
  t.equal(fs.code, 0, fs.stderr);
  t.ok(fs.stdout.trim().split('\n').length > 0);
  const badFs = await kubectl(['get', 'pods', '-A', '--field-selector', 'spec.nope=1']);
  t.not(badFs.code, 0);
  t.match(badFs.stderr, /field label not supported: spec.nope/);

  const wide = await kubectl(['get', 'pods', '-A', '-o', 'wide']);
  t.match(wide.stdout.split('\n')[0], /IP\s+NODE\s+NOMINATED NODE\s+READINESS GATES/);

  const one = sims[0].store.list('/pods').items.find((p) => p.metadata.namespace === 'shop')!;
  const name = one.metadata.name as string;
  const getOne = await kubectl(['get', 'pod', name, '-n', 'shop']);
  t.equal(getOne.code, 0, getOne.stderr);
  t.match(getOne.stdout, new RegExp(`east\\s+${name}`));
  const yaml = await kubectl(['--context', 'panoptes-east', 'get', 'pod', name, '-n', 'shop', '-o', 'yaml']);
  t.match(yaml.stdout, /panoptes.io\/cluster: east/);
  t.match(yaml.stdout, new RegExp(`uid: ${one.metadata.uid}`));
  const asJson = await kubectl(['--context', 'panoptes-east', 'get', 'deploy', 'frontend', '-n', 'shop', '-o', 'json']);
  t.match(JSON.parse(asJson.stdout), { kind: 'Deployment', metadata: { name: 'frontend' } });
  const dup = await kubectl(['get', 'deploy', 'frontend', '-n', 'shop']);
  t.not(dup.code, 0, 'the same name in two clusters');
  t.match(dup.stderr, /exists in 2 clusters \(east, west\)/);
  const missing = await kubectl(['get', 'pod', 'no-such-pod', '-n', 'shop']);
  t.match(missing.stderr, /pods "no-such-pod" not found/);

  const widgets = await kubectl(['get', 'widgets', '-A']);
  t.match(widgets.stdout.split('\n')[0], /^NAMESPACE\s+CLUSTER\s+NAME\s+COLOR/, 'CRD printer columns');

  const res = await kubectl(['api-resources']);
  t.equal(res.code, 0, res.stderr);
  t.match(res.stdout, /pods\s+po\s+v1\s+true\s+Pod/);
  t.match(res.stdout, /clusters\s+panoptes.io\/v1alpha1\s+false\s+Cluster/);
  t.match(res.stdout, /widgets\s+.*demo.panoptes.io\/v1/);

  for (const path of [`${P}/api/v1/namespaces/shop/pods?limit=2`, `${P}/clusters/west/apis/apps/v1/deployments`, '/apis/panoptes.io/v1alpha1/clusters']) {
    const raw = await kubectl(['get', '--raw', path]);
    t.equal(raw.code, 0, `get --raw ${path}: ${raw.stderr}`);
    t.ok(JSON.parse(raw.stdout).items.length > 0, path);
  }
  const unknownCluster = await kubectl(['--context', 'panoptes', 'get', '--raw', `${P}/clusters/nope/api/v1/pods`]);
  t.match(unknownCluster.stderr, /NotFound|not found/);

  // @kubernetes/client-node, paging with limit/continue.
  const kc = new KubeConfig();
  // client-node refuses plain http unless told to skip TLS verification.
  kc.loadFromOptions({ clusters: [{ name: 'p', server: `${base}${P}`, skipTLSVerify: true }], users: [{ name: 'u' }], contexts: [{ name: 'p', cluster: 'p', user: 'u' }], currentContext: 'p' });
  const core = kc.makeApiClient(CoreV1Api);
  const seen = new Set<string>();
  let cont: string | undefined;
  let pages = 0;
  let rv: string | undefined;
  do {
    const page = await core.listPodForAllNamespaces({ limit: 5, _continue: cont });
    if (rv) t.equal(page.metadata?.resourceVersion, rv, 'same rv on every page');
    rv = page.metadata?.resourceVersion;
    for (const p of page.items) seen.add(`${p.metadata?.annotations?.['panoptes.io/cluster']}/${p.metadata?.namespace}/${p.metadata?.name}`);
    cont = page.metadata?._continue;
    pages++;
  } while (cont && pages < 100);
  t.equal(seen.size, upstreamPods, 'client-node pages through every pod once');
  t.equal(pages, Math.ceil(upstreamPods / 5));
  const ns = await core.listNamespacedConfigMap({ namespace: 'shop', limit: 1 });
  t.equal(ns.items.length, 1);
  t.ok(ns.metadata?.remainingItemCount && ns.metadata.remainingItemCount > 0, 'remainingItemCount');

  // A cluster that goes away: its data is served with a Warning.
  await sims[1].faults.down({ mode: 'unavailable' });
  await until('west not Ready', async () => (await get(`${base}/apis/panoptes.io/v1alpha1/clusters/west`)).json.status.ready === false);
  // The catalog refreshes cluster status every 2 s: reads carry the Warning once it has.
  await until('reads warn of west', async () => /cluster west is not Ready/.test(String((await get(`${base}${P}/api/v1/pods?limit=1`)).headers.warning ?? '')));
  const stale = await kubectl(['get', 'pods', '-A', '-o', 'name']);
  t.equal(stale.stdout.trim().split('\n').length, upstreamPods, 'data kept');
  t.match(stale.stderr, /Warning: cluster west is not Ready/);
  await sims[1].faults.up();
});

t.test('all-in-one on PostgreSQL', async (t) => {
  const sims = await startSimClusters(['pg1', 'pg2'], { workload: true });
  t.teardown(async () => {
    await Promise.all(sims.map((s) => s.close()));
    await stopTestPostgres();
  });
  const { base, kubectl } = await allInOne(t, 'postgres', sims);
  const upstreamPods = sims.reduce((n, s) => n + s.store.list('/pods').items.length, 0);
  const pods = await kubectl(['get', 'pods', '-A', '--chunk-size=5']);
  t.equal(pods.code, 0, pods.stderr);
  t.equal(pods.stdout.trim().split('\n').length - 1, upstreamPods);
  const first = await get(`${base}${P}/api/v1/pods?limit=3`);
  t.equal(first.json.metadata.remainingItemCount, upstreamPods - 3);
  const next = await get(`${base}${P}/api/v1/pods?limit=300&continue=${encodeURIComponent(first.json.metadata.continue)}`);
  t.equal(next.json.items.length, upstreamPods - 3);
  t.equal((await get(`${base}/readyz`)).status, 200);
  const err = await get(`${base}${P}/api/v1/pods?resourceVersion=1&resourceVersionMatch=Exact&limit=abc`);
  t.match(err.json, { kind: 'Status', code: 400 });
});
