// What a HorizontalPodAutoscaler computes from Panoptes' answers. The HPA controller
// (pkg/controller/podautoscaler: replica_calculator.go, metrics/client.go) lists the metric,
// takes each item's value as a Quantity's MilliValue, sums them, and:
//   - Value target:        usageRatio = sum / target; with current replicas > 0, replicas stay
//                          when |1 - usageRatio| <= tolerance (0.1), else ceil(usageRatio × ready
//                          pods); from 0 replicas, ceil(usageRatio);
//   - AverageValue target: usageRatio = sum / (target × status replicas); replicas stay within
//                          the tolerance, else ceil(sum / target).
// No items at all is an error ("no metrics returned from external metrics API").
import t from 'tap';
import { get } from '../../hack/sim/testutil.ts';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setLogLevel } from '../../lib/log.ts';
import { openTestStore, podEvent, seedCluster } from '../../storage/testing.ts';
import type { UpstreamEvent } from '../../storage/types.ts';
import { createApiserver } from '../server.ts';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');

const tolerance = 0.1;

/** resource.Quantity.MilliValue for the forms a quantity string takes (no binary suffixes needed here). */
function milliValue(q: string): number {
  const m = /^([+-]?\d+(?:\.\d+)?)(m|k|M|G|T|P|E)?$/.exec(q);
  if (!m) throw new Error(`not a quantity: ${q}`);
  const scale: Record<string, number> = { m: 1e-3, '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18 };
  return Math.ceil(Number(m[1]) * scale[m[2] ?? ''] * 1000 - 1e-9);
}

/** GetExternalMetric: the milli values of all items; no items is an error. */
function metricValues(list: { items: Array<{ value: string }> }): number[] {
  if (list.items.length === 0) throw new Error('no metrics returned from external metrics API');
  return list.items.map((i) => milliValue(i.value));
}

/** GetExternalMetricReplicas + getUsageRatioReplicaCount. */
function valueReplicas(currentReplicas: number, readyPods: number, targetMilli: number, values: number[]): number {
  const usage = values.reduce((a, b) => a + b, 0);
  const usageRatio = usage / targetMilli;
  if (currentReplicas === 0) return Math.ceil(usageRatio);
  if (Math.abs(1 - usageRatio) <= tolerance) return currentReplicas;
  return Math.ceil(usageRatio * readyPods);
}

/** GetExternalPerPodMetricReplicas. */
function averageValueReplicas(statusReplicas: number, targetPerPodMilli: number, values: number[]): number {
  const usage = values.reduce((a, b) => a + b, 0);
  const usageRatio = usage / (targetPerPodMilli * statusReplicas);
  if (Math.abs(1 - usageRatio) > tolerance) return Math.ceil(usage / targetPerPodMilli);
  return statusReplicas;
}

const deployment = (name: string, ready: number, rv: string, uid: string): UpstreamEvent => ({
  type: 'ADDED',
  group: 'apps',
  version: 'v1',
  resource: 'deployments',
  object: { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name, namespace: 'shop', uid, resourceVersion: rv }, status: { readyReplicas: ready } },
});

t.test('the replica counts an HPA computes from Panoptes answers', async (t) => {
  const { store, close } = await openTestStore('sqlite');
  const apiResources = [
    { group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, singularName: 'pod' },
    { group: 'apps', version: 'v1', resource: 'deployments', kind: 'Deployment', namespaced: true, singularName: 'deployment' },
  ];
  for (const c of ['hub', 'east', 'west']) {
    await seedCluster(store, c, { phase: 'Ready', ready: true, apiResources });
  }
  // 25 pending pods in namespace batch: 10 in east, 15 in west; running ones besides.
  let rv = 10;
  const pods = (c: string, pending: number, running: number) =>
    store.applyBatch(c, [
      ...Array.from({ length: pending }, (_, i) => podEvent('ADDED', 'batch', `${c}-p${i}`, String(rv++), { uid: `${c}-p${i}`, phase: 'Pending' })),
      ...Array.from({ length: running }, (_, i) => podEvent('ADDED', 'batch', `${c}-r${i}`, String(rv++), { uid: `${c}-r${i}`, phase: 'Running' })),
    ]);
  await pods('east', 10, 4);
  await pods('west', 15, 4);
  await store.applyBatch('hub', [deployment('web', 4, String(rv++), 'hub-web')]);
  await store.applyBatch('east', [deployment('web', 3, String(rv++), 'east-web')]);
  await store.applyBatch('west', [deployment('web', 6, String(rv++), 'west-web')]);

  const dir = mkdtempSync(join(tmpdir(), 'panoptes-hpa-'));
  writeFileSync(
    join(dir, 'metrics.yaml'),
    `metrics:
  - name: web-ready
    resource: deployments.apps
    namespaces: [shop]
    fieldSelector: metadata.name=web
    aggregate: sum
    path: .status.readyReplicas
    perCluster: true
  - name: web-ready-avg
    resource: deployments.apps
    namespaces: [shop]
    aggregate: avg
    path: .status.readyReplicas
`,
  );
  const api = await createApiserver({ store, externalMetrics: { file: join(dir, 'metrics.yaml') } });
  const base = await api.listen('127.0.0.1', 0);
  t.teardown(async () => {
    await api.close();
    await close();
    rmSync(dir, { recursive: true, force: true });
  });
  // Exactly what the controller sends: its namespace, the metric name, the selector as labelSelector.
  const ask = async (ns: string, metric: string, selector: string) => {
    const r = await get(`${base}/apis/external.metrics.k8s.io/v1beta1/namespaces/${ns}/${metric}?labelSelector=${encodeURIComponent(selector)}`, { Accept: 'application/vnd.kubernetes.protobuf, */*' });
    t.equal(r.status, 200, r.text);
    return metricValues(r.json);
  };
  const pendingJobs = 'field.panoptes.io/status.phase=Pending,search.panoptes.io/namespaces=batch';

  t.test('Value target: workers in the hub sized on pending pods across the fleet', async (t) => {
    const values = await ask('workers', 'pods', pendingJobs);
    t.same(values, [25_000]);
    t.equal(valueReplicas(2, 2, 10_000, values), 5, 'usageRatio 2.5 × 2 ready pods');
    t.equal(valueReplicas(0, 0, 10_000, values), 3, 'from zero: ceil(2.5)');
    t.equal(valueReplicas(5, 5, 24_000, values), 5, 'usageRatio 1.04: within the tolerance');
    t.equal(valueReplicas(4, 3, 50_000, values), 2, 'usageRatio 0.5 × 3 ready pods');
    t.same(await ask('workers', 'pods', `${pendingJobs},search.panoptes.io/clusters=east`), [10_000], 'one cluster');
  });

  t.test('AverageValue target: pending pods per worker', async (t) => {
    const values = await ask('workers', 'pods', pendingJobs);
    t.equal(averageValueReplicas(2, 5_000, values), 5, 'ceil(25 / 5)');
    t.equal(averageValueReplicas(5, 5_000, values), 5, 'usageRatio 1.0');
    t.equal(averageValueReplicas(3, 4_000, values), 7, 'ceil(25 / 4)');
    // The fleet changes: 5 more pending in west; the next query sees them.
    await pods('west', 20, 0);
    const after = await ask('workers', 'pods', pendingJobs);
    t.same(after, [30_000]);
    t.equal(averageValueReplicas(5, 5_000, after), 6, 'usageRatio 1.2: scales to ceil(30 / 5)');
  });

  t.test('per-cluster items: a standby tier sized on the ready replicas of the other clusters', async (t) => {
    const values = await ask('standby', 'web-ready', 'search.panoptes.io/clusters notin (hub)');
    t.same(values, [3_000, 6_000], 'east and west');
    t.equal(averageValueReplicas(4, 1_000, values), 9, 'one standby replica per ready replica elsewhere');
    t.equal(valueReplicas(4, 4, 9_000, values), 4, 'Value 9: at target');
    const all = await ask('standby', 'web-ready', '');
    t.same(all, [3_000, 4_000, 6_000], 'every cluster, sorted by name');
  });

  t.test('fractional values travel as milli quantities', async (t) => {
    const values = await ask('x', 'web-ready-avg', '');
    t.same(values, [4_334], 'avg (4+3+6)/3 = 4.333… → 4334m, rounded up as MilliValue does');
    t.equal(valueReplicas(1, 1, 1_000, values), 5);
  });
});
