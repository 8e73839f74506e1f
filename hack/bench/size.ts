// Storage size benchmark: what a stored object costs, table by table and index by index.
//
//   npm run bench:size [-- --configmaps 50000 --pods 50000 --clusters 2 --modified 0.1 --storage sqlite,postgres]
//
// Loads ConfigMaps (~1 KB of JSON) and pods (~1.5 KB) through the real write path
// (Store.applyBatch, batches of 500) into each backend, then measures the bytes of every
// table, TOAST table and index (SQLite: the dbstat virtual table after a WAL checkpoint;
// PostgreSQL: pg_relation_size of each relation and pg_total_relation_size of each TOAST
// table) four times: right after the creates (the change log holds one row per object);
// after one update of a share of the objects (each MODIFIED row holds the object before and
// after); after compaction to synchro's default retention (100,000 changes, the age left
// out); and with the change log emptied (the floor: the objects alone). The last two give the
// deleted rows' space back first (VACUUM; in operation the space is reused, not returned).
// PostgreSQL comes from PANOPTES_TEST_POSTGRES_URL, or a throwaway server.
import { parseArgs } from 'node:util';
import { storedSizes, type StoredSizes } from '../../storage/sizes.ts';
import { Store } from '../../storage/store.ts';
import { compactNow, emptyStorageUrl, stopTestPostgres, type Backend } from '../../storage/testing.ts';
import type { KubeObject, UpstreamEvent } from '../../storage/types.ts';
import { defaultCompaction } from '../../synchro/commit/compactor.ts';
import { realisticPod } from '../fixtures.ts';
import type { SizeBackendFigures, SizePhaseFigures } from '../report/figures.ts';
import { recordRun } from '../report/record.ts';

const { values } = parseArgs({
  options: {
    configmaps: { type: 'string', default: '50000' },
    pods: { type: 'string', default: '50000' },
    clusters: { type: 'string', default: '2' },
    modified: { type: 'string', default: '0.1' },
    storage: { type: 'string', default: 'sqlite,postgres' },
  },
});
const nConfigMaps = Number(values.configmaps);
const nPods = Number(values.pods);
const nClusters = Number(values.clusters);
const modifiedShare = Number(values.modified);
const backendsToRun = values.storage.split(',') as Backend[];
const batchSize = 500;

/** A ConfigMap as `kubectl apply` leaves it: labels, the last-applied annotation, managedFields and a small config file (~1 KB of JSON). */
function configMap(cluster: number, i: number, rv: number, generation: number): KubeObject {
  const app = `app-${i % 50}`;
  const data = {
    'app.properties': `server.port=${8000 + (i % 100)}\nlog.level=${i % 3 ? 'info' : 'debug'}\ncache.ttl=${60 * (i % 10)}s\nfeature.${app}=on\n`,
    'revision': String(generation),
  };
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: `${app}-config-${i.toString(36).padStart(5, '0')}`,
      namespace: `team-${i % 20}`,
      uid: `6a1f${String(cluster).padStart(4, '0')}-0000-4000-8000-${String(i).padStart(12, '0')}`,
      resourceVersion: String(rv),
      creationTimestamp: '2026-01-01T00:00:00Z',
      labels: { app, 'app.kubernetes.io/part-of': 'shop', 'app.kubernetes.io/managed-by': 'kubectl' },
      annotations: { 'kubectl.kubernetes.io/last-applied-configuration': JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${app}-config`, namespace: `team-${i % 20}` }, data }) + '\n' },
      managedFields: [
        { manager: 'kubectl-client-side-apply', operation: 'Update', apiVersion: 'v1', time: '2026-01-01T00:00:00Z', fieldsType: 'FieldsV1', fieldsV1: { 'f:data': { '.': {}, 'f:app.properties': {}, 'f:revision': {} }, 'f:metadata': { 'f:annotations': { '.': {}, 'f:kubectl.kubernetes.io/last-applied-configuration': {} }, 'f:labels': { '.': {}, 'f:app': {} } } } },
      ],
    },
    data,
  };
}

function pod(cluster: number, i: number, rv: number, restarts: number): KubeObject {
  return realisticPod({
    namespace: `team-${i % 20}`,
    name: `app-${i % 50}-7d4b9c8f5-${i.toString(36).padStart(5, '0')}`,
    uid: `9c2e${String(cluster).padStart(4, '0')}-0000-4000-8000-${String(i).padStart(12, '0')}`,
    upstreamRv: String(rv),
    labels: { app: `app-${i % 50}`, 'pod-template-hash': '7d4b9c8f5', tier: i % 2 ? 'backend' : 'frontend' },
    ownerName: `app-${i % 50}-7d4b9c8f5`,
    ownerUid: `rs-${cluster}-${i % 50}`,
    nodeName: `node-${i % 30}`,
    podIP: `10.${cluster}.${(i >> 8) & 255}.${i & 255}`,
    restartCount: restarts,
    annotations: {
      'kubectl.kubernetes.io/restartedAt': '2026-01-01T00:00:00Z',
      'prometheus.io/scrape': 'true',
      'prometheus.io/port': '8080',
      'checksum/config': `sha256:${(i * 2654435761 >>> 0).toString(16).padStart(8, '0').repeat(8)}`,
    },
  });
}

const event = (type: 'ADDED' | 'MODIFIED', resource: 'configmaps' | 'pods', object: KubeObject): UpstreamEvent => ({ type, group: '', version: 'v1', resource, object });

/** The events of one cluster: every object created (generation 0), or the first `share` of them updated. */
function eventsOf(cluster: number, type: 'ADDED' | 'MODIFIED', share = 1): UpstreamEvent[] {
  const cms = Math.floor((Math.ceil(nConfigMaps / nClusters) * share));
  const pods = Math.floor((Math.ceil(nPods / nClusters) * share));
  const out: UpstreamEvent[] = [];
  const gen = type === 'ADDED' ? 0 : 1;
  const rv = (i: number) => 1_000 + gen * 1_000_000 + i;
  for (let i = 0; i < cms; i++) out.push(event(type, 'configmaps', configMap(cluster, i, rv(i), gen)));
  for (let i = 0; i < pods; i++) out.push(event(type, 'pods', pod(cluster, i, rv(i), gen)));
  return out;
}

async function write(store: Store, type: 'ADDED' | 'MODIFIED', share?: number): Promise<number> {
  let n = 0;
  for (let c = 0; c < nClusters; c++) {
    const events = eventsOf(c, type, share);
    for (let i = 0; i < events.length; i += batchSize) await store.applyBatch(`cluster-${c}`, events.slice(i, i + batchSize));
    n += events.length;
  }
  return n;
}

const phaseOf = (phase: SizePhaseFigures['phase'], s: StoredSizes, reclaimed: boolean): SizePhaseFigures => ({
  phase,
  objects: s.objects,
  labelRows: s.labelRows,
  changes: s.changes,
  reclaimed,
  databaseBytes: s.databaseBytes,
  relations: s.relations.filter((r) => r.bytes > 0 || r.kind !== 'toast').sort((a, b) => a.table.localeCompare(b.table) || a.name.localeCompare(b.name)),
  columns: s.columns,
});

async function bench(backend: Backend): Promise<SizeBackendFigures> {
  const { url, cleanup } = await emptyStorageUrl(backend);
  const store = await Store.open(url);
  try {
    const t0 = performance.now();
    const created = await write(store, 'ADDED');
    const loadSeconds = (performance.now() - t0) / 1000;
    process.stderr.write(`${backend}: ${created} objects written in ${loadSeconds.toFixed(1)} s\n`);
    const phases: SizePhaseFigures[] = [phaseOf('created', await storedSizes(store.conn), false)];
    const modified = await write(store, 'MODIFIED', modifiedShare);
    process.stderr.write(`${backend}: ${modified} objects updated\n`);
    phases.push(phaseOf('modified', await storedSizes(store.conn), false));
    await compactNow(store, { minAgeMs: 0, minCount: defaultCompaction.minCount });
    phases.push(phaseOf('retained', await storedSizes(store.conn, { reclaim: true }), true));
    await compactNow(store, { minAgeMs: 0, minCount: 0 });
    phases.push(phaseOf('compacted', await storedSizes(store.conn, { reclaim: true }), true));
    return { backend, loadSeconds, phases };
  } finally {
    await store.close();
    await cleanup();
  }
}

const memberJson = (kind: 'configmaps' | 'pods') => {
  const sample = eventsOf(0, 'ADDED', Math.min(1, 1000 / Math.max(1, kind === 'pods' ? nPods : nConfigMaps))).filter((e) => e.resource === kind);
  return sample.reduce((a, e) => a + Buffer.byteLength(JSON.stringify(e.object)), 0) / Math.max(1, sample.length);
};

const results: SizeBackendFigures[] = [];
try {
  for (const backend of backendsToRun) results.push(await bench(backend));
} finally {
  await stopTestPostgres();
}

// ---- the tables: bytes per object (per change row for the change log's own line)

const f = (v: number, d = 0) => v.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
const label = (b: string) => (b === 'postgres' ? 'PostgreSQL' : 'SQLite');
const phaseLabel: Record<SizePhaseFigures['phase'], string> = { created: 'after the creates', modified: `after ${f(modifiedShare * 100)}% updated`, retained: 'default retention', compacted: 'log emptied' };
/** The tables that grow with the objects (the others hold a few rows each: clusters, leases, OpenAPI documents). */
const perObject = ['objects', 'object_labels', 'changes', 'object_counts'];
const total = (p: SizePhaseFigures) => p.relations.reduce((a, r) => a + r.bytes, 0);
const memberBytes = { configMap: memberJson('configmaps'), pod: memberJson('pods') };

console.log(`\n${f(nConfigMaps)} ConfigMaps (~${f(memberBytes.configMap)} B of JSON) and ${f(nPods)} pods (~${f(memberBytes.pod)} B) in ${nClusters} clusters, written through applyBatch; bytes per object\n`);
for (const r of results) {
  const changed = (p: SizePhaseFigures) => p.changes.added + p.changes.modified + p.changes.deleted;
  console.log(`${label(r.backend)} (${f(r.loadSeconds, 1)} s to load)\n`);
  console.log(`| relation | ${r.phases.map((p) => phaseLabel[p.phase]).join(' | ')} |`);
  console.log(`|---|${r.phases.map(() => '---:').join('|')}|`);
  const names = [...new Set(r.phases.flatMap((p) => p.relations.filter((x) => perObject.includes(x.table) && x.bytes > 0).map((x) => `${x.table}\u0000${x.name}`)))].sort();
  for (const key of names) {
    const [table, name] = key.split('\u0000');
    const cell = (p: SizePhaseFigures) => f((p.relations.find((x) => x.table === table && x.name === name)?.bytes ?? 0) / p.objects);
    console.log(`| ${name === table ? table : `${table}: ${name}`} | ${r.phases.map(cell).join(' | ')} |`);
  }
  const fixed = (p: SizePhaseFigures) => p.relations.filter((x) => !perObject.includes(x.table)).reduce((a, x) => a + x.bytes, 0);
  console.log(`| other tables (KiB, not per object) | ${r.phases.map((p) => f(fixed(p) / 1024)).join(' | ')} |`);
  console.log(`| **all relations** | ${r.phases.map((p) => `**${f(total(p) / p.objects)}**`).join(' | ')} |`);
  console.log(`| database (${r.backend === 'postgres' ? 'pg_database_size' : 'file'}) | ${r.phases.map((p) => f(p.databaseBytes / p.objects)).join(' | ')} |`);
  console.log(`| change rows per object | ${r.phases.map((p) => f(changed(p) / p.objects, 2)).join(' | ')} |`);
  console.log(`| label rows per object | ${r.phases.map((p) => f(p.labelRows / p.objects, 2)).join(' | ')} |`);
  const c = r.phases[1].columns;
  console.log(`\ncolumns (average bytes per row): objects.object ${f(c.object)}, as ${r.backend === 'postgres' ? 'jsonb' : 'SQLite JSONB'} ${f(c.objectBinary)}, objects.fields ${f(c.fields)}, objects.json_doc ${f(c.jsonDoc)}; changes.object ${f(c.changeObject)}, changes.prev_object ${f(c.changePrevObject)} (MODIFIED rows)\n`);
}

await recordRun('size', 'size', { ...values }, {
  configMaps: nConfigMaps,
  pods: nPods,
  clusters: nClusters,
  modified: results[0]?.phases[1] ? results[0].phases[1].changes.modified : 0,
  memberJsonBytes: memberBytes,
  retentionCount: defaultCompaction.minCount,
  backends: results,
});
