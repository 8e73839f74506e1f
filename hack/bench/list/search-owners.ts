// bench:list, owner chains and JSON path field terms, on the run's pods (hack/bench/list.ts:
// app-k pods of every cluster c<i> name ReplicaSet uid rs-<i>-<k>). Adds a Deployment app-k and
// its ReplicaSet per app and cluster, then measures first pages (limit=500) over HTTP against
// the same list without search terms, and the same selections read as plain unindexed SQL over
// the JSON documents (the owner uid and the phase read from each document, as Clusterpedia
// does): the baseline, measured in the same run at the storage API (no HTTP: in its favour).
import { request } from 'node:http';
import { percentile } from '../../fixtures.ts';
import type { Store } from '../../../storage/store.ts';
import type { JsonFieldRequirement } from '../../../storage/json-fields.ts';
import type { ListQuery, UpstreamEvent } from '../../../storage/types.ts';

const P = '/apis/panoptes.io/v1alpha1/resources';
const apps = 40;

function httpGet(url: string): Promise<{ ms: number; status: number; items: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    request(url, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const ms = performance.now() - started;
        const body = JSON.parse(Buffer.concat(chunks).toString()) as { items?: unknown[] };
        resolve({ ms, status: res.statusCode ?? 0, items: body.items?.length ?? 0 });
      });
      res.on('error', reject);
    })
      .on('error', reject)
      .end();
  });
}

async function sample(n: number, once: () => Promise<number>): Promise<number[]> {
  for (let i = 0; i < 3; i++) await once(); // warm-up
  const ms: number[] = [];
  for (let i = 0; i < n; i++) ms.push(await once());
  return ms;
}

/** A Deployment app-k and its ReplicaSet (uid rs-<cluster>-<k>) in the app's namespace, per cluster. */
function owners(ci: number): UpstreamEvent[] {
  const out: UpstreamEvent[] = [];
  for (let k = 0; k < apps; k++) {
    const namespace = `bench-${k % 20}`;
    const dep = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: `app-${k}`, namespace, uid: `dep-${ci}-${k}`, resourceVersion: '1' }, spec: { replicas: 1 } };
    const rs = {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: { name: `app-${k}-abc123`, namespace, uid: `rs-${ci}-${k}`, resourceVersion: '1', ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: `app-${k}`, uid: `dep-${ci}-${k}`, controller: true }] },
      spec: { replicas: 1 },
    };
    out.push({ type: 'ADDED', group: 'apps', version: 'v1', resource: 'deployments', object: dep }, { type: 'ADDED', group: 'apps', version: 'v1', resource: 'replicasets', object: rs });
  }
  return out;
}

/** The baseline of an ancestor query: each level's owner uids read from the documents, one list per level. */
async function ancestorsOverJson(store: Store, clusters: string[] | undefined, limit: number): Promise<number> {
  const ownerUid = (values: string[]): JsonFieldRequirement => ({ path: ['metadata', 'ownerReferences', null, 'uid'], operator: 'in', values });
  const unbounded = { rows: Infinity, bytes: Infinity, ms: 600_000 };
  const base = { clusters, budget: unbounded };
  const deps = await store.list({ ...base, group: 'apps', resource: 'deployments', jsonFields: [{ path: ['metadata', 'name'], operator: 'in', values: ['app-7'] }] });
  const rss = await store.list({ ...base, group: 'apps', resource: 'replicasets', jsonFields: [ownerUid(deps.items.map((d) => d.uid))] });
  const pods = await store.list({ ...base, group: '', resource: 'pods', limit, jsonFields: [ownerUid(rss.items.map((r) => r.uid))] });
  return pods.items.length;
}

/** Owner chains and JSON path terms at the run's scale; prints its figures. */
export async function benchSearchOwners(backend: string, store: Store, base: string, nClusters: number, samples: number): Promise<void> {
  for (let ci = 0; ci < nClusters; ci++) await store.applyBatch(`c${ci}`, owners(ci));
  await store.analyze();
  const n = Math.min(samples, 50);
  const p50 = (ms: number[]) => percentile(ms, 50);
  const line = (what: string, ms: number[], extra = '') => console.log(`${backend}: ${what}: p50 ${p50(ms).toFixed(1)} ms, p90 ${percentile(ms, 90).toFixed(1)} ms${extra}`);
  const http = async (query: string, expect = 200) =>
    sample(n, async () => {
      const r = await httpGet(`${base}${P}/api/v1/pods?limit=500${query}`);
      if (r.status !== expect) throw new Error(`${query}: HTTP ${r.status}`);
      return r.ms;
    });
  const direct = (q: () => Promise<unknown>) =>
    sample(n, async () => {
      const t0 = performance.now();
      await q();
      return performance.now() - t0;
    });

  const plain = await http('');
  line('first page without search terms (reference)', plain);
  const within = (ms: number[], target: number) => `; target <= ${target} ms: ${p50(ms) <= target ? 'MET' : 'MISSED'}; ${(p50(ms) / p50(plain)).toFixed(2)}x the reference (target <= 3x: ${p50(ms) <= 3 * p50(plain) ? 'MET' : 'MISSED'})`;

  const chain = '&ownerName=app-7&ownerGR=deployments.apps&ownerSeniority=1';
  const oneCluster = `c${Math.min(3, nClusters - 1)}`;
  const one = await http(`${chain}&clusters=${oneCluster}`);
  line(`ancestors: pods of Deployment app-7 in one cluster (${oneCluster}), through its ReplicaSet`, one, within(one, 20));
  const all = await http(chain);
  line('ancestors: pods of Deployment app-7 in every cluster', all, within(all, 20));
  const baseOne = await direct(() => ancestorsOverJson(store, [oneCluster], 501));
  line('baseline, plain unindexed SQL over JSON: the same pods in one cluster, level by level', baseOne, `; Panoptes ${(p50(baseOne) / p50(one)).toFixed(1)}x faster`);
  const baseAll = await direct(() => ancestorsOverJson(store, undefined, 501));
  line('baseline, plain unindexed SQL over JSON: the same pods in every cluster, level by level', baseAll, `; Panoptes ${(p50(baseAll) / p50(all)).toFixed(1)}x faster`);

  for (const [phase, share] of [['Pending', '2%'], ['Running', '98%']] as const) {
    const indexed = await http(`&fieldSelector=${encodeURIComponent(`.status.phase=${phase}`)}`);
    line(`any field, indexed path: .status.phase=${phase} (${share} of pods)`, indexed, within(indexed, 30));
    const q: ListQuery = { group: '', resource: 'pods', limit: 501, jsonFields: [{ path: ['status', 'phase'], operator: 'in', values: [phase], unindexed: true }], budget: { rows: Infinity, bytes: Infinity, ms: 600_000 } };
    const baseline = await direct(() => store.list(q));
    line(`baseline, plain unindexed SQL over JSON: .status.phase=${phase}`, baseline, `; Panoptes ${(p50(baseline) / p50(indexed)).toFixed(1)}x faster`);
  }
  const image = encodeURIComponent('.spec.containers[*].image=registry.example.com/app-7:1.0');
  const narrowed = await http(`&namespaces=bench-7&fieldSelector=${image}`);
  line('any field, unindexed path within the budget: .spec.containers[*].image in one namespace (5% of pods)', narrowed);
  const whole = await httpGet(`${base}${P}/api/v1/pods?limit=500&fieldSelector=${image}`);
  if (whole.status === 400) line('any field, unindexed path over every pod: refused (400) by the row budget', await http(`&fieldSelector=${image}`, 400));
  else console.log(`${backend}: any field, unindexed path over every pod: HTTP ${whole.status} in ${whole.ms.toFixed(1)} ms (within the row budget at this scale)`);
}
