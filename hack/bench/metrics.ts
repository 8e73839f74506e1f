// External metrics benchmark: the HPA's query served over HTTP, on SQLite and PostgreSQL.
//
//   npm run bench:metrics [-- --objects 100000 --clusters 10 --samples 200 --backends sqlite,postgres]
//
// Loads --objects pods (about 1.5 KB each) over --clusters clusters into storage, then asks
// (1) the count of pods with a label selector matching 1% of them (app=app-7, every namespace),
// (2) a declared metric summing .spec.priority over the 10% of them a selector picks (shard=s-3),
// each --samples times in sequence over HTTP, and prints p50/p90/p99 against the targets.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createApiserver } from '../../apiserver/server.ts';
import { formatQuantity } from '../../kube/quantity.ts';
import { setLogLevel } from '../../lib/log.ts';
import { Store } from '../../storage/store.ts';
import { emptyStorageUrl, seedCluster, stopTestPostgres, type Backend } from '../../storage/testing.ts';
import type { UpstreamEvent } from '../../storage/types.ts';
import { percentile, realisticPod } from '../fixtures.ts';
import type { MetricsBackendFigures } from '../report/figures.ts';
import { recordRun } from '../report/record.ts';

const { values } = parseArgs({
  options: {
    objects: { type: 'string', default: '100000' },
    clusters: { type: 'string', default: '10' },
    samples: { type: 'string', default: '200' },
    backends: { type: 'string', default: 'sqlite,postgres' },
  },
});
const total = Number(values.objects);
const nClusters = Number(values.clusters);
const samples = Number(values.samples);
setLogLevel('warn');

const targets: Record<string, { count: number; sum: number }> = { sqlite: { count: 5, sum: 50 }, postgres: { count: 10, sum: 50 } };

function pod(cluster: number, i: number): UpstreamEvent {
  const object = realisticPod({
    namespace: `ns-${i % 50}`,
    name: `pod-${cluster}-${i}`,
    uid: `00000000-0000-4000-8000-${String(cluster).padStart(4, '0')}${String(i).padStart(8, '0')}`,
    upstreamRv: String(i + 1),
    labels: { app: `app-${i % 100}`, shard: `s-${i % 10}`, 'pod-template-hash': '7d4b9c8f5' },
    ownerName: `rs-${i % 100}`,
    ownerUid: `rs-uid-${cluster}-${i % 100}`,
    nodeName: `node-${i % 20}`,
    podIP: `10.${cluster}.${(i >> 8) & 255}.${i & 255}`,
  });
  (object.spec as Record<string, unknown>).priority = i % 7;
  return { type: 'ADDED', group: '', version: 'v1', resource: 'pods', object };
}

function httpGet(url: string): Promise<{ ms: number; status: number; body: string }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { Accept: 'application/vnd.kubernetes.protobuf, */*' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ ms: performance.now() - started, status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

async function measure(url: string, want: string): Promise<number[]> {
  for (let i = 0; i < 10; i++) await httpGet(url); // warm-up
  const ms: number[] = [];
  for (let i = 0; i < samples; i++) {
    const r = await httpGet(url);
    if (r.status !== 200) throw new Error(`${url}: HTTP ${r.status}: ${r.body.slice(0, 300)}`);
    const got = (JSON.parse(r.body) as { items: Array<{ value: string }> }).items[0].value;
    if (got !== want) throw new Error(`${url}: value ${got}, expected ${want}`);
    ms.push(r.ms);
  }
  return ms;
}

const fmt = (ms: number[]) => `p50 ${percentile(ms, 50).toFixed(1)} ms, p90 ${percentile(ms, 90).toFixed(1)} ms, p99 ${percentile(ms, 99).toFixed(1)} ms`;

async function run(backend: Backend): Promise<MetricsBackendFigures> {
  const { url, cleanup } = await emptyStorageUrl(backend);
  const store = await Store.open(url);
  const dir = mkdtempSync(join(tmpdir(), 'panoptes-bench-metrics-'));
  try {
    const apiResources = [{ group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, singularName: 'pod' }];
    const per = Math.ceil(total / nClusters);
    let loaded = 0;
    let expectedCount = 0;
    let expectedSum = 0;
    const t0 = performance.now();
    for (let c = 0; c < nClusters; c++) {
      const name = `c${c}`;
      await seedCluster(store, name, { phase: 'Ready', ready: true, apiResources });
      const n = Math.min(per, total - c * per);
      for (let i = 0; i < n; i += 500) {
        const batch: UpstreamEvent[] = [];
        for (let j = i; j < Math.min(n, i + 500); j++) {
          batch.push(pod(c, j));
          if (j % 100 === 7) expectedCount++;
          if (j % 10 === 3) expectedSum += j % 7;
        }
        await store.applyBatch(name, batch);
        loaded += batch.length;
      }
    }
    await store.analyze();
    const loadSeconds = (performance.now() - t0) / 1000;
    console.log(`${backend}: ${loaded} pods in ${nClusters} clusters loaded in ${loadSeconds.toFixed(1)} s`);

    writeFileSync(join(dir, 'metrics.yaml'), 'metrics:\n  - { name: priority-sum, resource: pods, namespaces: all, aggregate: sum, path: .spec.priority }\n');
    const api = await createApiserver({ store, externalMetrics: { file: join(dir, 'metrics.yaml') } });
    const base = await api.listen('127.0.0.1', 0);
    try {
      const EM = `${base}/apis/external.metrics.k8s.io/v1beta1/namespaces/default`;
      const count = await measure(`${EM}/pods?labelSelector=${encodeURIComponent('app=app-7,search.panoptes.io/all-namespaces')}`, formatQuantity(expectedCount));
      const t1 = targets[backend].count;
      console.log(`${backend}: count of pods, selector matching ${expectedCount} of ${loaded} (1%), ${samples} sequential requests over HTTP: ${fmt(count)}; target p50 <= ${t1} ms: ${percentile(count, 50) <= t1 ? 'MET' : 'MISSED'}`);
      const sum = await measure(`${EM}/priority-sum?labelSelector=shard%3Ds-3`, formatQuantity(expectedSum));
      const t2 = targets[backend].sum;
      console.log(`${backend}: sum of .spec.priority over ${loaded / 10} matching pods (10%), ${samples} sequential requests over HTTP: ${fmt(sum)}; target p50 <= ${t2} ms: ${percentile(sum, 50) <= t2 ? 'MET' : 'MISSED'}`);
      return { backend, loaded, loadSeconds, count: { matching: expectedCount, samplesMs: count }, sum: { matching: loaded / 10, samplesMs: sum }, targets: { countP50Ms: t1, sumP50Ms: t2 } };
    } finally {
      await api.close();
    }
  } finally {
    await store.close();
    await cleanup();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const backends: MetricsBackendFigures[] = [];
  for (const b of values.backends!.split(',')) backends.push(await run(b.trim() as Backend));
  await stopTestPostgres();
  await recordRun('metrics', 'metrics', { ...values }, { objects: total, clusters: nClusters, backends });
}

main().catch(async (err) => {
  console.error(err);
  await stopTestPostgres();
  process.exit(1);
});
