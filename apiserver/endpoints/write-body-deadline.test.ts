// Writes whose body never comes cannot hold the write slots. Over TLS, as behind the
// aggregator, with HTTP/1.1 and HTTP/2: as many proxied writes as there are slots send their
// headers and then nothing; each is answered 504 Timeout at the request timeout (kube's timeout
// filter) and its slot goes back, so Cluster registration, a MultiClusterService and a proxied
// write go on. The same for own-kind writes. A client that goes away mid-body gives its slot
// back at once (the request timeout here is far away), over HTTP/1.1 and HTTP/2.
import { connect as h2connect, type ClientHttp2Session } from 'node:http2';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import t, { type Test } from 'tap';
import { makeCertSet } from '../../hack/certs.ts';
import { authenticationConfigMap, startFakeHost } from '../../hack/testing/fakehost.ts';
import { logger, setLogLevel } from '../../lib/log.ts';
import { openTestStore, seedCluster } from '../../storage/testing.ts';
import { secureServingFromFlags } from '../auth/config.ts';
import type { MemberCredentials } from '../proxy/members.ts';
import { createApiserver } from '../server.ts';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');

const certs = makeCertSet(['127.0.0.1']);
const slots = 4;
const proxied = '/apis/panoptes.io/v1alpha1/resources/clusters/m/api/v1/namespaces/shop/configmaps';
const clusters = '/apis/panoptes.io/v1alpha1/clusters';
const mcs = '/apis/panoptes.io/v1alpha1/namespaces/shop/multiclusterservices';
const body = (o: unknown) => JSON.stringify(o);

async function start(t: Test, requestTimeoutMs: number) {
  const member = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(201, { 'Content-Type': 'application/json' }).end(body({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', namespace: 'shop' } })));
  });
  await new Promise<void>((r) => member.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => (member.close(() => r()), member.closeAllConnections())));
  const server = `http://127.0.0.1:${(member.address() as AddressInfo).port}`;
  const host = await startFakeHost({ configMap: authenticationConfigMap(certs), tokens: {}, policy: () => true });
  t.teardown(() => host.close());
  const { store, close } = await openTestStore('sqlite');
  t.teardown(close);
  await seedCluster(store, 'm', { phase: 'Ready', ready: true, apiResources: [] });
  const credentials: MemberCredentials = { lookup: async (name) => (name === 'm' ? { connection: { server }, fingerprint: server } : undefined) };
  const secure = await secureServingFromFlags({ 'bind-address': '127.0.0.1', 'secure-port': '0' }, logger('test'), { authnClient: host.client(), authzClient: host.client() });
  t.teardown(() => secure.stop());
  const api = await createApiserver({ store, secure, catalogOptions: { refreshMs: 200 }, limits: { maxMutatingInFlight: slots, requestTimeoutMs }, proxy: { credentials } });
  const base = await api.listen('127.0.0.1', 0);
  t.teardown(() => api.close());
  const port = Number(new URL(base).port);
  const tlsOpts = { host: '127.0.0.1', port, ca: secure.tls.certificate, cert: certs.frontProxyClient.cert, key: certs.frontProxyClient.key, servername: 'localhost' };
  const user = { 'x-remote-user': 'alice', 'x-remote-group': 'system:masters' };

  /** HTTP/1.1: a write that sends its headers (Content-Length 100) and then nothing. Resolves once connected; `answer` with the status line and body when one comes. */
  const slowH1 = async (path: string) => {
    const socket: TLSSocket = tlsConnect({ ...tlsOpts, ALPNProtocols: ['http/1.1'] });
    await new Promise<void>((r, j) => socket.once('secureConnect', () => r()).once('error', j));
    let text = '';
    socket.on('data', (d: Buffer) => (text += d.toString()));
    socket.on('error', () => undefined);
    const closed = new Promise<void>((r) => socket.once('close', () => r()));
    socket.write(`POST ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\nX-Remote-User: alice\r\nX-Remote-Group: system:masters\r\n\r\n{"apiVersion":`);
    return { socket, closed, answer: () => text };
  };
  const h2 = () => {
    const s = h2connect(base, { ...tlsOpts });
    s.on('error', () => undefined);
    return s;
  };
  /** HTTP/2: a write stream that sends its headers and part of a body, then nothing. */
  const slowH2 = (session: ClientHttp2Session, path: string) => {
    const s = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/json', 'content-length': '100', ...user }, { endStream: false });
    s.write('{"apiVersion":');
    s.on('error', () => undefined);
    let status = 0;
    s.on('response', (h) => (status = Number(h[':status'])));
    const closed = new Promise<void>((r) => s.once('close', () => r()));
    s.resume();
    return { stream: s, closed, status: () => status };
  };
  return { base, slowH1, slowH2, h2, write: (path: string, data: unknown) => writeAs(user, path, data) };

  /** One whole write over HTTP/2 (a new connection). */
  async function writeAs(headers: Record<string, string>, path: string, data: unknown): Promise<number> {
    const session = h2();
    try {
      const text = body(data);
      return await new Promise<number>((resolve, reject) => {
        const s = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)), ...headers });
        let status = 0;
        s.on('response', (h) => (status = Number(h[':status'])));
        s.on('error', reject);
        s.resume();
        s.on('end', () => resolve(status));
        s.end(text);
      });
    } finally {
      session.close();
    }
  }
}

/** Polls `f` until it holds, at most `tries` times (count, not time). */
async function eventually(f: () => Promise<boolean> | boolean, tries = 100, everyMs = 50): Promise<boolean> {
  for (let i = 0; i < tries; i++) {
    if (await f()) return true;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  return false;
}

const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } };
const cluster = (name: string) => ({ apiVersion: 'panoptes.io/v1alpha1', kind: 'Cluster', metadata: { name }, spec: { server: 'https://member.example.com:6443' } });

t.test('slow bodies are answered 504 at the request timeout, and other writes go on', async (t) => {
  const s = await start(t, 1500);
  const session = s.h2();
  t.teardown(() => session.destroy());
  const rounds: Array<{ name: string; paths: [string, string] }> = [
    { name: 'proxied writes', paths: [proxied, proxied] },
    { name: 'Cluster and MultiClusterService writes', paths: [clusters, mcs] },
  ];
  for (const [i, round] of rounds.entries()) {
    // Every slot taken by writes whose body never comes, over HTTP/1.1 and HTTP/2.
    const h1 = [await s.slowH1(round.paths[0]), await s.slowH1(round.paths[1])];
    const h2 = [s.slowH2(session, round.paths[0]), s.slowH2(session, round.paths[1])];
    t.ok(await eventually(async () => (await s.write(proxied, cm)) === 429), `${round.name}: with every slot held, a write gets 429`);

    // Each slow write is answered within a bounded wait (before: a proxied one never was).
    t.ok(await eventually(() => h1.every((c) => c.answer() !== '') && h2.every((c) => c.status() !== 0), 200), `${round.name}: every slow write was answered`);
    for (const c of h1) {
      t.match(c.answer(), /^HTTP\/1\.1 504 /, 'HTTP/1.1: 504');
      t.match(c.answer(), /"reason":"Timeout"/);
      t.match(c.answer(), /"message":"Timeout: request did not complete within the allotted timeout"/, "kube's timeout filter's words");
      t.match(c.answer(), /\r\nConnection: close\r\n/i, 'and the connection ends');
    }
    for (const c of h2) t.equal(c.status(), 504, 'HTTP/2: 504');
    const settled = async (p: Promise<void>) => Promise.race([p.then(() => true), new Promise<boolean>((r) => setImmediate(() => r(false)))]);
    t.ok(await eventually(async () => (await Promise.all([...h1, ...h2].map((c) => settled(c.closed)))).every(Boolean)), `${round.name}: the slow connections and streams are closed`);

    t.equal(await s.write(clusters, cluster(`after-slow-${i}`)), 201, 'a Cluster is registered');
    t.equal(await s.write(mcs, { apiVersion: 'panoptes.io/v1alpha1', kind: 'MultiClusterService', metadata: { name: `web-${i}` }, spec: {} }), 201, 'a MultiClusterService is created');
    t.equal(await s.write(proxied, cm), 201, 'a proxied write goes to the member');
  }
});

t.test('a client that goes away mid-body gives its slot back at once', async (t) => {
  const s = await start(t, 600_000); // far away: only the client's going releases the slots
  for (const protocol of ['HTTP/1.1', 'HTTP/2']) {
    const held: Array<() => void> = [];
    const sessions: ClientHttp2Session[] = [];
    for (let i = 0; i < slots; i++) {
      const path = i % 2 ? clusters : proxied;
      if (protocol === 'HTTP/1.1') {
        const c = await s.slowH1(path);
        held.push(() => c.socket.destroy());
      } else {
        const session = s.h2();
        sessions.push(session);
        s.slowH2(session, path);
        held.push(() => session.destroy());
      }
    }
    t.ok(await eventually(async () => (await s.write(proxied, cm)) === 429), `${protocol}: with every slot held, a write gets 429`);
    for (const h of held) h();
    t.ok(await eventually(async () => (await s.write(clusters, cluster(`gone-${protocol === 'HTTP/2' ? 'h2' : 'h1'}`))) === 201), `${protocol}: once the clients went away, a Cluster is registered`);
    t.equal(await s.write(proxied, cm), 201, `${protocol}: and a proxied write goes on`);
  }
});
