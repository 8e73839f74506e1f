// OpenAPI fetching from simulated members: v3 documents by ?hash= (unchanged ones not fetched,
// identical ones stored once and not fetched again for another cluster), v2-only members,
// CRD changes, the cluster status, and removal of a cluster.
import t from 'tap';
import { startSimCluster } from '../../hack/sim/cluster.ts';
import { widgetCRD } from '../../hack/sim/workload.ts';
import { logger } from '../../lib/log.ts';
import { clusterLease } from '../../storage/leases.ts';
import type { Store } from '../../storage/store.ts';
import { openTestStore, takeLease } from '../../storage/testing.ts';
import { connectCluster } from '../../member/client.ts';
import { SynchroMetrics } from '../metrics/metrics.ts';
import { OpenAPIFetcher } from './openapi.ts';
import { startSynchro } from '../synchro.ts';
import { fastTimings, tempDir, waitUntil, writeClusters } from '../testutil.ts';

const gvs = ['api/v1', 'apis/apps/v1', 'apis/demo.panoptes.io/v1'];

/** The cluster's lease as a ClusterSync hands it to its fetcher; `lost` counts refused writes. */
async function leaseOf(store: Store, cluster: string) {
  const lease = { fence: await takeLease(store, clusterLease(cluster)), lost: 0, onFenced: () => lease.lost++ };
  return lease;
}

async function counts(metrics: SynchroMetrics, cluster: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const v of (await metrics.openapiFetches.get()).values) if (v.labels.cluster === cluster) out[`${v.labels.format}/${v.labels.result}`] = v.value;
  return out;
}

function gizmoCRD() {
  const crd = structuredClone(widgetCRD);
  crd.metadata = { name: 'gizmos.demo.panoptes.io' };
  Object.assign(crd.spec as object, { names: { plural: 'gizmos', singular: 'gizmo', kind: 'Gizmo' } });
  return crd;
}

t.test('v3: fetched by hash, shared between clusters, refetched when a CRD changes its group version', async (t) => {
  const a = await startSimCluster({ name: 'a', workload: true });
  const b = await startSimCluster({ name: 'b', workload: true });
  const { store, close } = await openTestStore('sqlite');
  const metrics = new SynchroMetrics();
  const log = logger('test');
  const clients = [await connectCluster({ server: a.url }), await connectCluster({ server: b.url })];
  t.teardown(async () => {
    for (const c of clients) c.close();
    await Promise.all([a.close(), b.close()]);
    await close();
  });
  const fa = new OpenAPIFetcher({ cluster: 'a', client: clients[0], store, lease: await leaseOf(store, 'a'), metrics, log });
  const fb = new OpenAPIFetcher({ cluster: 'b', client: clients[1], store, lease: await leaseOf(store, 'b'), metrics, log });

  t.match(await fa.sync([...gvs, 'apis/nope.example.com/v1']), { format: 'v3', documents: 3, missing: ['apis/nope.example.com/v1'] });
  t.same(await counts(metrics, 'a'), { 'v3/fetched': 3 });
  const rows = await store.clusterOpenAPI('a');
  t.same(rows.map((r) => r.groupVersion), gvs);
  t.ok(rows.every((r) => /^[0-9A-F]{128}$/.test(r.upstreamHash) && r.present), 'stored with the member hash');
  const core = JSON.parse((await store.openAPIDocuments([rows[0].hash])).get(rows[0].hash)!.body);
  t.ok(core.components.schemas['io.k8s.api.core.v1.Pod'], 'the member document as served');

  await fb.sync(gvs);
  t.same(await counts(metrics, 'b'), { 'v3/shared': 3 }, 'an identical cluster fetches nothing');
  t.same((await store.clusterOpenAPI('b')).map((r) => r.hash), rows.map((r) => r.hash));
  t.equal((await store.openAPIDocuments(rows.map((r) => r.hash))).size, 3, 'stored once');

  await fa.sync(gvs);
  t.same(await counts(metrics, 'a'), { 'v3/fetched': 3, 'v3/unchanged': 3 }, 'unchanged documents are not fetched');

  t.equal(a.crud.create(a.registry.byId('apiextensions.k8s.io/customresourcedefinitions')!, 'v1', undefined, gizmoCRD()).metadata.name, 'gizmos.demo.panoptes.io');
  await fa.sync(gvs);
  t.same(await counts(metrics, 'a'), { 'v3/fetched': 4, 'v3/unchanged': 5 }, 'only the changed group version is fetched');
  const after = await store.clusterOpenAPI('a');
  t.not(after[2].hash, rows[2].hash);
  t.equal(after[0].hash, rows[0].hash);
  const demo = JSON.parse((await store.openAPIDocuments([after[2].hash])).get(after[2].hash)!.body);
  t.ok(demo.components.schemas['io.panoptes.demo.v1.Gizmo'], 'the new CRD is in it');
  t.equal((await store.openAPIDocuments([rows[2].hash])).size, 1, "b's document stays");

  // A fetcher whose lease moved on (taken again since, at a higher epoch) stores nothing and says so.
  const stale = await leaseOf(store, 'z');
  await takeLease(store, clusterLease('z'));
  const fz = new OpenAPIFetcher({ cluster: 'z', client: clients[0], store, lease: stale, metrics, log });
  await fz.sync(gvs);
  t.equal(stale.lost, 1, 'the refused write reports the lease lost');
  t.same(await store.clusterOpenAPI('z'), [], 'and nothing is stored');
});

t.test('v2-only member: one whole document, fetched again when forced or group versions change', async (t) => {
  const c = await startSimCluster({ name: 'c', workload: true, openapiV3: false });
  const { store, close } = await openTestStore('sqlite');
  const metrics = new SynchroMetrics();
  const client = await connectCluster({ server: c.url });
  t.teardown(async () => {
    client.close();
    await c.close();
    await close();
  });
  const f = new OpenAPIFetcher({ cluster: 'c', client, store, lease: await leaseOf(store, 'c'), metrics, log: logger('test') });
  t.match(await f.sync(gvs), { format: 'v2', documents: 1 });
  const [row] = await store.clusterOpenAPI('c');
  t.match(row, { groupVersion: '', format: 'v2', present: true });
  t.ok(JSON.parse((await store.openAPIDocuments([row.hash])).get(row.hash)!.body).definitions['io.panoptes.demo.v1.Widget']);
  await f.sync(gvs);
  t.same(await counts(metrics, 'c'), { 'v2/fetched': 1, 'v2/unchanged': 1 });
  c.crud.create(c.registry.byId('apiextensions.k8s.io/customresourcedefinitions')!, 'v1', undefined, gizmoCRD());
  await f.sync(gvs, { force: true });
  t.same(await counts(metrics, 'c'), { 'v2/fetched': 2, 'v2/unchanged': 1 }, 'a CRD change fetches it again');
  const [next] = await store.clusterOpenAPI('c');
  t.not(next.hash, row.hash);
  t.equal((await store.openAPIDocuments([row.hash])).size, 0, 'the old document is gone');
});

t.test('synchro records OpenAPI in the cluster status and drops it with the cluster', async (t) => {
  const a = await startSimCluster({ name: 'a', workload: true });
  const c = await startSimCluster({ name: 'c', workload: true, openapiV3: false });
  const { store, close } = await openTestStore('sqlite');
  const { dir, cleanup } = tempDir();
  const file = `${dir}/clusters.yaml`;
  writeClusters(file, [
    { name: 'a', server: a.url, resources: ['*'] },
    { name: 'c', server: c.url, resources: ['pods', 'demo.panoptes.io/*'] },
  ]);
  const synchro = await startSynchro({ store, clustersFile: file, timings: fastTimings, reloadIntervalMs: 50 });
  t.teardown(async () => {
    await synchro.stop();
    await Promise.all([a.close(), c.close()]);
    await close();
    cleanup();
  });
  await waitUntil('openapi in both statuses', async () => {
    const [ra, rc] = [await store.getCluster('a'), await store.getCluster('c')];
    const oa = ra?.status.openapi as { format?: string; documents?: number } | undefined;
    const oc = rc?.status.openapi as { format?: string; documents?: number } | undefined;
    return oa?.format === 'v3' && (oa.documents ?? 0) > 5 && oc?.format === 'v2' && oc.documents === 1;
  }, 30_000);
  const groupVersions = (await store.clusterOpenAPI('a')).map((r) => r.groupVersion);
  t.ok(groupVersions.includes('api/v1') && groupVersions.includes('apis/apps/v1') && groupVersions.includes('apis/demo.panoptes.io/v1'), 'the synced group versions');
  writeClusters(file, [{ name: 'a', server: a.url, resources: ['*'] }]);
  await waitUntil('c removed', async () => (await store.getCluster('c')) === undefined, 30_000);
  t.same((await store.clusterOpenAPI('c')), [], 'its references are gone');
});
