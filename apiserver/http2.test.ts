// Secure serving speaks HTTP/2 as kube-apiserver's aggregator does: one TLS connection, many
// streams (lists and watches at once, up to 1000), authenticated by the front-proxy
// certificate of the connection; a cancelled stream ends its watch. HTTP/1.1 clients still
// connect (ALPN), and a URL over 16 KiB is a 400 Status on every transport.
import { spawn } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { connect, constants, type ClientHttp2Session } from 'node:http2';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import t from 'tap';
import { makeCertSet } from '../hack/certs.ts';
import { authenticationConfigMap, startFakeHost } from '../hack/testing/fakehost.ts';
import { logger, setLogLevel } from '../lib/log.ts';
import { openTestStore, podEvent, seedCluster } from '../storage/testing.ts';
import { secureServingFromFlags } from './auth/config.ts';
import { createApiserver, maxStreamsPerConnection } from './server.ts';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');

const P = '/apis/panoptes.io/v1alpha1/resources';
const user = { 'x-remote-user': 'alice', 'x-remote-group': 'devs' };

t.test('HTTP/2 over TLS: lists and watches as streams of one connection', async (t) => {
  const certs = makeCertSet(['127.0.0.1', 'localhost']);
  const host = await startFakeHost({
    configMap: authenticationConfigMap(certs),
    tokens: {},
    policy: (s) => (s.user === 'alice' ? true : 'no rule'),
  });
  const { store, close: closeStore } = await openTestStore('sqlite');
  await seedCluster(store, 'a', { phase: 'Ready', ready: true, apiResources: [{ group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, singularName: 'pod' }] });
  await store.applyBatch('a', [podEvent('ADDED', 'n1', 'web-1', '10')]);
  const dir = mkdtempSync(join(tmpdir(), 'panoptes-h2-'));
  writeFileSync(join(dir, 'tls.crt'), certs.serving.cert);
  writeFileSync(join(dir, 'tls.key'), certs.serving.key);
  const secure = await secureServingFromFlags({ 'tls-cert-file': join(dir, 'tls.crt'), 'tls-private-key-file': join(dir, 'tls.key') }, logger('test'), { authnClient: host.client(), authzClient: host.client() });
  const api = await createApiserver({ store, secure, log: logger('test') });
  const base = await api.listen('127.0.0.1', 0);
  const session: ClientHttp2Session = connect(base, { ca: certs.servingCA.cert, cert: certs.frontProxyClient.cert, key: certs.frontProxyClient.key });
  t.teardown(async () => {
    session.destroy();
    await api.close();
    secure.stop();
    await closeStore();
    await host.close();
    rmSync(dir, { recursive: true, force: true });
  });
  await new Promise<void>((resolve, reject) => {
    session.once('remoteSettings', () => resolve());
    session.once('error', reject);
  });

  const get = (path: string, headers: Record<string, string> = user): Promise<{ status: number; body: string }> =>
    new Promise((resolve, reject) => {
      const s = session.request({ ':path': path, ...headers });
      let status = 0;
      const chunks: Buffer[] = [];
      s.on('response', (h) => (status = Number(h[':status'])));
      s.on('data', (c: Buffer) => chunks.push(c));
      s.on('end', () => resolve({ status, body: Buffer.concat(chunks).toString('utf8') }));
      s.on('error', reject);
      s.end();
    });
  const watchers = async () => Number(/^panoptes_watch_watchers (\S+)$/m.exec((await get('/metrics', { 'x-remote-user': 'admin', 'x-remote-group': 'system:masters' })).body)?.[1]);

  t.equal(session.alpnProtocol, 'h2', 'ALPN picks h2');
  t.equal(session.remoteSettings.maxConcurrentStreams, maxStreamsPerConnection, 'up to 1000 streams per connection');

  const list = await get(`${P}/api/v1/pods`);
  t.equal(list.status, 200, list.body);
  t.same((JSON.parse(list.body) as { items: Array<{ metadata: { name: string } }> }).items.map((i) => i.metadata.name), ['web-1']);
  t.equal((await get(`${P}/api/v1/pods`, { 'x-remote-user': 'bob' })).status, 403, 'the headers name the user of each stream');

  // Two watches on the same connection, from the list's rv.
  const rv = (JSON.parse(list.body) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
  const watch = () => {
    const s = session.request({ ':path': `${P}/api/v1/namespaces/n1/pods?watch=1&resourceVersion=${rv}`, ...user });
    s.end();
    const lines: string[] = [];
    let partial = '';
    s.setEncoding('utf8');
    s.on('data', (c: string) => {
      partial += c;
      let nl: number;
      while ((nl = partial.indexOf('\n')) >= 0) {
        lines.push(partial.slice(0, nl));
        partial = partial.slice(nl + 1);
      }
    });
    const headers = new Promise<Record<string, unknown>>((resolve) => s.once('response', resolve));
    return { s, lines, headers };
  };
  const w1 = watch();
  const w2 = watch();
  t.match(await w1.headers, { ':status': 200, 'content-type': 'application/json' }, 'headers at once, before any event');
  await w2.headers;
  t.equal(await watchers(), 2);
  await store.applyBatch('a', [podEvent('ADDED', 'n1', 'web-2', '20')]);
  for (let i = 0; i < 100 && (w1.lines.length < 1 || w2.lines.length < 1); i++) await new Promise((r) => setTimeout(r, 50));
  for (const w of [w1, w2]) t.match(JSON.parse(w.lines[0]), { type: 'ADDED', object: { metadata: { name: 'web-2' } } });

  // Cancelling a stream (RST_STREAM) ends that watch only.
  w1.s.close(constants.NGHTTP2_CANCEL);
  let n = 2;
  for (let i = 0; i < 100 && n !== 1; i++) {
    await new Promise((r) => setTimeout(r, 50));
    n = await watchers();
  }
  t.equal(n, 1, 'the cancelled watch is gone');
  await store.applyBatch('a', [podEvent('MODIFIED', 'n1', 'web-2', '21')]);
  for (let i = 0; i < 100 && w2.lines.length < 2; i++) await new Promise((r) => setTimeout(r, 50));
  t.match(JSON.parse(w2.lines[1]), { type: 'MODIFIED' }, 'the other one goes on');
  w2.s.close(constants.NGHTTP2_CANCEL);

  // HTTP/1.1 over TLS still works (clients that offer only http/1.1, or no ALPN at all).
  const h1 = await new Promise<{ status: number; alpn: string | false | null }>((resolve, reject) => {
    const req = httpsRequest(`${base}${P}/api/v1/pods`, { ca: certs.servingCA.cert, cert: certs.frontProxyClient.cert, key: certs.frontProxyClient.key, headers: user, agent: false, ALPNProtocols: ['http/1.1'] } as RequestOptions, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, alpn: (res.socket as TLSSocket).alpnProtocol }));
    });
    req.on('error', reject);
    req.end();
  });
  t.same(h1, { status: 200, alpn: 'http/1.1' });

  t.test('kubectl (client-go) negotiates HTTP/2 and watches over it', async (t) => {
    let sessions = 0;
    api.server!.on('session', () => sessions++);
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(
      kubeconfig,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'p', cluster: { server: `${base}${P}`, 'certificate-authority-data': Buffer.from(certs.servingCA.cert).toString('base64') } }],
        // CN=panoptes-admin, O=system:masters from the client CA.
        users: [{ name: 'admin', user: { 'client-certificate-data': Buffer.from(certs.admin.cert).toString('base64'), 'client-key-data': Buffer.from(certs.admin.key).toString('base64') } }],
        contexts: [{ name: 'p', context: { cluster: 'p', user: 'admin' } }],
        'current-context': 'p',
      }),
    );
    const kubectl = spawn('kubectl', ['--kubeconfig', kubeconfig, '--cache-dir', join(dir, 'kc-cache'), 'get', 'pods', '-n', 'n1', '-w', '-o', 'name'], { stdio: ['ignore', 'pipe', 'pipe'] });
    t.teardown(() => kubectl.kill());
    let out = '';
    kubectl.stdout.on('data', (d: Buffer) => (out += d.toString()));
    kubectl.stderr.on('data', (d: Buffer) => (out += d.toString()));
    for (let i = 0; i < 200 && !out.includes('pod/web-2'); i++) await new Promise((r) => setTimeout(r, 50));
    t.match(out, /pod\/web-1\npod\/web-2\n/, 'the list');
    await store.applyBatch('a', [podEvent('ADDED', 'n1', 'web-3', '30')]);
    for (let i = 0; i < 200 && !out.includes('pod/web-3'); i++) await new Promise((r) => setTimeout(r, 50));
    t.match(out, /pod\/web-3/, 'then the watch');
    t.ok(sessions >= 1, `over HTTP/2 (${sessions} session(s))`);
  });

  t.test('a URL over 16 KiB: 400 Status over HTTP/2 and HTTP/1.1', async (t) => {
    const long = `${P}/api/v1/pods?labelSelector=${'a'.repeat(20 * 1024)}`;
    const r2 = await get(long);
    t.equal(r2.status, 400);
    t.match(JSON.parse(r2.body), { kind: 'Status', reason: 'BadRequest', message: /request URL is too long/ });
    const r1 = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpsRequest(`${base}${long}`, { ca: certs.servingCA.cert, cert: certs.frontProxyClient.cert, key: certs.frontProxyClient.key, headers: user, agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      });
      req.on('error', reject);
      req.end();
    });
    t.equal(r1.status, 400, r1.body);
    t.match(JSON.parse(r1.body), { kind: 'Status', message: /request URL is too long/ });
  });
});

t.test('plain HTTP: a URL over 16 KiB is a 400 Status, not the parser refusing the headers', async (t) => {
  const { store, close } = await openTestStore('sqlite');
  const api = await createApiserver({ store, log: logger('test') });
  const base = await api.listen('127.0.0.1', 0);
  t.teardown(async () => {
    await api.close();
    await close();
  });
  const r = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = httpRequest(`${base}${P}/api/v1/pods?labelSelector=${'a'.repeat(20 * 1024)}`, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end();
  });
  t.equal(r.status, 400, r.body);
  t.match(JSON.parse(r.body), { kind: 'Status', message: /request URL is too long/ });
});
