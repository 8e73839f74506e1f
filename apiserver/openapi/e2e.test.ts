// End to end: `panoptes all-in-one` (a real process) over a simulated member that serves
// OpenAPI v3 and one that serves v2 only. Real kubectl: explain through both prefixes and the
// root (v3, and v2 in protobuf), and apply / create -f with validation on: manifests are
// validated against the served schemas, then reach Panoptes (405 for the all-clusters view's
// read-only resources, the proxy's 403 in a one-cluster view of this unauthenticated server,
// created for Clusters).
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { stringify } from 'yaml';
import { writeKubeconfig } from '../../cli/commands/kubeconfig.ts';
import { freePort } from '../../storage/testing/postgres.ts';
import { startSimClusters } from '../../hack/sim/cluster.ts';
import { get } from '../../hack/sim/testutil.ts';
import { emptyStorageUrl } from '../../storage/testing.ts';

const P = '/apis/panoptes.io/v1alpha1/resources';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

async function until(what: string, fn: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await fn().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`timed out waiting for ${what}`);
}

t.test('kubectl explain and apply validation through Panoptes', async (t) => {
  const [east] = await startSimClusters(['east'], { workload: true });
  const [west] = await startSimClusters(['west'], { workload: true, openapiV3: false });
  const sims = [east, west];
  const dir = mkdtempSync(join(tmpdir(), 'panoptes-openapi-e2e-'));
  const { url: storage, cleanup } = await emptyStorageUrl('sqlite');
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
    await Promise.all(sims.map((s) => s.close()));
    await cleanup();
    rmSync(dir, { recursive: true, force: true });
  });
  const base = `http://127.0.0.1:${port}`;
  await until('clusters synced with their OpenAPI stored', async () => {
    const r = await get(`${base}/apis/panoptes.io/v1alpha1/clusters`);
    const items = (r.json?.items ?? []) as Array<{ status: { initialSync?: { complete?: boolean }; openapi?: { documents?: number } } }>;
    return items.length === 2 && items.every((c) => c.status.initialSync?.complete && (c.status.openapi?.documents ?? 0) > 0);
  }).catch((err: Error) => {
    throw new Error(`${err.message}; stderr: ${stderr.slice(-2000)}`);
  });
  await until('the apiserver serves the member schemas', async () => {
    for (const v of ['', '/clusters/east', '/clusters/west']) {
      const r = await get(`${base}${P}${v}/openapi/v2`);
      if (!r.json?.definitions?.['io.k8s.api.core.v1.Pod'] || !r.json.definitions['io.panoptes.demo.v1.Widget']) return false;
    }
    return true;
  });

  const kubeconfig = join(dir, 'kubeconfig');
  await writeKubeconfig(kubeconfig, { panoptes: { server: base, clusters: sims.map((s) => s.name) } });
  const kubectl = (args: string[]): Promise<Run> =>
    new Promise((resolve) => {
      execFile('kubectl', ['--kubeconfig', kubeconfig, '--cache-dir', join(dir, 'cache'), ...args], { timeout: 60_000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
        resolve({ code: err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0, stdout, stderr });
      });
    });
  const contexts = ['panoptes', 'panoptes-east', 'panoptes-west'];

  await t.test('kubectl explain (OpenAPI v3) in both prefixes', async (t) => {
    for (const ctx of contexts) {
      const pods = await kubectl(['--context', ctx, 'explain', 'pods.spec.containers']);
      t.equal(pods.code, 0, `${ctx}: ${pods.stderr}`);
      t.match(pods.stdout, /KIND:\s+Pod\nVERSION:\s+v1\n\nFIELD: containers <\[\]Container>/, ctx);
      t.match(pods.stdout, /image\s+<string>/);
      const widgets = await kubectl(['--context', ctx, 'explain', 'widgets.spec']);
      t.equal(widgets.code, 0, `${ctx}: ${widgets.stderr}`);
      t.match(widgets.stdout, /GROUP:\s+demo\.panoptes\.io\nKIND:\s+Widget/, ctx);
      t.match(widgets.stdout, /color\s+<string>/);
      const cl = await kubectl(['--context', ctx, 'explain', 'clusters']);
      t.equal(cl.code, 0, `${ctx}: ${cl.stderr}`);
      t.match(cl.stdout, /GROUP:\s+panoptes\.io\nKIND:\s+Cluster\nVERSION:\s+v1alpha1/, ctx);
      t.match(cl.stdout, /status\s+<ClusterStatus>/);
    }
    const init = await kubectl(['--context', 'panoptes', 'explain', 'clusters.status.initialSync.resourcesSynced']);
    t.match(init.stdout, /FIELD: resourcesSynced <integer>/, init.stderr);
  });

  await t.test('kubectl explain at the server root (what the aggregator merges)', async (t) => {
    const r = await kubectl(['--server', base, 'explain', 'clusters.spec.resources']);
    t.equal(r.code, 0, r.stderr);
    t.match(r.stdout, /FIELD: resources <\[\]string>/);
  });

  await t.test('kubectl explain with OpenAPI v2 (protobuf)', async (t) => {
    for (const ctx of contexts) {
      const r = await kubectl(['--context', ctx, 'explain', 'deployments.spec.strategy', '--output', 'plaintext-openapiv2']);
      t.equal(r.code, 0, `${ctx}: ${r.stderr}`);
      t.match(r.stdout, /KIND:\s+Deployment\nVERSION:\s+apps\/v1\n\nRESOURCE: strategy <Object>/, ctx);
    }
  });

  await t.test('apply and create -f: validated, then the request reaches Panoptes', async (t) => {
    const cm = join(dir, 'cm.yaml');
    writeFileSync(cm, stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'from-kubectl', namespace: 'shop' }, data: { a: 'b' } }));
    const typo = join(dir, 'typo.yaml');
    writeFileSync(typo, stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'typo', namespace: 'shop' }, dataa: { a: 'b' } }));
    const cluster = join(dir, 'cluster.yaml');
    writeFileSync(cluster, stringify({ apiVersion: 'panoptes.io/v1alpha1', kind: 'Cluster', metadata: { name: 'north' }, spec: { server: 'https://north.example:6443', resources: ['pods'] } }));
    const badCluster = join(dir, 'bad-cluster.yaml');
    writeFileSync(badCluster, stringify({ apiVersion: 'panoptes.io/v1alpha1', kind: 'Cluster', metadata: { name: 'south' }, spec: { servr: 'https://south.example:6443' } }));

    const reachesPanoptes = (r: Run, what: string) => {
      t.not(r.code, 0, what);
      t.notMatch(r.stderr, /error validating|failed to download openapi|proto:/, `${what}: no validation error`);
      if (what.startsWith('panoptes ')) t.match(r.stderr, /MethodNotAllowed|does not allow this method/, `${what}: 405 from Panoptes`);
      else t.match(r.stderr, /authenticates nobody/, `${what}: the proxy's 403 from Panoptes`);
    };
    for (const ctx of contexts) {
      reachesPanoptes(await kubectl(['--context', ctx, 'apply', '-f', cm]), `${ctx} apply ConfigMap`);
      reachesPanoptes(await kubectl(['--context', ctx, 'create', '-f', cm]), `${ctx} create -f ConfigMap`);
      const bad = await kubectl(['--context', ctx, 'apply', '-f', typo]);
      t.match(bad.stderr, /unknown field "dataa"/, `${ctx}: a typo is caught by validation against the served schema`);
    }
    // Clusters are written: validated (the server's field validation, announced in OpenAPI), then created.
    const applied = await kubectl(['--server', base, 'apply', '-f', cluster]);
    t.equal(applied.code, 0, applied.stderr);
    t.match(applied.stdout, /cluster.panoptes.io\/north created/, 'root apply Cluster');
    const again = await kubectl(['--server', base, 'create', '-f', cluster]);
    t.notMatch(again.stderr, /error validating|failed to download openapi|proto:/, 'no validation error');
    t.match(again.stderr, /AlreadyExists|already exists/, 'root create -f Cluster reaches Panoptes');
    const badRoot = await kubectl(['--server', base, 'apply', '-f', badCluster]);
    t.match(badRoot.stderr, /unknown field "(spec\.)?servr"/, 'the Cluster schema validates too');
  });
});
