// Fault injection and churn over HTTP (/_sim/...) and the JS API; the kubeconfig generator.
import { connect } from 'node:net';
import t from 'tap';
import { parse } from 'yaml';
import { buildKubeconfig } from '../../cli/commands/kubeconfig.ts';
import { startSimClusters } from './cluster.ts';
import { get, http, openWatch, simCluster, sleep, until } from './testutil.ts';

const canConnect = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.on('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });

t.test('several clusters, one port and one rv counter each', async (t) => {
  const cs = await startSimClusters(['a', 'b'], { initialRv: 500 });
  t.teardown(() => Promise.all(cs.map((c) => c.close())));
  t.not(cs[0].port, cs[1].port);
  await http('POST', `${cs[0].url}/api/v1/namespaces/default/configmaps`, { metadata: { name: 'x' } });
  t.equal(cs[0].store.resourceVersion, cs[1].store.resourceVersion + 1);
  t.equal((await get(`${cs[1].url}/api/v1/namespaces/default/configmaps/x`)).status, 404);
});

t.test('HTTP controls: drop watches, expire history', async (t) => {
  const c = await simCluster(t);
  const base = `${c.url}/api/v1/namespaces/default/configmaps`;
  const w = await openWatch(`${base}?watch=1&resourceVersion=${c.store.resourceVersion}`);
  await until(() => c.hub.count === 1);
  t.same((await http('POST', `${c.url}/_sim/drop-watches`)).json, { dropped: 1 });
  t.equal(await w.ended, true, 'ended cleanly');
  const w2 = await openWatch(`${base}?watch=1&resourceVersion=${c.store.resourceVersion}`);
  await until(() => c.hub.count === 1);
  await http('POST', `${c.url}/_sim/drop-watches?abrupt=true`);
  t.equal(await w2.ended, false, 'connection reset');

  const rv = c.store.resourceVersion;
  const ex = await http('POST', `${c.url}/_sim/expire-history`);
  t.equal(ex.json.compactedRv, rv + 1);
  const old = await openWatch(`${base}?watch=1&resourceVersion=${rv}`);
  await old.ended;
  t.same(old.events.map((e) => [e.type, e.object.code]), [['ERROR', 410]]);
  const status = await get(`${c.url}/_sim/status`);
  t.match(status.json, { name: 'test', resourceVersion: String(rv + 1), compactedResourceVersion: String(rv + 1), faults: { state: 'up' } });
  t.equal((await http('POST', `${c.url}/_sim/nope`)).status, 404);
});

t.test('HTTP controls: down (refuse, then back on the same port), unavailable, latency', async (t) => {
  const c = await simCluster(t);
  const port = c.port;
  const w = await openWatch(`${c.url}/api/v1/configmaps?watch=1`);
  const r = await http('POST', `${c.url}/_sim/down?mode=refuse&for=600ms`);
  t.equal(r.status, 200);
  t.equal(await w.ended, false, 'open connections are cut');
  t.equal(await canConnect(port), false, 'connections refused');
  t.ok(await until(() => c.faults.state().state === 'up', 3000));
  t.equal(await canConnect(port), true, 'listening again');
  t.equal((await get(`${c.url}/readyz`)).text, 'ok');
  t.equal((await http('POST', `${c.url}/_sim/down?mode=refuse`)).status, 400, 'refuse needs a duration over HTTP');

  await http('POST', `${c.url}/_sim/down?mode=unavailable`);
  t.equal((await get(`${c.url}/api/v1/namespaces`)).status, 503);
  t.equal((await get(`${c.url}/readyz`)).status, 503);
  t.equal((await get(`${c.url}/_sim/status`)).json.faults.state, 'unavailable', 'controls still answer');
  await http('POST', `${c.url}/_sim/up`);
  t.equal((await get(`${c.url}/api/v1/namespaces`)).status, 200);

  await http('POST', `${c.url}/_sim/latency?ms=250`);
  const start = Date.now();
  await get(`${c.url}/api/v1/namespaces`);
  t.ok(Date.now() - start >= 250, 'slow');
  // A latency far beyond the bounded wait below, then none: an answer within the wait is without it.
  await http('POST', `${c.url}/_sim/latency?ms=600000`);
  await http('POST', `${c.url}/_sim/latency?ms=0`);
  let timer: NodeJS.Timeout | undefined;
  const answered = await Promise.race([get(`${c.url}/api/v1/namespaces`).then((r) => r.status === 200), new Promise<boolean>((r) => (timer = setTimeout(() => r(false), 30_000)))]);
  clearTimeout(timer);
  t.ok(answered, 'fast again: the latency is gone');
});

t.test('churn: deterministic with a seed, over HTTP and JS', async (t) => {
  const run = async (seed: number) => {
    const c = await simCluster(t, { initialRv: 1 });
    const events: string[] = [];
    c.store.subscribe('/configmaps', (e) => events.push(`${e.type} ${e.key} ${JSON.stringify(e.object.metadata.labels)}`));
    c.store.subscribe('/pods', (e) => events.push(`${e.type} ${e.key} ${JSON.stringify(e.object.metadata.labels)} ${JSON.stringify(e.object.status)}`));
    c.churn.configure({ ratePerSecond: 0, seed, maxObjects: 20 });
    c.churn.step(200);
    return events;
  };
  const a = await run(42);
  const b = await run(42);
  const d = await run(43);
  t.ok(a.length > 150, `${a.length} events`);
  t.same(a, b, 'same seed, same events');
  t.notSame(a, d, 'another seed, other events');
  t.ok(a.some((e) => e.startsWith('DELETED')) && a.some((e) => e.startsWith('MODIFIED')));

  const c = await simCluster(t);
  const started = await http('POST', `${c.url}/_sim/churn?rate=200&seed=3&namespaces=n1,n2&resources=configmaps,secrets`);
  t.match(started.json, { running: true, ratePerSecond: 200 });
  t.ok(c.store.get('/namespaces', undefined, 'n2'), 'namespaces created');
  await sleep(300);
  const stopped = await http('POST', `${c.url}/_sim/churn/stop`);
  t.equal(stopped.json.running, false);
  const ops = stopped.json.creates + stopped.json.updates + stopped.json.deletes;
  t.ok(ops >= 20 && ops <= 120, `about rate x time operations (${ops})`);
  t.ok(c.store.count('/secrets') > 0);
  t.equal((await http('POST', `${c.url}/_sim/churn?resources=nodes`)).status, 400);
});

t.test('kubeconfig generator: sim-<name>, panoptes and panoptes-<cluster> contexts', async (t) => {
  const doc = parse(JSON.stringify(buildKubeconfig({
    sims: [{ name: 'a', url: 'http://127.0.0.1:7001' }],
    panoptes: { server: 'https://panoptes.example:8443/', clusters: ['a', 'b'], token: 'tok' },
  }))) as { 'current-context': string; clusters: { name: string; cluster: { server: string } }[]; contexts: { name: string }[] };
  t.equal(doc['current-context'], 'panoptes');
  t.same(doc.contexts.map((c) => c.name), ['sim-a', 'panoptes', 'panoptes-a', 'panoptes-b']);
  const server = (n: string) => doc.clusters.find((c) => c.name === n)!.cluster.server;
  t.equal(server('sim-a'), 'http://127.0.0.1:7001');
  t.equal(server('panoptes'), 'https://panoptes.example:8443/apis/panoptes.io/v1alpha1/resources');
  t.equal(server('panoptes-b'), 'https://panoptes.example:8443/apis/panoptes.io/v1alpha1/resources/clusters/b');
});
