// Collections in `npm run bench:list` (or alone: node --import tsx hack/bench/list/search-collections.ts
// [--objects 100000] [--samples 60] [--storage sqlite|postgres|both]): on each backend, a store
// of --objects objects of eight kinds in ten clusters (pods and ReplicaSets mostly owned, as
// controllers leave them), then the p50 of the first page (limit 500) through HTTP of
//  - a declared collection of 5 kinds (deployments, statefulsets, daemonsets, jobs, cronjobs),
//  - `workloads` (those 5, and the bare ReplicaSets and Pods),
//  - the same list without search terms: one kind (pods), the plain list it is measured against,
// and, for both collections, the storage read alone beside the baseline: plain SQL over the
// JSON documents (storage/json-scan.ts, what a store without Panoptes' list order does).
// Targets (the issue): a collection of 5 kinds ≤ 40 ms, and within 3× of the plain list.
import { request } from 'node:http';
import { parseArgs } from 'node:util';
import { createApiserver } from '../../../apiserver/server.ts';
import { builtinCollections, workloads, type CollectionDefinition } from '../../../apiserver/collections/definitions.ts';
import { setLogLevel } from '../../../lib/log.ts';
import { jsonScanFirstPage } from '../../../storage/json-scan.ts';
import { Store } from '../../../storage/store.ts';
import { emptyStorageUrl, seedCluster, stopTestPostgres, type Backend } from '../../../storage/testing.ts';
import type { CollectionKind, UpstreamEvent } from '../../../storage/types.ts';
import { percentile } from '../../fixtures.ts';

export interface CollectionBenchOptions {
  backends: Backend[];
  objects: number;
  samples: number;
}

const five: CollectionDefinition = { name: 'five', kinds: workloads.kinds.filter((k) => !k.bare) };

/** Per 10,000 objects of one cluster: how many of each kind, and how many of those have an owner. */
const mix: Array<{ group: string; version: string; resource: string; kind: string; n: number; owned: number }> = [
  { group: '', version: 'v1', resource: 'pods', kind: 'Pod', n: 6000, owned: 5900 },
  { group: 'apps', version: 'v1', resource: 'replicasets', kind: 'ReplicaSet', n: 1200, owned: 1150 },
  { group: 'apps', version: 'v1', resource: 'deployments', kind: 'Deployment', n: 1000, owned: 0 },
  { group: 'apps', version: 'v1', resource: 'statefulsets', kind: 'StatefulSet', n: 300, owned: 0 },
  { group: 'apps', version: 'v1', resource: 'daemonsets', kind: 'DaemonSet', n: 100, owned: 0 },
  { group: 'batch', version: 'v1', resource: 'jobs', kind: 'Job', n: 400, owned: 300 },
  { group: 'batch', version: 'v1', resource: 'cronjobs', kind: 'CronJob', n: 100, owned: 0 },
  { group: '', version: 'v1', resource: 'configmaps', kind: 'ConfigMap', n: 900, owned: 0 },
];

function object(m: (typeof mix)[number], cluster: number, i: number): UpstreamEvent {
  const app = `app-${i % 40}`;
  return {
    type: 'ADDED',
    group: m.group,
    version: m.version,
    resource: m.resource,
    object: {
      apiVersion: m.group ? `${m.group}/${m.version}` : m.version,
      kind: m.kind,
      metadata: {
        name: `${app}-${m.resource.slice(0, 3)}-${i.toString(36).padStart(5, '0')}`,
        namespace: `bench-${i % 20}`,
        uid: `${cluster}-${m.resource}-${i}`,
        resourceVersion: String(i + 1),
        creationTimestamp: '2026-01-01T00:00:00Z',
        labels: { app, tier: i % 2 ? 'web' : 'api' },
        ...(i < m.owned ? { ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: `${app}-abc123`, uid: `owner-${cluster}-${i % 40}`, controller: true }] } : {}),
      },
      spec: { replicas: 2, template: { spec: { containers: [{ name: 'main', image: `registry.example.com/${app}:1.${i % 9}`, resources: { requests: { cpu: '100m', memory: '128Mi' } } }] } } },
      status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: '2026-01-01T00:00:00Z' }] },
    },
  };
}

/** Stores `objects` objects of the mix in ten clusters, then refreshes the planner statistics. */
export async function fill(store: Store, objects: number): Promise<void> {
  const clusters = 10;
  const scale = objects / (clusters * 10_000);
  for (let c = 0; c < clusters; c++) {
    const events: UpstreamEvent[] = [];
    for (const m of mix) {
      const n = Math.round(m.n * scale);
      const owned = Math.round(m.owned * scale);
      for (let i = 0; i < n; i++) events.push(object({ ...m, owned }, c, i));
    }
    for (let i = 0; i < events.length; i += 2000) await store.applyBatch(`c${c}`, events.slice(i, i + 2000));
  }
  await store.conn.dialect.analyze(store.conn.knex);
}

function getMs(url: string): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    request(url, { headers: { Accept: 'application/json' } }, (res) => {
      res.on('data', () => undefined);
      res.on('end', () => (res.statusCode === 200 ? resolve(performance.now() - t0) : reject(new Error(`${url}: ${res.statusCode}`))));
    })
      .on('error', reject)
      .end();
  });
}

/** The p50 (ms) of each run, the runs taking turns (so that each sees the same moments of the machine and the database) after a warm-up. */
async function p50s<K extends string>(samples: number, runs: Record<K, () => Promise<unknown>>): Promise<Record<K, number>> {
  const keys = Object.keys(runs) as K[];
  const ms = Object.fromEntries(keys.map((k) => [k, [] as number[]])) as Record<K, number[]>;
  for (let i = -5; i < samples; i++) {
    for (const k of keys) {
      const t0 = performance.now();
      await runs[k]();
      if (i >= 0) ms[k].push(performance.now() - t0);
    }
  }
  return Object.fromEntries(keys.map((k) => [k, percentile(ms[k], 50)])) as Record<K, number>;
}

export interface CollectionBenchFigures {
  backend: Backend;
  objects: number;
  /** HTTP first page (limit 500), p50 ms. */
  fiveKinds: number;
  workloads: number;
  plainList: number;
  /** Storage alone, p50 ms: Panoptes' list beside the plain SQL over JSON. */
  storage: Record<'fiveKinds' | 'workloads', { panoptes: number; jsonScan: number }>;
}

/** Measures every backend; prints the figures as it goes and returns them. */
export async function benchCollections(opts: CollectionBenchOptions): Promise<CollectionBenchFigures[]> {
  const out: CollectionBenchFigures[] = [];
  for (const backend of opts.backends) {
    const { url, cleanup } = await emptyStorageUrl(backend);
    const store = await Store.open(url);
    try {
      const t0 = performance.now();
      await fill(store, opts.objects);
      console.log(`collections, ${backend}: ${opts.objects} objects of 8 kinds in 10 clusters stored in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
      const apiResources = mix.map((m) => ({ group: m.group, version: m.version, resource: m.resource, kind: m.kind, namespaced: true, singularName: m.kind.toLowerCase() }));
      for (let c = 0; c < 10; c++) await seedCluster(store, `c${c}`, { phase: 'Ready', ready: true, apiResources });
      const api = await createApiserver({ store, collections: [...builtinCollections, five] });
      const base = await api.listen('127.0.0.1', 0);
      try {
        const C = `${base}/apis/panoptes.io/v1alpha1/collectionresources`;
        const http = await p50s(opts.samples, {
          plainList: () => getMs(`${base}/apis/panoptes.io/v1alpha1/resources/api/v1/pods?limit=500`),
          fiveKinds: () => getMs(`${C}/five?limit=500`),
          workloads: () => getMs(`${C}/workloads?limit=500`),
        });
        const storageP50 = async (kinds: CollectionKind[]) =>
          p50s(Math.max(5, Math.floor(opts.samples / 4)), {
            panoptes: async () => {
              const r = await store.list({ group: '', resource: '', kinds, limit: 500 });
              if (r.items.length !== 500) throw new Error(`a page of ${r.items.length}`);
            },
            jsonScan: async () => {
              const r = await jsonScanFirstPage(store.conn.knex, store.conn.dialect, kinds, 500);
              if (r.length !== 500) throw new Error(`a baseline page of ${r.length}`);
            },
          });
        const figures: CollectionBenchFigures = { backend, objects: opts.objects, ...http, storage: { fiveKinds: await storageP50(five.kinds), workloads: await storageP50(workloads.kinds) } };
        out.push(figures);
        const verdict = (ok: boolean) => (ok ? 'MET' : 'MISSED');
        const f = (n: number) => `${n.toFixed(1)} ms`;
        console.log(
          `collections, ${backend}, first page (limit 500) p50 over HTTP: 5 kinds ${f(http.fiveKinds)} (target ≤ 40 ms: ${verdict(http.fiveKinds <= 40)}; ${(http.fiveKinds / http.plainList).toFixed(2)}x the plain list of one kind, target ≤ 3x: ${verdict(http.fiveKinds <= 3 * http.plainList)}), workloads (7 kinds, 2 bare) ${f(http.workloads)} (${(http.workloads / http.plainList).toFixed(2)}x), plain list of pods ${f(http.plainList)}`,
        );
        for (const [name, s] of Object.entries(figures.storage)) {
          console.log(`collections, ${backend}, storage alone, ${name}: Panoptes ${f(s.panoptes)}, baseline plain SQL over JSON ${f(s.jsonScan)} (${(s.jsonScan / s.panoptes).toFixed(1)}x slower)`);
        }
      } finally {
        await api.close();
      }
    } finally {
      await store.close();
      await cleanup();
    }
  }
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { objects: { type: 'string' }, samples: { type: 'string' }, storage: { type: 'string' } } });
  setLogLevel('warn');
  const backends: Backend[] = values.storage === 'sqlite' || values.storage === 'postgres' ? [values.storage] : ['sqlite', 'postgres'];
  benchCollections({ backends, objects: Number(values.objects ?? 100_000), samples: Number(values.samples ?? 60) })
    .then(() => stopTestPostgres())
    .catch((err) => {
      console.error(err);
      process.exit(1);
    });
}
