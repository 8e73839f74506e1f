// kubectl (on PATH) against a simulated cluster: --server, an empty kubeconfig, a temp cache dir.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { widgetCRD } from './workload.ts';
import { get, kubectl, kubectlStream, simCluster, sleep, tempDir } from './testutil.ts';

t.test('discovery, reads and writes as kubectl does them', async (t) => {
  const c = await simCluster(t, { workload: true });
  const dir = tempDir(t);
  const k = (...args: string[]) => kubectl(c, dir, args);

  const ar = await k('api-resources');
  t.equal(ar.code, 0, ar.stderr);
  t.match(ar.stdout, /deployments\s+deploy\s+apps\/v1\s+true\s+Deployment/);
  t.match(ar.stdout, /widgets\s+wd\s+demo\.panoptes\.io\/v1\s+true\s+Widget/, 'the CRD resource is discovered');
  t.match((await k('version', '-o', 'json')).stdout, /"gitVersion": "v1\.28\.0\+panoptes-sim"/);

  const pods = await k('get', 'pods', '-n', 'shop', '-l', 'app=frontend', '-o', 'name');
  t.equal(pods.stdout.trim().split('\n').length, 3, pods.stderr);
  const running = await k('get', 'pods', '-A', '--field-selector', 'status.phase=Succeeded', '-o', 'name');
  t.match(running.stdout.trim(), /^pod\/nightly-report-/);
  const chunked = await k('get', 'pods', '-A', '--chunk-size', '2', '-o', 'name', '-v=6');
  t.equal(chunked.stdout.trim().split('\n').length, c.store.count('/pods'));
  t.match(chunked.stderr, /continue=/, 'kubectl paged with continue tokens');
  t.match((await k('get', 'widgets', '-n', 'shop', '-o', 'name')).stdout, /widget\.demo\.panoptes\.io\/cog/);

  t.equal((await k('create', 'namespace', 'play')).code, 0);
  t.equal((await k('-n', 'play', 'create', 'configmap', 'cfg', '--from-literal=a=b')).code, 0);
  const dup = await k('-n', 'play', 'create', 'configmap', 'cfg', '--from-literal=a=b');
  t.not(dup.code, 0);
  t.match(dup.stderr, /AlreadyExists|already exists/);
  t.equal((await k('-n', 'play', 'label', 'configmap', 'cfg', 'tier=web')).code, 0);
  t.equal((await k('-n', 'play', 'annotate', 'configmap', 'cfg', 'note=hello')).code, 0);
  const cfg = c.store.get('/configmaps', 'play', 'cfg')!;
  t.same(cfg.metadata.labels, { tier: 'web' });
  t.same(cfg.metadata.annotations, { note: 'hello' });

  t.equal((await k('-n', 'shop', 'scale', 'deployment', 'frontend', '--replicas=5')).code, 0);
  t.equal((c.store.get('apps/deployments', 'shop', 'frontend')!.spec as { replicas: number }).replicas, 5);
  // A ReplicaSet a Deployment owns is scaled back by the deployment controller, as in kube.
  const rs = c.store.list('apps/replicasets', { namespace: 'shop' }).items.find((o) => o.metadata.name!.startsWith('cart-'))!;
  t.equal((await k('-n', 'shop', 'scale', 'rs', rs.metadata.name!, '--replicas=0')).code, 0);
  t.ok(await c.controllers.settle());
  t.equal((c.store.get('apps/replicasets', 'shop', rs.metadata.name!)!.spec as { replicas: number }).replicas, 2, 'the deployment controller restored its replicas');
  t.equal((await k('-n', 'monitoring', 'scale', 'statefulset', 'prometheus', '--replicas=3')).code, 0);
  t.equal((c.store.get('apps/statefulsets', 'monitoring', 'prometheus')!.spec as { replicas: number }).replicas, 3);

  // create -f of a CRD and a custom resource.
  const file = join(dir, 'crd.json');
  writeFileSync(file, JSON.stringify({ ...widgetCRD, metadata: { name: 'gizmos.demo.panoptes.io' }, spec: { ...(widgetCRD.spec as object), names: { plural: 'gizmos', singular: 'gizmo', kind: 'Gizmo' } } }));
  t.equal((await k('create', '-f', file)).code, 0);
  const cr = join(dir, 'cr.json');
  writeFileSync(cr, JSON.stringify({ apiVersion: 'demo.panoptes.io/v1', kind: 'Gizmo', metadata: { name: 'g1', namespace: 'play' }, spec: { replicas: 1 } }));
  const made = await k('create', '-f', cr);
  t.equal(made.code, 0, made.stderr);
  t.equal((await k('-n', 'play', 'scale', 'gizmo', 'g1', '--replicas=2')).code, 0);
  t.match((await k('-n', 'play', 'get', 'gizmo', 'g1', '-o', 'jsonpath={.spec.replicas}')).stdout, '2');

  t.equal((await k('-n', 'play', 'delete', 'configmap', 'cfg')).code, 0);
  const gone = await k('-n', 'play', 'get', 'configmap', 'cfg');
  t.not(gone.code, 0);
  t.match(gone.stderr, /NotFound|not found/);
  t.equal((await k('-n', 'shop', 'delete', 'deployment', 'checkout')).code, 0);
  t.equal(c.store.list('/pods', { namespace: 'shop' }).items.filter((p) => p.metadata.name!.startsWith('checkout-')).length, 0, 'dependents collected');
  t.equal((await k('delete', 'namespace', 'play')).code, 0);
  t.equal(c.store.count('demo.panoptes.io/gizmos'), 0, 'namespace contents deleted');
});

t.test('kubectl get -w: initial objects, changes, and a dropped watch ends it', async (t) => {
  const c = await simCluster(t);
  const dir = tempDir(t);
  await kubectl(c, dir, ['create', 'configmap', 'first']);
  const w = kubectlStream(c, dir, ['get', 'configmaps', '-w', '-o', 'name', '--field-selector', 'metadata.name!=kube-root-ca.crt']);
  t.teardown(() => w.kill());
  t.ok(await w.waitFor((l) => l.includes('configmap/first')), 'initial object');
  await sleep(200);
  await kubectl(c, dir, ['create', 'configmap', 'second']);
  t.ok(await w.waitFor((l) => l.includes('configmap/second')), `new object seen: ${w.lines.join(',')}`);
  t.equal(c.faults.dropWatches(), 1);
  const code = await Promise.race([w.exited, sleep(10_000).then(() => -99)]);
  t.not(code, -99, 'kubectl noticed the dropped watch and exited');
});

t.test('kubectl get prints the server-side Table columns: -A, -o wide, by name, -w, custom resources', async (t) => {
  const c = await simCluster(t, { workload: true });
  const dir = tempDir(t);
  const k = (...args: string[]) => kubectl(c, dir, args);
  const header = (out: string) => out.split('\n')[0].trim().split(/\s{2,}/);

  const pods = await k('get', 'pods', '-A');
  t.equal(pods.code, 0, pods.stderr);
  t.same(header(pods.stdout), ['NAMESPACE', 'NAME', 'READY', 'STATUS', 'RESTARTS', 'AGE'], 'no CLUSTER column from one cluster');
  t.match(pods.stdout, /\nshop\s+frontend-\S+\s+1\/1\s+Running\s+0\s+\d+s\n/);
  t.match(pods.stdout, /\nbatch\s+nightly-report-\S+\s+1\/1\s+Succeeded\s+0\s+/);
  const wide = await k('get', 'pods', '-n', 'shop', '-o', 'wide');
  t.same(header(wide.stdout), ['NAME', 'READY', 'STATUS', 'RESTARTS', 'AGE', 'IP', 'NODE', 'NOMINATED NODE', 'READINESS GATES']);
  t.match(wide.stdout, /\nfrontend-\S+\s+1\/1\s+Running\s+0\s+\d+s\s+10\.\d+\.\d+\.\d+\s+test-node-\d\s+<none>\s+<none>\n/);
  const one = await k('get', 'deploy', 'frontend', '-n', 'shop');
  t.same(header(one.stdout), ['NAME', 'READY', 'UP-TO-DATE', 'AVAILABLE', 'AGE']);
  t.match(one.stdout, /\nfrontend\s+3\/3\s+3\s+3\s+\d+s\n$/);
  const widgets = await k('get', 'widgets', '-A');
  t.same(header(widgets.stdout), ['NAMESPACE', 'NAME', 'COLOR'], 'the CRD printer columns');
  t.match(widgets.stdout, /\nshop\s+cog\s+green\n/);
  const nodes = await k('get', 'nodes');
  t.same(header(nodes.stdout), ['NAME', 'STATUS', 'ROLES', 'AGE', 'VERSION']);

  const w = kubectlStream(c, dir, ['get', 'deploy', '-n', 'shop', '-w']);
  t.teardown(() => w.kill());
  t.ok(await w.waitFor((l) => l.some((x) => /^frontend\s+3\/3\s/.test(x))), `initial rows: ${w.lines.join(' | ')} ${w.stderr()}`);
  t.same(header(w.lines[0]), ['NAME', 'READY', 'UP-TO-DATE', 'AVAILABLE', 'AGE']);
  await sleep(200);
  t.equal((await k('-n', 'shop', 'scale', 'deploy', 'frontend', '--replicas=5')).code, 0);
  t.ok(await w.waitFor((l) => l.some((x) => /^frontend\s+3\/5\s+3\s+3\s+\d+s$/.test(x))), `the change printed with the server-side columns: ${w.lines.join(' | ')}`);
  const named = kubectlStream(c, dir, ['get', 'pods', '-n', 'shop', pods.stdout.match(/shop\s+(frontend-\S+)/)![1], '-w']);
  t.teardown(() => named.kill());
  t.ok(await named.waitFor((l) => l.length >= 2 && /READY\s+STATUS/.test(l[0])), `get NAME -w: ${named.lines.join(' | ')} ${named.stderr()}`);
});

t.test('faults seen by kubectl: refused, 503, latency', async (t) => {
  const c = await simCluster(t);
  const dir = tempDir(t);
  const port = c.port;
  await c.faults.down({ mode: 'refuse' });
  const refused = await kubectl(c, dir, ['get', 'ns', '--request-timeout=3s']);
  t.not(refused.code, 0);
  t.match(refused.stderr, /refused/);
  await c.faults.up();
  t.equal(c.port, port, 'same port');
  t.equal((await kubectl(c, dir, ['get', 'ns'])).code, 0);

  await c.faults.down({ mode: 'unavailable', forMs: 60_000 });
  const unavailable = await get(`${c.url}/api/v1/namespaces`);
  t.match(unavailable.json, { code: 503, reason: 'ServiceUnavailable' });
  const r = await kubectl(c, dir, ['get', 'ns', '--request-timeout=5s']);
  t.not(r.code, 0);
  await c.faults.up();

  c.faults.setLatency(300);
  const start = Date.now();
  t.equal((await kubectl(c, dir, ['get', 'ns', 'default'])).code, 0);
  t.ok(Date.now() - start >= 300, 'answers are delayed');
  c.faults.setLatency(0);
});
