// Storage benchmark: ingest, change-log poll, filtered first page and full paging, on
// SQLite (both drivers) and PostgreSQL, measured in one run.
//
//   npm run bench:storage [-- --objects 100000 --clusters 10]
import { parseArgs } from 'node:util';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseLabelSelector } from '../../kube/labels.ts';
import { Store } from '../../storage/store.ts';
import type { UpstreamEvent } from '../../storage/types.ts';
import { percentile, realisticPod } from '../fixtures.ts';
import { createDatabase, startPostgres } from '../../storage/testing/postgres.ts';
import { recordRun } from '../report/record.ts';

const { values } = parseArgs({
  options: {
    objects: { type: 'string', default: '100000' },
    clusters: { type: 'string', default: '10' },
    batch: { type: 'string', default: '500' },
    backends: { type: 'string', default: 'sqlite,sqlite3,postgres' },
    runs: { type: 'string', default: '50' },
  },
});
const total = Number(values.objects);
const clusters = Number(values.clusters);
const batchSize = Number(values.batch);
const runs = Number(values.runs);

/** A pod of about 1 KB, labelled so that `app=app-7` selects 1% of them. */
function pod(cluster: number, i: number, rv: number): UpstreamEvent {
  return {
    type: 'ADDED',
    group: '',
    version: 'v1',
    resource: 'pods',
    object: realisticPod({
      namespace: `ns-${i % 50}`,
      name: `pod-${cluster}-${i}`,
      uid: `00000000-0000-4000-8000-${String(cluster).padStart(4, '0')}${String(i).padStart(8, '0')}`,
      upstreamRv: String(rv),
      labels: { app: `app-${i % 100}`, tier: i % 2 ? 'backend' : 'frontend', 'pod-template-hash': '7d4b9c8f5' },
      ownerName: `rs-${i % 100}`,
      ownerUid: `rs-uid-${cluster}-${i % 100}`,
      nodeName: `node-${i % 20}`,
      podIP: `10.${cluster}.${(i >> 8) & 255}.${i & 255}`,
    }),
  };
}

const pct = percentile;

interface Figures {
  backend: string;
  ingest: number;
  poll: number;
  firstP50: number;
  firstP99: number;
  pageRate: number;
  /** Every run of the filtered first page (ms), for the charts. */
  firstPageMs: number[];
}

async function bench(backend: string, url: string): Promise<Figures> {
  const store = await Store.open(url, backend === 'sqlite3' ? { sqliteDriver: 'sqlite3' } : {});
  const perCluster = Math.ceil(total / clusters);
  const t0 = performance.now();
  let written = 0;
  for (let c = 0; c < clusters; c++) {
    for (let start = 0; start < perCluster; start += batchSize) {
      const events: UpstreamEvent[] = [];
      for (let i = start; i < Math.min(perCluster, start + batchSize); i++) events.push(pod(c, i, 1000 + i));
      await store.applyBatch(`cluster-${c}`, events);
      written += events.length;
    }
  }
  const ingest = written / ((performance.now() - t0) / 1000);
  await store.analyze();

  const p0 = performance.now();
  let rv = 1;
  let rows = 0;
  for (;;) {
    const changes = await store.changesAfter(rv, 1000);
    if (changes.length === 0) break;
    rows += changes.length;
    rv = changes[changes.length - 1].rv;
  }
  const poll = rows / ((performance.now() - p0) / 1000);

  const selector = parseLabelSelector('app=app-7');
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const s = performance.now();
    const r = await store.list({ group: '', resource: 'pods', labelSelector: selector, limit: 500 });
    times.push(performance.now() - s);
    if (r.items.length !== Math.min(500, Math.floor(total / 100))) throw new Error(`first page had ${r.items.length} items`);
  }

  const g0 = performance.now();
  let token: string | undefined;
  let seen = 0;
  for (let page = 0; page < 10_000; page++) {
    const r = await store.list({ group: '', resource: 'pods', limit: 500, continue: token });
    seen += r.items.length;
    token = r.continue;
    if (!token) break;
  }
  if (seen !== written) throw new Error(`paged ${seen} of ${written}`);
  const pageRate = seen / ((performance.now() - g0) / 1000);
  await store.close();
  return { backend, ingest, poll, firstP50: pct(times, 50), firstP99: pct(times, 99), pageRate, firstPageMs: times };
}

const results: Figures[] = [];
const dir = mkdtempSync(join(tmpdir(), 'panoptes-bench-'));
const pg = values.backends.includes('postgres') ? await startPostgres() : undefined;
try {
  for (const backend of values.backends.split(',')) {
    const url = backend === 'postgres' ? await createDatabase(pg!.url, 'bench') : `sqlite:${join(dir, `${backend}.db`)}`;
    process.stderr.write(`${backend}: ${total} objects, ${clusters} clusters, batches of ${batchSize}...\n`);
    results.push(await bench(backend, url));
  }
} finally {
  await pg?.stop();
  rmSync(dir, { recursive: true, force: true });
}

const f = (n: number, d = 0) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
console.log(`\n${total.toLocaleString('en-US')} pods of ~1 KB across ${clusters} clusters, batches of ${batchSize}; label selector matching 1%\n`);
console.log('| backend | ingest events/s | poll rows/s | first filtered page p50 | p99 | paging all objects/s |');
console.log('|---|---:|---:|---:|---:|---:|');
const label = (backend: string) => (backend === 'sqlite' ? 'SQLite (better-sqlite3)' : backend === 'sqlite3' ? 'SQLite (sqlite3)' : 'PostgreSQL 15');
for (const r of results) {
  const name = label(r.backend);
  console.log(`| ${name} | ${f(r.ingest)} | ${f(r.poll)} | ${f(r.firstP50, 1)} ms | ${f(r.firstP99, 1)} ms | ${f(r.pageRate)} |`);
}

await recordRun('storage', 'storage', { ...values }, {
  objects: total,
  clusters,
  backends: results.map((r) => ({
    backend: r.backend as 'sqlite' | 'sqlite3' | 'postgres',
    label: label(r.backend),
    ingestEventsPerSec: r.ingest,
    pollRowsPerSec: r.poll,
    firstPageMs: r.firstPageMs,
    pagingObjectsPerSec: r.pageRate,
  })),
  targets: { ingestEventsPerSec: { sqlite: 15_000, postgres: 10_000 }, pollRowsPerSec: 100_000, firstPageP50MsSqlite: 20, pagingObjectsPerSec: 50_000 },
});
