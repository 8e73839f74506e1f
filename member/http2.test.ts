// HTTP/2 to members that offer it: many requests and watches share one TLS connection, the
// member's stream limit opens a second one, a member without h2 (or h2 turned off) gets
// HTTP/1.1, a connection that goes silent is found by PING and replaced, and replaced
// credentials get a new session while the old one ends with its streams.
import { createSecureServer } from 'node:http2';
import { connect as netConnect, createServer as createNetServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import t, { type Test } from 'tap';
import { createCA, createCert } from '../apiserver/auth/certs.ts';
import { simCluster } from '../hack/sim/testutil.ts';
import type { SimCluster, SimClusterOptions } from '../hack/sim/cluster.ts';
import { connectCluster, memberEndpoint, send, type ClusterConnection, type ConnectOptions } from './client.ts';
import type { MemberResponse } from './http2.ts';

const ca = createCA('http2-test-ca');
const serving = createCert(ca, { commonName: 'member', hosts: ['127.0.0.1'], usage: 'server' });
const caData = Buffer.from(ca.cert).toString('base64');

async function tlsSim(t: Test, tls: Partial<NonNullable<SimClusterOptions['tls']>> = {}): Promise<SimCluster> {
  return simCluster(t, { controllers: false, tls: { key: serving.key, cert: serving.cert, ...tls } });
}

async function client(t: Test, server: string, opts: ConnectOptions = { http2: true }, extra: Partial<ClusterConnection> = {}) {
  const c = await connectCluster({ server, certificateAuthorityData: caData, ...extra }, opts);
  t.teardown(() => c.close());
  return c;
}

/** Reads watch lines until `n` events came or `ms` passed. */
function events(res: MemberResponse, n: number, ms = 5_000): Promise<{ type: string; object: { metadata: { name: string } } }[]> {
  return new Promise((resolve) => {
    const got: { type: string; object: { metadata: { name: string } } }[] = [];
    let buf = '';
    const finish = () => {
      clearTimeout(timer);
      res.off('data', onData);
      resolve(got);
    };
    const timer = setTimeout(finish, ms);
    const onData = (chunk: Buffer) => {
      buf += chunk.toString('utf8');
      let i: number;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i).trim();
        buf = buf.slice(i + 1);
        if (line) got.push(JSON.parse(line));
      }
      if (got.length >= n) finish();
    };
    res.on('data', onData);
    res.once('close', finish);
  });
}

const configMap = (name: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { a: '1' } });

t.test('h2: gets, writes and 40 watches share one TLS connection; events flow on every watch', async (t) => {
  const sim = await tlsSim(t);
  const c = await client(t, sim.url);
  const list = await c.get<{ metadata: { resourceVersion: string } }>('/api/v1/namespaces/default/configmaps');
  const rv = list.metadata.resourceVersion;
  const watches = await Promise.all(Array.from({ length: 40 }, () => c.stream(`/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=${rv}`, { timeoutMs: 5_000 })));
  t.teardown(() => watches.forEach((w) => w.destroy()));
  const seen = watches.map((w) => events(w, 2));
  await c.create('/api/v1/namespaces/default/configmaps', configMap('one'));
  await c.create('/api/v1/namespaces/default/configmaps', configMap('two'));
  const got = await Promise.all(seen);
  t.ok(
    got.every((e) => e.map((x) => `${x.type} ${x.object.metadata.name}`).join(',') === 'ADDED one,ADDED two'),
    'every watch saw both creations',
  );
  t.same(await c.get('/api/v1/namespaces/default/configmaps/one').then((o) => (o as { data: unknown }).data), { a: '1' }, 'a get after the watches');
  t.same(sim.tlsConnections, ['h2'], 'one TLS connection, HTTP/2');
  t.equal(sim.hub.count, 40, 'the member serves 40 watches');
  watches.slice(0, 30).forEach((w) => w.destroy());
  const deadline = Date.now() + 3_000;
  while (sim.hub.count > 10 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  t.equal(sim.hub.count, 10, 'a watch the reader destroys ends in the member (its stream is reset), the others stay');
  t.same(sim.tlsConnections, ['h2'], 'on the same connection');
});

t.test('h2: the member’s SETTINGS_MAX_CONCURRENT_STREAMS is respected (a second session)', async (t) => {
  const sim = await tlsSim(t, { maxConcurrentStreams: 4 });
  const c = await client(t, sim.url);
  await c.get('/version');
  const watches = await Promise.all(Array.from({ length: 10 }, () => c.stream('/api/v1/namespaces/default/configmaps?watch=1', { timeoutMs: 5_000 })));
  t.teardown(() => watches.forEach((w) => w.destroy()));
  const seen = watches.map((w) => events(w, 1));
  await c.create('/api/v1/namespaces/default/configmaps', configMap('x'));
  const got = await Promise.all(seen);
  t.ok(got.every((e) => e.length === 1 && e[0].object.metadata.name === 'x'), 'every watch got the event');
  t.same(sim.tlsConnections, ['h2', 'h2', 'h2'], '10 streams at 4 per connection: 3 connections');
});

t.test('HTTP/1.1: a member without h2, and h2 turned off', async (t) => {
  const old = await tlsSim(t, { http2: false });
  const c = await client(t, old.url);
  await Promise.all([c.get('/version'), c.get('/version')]);
  t.same(await c.get('/api/v1/namespaces/default/configmaps/none').catch((e: { status: number }) => e.status), 404, 'errors as before');
  t.ok(old.tlsConnections.length >= 1 && !old.tlsConnections.includes('h2'), 'HTTP/1.1 connections only');

  const sim = await tlsSim(t);
  const off = await client(t, sim.url, { http2: false });
  await Promise.all([off.get('/version'), off.get('/version')]);
  t.same(sim.tlsConnections, ['', ''], 'http2: false offers no h2 (no ALPN, HTTP/1.1 as before)');
});

/** A TCP relay that can stall its connections (nothing passes, nothing closes): a connection that died silently. */
async function relay(t: Test, port: number) {
  const pairs: [Socket, Socket][] = [];
  const server = createNetServer((inbound) => {
    const outbound = netConnect(port, '127.0.0.1');
    inbound.pipe(outbound).pipe(inbound);
    inbound.on('error', () => outbound.destroy());
    outbound.on('error', () => inbound.destroy());
    pairs.push([inbound, outbound]);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    for (const [a, b] of pairs) (a.destroy(), b.destroy());
    server.close();
  });
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    stall() {
      for (const [a, b] of pairs) {
        a.unpipe(b);
        b.unpipe(a);
        a.pause();
        b.pause();
      }
    },
  };
}

t.test('h2: a silent dead connection is found by PING; the watch ends and requests recover', async (t) => {
  const sim = await tlsSim(t);
  const r = await relay(t, sim.port);
  const c = await client(t, r.url, { http2: { readIdleMs: 300, pingTimeoutMs: 300 } });
  // The watch's own timeout is far beyond the bounded wait below: an end within it is the PING's.
  const w = await c.stream('/api/v1/namespaces/default/configmaps?watch=1', { timeoutMs: 600_000 });
  const ended = new Promise<string>((resolve) => {
    w.on('error', (e) => resolve(e.message));
    w.on('close', () => resolve('closed'));
  });
  await new Promise((res) => setTimeout(res, 700)); // idle pings are answered: the session stays
  t.equal(sim.tlsConnections.length, 1);
  r.stall();
  let timer: NodeJS.Timeout | undefined;
  const how = await Promise.race([ended, new Promise<string>((res) => (timer = setTimeout(() => res('still open'), 30_000)))]);
  clearTimeout(timer);
  t.not(how, 'still open', `the watch ended (${how}), found dead by PING, not by its own timeout`);
  t.same(await c.get('/version').then((v) => typeof v), 'object', 'the next request works');
  t.same(sim.tlsConnections, ['h2', 'h2'], 'over a new connection');
});

t.test('h2: replaced credentials get a new session; the old one ends when its streams end', async (t) => {
  const sim = await tlsSim(t);
  const conn: ClusterConnection = { server: sim.url, certificateAuthorityData: caData, token: 'old-token' };
  const old = await memberEndpoint(conn, { http2: true });
  const fresh = await memberEndpoint({ ...conn, token: 'new-token' }, { http2: true });
  t.teardown(() => (old.close(), fresh.close()));
  const watch = await send(old, { method: 'GET', path: '/api/v1/namespaces/default/configmaps?watch=1', headers: await old.headers() }).response;
  const seen = events(watch, 1);
  old.retire();
  const created = await send(fresh, { method: 'POST', path: '/api/v1/namespaces/default/configmaps', headers: { ...(await fresh.headers()), 'content-type': 'application/json' }, body: JSON.stringify(configMap('after')) }).response;
  t.equal(created.statusCode, 201);
  created.resume();
  t.same((await seen).map((e) => e.object.metadata.name), ['after'], 'the old session’s watch keeps flowing');
  t.same(sim.tlsConnections, ['h2', 'h2'], 'the new credentials opened their own connection');
  t.equal(old.http2?.size, 1);
  watch.destroy();
  await new Promise((res) => setTimeout(res, 200));
  t.equal(old.http2?.size, 0, 'the retired session closed once its last stream ended');
  t.equal(fresh.http2?.size, 1);
  t.same(sim.auth.seen, ['old-token', 'new-token'], 'each session sent its own credentials');
});

t.test('h2: the network guard checks the HTTP/2 connection’s address as the HTTP/1.1 one', async (t) => {
  const named = createCert(ca, { commonName: 'member', hosts: ['member.example'], usage: 'server' });
  const sim = await simCluster(t, { controllers: false, tls: { key: named.key, cert: named.cert } });
  const resolved: string[] = [];
  const resolve: ConnectOptions['resolve'] = (host, _o, cb) => {
    resolved.push(host);
    cb(null, [{ address: '127.0.0.1', family: 4 }]);
  };
  const server = `https://member.example:${sim.port}`;
  const refused = await client(t, server, { http2: true, resolve }, { networkGuard: { allow: [] } });
  await t.rejects(refused.get('/version'), { code: 'EREFUSEDADDRESS' }, 'a name that resolves to loopback is refused');
  t.same(sim.tlsConnections, [], 'nothing reached the member');
  const allowed = await client(t, server, { http2: true, resolve }, { networkGuard: { allow: ['127.0.0.0/8'] } });
  t.same(await allowed.get('/version').then((v) => typeof v), 'object', 'allowed networks are reached');
  t.same(sim.tlsConnections, ['h2'], 'over HTTP/2, verified for the name');
  t.ok(resolved.length >= 2 && resolved.every((h) => h === 'member.example'), 'every connection resolved through the guard');
});

t.test('h2: a member that sends GOAWAY (restart, load balancing) gets the next requests on a new session', async (t) => {
  let sessions = 0;
  const server = createSecureServer({ key: serving.key, cert: serving.cert }, (req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ session: sessions }));
    // kube-apiserver's --goaway-chance: a graceful GOAWAY after answering.
    req.stream.session?.goaway();
  });
  const open = new Set<{ destroy(): void }>();
  server.on('session', (s) => {
    sessions++;
    open.add(s);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => (server.close(() => r()), open.forEach((s) => s.destroy()))));
  const c = await client(t, `https://127.0.0.1:${(server.address() as AddressInfo).port}`);
  const answers: unknown[] = [];
  for (let i = 0; i < 3; i++) answers.push(await c.get('/version'));
  t.same(answers, [{ session: 1 }, { session: 2 }, { session: 3 }], 'each request after a GOAWAY on a new session, none failed');
});

t.test('h2: a member that goes down and comes back: its streams fail, the next requests reconnect', async (t) => {
  const sim = await tlsSim(t);
  const c = await client(t, sim.url);
  const w = await c.stream('/api/v1/namespaces/default/configmaps?watch=1', { timeoutMs: 5_000 });
  const ended = new Promise<void>((resolve) => w.once('close', () => resolve()));
  w.resume();
  w.on('error', () => undefined);
  await sim.faults.down({ mode: 'refuse' });
  await t.resolves(Promise.race([ended, new Promise((_, reject) => setTimeout(() => reject(new Error('the watch is still open')), 3_000))]), 'the watch ended with the connection');
  await t.rejects(c.get('/version', { timeoutMs: 2_000 }), 'refused while down');
  await sim.faults.up();
  t.same(await c.get('/version', { timeoutMs: 5_000 }).then((v) => typeof v), 'object', 'answers again once up');
  t.same(sim.tlsConnections, ['h2', 'h2'], 'over a new HTTP/2 connection');
});

t.test('h2: a member that closes every connection after the handshake fails the request (bounded), no reconnect loop', async (t) => {
  let connections = 0;
  const server = createTlsServer({ key: serving.key, cert: serving.cert, ALPNProtocols: ['h2'] }, (socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const c = await client(t, `https://127.0.0.1:${(server.address() as AddressInfo).port}`);
  const outcome = await Promise.race([c.get('/version').then(() => 'answered', (e: Error) => `failed: ${e.message}`), new Promise<string>((r) => setTimeout(() => r('hung'), 5_000))]);
  t.match(outcome, /^failed: /, outcome);
  await new Promise((r) => setTimeout(r, 300));
  t.ok(connections <= 4, `a few connection attempts (${connections}), then it stops`);
});
