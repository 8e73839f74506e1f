// The pieces of the simulated streaming subresources: SPDY/3.1 framing and header
// compression, WebSocket frames, the tiny shell, tar, and pods/log's parameters and refusals.
import { createHash } from 'node:crypto';
import { PassThrough } from 'node:stream';
import t from 'tap';
import { execOnce } from '../../testing/ws-exec.ts';
import { get, simCluster } from '../testutil.ts';
import { PodFs } from './fs.ts';
import { Input } from './input.ts';
import { Shell, tokenize } from './shell.ts';
import { controlFrame, dataFrame, frameTypes, HeaderCodec, headerDictionary, SpdySession, type SpdyStream } from './spdy.ts';
import { readTar, writeTar } from './tar.ts';
import { decodeFrames, encodeFrame, opcodes } from './websocket.ts';

t.test('SPDY/3 header dictionary and compression', async (t) => {
  // The dictionary of the SPDY/3 draft (section 2.6.10.1), as Go's spdy package carries it.
  t.equal(headerDictionary.length, 1423);
  t.equal(createHash('sha256').update(headerDictionary).digest('hex'), '51d27341373f923f3cd88e1eb7162aeaa3723d7585ff2399201dc06498407f02');
  const a = new HeaderCodec();
  const b = new HeaderCodec();
  t.teardown(() => (a.close(), b.close()));
  // One context per direction across blocks: the second block refers to the first's history.
  const blocks: Array<Record<string, string | string[]>> = [{ streamType: 'stdout', port: '80' }, { streamType: 'stderr', 'x-Many': ['a', 'b'] }];
  for (const h of blocks) {
    const got = await b.decode(await a.encode(h));
    t.same(Object.fromEntries(got), Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toLowerCase(), Array.isArray(v) ? v : [v]])));
  }
});

t.test('a SPDY session: SYN_REPLY to each stream, data, FIN, PING', async (t) => {
  const wire = new PassThrough();
  const fromServer: Buffer[] = [];
  const socket = new PassThrough();
  socket.on('data', (d: Buffer) => fromServer.push(d));
  // The session reads `wire` and writes `socket`: a duplex made of the two.
  const duplex = Object.assign(wire, { write: socket.write.bind(socket), end: socket.end.bind(socket) });
  const session = new SpdySession(duplex);
  t.teardown(() => session.close());
  const client = new HeaderCodec();
  const streams: SpdyStream[] = [];
  session.on('stream', (s: SpdyStream) => streams.push(s));
  const syn = Buffer.alloc(10);
  syn.writeUInt32BE(1, 0);
  wire.push(controlFrame(frameTypes.synStream, 0, Buffer.concat([syn, await client.encode({ streamType: 'stdin' })])));
  const got: string[] = [];
  let ended = false;
  await t.resolves(new Promise<void>((r) => session.once('stream', () => r())));
  streams[0].on('data', (d: Buffer) => got.push(d.toString()));
  streams[0].on('end', () => (ended = true));
  wire.push(dataFrame(1, Buffer.from('hello'), false));
  wire.push(dataFrame(1, Buffer.from(' spdy'), true));
  const ping = Buffer.alloc(4);
  ping.writeUInt32BE(7, 0);
  wire.push(controlFrame(frameTypes.ping, 0, ping));
  for (let i = 0; i < 100 && !(ended && Buffer.concat(fromServer).length >= 20); i++) await new Promise((r) => setTimeout(r, 10));
  t.equal(streams[0].header('streamtype'), 'stdin');
  t.equal(got.join(''), 'hello spdy');
  t.ok(ended, 'FIN ends the stream');
  const out = Buffer.concat(fromServer);
  t.equal(out.readUInt16BE(0), 0x8003, 'control frame, version 3');
  t.equal(out.readUInt16BE(2), frameTypes.synReply);
  t.equal(out.readUInt32BE(8), 1, 'the reply names the stream');
  const len = out.readUInt32BE(4) & 0xffffff;
  const next = out.subarray(8 + len);
  t.equal(next.readUInt16BE(2), frameTypes.ping, 'the ping is echoed');
  t.equal(next.readUInt32BE(8), 7);
  streams[0].end(Buffer.from('bye'));
  await new Promise((r) => setTimeout(r, 20));
  const tail = Buffer.concat(fromServer).subarray(8 + len + 12);
  t.same([tail.readUInt32BE(0), tail.subarray(8, 11).toString()], [1, 'bye'], 'data frame on stream 1');
});

t.test('WebSocket frames: masked, 16- and 64-bit lengths, fragments', async (t) => {
  for (const n of [5, 300, 70_000]) {
    const payload = Buffer.alloc(n, 3);
    const { frames, rest } = decodeFrames(encodeFrame(opcodes.binary, payload, Buffer.from([1, 2, 3, 4])));
    t.equal(rest.length, 0);
    t.same(frames[0].payload, payload, `${n} bytes`);
  }
  const whole = encodeFrame(opcodes.binary, Buffer.from('abc'));
  const partial = decodeFrames(whole.subarray(0, 3));
  t.same([partial.frames.length, partial.rest.length], [0, 3], 'an incomplete frame waits for more');
});

t.test('the shell: quoting, variables, lists, pipes, redirections, exit codes', async (t) => {
  t.same(tokenize(`echo 'a b' "c $X" d\\ e`, (n) => (n === 'X' ? 'x' : '')), [{ word: 'echo' }, { word: 'a b' }, { word: 'c x' }, { word: 'd e' }]);
  const c = { hostname: 'pod-1', env: { HOME: '/root' }, fs: new PodFs('pod-1') };
  const run = async (argv: string[], stdin = '') => {
    const input = new Input();
    input.push(Buffer.from(stdin));
    input.end();
    let out = '';
    let err = '';
    const code = await new Shell(c).run(argv, { stdin: input, out: (d) => (out += d.toString()), err: (d) => (err += d.toString()), signal: new AbortController().signal });
    return { code, out, err };
  };
  t.same(await run(['sh', '-c', 'false || echo $?; true && echo yes; exit 9']), { code: 9, out: '1\nyes\n', err: '' });
  t.same(await run(['sh', '-c', 'echo to-err >&2; echo both 2>&1; echo quiet >/dev/null']), { code: 0, out: 'both\n', err: 'to-err\n' });
  t.same(await run(['sh', '-c', 'echo one > /tmp/f; echo two >> /tmp/f; cat /tmp/f | cat']), { code: 0, out: 'one\ntwo\n', err: '' });
  t.same(await run(['sh'], 'hostname\necho $HOME\nexit 3\necho never\n'), { code: 3, out: 'pod-1\n/root\n', err: '' });
  t.same((await run(['nope'])).code, 127);
  t.same(await run(['test', '-d', '/tmp']), { code: 0, out: '', err: '' });
});

t.test('tar: what kubectl cp sends and reads', async (t) => {
  const long = `${'d'.repeat(120)}/file.txt`;
  const entries = [
    { name: 'dir', dir: true, data: Buffer.alloc(0), mode: 0o755, mtime: 1_700_000_000_000 },
    { name: 'dir/a.txt', dir: false, data: Buffer.from('alpha'), mode: 0o644, mtime: 1_700_000_000_000 },
    { name: long, dir: false, data: Buffer.alloc(1000, 1), mode: 0o600, mtime: 1_700_000_000_000 },
  ];
  const back = readTar(writeTar(entries));
  t.same(back.map((e) => [e.name, e.dir, e.data.length, e.mode]), entries.map((e) => [e.name, e.dir, e.data.length, e.mode]));
  t.throws(() => readTar(Buffer.alloc(512, 1)), /checksum/);
  const fs = new PodFs('p');
  const sh = new Shell({ hostname: 'p', env: {}, fs });
  const input = new Input();
  input.push(writeTar(entries));
  input.end();
  const code = await sh.run(['tar', '-xmf', '-', '-C', '/tmp'], { stdin: input, out: () => undefined, err: () => undefined, signal: new AbortController().signal });
  t.equal(code, 0);
  t.equal(fs.get('/tmp/dir/a.txt')?.data.toString(), 'alpha');
  t.equal(fs.get(`/tmp/${long}`)?.data.length, 1000);
});

t.test('pods/log: parameters and kube refusals', async (t) => {
  const c = await simCluster(t, { workload: true });
  c.streams.logIntervalMs = 50;
  const pods = c.registry.lookup('', 'v1', 'pods')!;
  const pod = c.store.list('/pods', { namespace: 'kube-system' }).items.find((p) => p.metadata.name!.startsWith('coredns-'))!;
  const base = `${c.url}/api/v1/namespaces/kube-system/pods/${pod.metadata.name}/log`;
  await new Promise((r) => setTimeout(r, 300));
  const tail = await get(`${base}?tailLines=2&timestamps=true`);
  t.equal(tail.status, 200);
  t.equal(tail.text.trim().split('\n').length, 2);
  t.match(tail.text, /^\d{4}-\d\d-\d\dT[\d:.]+Z coredns \d+: /);
  t.equal((await get(`${base}?limitBytes=10`)).text.length, 10, 'limitBytes cuts the stream');

  const bad = await get(`${base}?tailLines=-1`);
  t.equal(bad.status, 422, bad.text);
  t.equal((await get(`${base}?tailLines=x`)).status, 400);
  t.equal((await get(`${base}?container=nope`)).json.message, `container nope is not valid for pod ${pod.metadata.name}`);
  // A pod of two containers, one restarted.
  c.crud.create(pods, 'v1', 'default', { metadata: { name: 'two' }, spec: { containers: [{ name: 'app', image: 'x' }, { name: 'side', image: 'y' }] } }, {});
  const started = new Date(Date.now() - 2000).toISOString();
  c.crud.patch(pods, 'v1', 'default', 'two', 'merge', {
    status: {
      phase: 'Running',
      containerStatuses: [
        { name: 'app', restartCount: 1, state: { running: { startedAt: started } }, lastState: { terminated: { startedAt: started, finishedAt: started } } },
        { name: 'side', restartCount: 0, state: { running: { startedAt: started } } },
      ],
    },
  }, { subresource: 'status' });
  const two = `${c.url}/api/v1/namespaces/default/pods/two/log`;
  const which = await get(two);
  t.equal(which.status, 400);
  t.equal(which.json.message, 'a container name must be specified for pod two, choose one of: [app side]');
  t.equal((await get(`${two}?container=app&previous=true`)).text, 'app 0: GET /healthz 200 two\n', 'the instance before the restart');
  t.match((await get(`${two}?container=app&tailLines=1`)).text, /^app \d+: GET \/healthz 200 two \(instance 1\)\n$/, 'the running one');
  // side started 2 s ago: 40 lines, one every 50 ms; the last second's are about 20.
  const all = (await get(`${two}?container=side`)).text.trim().split('\n').length;
  const since = (await get(`${two}?container=side&sinceSeconds=1`)).text.trim().split('\n').length;
  t.ok(all >= 38 && since >= 18 && since <= 23, `sinceSeconds=1: the last second's lines (${since} of ${all})`);
  t.equal((await get(`${two}?container=side&previous=true`)).json.message, 'previous terminated container "side" in pod "two" not found');
  t.equal((await get(`${c.url}/api/v1/namespaces/default/pods/nope/log`)).status, 404);
  // exec over WebSocket: a tty turns \n into \r\n; stderr is its own channel without one.
  const exec = `${c.url}/api/v1/namespaces/kube-system/pods/${pod.metadata.name}/exec`;
  t.match(await execOnce(`${exec}?command=sh&command=-c&command=echo%20hi&stdout=true&tty=true`), { stdout: 'hi\r\n', status: { status: 'Success' } });
  t.match(await execOnce(`${exec}?command=sh&command=-c&command=echo%20e%20%3E%262%3B%20exit%202&stdout=true&stderr=true`), {
    stdout: '', stderr: 'e\n', status: { reason: 'NonZeroExitCode', details: { causes: [{ reason: 'ExitCode', message: '2' }] } },
  });
  const noUpgrade = await get(`${c.url}/api/v1/namespaces/default/pods/two/exec?command=true`);
  t.same([noUpgrade.status, noUpgrade.json.message], [400, 'Upgrade request required']);
});
