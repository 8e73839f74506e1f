// A member that refuses the credentials is not Unreachable: a 401 on its readiness probe makes
// the cluster Unauthorized, a 403 (credentials accepted, health paths not granted) Forbidden,
// each its Ready condition's reason, in `kubectl get clusters`, the served status and the
// Cluster schema's phases; once the member accepts them again the cluster is Ready without a
// restart. Simulated members on 127.0.0.1, SQLite, synchro in process with clusters.yaml, the
// apiserver serving the Table.
import t from 'tap';
import { createApiserver } from '../../apiserver/server.ts';
import { startSimCluster } from '../../hack/sim/cluster.ts';
import { get } from '../../hack/sim/testutil.ts';
import { openTestStore } from '../../storage/testing.ts';
import { startSynchro } from '../synchro.ts';
import { fastTimings, tempDir, waitUntil, writeClusters } from '../testutil.ts';

const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json';

t.test('401 is Unauthorized, 403 is Forbidden, and both recover', async (t) => {
  const east = await startSimCluster({ name: 'east' });
  const lab = await startSimCluster({ name: 'lab' });
  east.auth.tokens = ['east-good'];
  // lab accepts its token but lets it read no health path (an operator narrowed system:public-info-viewer).
  lab.auth.tokens = ['lab-token'];
  lab.auth.grant('lab-token', { name: 'panoptes', nonResourceURLs: ['/api', '/api/*', '/apis', '/apis/*', '/version', '/openapi/*'] });
  const { store, close } = await openTestStore('sqlite');
  const { dir, cleanup } = tempDir();
  const file = `${dir}/clusters.yaml`;
  writeClusters(file, [
    { name: 'east', server: east.url, token: 'east-wrong', resources: ['configmaps'] },
    { name: 'lab', server: lab.url, token: 'lab-token', resources: ['configmaps'] },
  ]);
  const synchro = await startSynchro({ store, clustersFile: file, timings: fastTimings, reloadIntervalMs: 100, compaction: false });
  const api = await createApiserver({ store, catalogOptions: { refreshMs: 200 } });
  const base = await api.listen('127.0.0.1', 0);
  t.teardown(async () => {
    await synchro.stop();
    await api.close();
    await close();
    await Promise.all([east.close(), lab.close()]);
    cleanup();
  });
  const status = async (name: string) => (await store.getCluster(name))?.status as { phase?: string; ready?: boolean; reason?: string; message?: string; conditions?: Array<{ type: string; status: string; reason: string }> } | undefined;

  const e = await waitUntil('east Unauthorized', async () => ((await status('east'))?.phase === 'Unauthorized' ? status('east') : undefined));
  t.match(e, { ready: false, reason: 'Unauthorized', message: /^GET \/readyz: HTTP 401 Unauthorized: the member does not accept the credentials/ });
  t.match(e?.conditions?.[0], { type: 'Ready', status: 'False', reason: 'Unauthorized' }, 'the Ready condition carries the reason');
  const l = await waitUntil('lab Forbidden', async () => ((await status('lab'))?.phase === 'Forbidden' ? status('lab') : undefined));
  t.match(l, { ready: false, reason: 'Forbidden', message: /^GET \/healthz: HTTP 403 Forbidden: the member accepts the credentials but lets them read neither \/readyz nor \/healthz/ });
  t.match(l?.conditions?.[0], { type: 'Ready', status: 'False', reason: 'Forbidden' });

  const table = await waitUntil('kubectl get clusters shows both', async () => {
    const r = await get(`${base}/apis/panoptes.io/v1alpha1/clusters`, { Accept: TABLE });
    const rows = (r.json?.rows ?? []) as Array<{ cells: unknown[] }>;
    return rows.some((x) => x.cells[0] === 'east' && x.cells[1] === 'Unauthorized') && rows.some((x) => x.cells[0] === 'lab' && x.cells[1] === 'Forbidden') ? r.json : undefined;
  });
  t.match(table.columnDefinitions[1], { name: 'Phase', description: /Unauthorized \(the member refuses the credentials: 401\), Forbidden/ });
  const served = (await get(`${base}/apis/panoptes.io/v1alpha1/clusters/east`)).json;
  t.match(served.status, { phase: 'Unauthorized', conditions: [{ type: 'Ready', status: 'False', reason: 'Unauthorized' }] }, 'the served Cluster says so');
  const openapi = (await get(`${base}/openapi/v3`)).json.paths['apis/panoptes.io/v1alpha1'].serverRelativeURL as string;
  const phase = (await get(`${base}${openapi}`)).json.components.schemas['io.panoptes.v1alpha1.ClusterStatus'].properties.phase;
  t.same(phase.enum, ['Pending', 'Ready', 'Unreachable', 'Unauthorized', 'Forbidden', 'Invalid', 'Duplicate'], "the Cluster schema's phases (kubectl explain)");

  // The member accepts the credentials again (no configuration change): Ready, and synced.
  east.auth.tokens = ['east-good', 'east-wrong'];
  lab.auth.grant('lab-token', { name: 'panoptes' });
  await waitUntil('east Ready again', async () => (await status('east'))?.phase === 'Ready');
  await waitUntil('lab Ready again', async () => (await status('lab'))?.phase === 'Ready');
  t.match(await status('east'), { ready: true, reason: 'ProbeSucceeded', conditions: [{ type: 'Ready', status: 'True', reason: 'ProbeSucceeded' }] });
});
