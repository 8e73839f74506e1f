// The simulated cluster's streaming subresources with the real kubectl, straight to the
// member: logs (tail, follow, previous, timestamps), exec (stdin, exit codes), attach, cp
// both ways and port-forward. (kubectl on PATH may pick its version from the server's: the
// simulated v1.28 gets SPDY for exec and port-forward, so SPDY is what this proves; the
// WebSocket transports are proved through Panoptes, which answers v1.32.)
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { echoThrough, forwardedPort, runKubectl, startKubectl } from '../../testing/kubectl.ts';
import { simCluster, tempDir, until } from '../testutil.ts';

t.test('kubectl logs, exec, attach, cp and port-forward against a simulated cluster', async (t) => {
  const c = await simCluster(t, { workload: true });
  c.streams.logIntervalMs = 100;
  const dir = tempDir(t);
  const target = { server: c.url, cacheDir: dir };
  const k = (args: string[], stdin?: string) => runKubectl(target, args, { stdin });
  const pod = c.store.list('/pods', { namespace: 'kube-system' }).items.find((p) => p.metadata.name!.startsWith('coredns-'))!;
  const P = pod.metadata.name!;
  const ns = ['-n', 'kube-system'];

  // logs (a line every 100 ms since the container started: at least 5 by now)
  await new Promise((r) => setTimeout(r, 500));
  const tail = await k([...ns, 'logs', P, '--tail', '3', '--timestamps']);
  t.equal(tail.code, 0, tail.stderr);
  const lines = tail.stdout.trim().split('\n');
  t.equal(lines.length, 3, tail.stdout);
  t.match(lines[2], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z coredns \d+: GET \/healthz 200 coredns-/);
  const prev = await k([...ns, 'logs', P, '--previous']);
  t.not(prev.code, 0);
  t.match(prev.stderr, `previous terminated container "coredns" in pod "${P}" not found`);
  const follow = startKubectl(target, [...ns, 'logs', '-f', P, '--tail', '1']);
  t.ok(await follow.waitFor((s) => s.split('\n').filter(Boolean).length >= 4), 'follow keeps writing new lines');
  follow.kill();
  await follow.exited;

  // exec: output, stderr, exit codes, stdin
  const hello = await k([...ns, 'exec', P, '--', 'echo', 'hello', 'world']);
  t.same([hello.code, hello.stdout], [0, 'hello world\n'], hello.stderr);
  const three = await k([...ns, 'exec', P, '--', 'sh', '-c', 'echo out; echo err >&2; exit 3']);
  t.equal(three.code, 3, 'the exit code propagates');
  t.equal(three.stdout, 'out\n');
  t.match(three.stderr, /err\n/);
  const interactive = await k([...ns, 'exec', '-i', P, '--', 'sh'], 'hostname\necho "$HOSTNAME" | cat\ncat /etc/hostname\nexit 7\n');
  t.equal(interactive.code, 7, interactive.stderr);
  t.equal(interactive.stdout, `${P}\n${P}\n${P}\n`);
  const env = await k([...ns, 'exec', P, '--', 'env']);
  t.match(env.stdout, `HOSTNAME=${P}\n`);
  const missing = await k([...ns, 'exec', P, '-c', 'nope', '--', 'true']);
  t.not(missing.code, 0);
  t.match(missing.stderr, /container nope is not valid for pod|container nope not found/);

  // attach: the main process echoes stdin
  const attach = await k([...ns, 'attach', '-i', P], 'one\ntwo\n');
  t.equal(attach.code, 0, attach.stderr);
  t.match(attach.stdout, 'one\ntwo\n');

  // cp both ways
  const local = join(dir, 'up');
  mkdirSync(local);
  writeFileSync(join(local, 'a.txt'), 'alpha\n');
  writeFileSync(join(local, 'b.bin'), Buffer.alloc(70_000, 7));
  const up = await k([...ns, 'cp', local, `${P}:/tmp/up`]);
  t.equal(up.code, 0, up.stderr);
  t.equal((await k([...ns, 'exec', P, '--', 'cat', '/tmp/up/a.txt'])).stdout, 'alpha\n');
  const down = await k([...ns, 'cp', `${P}:/tmp/up`, join(dir, 'down')]);
  t.equal(down.code, 0, down.stderr);
  t.equal(readFileSync(join(dir, 'down', 'a.txt'), 'utf8'), 'alpha\n');
  t.same(readFileSync(join(dir, 'down', 'b.bin')), Buffer.alloc(70_000, 7), 'a 70 KB file comes back whole');

  // port-forward to the pod's declared port, echoed
  const pf = startKubectl(target, [...ns, 'port-forward', `pod/${P}`, ':8080']);
  t.teardown(() => pf.kill('SIGKILL'));
  const port = await forwardedPort(pf);
  t.equal(await echoThrough(port, 'ping through'), 'ping through');
  t.equal(await echoThrough(port, 'x'.repeat(100_000)), 'x'.repeat(100_000), '100 KB both ways');
  pf.kill();
  await pf.exited;

  const kinds = c.streams.started.map((s) => `${s.kind}/${s.transport}`);
  t.ok(kinds.includes('exec/spdy') && kinds.includes('attach/spdy') && kinds.includes('portforward/spdy'), kinds.join(' '));
  t.ok(await until(() => c.streams.open.size === 0, 5000), `every session closed with its client (open: ${[...c.streams.open].map((s) => `${s.kind}/${s.transport}`).join(' ')})`);
});
