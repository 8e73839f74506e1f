// bench:import — how long 200 clusters imported from one ClusterSource take to come Ready.
// The members are light simulated clusters in their own process (hack/bench/synchro-sim.ts,
// a few configmaps each); the host is a simulated cluster holding one kubeconfig Secret per
// member (as a kubeconfigSecrets source reads them; Cluster API's, Argo CD's and Karmada's
// take the same path once their candidates are made). One synchro process, one apiserver, the
// ClusterSource created through the API; the clock runs from its creation until every
// imported Cluster is Ready with its initial sync complete.
// Usage: npm run bench:import -- [--clusters 200] [--storage sqlite|postgres]
// Figures: docs/bench/raw/import.json (SQLite) or raw/import-postgres.json (docs/bench/*.json are bench:report runs).
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { createApiserver } from '../../apiserver/server.ts';
import { setLogLevel } from '../../lib/log.ts';
import { MemberNetworks } from '../../member/networks.ts';
import { Store } from '../../storage/store.ts';
import { emptyStorageUrl, stopTestPostgres, type Backend } from '../../storage/testing.ts';
import { startSynchro } from '../../synchro/synchro.ts';
import { tempDir, writeClusters } from '../../synchro/testutil.ts';
import { SimProcess } from './sim-process.ts';
import { startSimCluster } from '../sim/cluster.ts';
import { http } from '../sim/testutil.ts';

const { values: args } = parseArgs({ options: { clusters: { type: 'string', default: '200' }, storage: { type: 'string', default: 'sqlite' }, timeout: { type: 'string', default: '300' } } });
setLogLevel((process.env.PANOPTES_LOG_LEVEL as 'error') ?? 'error');
const n = Number(args.clusters);
const backend = args.storage as Backend;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const sims = await SimProcess.start(n);
for (let i = 0; i < n; i++) await sims.call({ cmd: 'bulk', cluster: i, count: 20, namespaces: 2 });
const host = await startSimCluster({ name: 'host', controllers: false });
const secrets = host.registry.lookup('', 'v1', 'secrets')!;
host.crud.create(host.registry.lookup('', 'v1', 'namespaces')!, 'v1', undefined, { metadata: { name: 'fleet' } });
sims.urls.forEach((url, i) => {
  const kubeconfig = stringify({ apiVersion: 'v1', kind: 'Config', clusters: [{ name: 'm', cluster: { server: url } }], users: [{ name: 'u', user: { token: `token-${i}` } }], contexts: [{ name: 'm', context: { cluster: 'm', user: 'u' } }], 'current-context': 'm' });
  host.crud.create(secrets, 'v1', 'fleet', { metadata: { name: `member-${i}`, labels: { fleet: 'bench' } }, type: 'Opaque', data: { kubeconfig: Buffer.from(kubeconfig).toString('base64') } });
});

const { url, cleanup } = await emptyStorageUrl(backend);
const store = await Store.open(url);
const { dir, cleanup: rmDir } = tempDir();
writeClusters(`${dir}/clusters.yaml`, []);
const memberNetworks = MemberNetworks.parse('127.0.0.0/8');
const api = await createApiserver({ store, memberNetworks });
const base = await api.listen('127.0.0.1', 0);
const synchro = await startSynchro({ store, memberNetworks, clustersFile: `${dir}/clusters.yaml`, hostCluster: { server: host.url }, shards: { identity: 'bench' }, compaction: false });
let figures: Record<string, unknown> | undefined;
try {
  const started = performance.now();
  const r = await http('POST', `${base}/apis/panoptes.io/v1alpha1/clustersources`, {
    metadata: { name: 'fleet' },
    spec: { type: 'kubeconfigSecrets', namespaces: ['fleet'], selector: { matchLabels: { fleet: 'bench' } }, defaults: { resources: ['configmaps'] } },
  });
  if (r.status !== 201) throw new Error(`ClusterSource: ${r.status} ${JSON.stringify(r.json)}`);
  let created = 0;
  let createdMs = 0;
  let ready = 0;
  const deadline = started + Number(args.timeout) * 1000;
  while (performance.now() < deadline) {
    const regs = (await store.listClusterRegistrations()).filter((x) => (x.object.spec as { source?: string }).source === 'clustersource/fleet');
    if (regs.length === n && !createdMs) createdMs = performance.now() - started;
    created = regs.length;
    ready = regs.filter((x) => {
      const s = x.object.status as { ready?: boolean; initialSync?: { complete?: boolean } } | undefined;
      return s?.ready === true && s.initialSync?.complete === true;
    }).length;
    if (ready === n) break;
    await sleep(200);
  }
  const readyMs = performance.now() - started;
  const objects = (await store.list({ group: '', resource: 'configmaps' })).items.length;
  console.log(`${n} imported clusters (${backend}): ${created} Cluster objects written in ${(createdMs / 1000).toFixed(1)} s; ${ready} Ready with their initial sync in ${(readyMs / 1000).toFixed(1)} s; ${objects} configmaps stored`);
  if (ready !== n) process.exitCode = 1;
  figures = { clusters: n, backend, createdSeconds: Number((createdMs / 1000).toFixed(2)), readySeconds: Number((readyMs / 1000).toFixed(2)), ready, objects, node: process.version, date: new Date().toISOString() };
} finally {
  await synchro.stop();
  await api.close();
  await store.close();
  await cleanup();
  rmDir();
  await host.close();
  await sims.exit();
  await stopTestPostgres();
}
if (figures && process.exitCode !== 1) writeFileSync(new URL(`../../docs/bench/raw/${backend === 'sqlite' ? 'import' : `import-${backend}`}.json`, import.meta.url), JSON.stringify(figures, null, 2) + '\n');
