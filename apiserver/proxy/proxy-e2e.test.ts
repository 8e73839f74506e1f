// End to end: everyday kubectl against one member through Panoptes, the real kubectl, in the
// plain-HTTP development mode (`panoptes all-in-one` as a process, the proxy's user named by
// --insecure-proxy-user) and the TLS aggregated mode (Panoptes behind a stand-in for
// kube-apiserver's aggregator: front-proxy client certificate, X-Remote-User, HTTP/2; a fake
// host cluster answering SubjectAccessReviews). In both: scale, apply (client-side and
// --server-side), edit (EDITOR), create, delete, top pods, auth can-i; a write the member's
// RBAC refuses to that user is refused; each write reaches a watch through Panoptes.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { Registry } from 'prom-client';
import { stringify } from 'yaml';
import { makeCertSet } from '../../hack/certs.ts';
import { freePort } from '../../storage/testing/postgres.ts';
import { impersonatorRules, readVerbs } from '../../hack/sim/auth.ts';
import { startSimCluster, type SimCluster } from '../../hack/sim/cluster.ts';
import { get, tempDir } from '../../hack/sim/testutil.ts';
import { startAggregatorProxy } from '../../hack/testing/aggregator-proxy.ts';
import { authenticationConfigMap, startFakeHost } from '../../hack/testing/fakehost.ts';
import { logger, setLogLevel } from '../../lib/log.ts';
import { MemberNetworks } from '../../member/networks.ts';
import { emptyStorageUrl, openTestStore } from '../../storage/testing.ts';
import { SynchroMetrics } from '../../synchro/metrics/metrics.ts';
import { startSynchro } from '../../synchro/synchro.ts';
import { proxyCredentials } from '../../cli/commands/proxy-credentials.ts';
import { secureServingFromFlags } from '../auth/config.ts';
import { createApiserver } from '../server.ts';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');

const bin = new URL('../../bin/panoptes.mjs', import.meta.url).pathname;
const P = '/apis/panoptes.io/v1alpha1/resources';
const TOKEN = 'panoptes-proxy-e2e-token';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

async function until(what: string, fn: () => Promise<boolean> | boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await Promise.resolve(fn()).catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** A member whose RBAC lets Panoptes impersonate and lets `user` write in namespace shop (and read everywhere). */
async function member(t: Test, user: string): Promise<SimCluster> {
  const east = await startSimCluster({ name: 'east', workload: true });
  t.teardown(() => east.close());
  east.auth.grant(TOKEN, { name: 'panoptes', rules: [...impersonatorRules, { verbs: readVerbs }] });
  east.auth.grant(`${user}-own-token`, { name: user, rules: [{ verbs: ['*'], namespaces: ['shop'] }, { verbs: readVerbs }] });
  return east;
}

function kubectlAt(server: string, dir: string) {
  const cache = join(dir, 'cache');
  const run = (args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 60_000): Promise<Run> =>
    new Promise((resolve) => {
      execFile('kubectl', ['--server', server, '--kubeconfig', '/dev/null', '--cache-dir', cache, ...args], { timeout: timeoutMs, env: { ...process.env, ...env } }, (err, stdout, stderr) => {
        resolve({ code: err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0, stdout, stderr });
      });
    });
  const watch = (args: string[]) => {
    const p: ChildProcess = spawn('kubectl', ['--server', server, '--kubeconfig', '/dev/null', '--cache-dir', cache, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    const lines: string[] = [];
    let buf = '';
    p.stdout!.setEncoding('utf8').on('data', (d: string) => {
      buf += d;
      const parts = buf.split('\n');
      buf = parts.pop() ?? '';
      lines.push(...parts.filter((l) => l.trim()));
    });
    return { lines, kill: () => p.kill('SIGKILL') };
  };
  return { run, watch };
}

/** The everyday kubectl session against cluster east through Panoptes (`server`: the one-cluster URL), as `user`. */
async function everydayKubectl(t: Test, east: SimCluster, server: string, user: string, dir: string): Promise<void> {
  const k = kubectlAt(server, dir);
  const cms = () => east.store.list('/configmaps', { namespace: 'shop' }).items;
  const cm = (name: string) => cms().find((o) => o.metadata.name === name);
  const watch = k.watch(['get', 'configmaps', '-n', 'shop', '-w', '--output-watch-events', '-o', 'custom-columns=EVENT:.type,NAME:.object.metadata.name,V:.object.data.v']);
  t.teardown(() => watch.kill());
  const seen = (line: RegExp, what: string) => until(`${what} in the watch through Panoptes`, () => watch.lines.some((l) => line.test(l))).then(() => t.pass(`${what}: seen by a watch through Panoptes`));
  await until('the watch lists', () => watch.lines.some((l) => /kube-root-ca/.test(l)));

  await t.test('scale', async (t) => {
    const r = await k.run(['scale', 'deployment', 'frontend', '-n', 'shop', '--replicas=5']);
    t.equal(r.code, 0, r.stderr);
    t.match(r.stdout, /deployment.apps\/frontend scaled/);
    t.equal((east.crud.get(east.registry.lookup('apps', 'v1', 'deployments')!, 'shop', 'frontend').spec as { replicas: number }).replicas, 5, 'in the member');
  });

  await t.test('apply, client-side: create, then configure', async (t) => {
    const file = join(dir, 'cfg.yaml');
    writeFileSync(file, stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cfg', namespace: 'shop' }, data: { v: 'one' } }));
    const a = await k.run(['apply', '-f', file]);
    t.equal(a.code, 0, a.stderr);
    t.match(a.stdout, /configmap\/cfg created/);
    await seen(/^ADDED\s+cfg\s+one/, 'created');
    writeFileSync(file, stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cfg', namespace: 'shop' }, data: { v: 'two' } }));
    await until('cfg stored by Panoptes', async () => (await k.run(['get', 'configmap', 'cfg', '-n', 'shop'])).code === 0);
    const b = await k.run(['apply', '-f', file]);
    t.equal(b.code, 0, b.stderr);
    t.match(b.stdout, /configmap\/cfg configured/);
    t.same(cm('cfg')?.data, { v: 'two' });
    await seen(/^MODIFIED\s+cfg\s+two/, 'configured');
  });

  await t.test('apply --server-side', async (t) => {
    const file = join(dir, 'ssa.yaml');
    writeFileSync(file, stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ssa', namespace: 'shop' }, data: { v: 'ssa' } }));
    const a = await k.run(['apply', '--server-side', '-f', file]);
    t.equal(a.code, 0, a.stderr);
    t.match(a.stdout, /configmap\/ssa serverside-applied/);
    t.same(cm('ssa')?.data, { v: 'ssa' });
    await seen(/^ADDED\s+ssa\s+ssa/, 'server-side applied');
  });

  await t.test('edit through EDITOR', async (t) => {
    const editor = join(dir, 'editor.sh');
    writeFileSync(editor, '#!/bin/sh\nsed -i "s/v: two/v: edited/" "$1"\n');
    chmodSync(editor, 0o755);
    const e = await k.run(['edit', 'configmap', 'cfg', '-n', 'shop'], { EDITOR: editor, KUBE_EDITOR: editor });
    t.equal(e.code, 0, e.stderr);
    t.match(e.stdout, /configmap\/cfg edited/);
    t.same(cm('cfg')?.data, { v: 'edited' });
    await seen(/^MODIFIED\s+cfg\s+edited/, 'edited');
  });

  await t.test('create, then delete', async (t) => {
    const c = await k.run(['create', 'configmap', 'made', '-n', 'shop', '--from-literal=v=made']);
    t.equal(c.code, 0, c.stderr);
    t.ok(cm('made'));
    await seen(/^ADDED\s+made\s+made/, 'created');
    const d = await k.run(['delete', 'configmap', 'made', '-n', 'shop']);
    t.equal(d.code, 0, d.stderr);
    t.match(d.stdout, /configmap "made" deleted/);
    t.notOk(cm('made'), 'gone from the member');
    await seen(/^DELETED\s+made/, 'deleted');
  });

  await t.test('top pods', async (t) => {
    const r = await k.run(['top', 'pods', '-n', 'shop']);
    t.equal(r.code, 0, r.stderr);
    t.match(r.stdout, /^NAME\s+CPU\(cores\)\s+MEMORY\(bytes\)/);
    t.match(r.stdout, /frontend-\S+\s+\d+m\s+\d+Mi/);
  });

  await t.test('auth can-i answers for the member, as the user', async (t) => {
    const yes = await k.run(['auth', 'can-i', 'delete', 'pods', '-n', 'shop']);
    t.equal(yes.stdout.trim(), 'yes', yes.stderr);
    const no = await k.run(['auth', 'can-i', 'delete', 'pods', '-n', 'kube-system']);
    t.equal(no.stdout.trim(), 'no', no.stderr);
  });

  await t.test("a write the member's RBAC refuses to the user is refused", async (t) => {
    const r = await k.run(['create', 'configmap', 'nope', '-n', 'kube-system', '--from-literal=a=b']);
    t.not(r.code, 0);
    t.match(r.stderr, new RegExp(`configmaps is forbidden: User "${user}" cannot create resource "configmaps" in API group "" in the namespace "kube-system"`));
    t.ok(east.auth.impersonations.length > 0 && east.auth.impersonations.every((i) => i.user === user && i.caller === 'panoptes'), 'every request reached the member as the user, through Panoptes\' identity');
  });
}

t.test('development mode: all-in-one, plain HTTP, the proxy user named by flag', async (t) => {
  const dir = tempDir(t);
  const east = await member(t, 'dev');
  const clusters = join(dir, 'clusters.yaml');
  writeFileSync(clusters, stringify({ clusters: [{ name: 'east', server: east.url, token: TOKEN, resources: ['*'] }] }));
  const { url: storage, cleanup } = await emptyStorageUrl('sqlite');
  t.teardown(cleanup);
  const port = await freePort();
  const proc = spawn(process.execPath, [bin, 'all-in-one', '--storage', storage, '--clusters', clusters, '--insecure-listen', `127.0.0.1:${port}`, '--insecure-proxy-user', 'dev:devs', '--probe-interval', '500ms', '--log-level', 'warn'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  proc.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-20_000)));
  const exited = new Promise<void>((r) => proc.on('exit', () => r()));
  t.teardown(async () => {
    if (proc.exitCode === null) proc.kill('SIGTERM');
    const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  });
  const base = `http://127.0.0.1:${port}`;
  await until('east Ready and synced', async () => (await get(`${base}/apis/panoptes.io/v1alpha1/clusters/east`)).json?.status?.ready === true && (await get(`${base}${P}/clusters/east/api/v1/namespaces/shop/configmaps`)).json?.items?.length > 0, 60_000).catch((err: Error) => {
    throw new Error(`${err.message}; stderr: ${stderr}`);
  });
  await everydayKubectl(t, east, `${base}${P}/clusters/east`, 'dev', dir);
  t.same(east.auth.impersonations.at(-1)?.groups, ['devs'], 'the flag\'s groups');
});

t.test('TLS aggregated mode: behind the aggregator, as the front proxy\'s user', async (t) => {
  const dir = tempDir(t);
  const east = await member(t, 'alice');
  const clusters = join(dir, 'clusters.yaml');
  writeFileSync(clusters, stringify({ clusters: [{ name: 'east', server: east.url, token: TOKEN, resources: ['*'] }] }));
  const certs = makeCertSet(['127.0.0.1', 'localhost']);
  const host = await startFakeHost({ configMap: authenticationConfigMap(certs), tokens: {}, policy: () => true });
  t.teardown(() => host.close());
  const { store, close } = await openTestStore('sqlite');
  const log = logger('test');
  const synchro = await startSynchro({ store, clustersFile: clusters, metrics: new SynchroMetrics(new Registry()), timings: { probeIntervalMs: 500 }, mcs: false, log });
  const secure = await secureServingFromFlags({ 'bind-address': '127.0.0.1', 'secure-port': '0' }, log, { authnClient: host.client(), authzClient: host.client() });
  const api = await createApiserver({ store, secure, log, catalogOptions: { refreshMs: 200 }, proxy: { credentials: proxyCredentials({ store, clustersFile: clusters, networks: new MemberNetworks(), log }) } });
  const target = await api.listen('127.0.0.1', 0);
  const aggregator = await startAggregatorProxy({ target, tls: { ca: secure.tls.certificate, cert: certs.frontProxyClient.cert, key: certs.frontProxyClient.key }, user: { name: 'alice', groups: ['devs'] } });
  t.teardown(async () => {
    await aggregator.close();
    await api.close();
    secure.stop();
    await synchro.stop();
    await close();
  });
  t.ok(await synchro.waitForInitialSync(60_000), 'synced');
  await until('east Ready', async () => api.deps.catalog.cluster('east')?.status.ready === true);
  await everydayKubectl(t, east, `${aggregator.url}${P}/clusters/east`, 'alice', dir);
  t.same(east.auth.impersonations.at(-1)?.groups, ['devs', 'system:authenticated'], "the front proxy's groups");
  t.ok(host.sars().some((s) => s.user === 'alice' && s.resourceAttributes?.subresource === 'proxy' && s.resourceAttributes.name === 'east' && s.resourceAttributes.verb === 'patch'), 'Panoptes reviewed clusters/proxy');
});
