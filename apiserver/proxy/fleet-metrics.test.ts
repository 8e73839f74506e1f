// kubectl top pods -A on the all-clusters view: every Ready member's metrics, as the user,
// merged with each item's cluster; members away named in a Warning header.
import { execFile } from 'node:child_process';
import t from 'tap';
import { get, simCluster, tempDir } from '../../hack/sim/testutil.ts';
import { setLogLevel } from '../../lib/log.ts';
import { openTestStore, seedCluster } from '../../storage/testing.ts';
import { createApiserver } from '../server.ts';
import type { MemberCredentials } from './members.ts';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');

const P = '/apis/panoptes.io/v1alpha1/resources';
const pods = { group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, singularName: 'pod' };

t.test('fleet-wide pod metrics', async (t) => {
  const east = await simCluster(t, { name: 'east', workload: true });
  const west = await simCluster(t, { name: 'west', workload: true });
  const { store, close } = await openTestStore('sqlite');
  for (const c of ['east', 'west']) await seedCluster(store, c, { phase: 'Ready', ready: true, apiResources: [pods] });
  await seedCluster(store, 'lab', { phase: 'Unreachable', ready: false, apiResources: [pods] });
  const urls: Record<string, string> = { east: east.url, west: west.url };
  const credentials: MemberCredentials = { lookup: async (c) => (urls[c] ? { connection: { server: urls[c] }, fingerprint: urls[c] } : undefined) };
  const api = await createApiserver({ store, proxy: { credentials, unauthenticatedUser: { name: 'dev', groups: ['devs'], extra: {} } } });
  const base = await api.listen('127.0.0.1', 0);
  t.teardown(async () => {
    await api.close();
    await close();
  });

  const r = await get(`${base}${P}/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods`);
  t.equal(r.status, 200, r.text);
  t.equal(r.json.kind, 'PodMetricsList');
  const running = (c: typeof east) => c.store.list('/pods', { namespace: 'shop' }).items.filter((p) => (p.status as { phase?: string }).phase === 'Running').length;
  t.equal(r.json.items.length, running(east) + running(west), "both members' pods");
  const byCluster = (c: string) => r.json.items.filter((i: { metadata: { annotations: Record<string, string> } }) => i.metadata.annotations['panoptes.io/cluster'] === c).length;
  t.equal(byCluster('east'), running(east));
  t.equal(byCluster('west'), running(west));
  t.match(r.headers.warning, /members away, not in this answer: lab/);
  t.ok(east.auth.impersonations.some((i) => i.user === 'dev') && west.auth.impersonations.some((i) => i.user === 'dev'), 'each asked as the user');

  const name = east.store.list('/pods', { namespace: 'shop' }).items.find((p) => (p.status as { phase?: string }).phase === 'Running')!.metadata.name!;
  const one = await get(`${base}${P}/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods/${name}`);
  t.equal(one.status, 200, one.text);
  t.equal(one.json.metadata.annotations['panoptes.io/cluster'], 'east');

  const top = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
    execFile('kubectl', ['--server', `${base}${P}`, '--kubeconfig', '/dev/null', '--cache-dir', tempDir(t), 'top', 'pods', '-A'], { timeout: 30_000 }, (err, stdout, stderr) => resolve({ code: err ? 1 : 0, stdout, stderr })),
  );
  t.equal(top.code, 0, top.stderr);
  t.match(top.stdout, /^NAMESPACE\s+NAME\s+CPU\(cores\)\s+MEMORY\(bytes\)/);
  t.equal(top.stdout.trim().split('\n').length - 1, east.store.list('/pods').items.filter((p) => (p.status as { phase?: string }).phase === 'Running').length + west.store.list('/pods').items.filter((p) => (p.status as { phase?: string }).phase === 'Running').length, 'kubectl top pods -A: every running pod of the fleet');
  t.match(top.stderr, /members away, not in this answer: lab/, 'the Warning shown by kubectl');
});
