// End to end: `panoptes all-in-one` (a real process) over simulated member clusters with the
// demo workload and churn, queried with the exact requests the HPA controller sends and with
// the real `kubectl get --raw`: counts equal what the members hold and follow their changes
// within a second, per-cluster items and the cluster selector, a rewrite of the metrics file,
// and the errors kubectl prints for bad names, selectors and rules.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { stringify } from 'yaml';
import { writeKubeconfig } from '../../cli/commands/kubeconfig.ts';
import { freePort } from '../../storage/testing/postgres.ts';
import { startSimClusters, type SimCluster } from '../../hack/sim/cluster.ts';
import { get } from '../../hack/sim/testutil.ts';
import type { KObject } from '../../hack/sim/types.ts';
import { emptyStorageUrl } from '../../storage/testing.ts';

const EM = '/apis/external.metrics.k8s.io/v1beta1';

const rules = (extra = '') => `metrics:
  - name: frontend-ready
    resource: deployments.apps
    namespaces: [shop]
    fieldSelector: metadata.name=frontend
    aggregate: sum
    path: .status.readyReplicas
    perCluster: true
  - name: red-widgets
    resource: widgets.demo.panoptes.io
    namespaces: all
    match:
      - { path: .spec.color, operator: In, values: [red] }
${extra}`;

async function until(what: string, fn: () => Promise<boolean>, timeoutMs: number, everyMs = 50): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < timeoutMs) {
    if (await fn().catch(() => false)) return Date.now() - started;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

t.test('external metrics from panoptes all-in-one over simulated clusters', async (t) => {
  const sims = await startSimClusters(['east', 'west'], { workload: true });
  const dir = mkdtempSync(join(tmpdir(), 'panoptes-em-e2e-'));
  const { url: storage, cleanup } = await emptyStorageUrl('sqlite');
  const clusters = join(dir, 'clusters.yaml');
  writeFileSync(clusters, stringify({ clusters: sims.map((s) => ({ name: s.name, server: s.url, resources: ['*'] })) }));
  const metricsFile = join(dir, 'metrics.yaml');
  writeFileSync(metricsFile, rules());
  const port = await freePort();
  const proc: ChildProcess = spawn(
    process.execPath,
    ['bin/panoptes.mjs', 'all-in-one', '--storage', storage, '--clusters', clusters, '--insecure-listen', `127.0.0.1:${port}`, '--probe-interval', '500ms', '--external-metrics-file', metricsFile, '--log-level', 'warn'],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((r) => proc.on('exit', (code) => r(code)));
  t.teardown(async () => {
    for (const s of sims) s.churn.stop();
    proc.kill('SIGTERM');
    const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
    await Promise.all(sims.map((s) => s.close()));
    await cleanup();
    rmSync(dir, { recursive: true, force: true });
  });
  const base = `http://127.0.0.1:${port}`;
  await until(
    'all-in-one synced',
    async () => {
      const r = await get(`${base}/apis/panoptes.io/v1alpha1/clusters`);
      return r.status === 200 && r.json.items.length === 2 && r.json.items.every((c: { status: { initialSync?: { complete?: boolean } } }) => c.status.initialSync?.complete);
    },
    60_000,
    200,
  ).catch((err: Error) => {
    throw new Error(`${err.message}; stderr: ${stderr.slice(-2000)}`);
  });
  const kubeconfig = join(dir, 'kubeconfig');
  await writeKubeconfig(kubeconfig, { panoptes: { server: base, clusters: sims.map((s) => s.name) } });
  const kubectl = (args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
    new Promise((resolve) => {
      execFile('kubectl', ['--kubeconfig', kubeconfig, '--context', 'panoptes', '--cache-dir', join(dir, 'cache'), ...args], { timeout: 60_000 }, (err, stdout, stderr) => {
        resolve({ code: err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0, stdout, stderr });
      });
    });
  /** The HPA controller's request: its namespace, the metric, the selector as labelSelector; the value it sums. */
  const hpaAsk = async (ns: string, metric: string, selector: string): Promise<{ values: string[]; labels: Array<Record<string, string>> }> => {
    const r = await get(`${base}${EM}/namespaces/${ns}/${metric}?labelSelector=${encodeURIComponent(selector)}`, { Accept: 'application/vnd.kubernetes.protobuf, */*' });
    if (r.status !== 200) throw new Error(`${metric}: HTTP ${r.status}: ${r.text}`);
    return { values: r.json.items.map((i: { value: string }) => i.value), labels: r.json.items.map((i: { metricLabels: Record<string, string> }) => i.metricLabels) };
  };
  const podInfo = (s: SimCluster) => s.registry.lookup('', 'v1', 'pods')!;
  const upstream = (pred: (p: KObject) => boolean) => sims.reduce((n, s) => n + s.store.list('/pods').items.filter(pred).length, 0);
  const pendingIn = (ns: string) => (p: KObject) => p.metadata.namespace === ns && (p.status as { phase?: string } | undefined)?.phase === 'Pending';
  const pendingBatch = 'field.panoptes.io/status.phase=Pending,search.panoptes.io/namespaces=batch';

  t.test('the HPA request: pending pods across the fleet, following changes within a second', async (t) => {
    t.same((await hpaAsk('workers', 'pods', pendingBatch)).values, [String(upstream(pendingIn('batch')))], 'initially');
    for (let i = 0; i < 3; i++) {
      const s = sims[i % 2];
      s.crud.create(podInfo(s), 'v1', 'batch', { metadata: { name: `job-pod-${i}`, labels: { app: 'queue' } }, spec: { containers: [{ name: 'c', image: 'busybox' }] }, status: { phase: 'Pending' } }, { keepStatus: true });
      const want = String(upstream(pendingIn('batch')));
      const ms = await until(`pending = ${want}`, async () => (await hpaAsk('workers', 'pods', pendingBatch)).values[0] === want, 1000);
      t.pass(`a new pending pod in ${s.name} counted after ${ms} ms`);
    }
    const s = sims[0];
    s.crud.patch(podInfo(s), 'v1', 'batch', 'job-pod-0', 'merge', { status: { phase: 'Running' } }, { subresource: 'status' });
    const want = String(upstream(pendingIn('batch')));
    await until(`pending = ${want} after a phase change`, async () => (await hpaAsk('workers', 'pods', pendingBatch)).values[0] === want, 1000);
    t.equal((await hpaAsk('workers', 'pods', `${pendingBatch},app=queue`)).values[0], '2', 'object labels narrow it');
    t.equal((await hpaAsk('workers', 'pods', `${pendingBatch},app=queue,search.panoptes.io/clusters=west`)).values[0], '1', 'and the cluster selector');
  });

  t.test('churn on the members: the count equals theirs once it stops', async (t) => {
    for (const [i, s] of sims.entries()) s.churn.start({ ratePerSecond: 40, seed: 7 + i, namespaces: ['shop', 'batch'], resources: ['pods'], maxObjects: 60 });
    await new Promise((r) => setTimeout(r, 3000));
    for (const s of sims) s.churn.stop();
    const sel = 'field.panoptes.io/status.phase=Pending,search.panoptes.io/all-namespaces';
    const want = String(upstream((p) => (p.status as { phase?: string } | undefined)?.phase === 'Pending'));
    await until(`pending everywhere = ${want}`, async () => (await hpaAsk('default', 'pods', sel)).values[0] === want, 1000);
    t.pass(`pending pods in every namespace: ${want}`);
    const churned = 'app.kubernetes.io/managed-by=sim-churn,search.panoptes.io/all-namespaces';
    t.equal((await hpaAsk('default', 'pods', churned)).values[0], String(upstream((p) => p.metadata.labels?.['app.kubernetes.io/managed-by'] === 'sim-churn')));
  });

  t.test('per-cluster items and the cluster selector', async (t) => {
    t.same(await hpaAsk('standby', 'frontend-ready', ''), { values: ['3', '3'], labels: [{ cluster: 'east' }, { cluster: 'west' }] });
    const deploy = sims[1].registry.lookup('apps', 'v1', 'deployments')!;
    // Scaled as kubectl scale does it: the simulated cluster's controllers start the pods and report 7 ready.
    sims[1].crud.patchScale(deploy, 'v1', 'shop', 'frontend', 'merge', { spec: { replicas: 7 } });
    await until('west frontend ready 7', async () => (await hpaAsk('standby', 'frontend-ready', '')).values[1] === '7', 1000);
    t.same(await hpaAsk('standby', 'frontend-ready', 'search.panoptes.io/clusters notin (east)'), { values: ['7'], labels: [{ cluster: 'west' }] });
    t.same((await hpaAsk('x', 'red-widgets', '')).values, ['2'], 'a custom resource in a given state, fleet-wide (one red Widget per cluster)');
  });

  t.test('kubectl get --raw, and the errors it prints', async (t) => {
    const raw = await kubectl(['get', '--raw', `${EM}/namespaces/default/pods?labelSelector=search.panoptes.io/all-namespaces=true,field.panoptes.io/status.phase=Pending`]);
    t.equal(raw.code, 0, raw.stderr);
    const list = JSON.parse(raw.stdout);
    t.match(list, { kind: 'ExternalMetricValueList', items: [{ metricName: 'pods', metricLabels: {} }] });
    t.equal(list.items[0].value, String(upstream((p) => (p.status as { phase?: string } | undefined)?.phase === 'Pending')));
    const disco = await kubectl(['get', '--raw', EM]);
    t.ok(JSON.parse(disco.stdout).resources.some((r: { name: string }) => r.name === 'frontend-ready'));
    const notFound = await kubectl(['get', '--raw', `${EM}/namespaces/default/nope`]);
    t.not(notFound.code, 0);
    t.match(notFound.stderr, /NotFound.*external metric "nope" not found/);
    const badSel = await kubectl(['get', '--raw', `${EM}/namespaces/default/pods?labelSelector=field.panoptes.io/spec.nope=1`]);
    t.match(badSel.stderr, /BadRequest.*field label not supported: spec.nope/);
  });

  t.test('a change of the metrics file is picked up; a bad rule gets a clear error', async (t) => {
    writeFileSync(metricsFile, rules(`  - name: shop-pods
    resource: pods
    namespaces: [shop]
  - name: broken
    resource: pods
    aggregate: max
`));
    await until('the new rule', async () => (await get(`${base}${EM}/namespaces/x/shop-pods`)).status === 200, 10_000, 100);
    t.equal((await hpaAsk('x', 'shop-pods', '')).values[0], String(upstream((p) => p.metadata.namespace === 'shop')));
    const broken = await kubectl(['get', '--raw', `${EM}/namespaces/default/broken`]);
    t.match(broken.stderr, /ServiceUnavailable.*rule is invalid: metrics\[3\] \(broken\): path \(the number to max\) must be a non-empty string/);
    t.match(stderr, /invalid external metric rule/, 'and the log says so');
  });
});
