// exec, attach, cp, port-forward and logs with the real kubectl through Panoptes to simulated
// members, in the development mode (plain HTTP) and the aggregated mode (TLS behind
// kube-aggregator's stand-in, which names the user): output and exit codes come back,
// stdin goes in, the member sees the user (impersonation), its RBAC refuses what the user may
// not do, a client that goes away closes the member's stream, a member that is away is a 503
// with Retry-After at once, and the all-clusters view answers 405 naming the one-cluster URL.
// (Panoptes answers /version as v1.32: kubectl speaks WebSocket to it first.)
import { request } from 'node:http';
import { readFileSync, mkdirSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { until } from '../../hack/sim/testutil.ts';
import { echoThrough, forwardedPort, runKubectl, startKubectl } from '../../hack/testing/kubectl.ts';
import { resourcesPath, startProxyFleet } from '../../hack/testing/proxy-fleet.ts';
import { setLogLevel } from '../../lib/log.ts';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');

/** A raw upgrade request; resolves with the status, headers and body of a refusal (or 101). */
function upgradeRequest(url: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: { Connection: 'Upgrade', Upgrade: 'SPDY/3.1', 'X-Stream-Protocol-Version': 'v4.channel.k8s.io', ...headers }, timeout: 10_000 });
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode ?? 0, headers: res.headers, body: '' });
    });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('timeout', () => req.destroy(new Error('no answer within 10 s')));
    req.on('error', reject);
    req.end();
  });
}

function tempDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'panoptes-streams-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

for (const mode of ['plain', 'aggregated'] as const) {
  t.test(`kubectl through Panoptes (${mode})`, async (t) => {
    const dir = tempDir(t);
    // mallory may not use the proxy at all (Panoptes' own review on clusters/proxy).
    const fleet = await startProxyFleet({ mode, names: ['east', 'west'], dir, policy: (s) => (s.user === 'mallory' && s.resourceAttributes?.subresource === 'proxy' ? 'no proxy for mallory' : true) });
    t.teardown(() => fleet.close());
    const east = fleet.sims[0];
    const target = { server: await fleet.clusterServer('east'), cacheDir: join(dir, 'cache') };
    const k = (args: string[], stdin?: string) => runKubectl(target, args, { stdin });
    const P = east.store.list('/pods', { namespace: 'kube-system' }).items.find((p) => p.metadata.name!.startsWith('coredns-'))!.metadata.name!;
    const ns = ['-n', 'kube-system'];

    await t.test('exec: output, stderr, exit codes, stdin; the member saw the user', async (t) => {
      const hello = await k([...ns, 'exec', P, '--', 'echo', 'hello']);
      t.same([hello.code, hello.stdout], [0, 'hello\n'], hello.stderr);
      const three = await k([...ns, 'exec', P, '--', 'sh', '-c', 'echo out; echo err >&2; exit 3']);
      t.equal(three.code, 3, 'kubectl exits with the command exit code');
      t.equal(three.stdout, 'out\n');
      t.match(three.stderr, 'err\n');
      const interactive = await k([...ns, 'exec', '-i', P, '--', 'sh'], 'hostname\ncat /etc/os-release | cat\nexit 4\n');
      t.equal(interactive.code, 4, interactive.stderr);
      t.match(interactive.stdout, `${P}\nNAME="Panoptes simulated container"`);
      const last = east.streams.started.at(-1)!;
      t.equal(last.transport, 'websocket', 'kubectl 1.32 spoke WebSocket through the proxy');
      t.match(east.auth.impersonations.at(-1), { caller: 'panoptes', user: 'alice' }, 'the member saw the user, impersonated by Panoptes');
    });

    await t.test('attach, cp both ways, port-forward', async (t) => {
      const attach = await k([...ns, 'attach', '-i', P], 'one\ntwo\n');
      t.equal(attach.code, 0, attach.stderr);
      t.match(attach.stdout, 'one\ntwo\n');
      const local = join(dir, 'up');
      mkdirSync(local, { recursive: true });
      writeFileSync(join(local, 'a.txt'), 'alpha\n');
      writeFileSync(join(local, 'big.bin'), Buffer.alloc(300_000, 9));
      const up = await k([...ns, 'cp', local, `${P}:/tmp/up`]);
      t.equal(up.code, 0, up.stderr);
      const down = await k([...ns, 'cp', `${P}:/tmp/up`, join(dir, 'down')]);
      t.equal(down.code, 0, down.stderr);
      t.equal(readFileSync(join(dir, 'down', 'a.txt'), 'utf8'), 'alpha\n');
      t.same(readFileSync(join(dir, 'down', 'big.bin')), Buffer.alloc(300_000, 9), '300 KB there and back');
      const pf = startKubectl(target, [...ns, 'port-forward', `pod/${P}`, ':8080']);
      t.teardown(() => pf.kill('SIGKILL'));
      const port = await forwardedPort(pf);
      t.equal(await echoThrough(port, 'through panoptes'), 'through panoptes');
      t.equal(await echoThrough(port, 'y'.repeat(200_000)), 'y'.repeat(200_000));
      pf.kill();
      await pf.exited;
      t.ok(east.streams.started.some((s) => s.kind === 'portforward' && s.transport === 'spdy-in-websocket'), 'port-forward tunnelled SPDY in WebSocket');
    });

    await t.test('SPDY/3.1 too (kubectl with WebSockets off, as older kubectls speak)', async (t) => {
      const env = { KUBECTL_REMOTE_COMMAND_WEBSOCKETS: 'false', KUBECTL_PORT_FORWARD_WEBSOCKETS: 'false' };
      const five = await runKubectl(target, [...ns, 'exec', '-i', P, '--', 'sh', '-c', 'cat; exit 5'], { stdin: 'over spdy\n', env });
      t.same([five.code, five.stdout], [5, 'over spdy\n'], five.stderr);
      t.equal(east.streams.started.at(-1)!.transport, 'spdy');
      const pf = startKubectl(target, [...ns, 'port-forward', `pod/${P}`, ':8080'], { env });
      t.teardown(() => pf.kill('SIGKILL'));
      const port = await forwardedPort(pf);
      t.equal(await echoThrough(port, 'spdy forward'), 'spdy forward');
      pf.kill();
      await pf.exited;
      t.equal(east.streams.started.at(-1)!.transport, 'spdy');
    });

    await t.test('logs, -f, --previous, --tail', async (t) => {
      const tail = await k([...ns, 'logs', P, '--tail', '2']);
      t.equal(tail.code, 0, tail.stderr);
      t.equal(tail.stdout.trim().split('\n').length, 2);
      const prev = await k([...ns, 'logs', P, '--previous']);
      t.not(prev.code, 0);
      t.match(prev.stderr, 'previous terminated container "coredns"');
      const f = startKubectl(target, [...ns, 'logs', '-f', P, '--tail', '1']);
      t.teardown(() => f.kill('SIGKILL'));
      t.ok(await f.waitFor((s) => s.split('\n').filter(Boolean).length >= 4), 'follow streams new lines');
      f.kill();
      await f.exited;
    });

    await t.test('by deployment, as the quick start shows them', async (t) => {
      const logs = await k(['-n', 'shop', 'logs', 'deploy/frontend', '--tail', '1']);
      t.equal(logs.code, 0, logs.stderr);
      t.match(logs.stdout, /^frontend \d+: GET \/healthz 200 frontend-/);
      const host = await k(['-n', 'shop', 'exec', 'deploy/frontend', '--', 'hostname']);
      t.equal(host.code, 0, host.stderr);
      t.match(host.stdout, /^frontend-/);
    });

    await t.test('a client that goes away closes the member stream', async (t) => {
      const before = east.streams.open.size;
      const sh = startKubectl(target, [...ns, 'exec', '-i', P, '--', 'sh'], { stdin: 'pipe' });
      t.teardown(() => sh.kill('SIGKILL'));
      t.ok(await until(() => east.streams.open.size === before + 1, 10_000), 'the member has the session');
      t.ok(fleet.api.streams.open >= 1, 'the proxy holds the stream');
      sh.kill('SIGKILL');
      await sh.exited;
      t.ok(await until(() => east.streams.open.size === before, 10_000), 'the member session closed with the client');
      t.ok(await until(() => fleet.api.streams.open === 0, 10_000), 'and the proxy let go of it');
    });

    await t.test('refusals: member RBAC, all-clusters view, unknown and away members', async (t) => {
      const asBob = { server: await fleet.clusterServer('east', 'bob'), cacheDir: join(dir, 'cache-bob') };
      if (mode === 'aggregated') {
        const refused = await runKubectl(asBob, [...ns, 'exec', P, '--', 'true']);
        t.not(refused.code, 0);
        t.match(refused.stderr, /forbidden: User "bob" cannot create resource "pods\/exec"/, 'the member refused bob');
        const mallory = await fleet.base('mallory');
        const denied = await upgradeRequest(`${mallory}${resourcesPath}/clusters/east/api/v1/namespaces/kube-system/pods/${P}/exec?command=true&stdout=true`);
        t.equal(denied.status, 403, denied.body);
        t.match(JSON.parse(denied.body).message, 'clusters.panoptes.io "east" is forbidden: User "mallory" cannot create resource "clusters/proxy"');
        const probe = await upgradeRequest(`${mallory}${resourcesPath}/clusters/nowhere/api/v1/namespaces/kube-system/pods/${P}/exec?command=true&stdout=true`);
        t.equal(probe.status, 403, 'an unknown cluster is not revealed to who may not use the proxy');
      }
      const base = await fleet.base();
      const all = await upgradeRequest(`${base}${resourcesPath}/api/v1/namespaces/kube-system/pods/${P}/exec?command=true&stdout=true`);
      t.equal(all.status, 405, all.body);
      t.match(JSON.parse(all.body).message, `${resourcesPath}/clusters/<cluster>/api/v1/namespaces/kube-system/pods/${P}/exec`);
      const unknown = await upgradeRequest(`${base}${resourcesPath}/clusters/nowhere/api/v1/namespaces/kube-system/pods/${P}/exec?command=true&stdout=true`);
      t.equal(unknown.status, 404, unknown.body);
      await fleet.sims[1].close(); // west is gone; synchro has not noticed yet
      const started = Date.now();
      const away = await upgradeRequest(`${base}${resourcesPath}/clusters/west/api/v1/namespaces/kube-system/pods/x/exec?command=true&stdout=true`);
      // Answered, not left hanging: upgradeRequest gives up after 10 s (an upgrade has no deadline).
      t.equal(away.status, 503, `${away.body} (in ${Date.now() - started} ms)`);
      t.ok(Number(away.headers['retry-after']) > 0, 'with Retry-After');
    });
  });
}
