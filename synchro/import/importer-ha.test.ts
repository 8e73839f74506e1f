// Two synchro members on PostgreSQL importing from one ClusterSource: the imported Clusters
// are shared between them like any other (each synced by the holder of its lease, with the
// connection it reads from the source Secret itself), one member alone holds the importer
// lease and writes the Cluster objects, and when it stops the other takes the lease over and
// follows the sources (a Secret deleted afterwards takes its Cluster with it).
import t from 'tap';
import { stringify } from 'yaml';
import { createApiserver } from '../../apiserver/server.ts';
import { startSimCluster, type SimCluster } from '../../hack/sim/cluster.ts';
import { http } from '../../hack/sim/testutil.ts';
import { MemberNetworks } from '../../member/networks.ts';
import { importerLease } from '../../storage/leases.ts';
import { Store } from '../../storage/store.ts';
import { emptyStorageUrl, stopTestPostgres } from '../../storage/testing.ts';
import { fastTimings, synchroMembers, tempDir, waitUntil, writeClusters } from '../testutil.ts';

t.teardown(stopTestPostgres);
const C = '/apis/panoptes.io/v1alpha1/clusters';
const b64 = (s: string) => Buffer.from(s).toString('base64');

t.test('postgres: two members import once and share the imported clusters', async (t) => {
  const { url } = await emptyStorageUrl('postgres');
  const store = await Store.open(url);
  const { dir, cleanup } = tempDir();
  const file = `${dir}/clusters.yaml`;
  writeClusters(file, []);
  const names = ['m0', 'm1', 'm2', 'm3', 'm4', 'm5'];
  const sims: SimCluster[] = [];
  for (const n of names) sims.push(await startSimCluster({ name: n }));
  sims.forEach((s, i) => (s.auth.tokens = [`token-${i}`]));
  const host = await startSimCluster({ name: 'host' });
  const memberNetworks = MemberNetworks.parse('127.0.0.0/8');
  const api = await createApiserver({ store, memberNetworks });
  const base = await api.listen('127.0.0.1', 0);
  const { start, stop, stopAll } = synchroMembers(url, (identity) => ({ memberNetworks, clustersFile: file, hostCluster: { server: host.url }, timings: fastTimings, compaction: false, shards: { identity, leaseTtlMs: 3000, assignIntervalMs: 200 } }));
  t.teardown(async () => {
    await stopAll();
    await api.close();
    await store.close();
    await Promise.all([...sims, host].map((s) => s.close()));
    cleanup();
  });
  await start('s1');
  await start('s2');

  await http('POST', `${host.url}/api/v1/namespaces`, { metadata: { name: 'fleet' } });
  for (const [i, s] of sims.entries()) {
    const kubeconfig = stringify({ apiVersion: 'v1', kind: 'Config', clusters: [{ name: 'c', cluster: { server: s.url } }], users: [{ name: 'u', user: { token: `token-${i}` } }], contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }], 'current-context': 'c' });
    t.equal((await http('POST', `${host.url}/api/v1/namespaces/fleet/secrets`, { metadata: { name: s.name, namespace: 'fleet' }, data: { kubeconfig: b64(kubeconfig) } })).status, 201);
  }
  t.equal((await http('POST', `${base}/apis/panoptes.io/v1alpha1/clustersources`, { metadata: { name: 'fleet' }, spec: { type: 'kubeconfigSecrets', namespaces: ['fleet'], defaults: { resources: ['configmaps'] } } })).status, 201);

  const allReady = () =>
    waitUntil('every imported cluster Ready', async () => {
      const items = (await http('GET', `${base}${C}`)).json.items as Array<{ metadata: { name: string }; status?: { ready?: boolean; owner?: { member?: string } } }>;
      return items.length === names.length && items.every((c) => c.status?.ready === true) ? items : undefined;
    }, 30_000);
  const items = (await allReady())!;
  const owners = new Set(items.map((c) => c.status!.owner!.member));
  t.same([...owners].sort(), ['s1', 's2'], 'the imported clusters are shared between the members');
  const holders = (await store.listLeasesNamed([importerLease])).filter((l) => l.holder);
  t.equal(holders.length, 1, 'one member holds the importer lease');
  const importer = holders[0].holder!;

  await stop(importer);
  const other = importer === 's1' ? 's2' : 's1';
  await waitUntil('the other member takes the importer lease', async () => (await store.listLeasesNamed([importerLease]))[0]?.holder === other, 15_000);
  t.equal((await http('DELETE', `${host.url}/api/v1/namespaces/fleet/secrets/m3`)).status, 200);
  await waitUntil('m3 removed by the new importer', async () => (await http('GET', `${base}${C}/m3`)).status === 404, 30_000);
  await waitUntil('the others Ready on the remaining member', async () => {
    const left = (await http('GET', `${base}${C}`)).json.items as Array<{ status?: { ready?: boolean; owner?: { member?: string } } }>;
    return left.length === names.length - 1 && left.every((c) => c.status?.ready === true && c.status.owner?.member === other);
  }, 30_000);
});
