// End to end: fuzzyName, createdSince/createdBefore and orderBy through `panoptes all-in-one`
// over simulated member clusters, read by kubectl (label keys, so `-l` carries them) and by
// @kubernetes/client-node, paging under churn (no duplicates, no losses, one rv), on both
// backends.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import t, { type Test } from 'tap';
import { stringify } from 'yaml';
import { writeKubeconfig } from '../../cli/commands/kubeconfig.ts';
import { spawnPanoptes } from '../../hack/panoptes-process.ts';
import { freePort } from '../../storage/testing/postgres.ts';
import { startSimClusters } from '../../hack/sim/cluster.ts';
import { get, http, openWatch } from '../../hack/sim/testutil.ts';
import { waitUntil } from '../../synchro/testutil.ts';
import { backends, emptyStorageUrl, stopTestPostgres, type Backend } from '../../storage/testing.ts';

t.teardown(stopTestPostgres);

const P = '/apis/panoptes.io/v1alpha1/resources';
const at = (i: number) => new Date(Date.UTC(2026, 2, 1, 10, 0, i * 7)).toISOString().replace('.000Z', 'Z');
/** Pods per cluster: names that fuzzy search tells apart, one creation second each. */
const names = (cluster: string) => Array.from({ length: 12 }, (_, i) => `${['Web', 'api', 'webhook', 'cache'][i % 4]}-${cluster}-${i}`);

async function scenario(t: Test, backend: Backend) {
  const dir = mkdtempSync(join(tmpdir(), 'panoptes-search-e2e-'));
  const sims = await startSimClusters(['east', 'west']);
  const { url: storage, cleanup } = await emptyStorageUrl(backend);
  for (const [c, sim] of sims.map((s, c) => [c, s] as const)) {
    t.equal((await http('POST', `${sim.url}/api/v1/namespaces`, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' } })).status, 201, 'namespace shop');
    sim.bulkCreate('pods', names(sim.name).map((name, i) => ({ metadata: { name: name.toLowerCase(), namespace: 'shop', creationTimestamp: at(i * 2 + c) }, spec: { nodeName: 'n1' }, status: { phase: 'Running' } })));
  }
  const clusters = join(dir, 'clusters.yaml');
  writeFileSync(clusters, stringify({ clusters: sims.map((s) => ({ name: s.name, server: s.url, resources: ['pods'] })) }));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const proc = spawnPanoptes('all-in-one', ['all-in-one', '--storage', storage, '--clusters', clusters, '--insecure-listen', `127.0.0.1:${port}`, '--probe-interval', '500ms']);
  t.teardown(async () => {
    await proc.stop();
    await Promise.all(sims.map((s) => s.close()));
    await cleanup();
    rmSync(dir, { recursive: true, force: true });
  });
  const total = () => sims.reduce((n, s) => n + s.store.list('/pods').items.length, 0);
  await waitUntil('all pods synced', async () => (await get(`${base}${P}/api/v1/pods`)).json?.items?.length === total(), 60_000, 200);
  const kubeconfig = join(dir, 'kubeconfig');
  await writeKubeconfig(kubeconfig, { panoptes: { server: base, clusters: sims.map((s) => s.name) } });
  const kubectl = (args: string[]) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile('kubectl', ['--kubeconfig', kubeconfig, '--cache-dir', join(dir, 'cache'), ...args], { timeout: 60_000 }, (err, stdout, stderr) => resolve({ code: err ? 1 : 0, stdout, stderr }));
    });
  const lines = (s: string) => s.split('\n').filter(Boolean);

  // fuzzyName through kubectl -l: ASCII case-insensitive (a member's name is lowercase; the needle need not be).
  const fuzzy = await kubectl(['get', 'pods', '-A', '-l', 'search.panoptes.io/fuzzyName=WEB', '-o', 'name']);
  t.equal(fuzzy.code, 0, fuzzy.stderr);
  t.same(lines(fuzzy.stdout).sort(), [...new Set(['east', 'west'].flatMap((c) => names(c).filter((n) => /web/i.test(n)).map((n) => `pod/${n.toLowerCase()}`)))].sort(), 'every name holding web, in either cluster');
  const short = await kubectl(['get', 'pods', '-A', '-l', 'search.panoptes.io/fuzzyName=we']);
  t.not(short.code, 0, 'a two-character fuzzy name is refused');
  t.match(short.stderr, /search.panoptes.io\/fuzzyName: "we" is too short/);

  // orderBy through kubectl -l, in pages: kubectl prints the server's order.
  const newest = await kubectl(['get', 'pods', '-n', 'shop', '-l', 'search.panoptes.io/orderBy=creationTimestamp_desc', '--chunk-size=5', '-o', 'custom-columns=NAME:.metadata.name,CREATED:.metadata.creationTimestamp', '--no-headers']);
  t.equal(newest.code, 0, newest.stderr);
  const created = lines(newest.stdout).map((l) => l.split(/\s+/)[1]);
  t.equal(created.length, 24);
  t.same(created, [...created].sort().reverse(), 'newest first, across clusters and pages');
  const badOrder = await kubectl(['get', '--raw', `${P}/api/v1/pods?orderBy=${encodeURIComponent('name sideways')}`]);
  t.match(badOrder.stderr, /BadRequest/, 'a malformed orderBy is a 400');

  // createdSince / createdBefore through kubectl -l (the label form of a time has no colons).
  const range = await kubectl(['get', 'pods', '-A', '-l', `search.panoptes.io/createdSince=${at(20).replace(/:/g, '')},search.panoptes.io/createdBefore=${at(23).replace(/:/g, '')}`, '-o', 'name']);
  t.equal(range.code, 0, range.stderr);
  t.same(lines(range.stdout).sort(), ['pod/cache-east-11', 'pod/webhook-east-10', 'pod/webhook-west-10'], 'created at steps 20, 21 and 22 of the fixture');

  // client-node: orderBy + fuzzyName in pages of 2, with churn between pages.
  const kc = new KubeConfig();
  kc.loadFromOptions({ clusters: [{ name: 'p', server: `${base}${P}`, skipTLSVerify: true }], users: [{ name: 'u' }], contexts: [{ name: 'p', cluster: 'p', user: 'u' }], currentContext: 'p' });
  const core = kc.makeApiClient(CoreV1Api);
  const labelSelector = 'search.panoptes.io/fuzzyName=ebh,search.panoptes.io/orderBy=creationTimestamp_desc';
  const seen: string[] = [];
  let cont: string | undefined;
  let rv: string | undefined;
  for (let page = 0; page < 50; page++) {
    const r = await core.listPodForAllNamespaces({ labelSelector, limit: 2, _continue: cont });
    if (rv) t.equal(r.metadata?.resourceVersion, rv, `page ${page}: the first page's rv`);
    rv ??= r.metadata?.resourceVersion;
    seen.push(...r.items.map((p) => `${p.metadata?.annotations?.['panoptes.io/cluster']}/${p.metadata?.name}`));
    cont = r.metadata?._continue;
    if (!cont) break;
    // Churn: a new pod that sorts first, and a deleted one the next page would have served.
    const sim = sims[page % 2];
    t.equal((await http('POST', `${sim.url}/api/v1/namespaces/shop/pods`, { apiVersion: 'v1', kind: 'Pod', metadata: { name: `webhook-new-${page}` }, spec: { containers: [{ name: 'c', image: 'x' }] } })).status, 201, 'a new pod');
    const victim = sims[(page + 1) % 2].store.list('/pods').items.find((p) => /webhook/.test(String(p.metadata?.name)) && !seen.some((s) => s.endsWith(`/${p.metadata?.name}`)));
    t.ok(victim, 'a pod the next pages would serve');
    if (victim) t.equal((await http('DELETE', `${sims[(page + 1) % 2].url}/api/v1/namespaces/shop/pods/${victim.metadata?.name}`)).status, 200, 'deleted');
    await waitUntil('the churn synced', async () => Number((await get(`${base}${P}/api/v1/pods?limit=1`)).json?.metadata?.resourceVersion) > Number(rv), 30_000, 100);
  }
  t.equal(new Set(seen).size, seen.length, 'no duplicates');
  const atRv = await core.listPodForAllNamespaces({ labelSelector, resourceVersion: rv, resourceVersionMatch: 'Exact' });
  t.same(seen, atRv.items.map((p) => `${p.metadata?.annotations?.['panoptes.io/cluster']}/${p.metadata?.name}`), 'no losses: the pages are the list at their rv, in its order');
  t.equal(seen.length, 6, 'webhook pods at the first page: 3 per cluster');

  // A watch filters by the fuzzy name and the time range (a duration, resolved as it starts); orderBy is refused.
  const from = (await get(`${base}${P}/api/v1/pods?limit=1`)).json.metadata.resourceVersion;
  const w = await openWatch(`${base}${P}/api/v1/pods?watch=1&resourceVersion=${from}&labelSelector=${encodeURIComponent('search.panoptes.io/createdSince=1h')}&fuzzyName=ZEBRA`);
  t.teardown(() => w.close());
  t.equal(w.status, 200);
  for (const name of ['zebra-a', 'horse-b', 'zebra-c']) {
    const created = await http('POST', `${sims[0].url}/api/v1/namespaces/shop/pods`, { apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { containers: [{ name: 'c', image: 'x' }] } });
    t.equal(created.status, 201, `${name} created`);
  }
  const events = await w.waitFor(2, 30_000);
  t.same(events.slice(0, 2).map((e) => `${e.type} ${e.object.metadata.name}`), ['ADDED zebra-a', 'ADDED zebra-c'], 'only the matching pods, in rv order');
  const ordered = await get(`${base}${P}/api/v1/pods?watch=1&orderBy=name`);
  t.equal(ordered.status, 400, 'a watch with orderBy is a 400');
  t.match(ordered.json?.message, /orderBy applies to lists only/);
}

for (const backend of backends) t.test(`search terms end to end, ${backend}`, (t) => scenario(t, backend));
