// Members that serve HTTPS with HTTP/2, as a kube-apiserver, with --member-http2 on: synchro
// syncs a member (discovery, lists, watches, probes) over one TLS connection; the proxy's
// reads, writes and log follow go over one HTTP/2 connection of its own; exec (an upgrade,
// which HTTP/2 does not have) still works over HTTP/1.1 to the same member; with
// --member-http2=false everything is HTTP/1.1 as before.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { runKubectl, startKubectl } from '../../hack/testing/kubectl.ts';
import { resourcesPath, startProxyFleet } from '../../hack/testing/proxy-fleet.ts';
import { setLogLevel } from '../../lib/log.ts';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');

function tempDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'panoptes-h2-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

t.test('HTTP/2 members: synchro on one connection; proxy reads, writes, log follow on h2; exec over HTTP/1.1', async (t) => {
  const dir = tempDir(t);
  const fleet = await startProxyFleet({ mode: 'plain', names: ['east'], dir, logIntervalMs: 50, memberTls: { http2: true } });
  t.teardown(() => fleet.close());
  const east = fleet.sims[0];
  t.same(east.tlsConnections, ['h2'], 'synchro synced the member over one HTTP/2 connection');

  // Watches keep flowing over it: a pod created in the member shows up in Panoptes.
  const target = { server: await fleet.clusterServer('east'), cacheDir: join(dir, 'cache') };
  const k = (args: string[], stdin?: string) => runKubectl(target, args, { stdin });
  const created = await k(['-n', 'default', 'create', 'configmap', 'through-h2', '--from-literal=a=1']);
  t.equal(created.code, 0, `a write through the proxy: ${created.stderr}`);
  const P = east.store.list('/pods', { namespace: 'kube-system' }).items.find((p) => p.metadata.name!.startsWith('coredns-'))!.metadata.name!;
  const read = await runKubectl({ server: await fleet.base(), cacheDir: join(dir, 'cache') }, ['get', '--raw', `${resourcesPath}/clusters/east/api/v1/namespaces/kube-system/pods/${P}/status`]);
  t.same([read.code, read.code === 0 && (JSON.parse(read.stdout) as { metadata: { name: string } }).metadata.name], [0, P], `a read through the proxy (a subresource: from the member): ${read.stderr}`);
  const f = startKubectl(target, ['-n', 'kube-system', 'logs', '-f', P, '--tail', '1']);
  t.teardown(() => f.kill('SIGKILL'));
  t.ok(await f.waitFor((s) => s.split('\n').filter(Boolean).length >= 4, 10_000), 'log follow streams new lines');
  f.kill();
  await f.exited;
  t.same(east.tlsConnections, ['h2', 'h2'], "the proxy's requests shared one HTTP/2 connection of their own");

  const hello = await k(['-n', 'kube-system', 'exec', P, '--', 'echo', 'hello']);
  t.same([hello.code, hello.stdout], [0, 'hello\n'], `exec: ${hello.stderr}`);
  t.equal(east.tlsConnections.length, 3, 'exec opened its own connection');
  t.not(east.tlsConnections[2], 'h2', 'exec went over HTTP/1.1 (an upgrade)');

  // synchro's watches keep flowing over its session: a namespace created in the member is
  // served from storage (namespaces are synced: reads of them do not go to the member).
  east.crud.create(east.registry.lookup('', 'v1', 'namespaces')!, 'v1', undefined, { metadata: { name: 'synced-late' } });
  let synced = false;
  for (const deadline = Date.now() + 10_000; !synced && Date.now() < deadline; await new Promise((r) => setTimeout(r, 200))) {
    synced = (await k(['get', 'namespace', 'synced-late', '-o', 'name'])).code === 0;
  }
  t.ok(synced, 'a change in the member reached storage through the watch');
  t.equal(east.tlsConnections.filter((p) => p === 'h2').length, 2, 'still two HTTP/2 connections');
});

t.test('--member-http2=false: HTTP/1.1 to the same members', async (t) => {
  const dir = tempDir(t);
  const fleet = await startProxyFleet({ mode: 'plain', names: ['east'], dir, memberTls: { http2: false } });
  t.teardown(() => fleet.close());
  const east = fleet.sims[0];
  const target = { server: await fleet.clusterServer('east'), cacheDir: join(dir, 'cache') };
  const read = await runKubectl(target, ['-n', 'kube-system', 'get', 'pods', '-o', 'name']);
  t.equal(read.code, 0, read.stderr);
  t.ok(east.tlsConnections.length > 1, `several connections (${east.tlsConnections.length})`);
  t.notOk(east.tlsConnections.includes('h2'), 'none of them HTTP/2');
});
