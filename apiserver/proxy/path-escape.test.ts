// No request leaves the member path it was authorized for. Two members behind one gateway
// with path prefixes (`/k8s/clusters/a`, `/k8s/clusters/b`, as Rancher or a Karmada proxy
// serve them), each with its own token; every traversal spelling of
// hack/testing/path-traversal.ts goes where a namespace or a name goes, through every route:
// a proxied read, a proxied write, a subresource, an exec upgrade (WebSocket and SPDY), the
// fleet-wide metrics read and the read path's own list and get. Each is refused (400, or 404 for
// an empty segment) and the member sees nothing of it; what reaches the member is clean
// segments below its own prefix, as a lenient gateway reads them too (gatewayView). Over HTTP/2
// (TLS, front proxy), where an exec is a plain request, the same; kubectl exec with such a
// namespace is refused the same way.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request, type IncomingMessage } from 'node:http';
import { connect as h2connect } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import t, { type Test } from 'tap';
import { makeCertSet } from '../../hack/certs.ts';
import { authenticationConfigMap, startFakeHost } from '../../hack/testing/fakehost.ts';
import { runKubectl } from '../../hack/testing/kubectl.ts';
import { gatewayView, traversalSpellings } from '../../hack/testing/path-traversal.ts';
import { logger, setLogLevel } from '../../lib/log.ts';
import { secureServingFromFlags } from '../auth/config.ts';
import { openTestStore, podEvent, seedCluster } from '../../storage/testing.ts';
import { createApiserver } from '../server.ts';
import type { MemberCredentials } from './members.ts';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');

const P = '/apis/panoptes.io/v1alpha1/resources';
const pods = { group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, singularName: 'pod' };
const climbing = '..\\..\\..\\..\\b\\api\\v1\\namespaces\\default';

interface Seen {
  method: string;
  /** The request target as the member received it. */
  path: string;
  token: string;
  upgrade: boolean;
}

/** One gateway serving both members: records every request, answers a Status (an upgrade: refused with one). */
async function startGateway() {
  const seen: Seen[] = [];
  const status = JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'recorded', reason: 'NotFound', code: 404 });
  const record = (req: IncomingMessage, upgrade: boolean) => seen.push({ method: req.method ?? '', path: req.url ?? '', token: req.headers.authorization ?? '', upgrade });
  const server = createServer((req, res) => {
    record(req, false);
    req.resume();
    req.on('end', () => res.writeHead(404, { 'Content-Type': 'application/json' }).end(status));
  });
  server.on('upgrade', (req: IncomingMessage, socket: Duplex) => {
    record(req, true);
    socket.end(`HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: ${status.length}\r\n\r\n${status}`);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, seen, close: () => new Promise<void>((r) => (server.close(() => r()), server.closeAllConnections())) };
}

/** A request with its path sent exactly as given (no URL parsing on the way); an upgrade when `upgrade` names a protocol. */
function raw(base: string, method: string, path: string, opts: { upgrade?: string; body?: string } = {}): Promise<number> {
  const u = new URL(base);
  const headers: Record<string, string> = opts.upgrade
    ? { Connection: 'Upgrade', Upgrade: opts.upgrade, 'Sec-WebSocket-Version': '13', 'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Protocol': 'v5.channel.k8s.io', 'X-Stream-Protocol-Version': 'v4.channel.k8s.io' }
    : {};
  if (opts.body !== undefined) Object.assign(headers, { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(opts.body)) });
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, method, path, headers, agent: false });
    req.setTimeout(15_000, () => req.destroy(new Error(`no answer to ${method} ${path}`)));
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('upgrade', (res, socket: Duplex) => {
      socket.destroy();
      resolve(res.statusCode ?? 101);
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

t.test('no spelling of a path segment reaches another member prefix, on any route', async (t) => {
  const gateway = await startGateway();
  t.teardown(gateway.close);
  const { store, close } = await openTestStore('sqlite');
  t.teardown(close);
  for (const name of ['a', 'b']) await seedCluster(store, name, { phase: 'Ready', ready: true, apiResources: [pods] });
  // A pod stored under the climbing namespace, as a member could hold anything: kubectl exec finds it, then upgrades.
  const withContainer = (e: ReturnType<typeof podEvent>) => ({ ...e, object: { ...e.object, spec: { containers: [{ name: 'c', image: 'i' }] } } });
  await store.applyBatch('a', [withContainer(podEvent('ADDED', climbing, 'p', '10')), withContainer(podEvent('ADDED', 'default', 'p', '11'))]);
  const prefix = (c: string) => `/k8s/clusters/${c}`;
  const credentials: MemberCredentials = {
    lookup: async (name) => (['a', 'b'].includes(name) ? { connection: { server: `${gateway.url}${prefix(name)}`, token: `token-${name}` }, fingerprint: name } : undefined),
  };
  const api = await createApiserver({ store, catalogOptions: { refreshMs: 200 }, proxy: { credentials, unauthenticatedUser: { name: 'alice', groups: ['devs'], extra: {} } } });
  const base = await api.listen('127.0.0.1', 0);
  t.teardown(() => api.close());

  /** Every request the gateway saw went below the prefix of the cluster whose token it carried, with clean segments only. */
  const checkSeen = (t: Test) => {
    for (const s of gateway.seen) {
      const cluster = s.token.replace(/^Bearer token-/, '');
      const view = gatewayView(s.path.split('?')[0]);
      t.ok(view.startsWith(`${prefix(cluster)}/api/`) || view.startsWith(`${prefix(cluster)}/apis/`), `${s.method} ${s.path} with ${cluster}'s token reaches ${view} through a lenient gateway`);
      const segs = s.path.split('?')[0].split('/').slice(1);
      t.notOk(
        segs.some((x) => ['', '.', '..'].includes(decodeURIComponent(x)) || /[\\;%]/.test(decodeURIComponent(x)) || /%(2f|5c|25|3b|2e)/i.test(x)),
        `${s.path}: clean segments only`,
      );
    }
  };

  await t.test('clean requests reach their own prefix, segments encoded once', async (t) => {
    gateway.seen.length = 0;
    t.equal(await raw(base, 'GET', `${P}/clusters/a/api/v1/namespaces/default/configmaps/system:x`), 404);
    t.equal(await raw(base, 'GET', `${P}/clusters/b/api/v1/namespaces/default/pods/p/log?container=c`), 404);
    t.equal(await raw(base, 'GET', `${P}/clusters/a/api/v1/namespaces/default/pods/p/exec?command=true`, { upgrade: 'websocket' }), 404);
    t.same(
      gateway.seen.map((s) => [s.token, s.path, s.upgrade]),
      [
        ['Bearer token-a', '/k8s/clusters/a/api/v1/namespaces/default/configmaps/system:x', false],
        ['Bearer token-b', '/k8s/clusters/b/api/v1/namespaces/default/pods/p/log?container=c', false],
        ['Bearer token-a', '/k8s/clusters/a/api/v1/namespaces/default/pods/p/exec?command=true', true],
      ],
    );
    gateway.seen.length = 0;
    t.equal(await raw(base, 'GET', `${P}/apis/metrics.k8s.io/v1beta1/namespaces/default/pods`), 200, 'the fleet read answers');
    t.same(gateway.seen.map((s) => [s.token, s.path]).sort(), [
      ['Bearer token-a', '/k8s/clusters/a/apis/metrics.k8s.io/v1beta1/namespaces/default/pods'],
      ['Bearer token-b', '/k8s/clusters/b/apis/metrics.k8s.io/v1beta1/namespaces/default/pods'],
    ]);
  });

  const routes: Array<{ name: string; send: (seg: string) => Promise<number> }> = [
    { name: 'proxied read (namespace)', send: (x) => raw(base, 'GET', `${P}/clusters/a/api/v1/namespaces/${x}/configmaps`) },
    { name: 'proxied read (name)', send: (x) => raw(base, 'GET', `${P}/clusters/a/api/v1/namespaces/default/configmaps/${x}`) },
    { name: 'proxied write (namespace)', send: (x) => raw(base, 'POST', `${P}/clusters/a/api/v1/namespaces/${x}/configmaps`, { body: '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}' }) },
    { name: 'proxied delete (name)', send: (x) => raw(base, 'DELETE', `${P}/clusters/a/api/v1/namespaces/default/configmaps/${x}`) },
    { name: 'subresource (namespace)', send: (x) => raw(base, 'GET', `${P}/clusters/a/api/v1/namespaces/${x}/pods/p/log`) },
    { name: 'subresource (name)', send: (x) => raw(base, 'GET', `${P}/clusters/a/api/v1/namespaces/default/pods/${x}/log`) },
    { name: 'exec over WebSocket (namespace)', send: (x) => raw(base, 'GET', `${P}/clusters/a/api/v1/namespaces/${x}/pods/p/exec?command=true`, { upgrade: 'websocket' }) },
    { name: 'exec over WebSocket (pod)', send: (x) => raw(base, 'GET', `${P}/clusters/a/api/v1/namespaces/default/pods/${x}/exec?command=true`, { upgrade: 'websocket' }) },
    { name: 'exec over SPDY (namespace)', send: (x) => raw(base, 'POST', `${P}/clusters/a/api/v1/namespaces/${x}/pods/p/exec?command=true`, { upgrade: 'SPDY/3.1' }) },
    { name: 'port-forward (namespace)', send: (x) => raw(base, 'GET', `${P}/clusters/a/api/v1/namespaces/${x}/pods/p/portforward?ports=80`, { upgrade: 'websocket' }) },
    { name: 'the cluster of an upgrade', send: (x) => raw(base, 'GET', `${P}/clusters/${x}/api/v1/namespaces/default/pods/p/exec?command=true`, { upgrade: 'websocket' }) },
    { name: 'fleet metrics (namespace)', send: (x) => raw(base, 'GET', `${P}/apis/metrics.k8s.io/v1beta1/namespaces/${x}/pods`) },
    { name: 'fleet metrics (name)', send: (x) => raw(base, 'GET', `${P}/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/${x}`) },
    { name: 'stored list (namespace)', send: (x) => raw(base, 'GET', `${P}/clusters/a/api/v1/namespaces/${x}/pods`) },
    { name: 'stored get (name)', send: (x) => raw(base, 'GET', `${P}/api/v1/namespaces/default/pods/${x}`) },
  ];
  for (const route of routes) {
    await t.test(route.name, async (t) => {
      for (const s of traversalSpellings) {
        gateway.seen.length = 0;
        const code = await route.send(s.segment);
        t.ok(code === 400 || code === 404, `${s.name}: refused (${code})`);
        checkSeen(t);
        t.same(
          gateway.seen.map((x) => x.path),
          [],
          `${s.name}: nothing reached a member`,
        );
      }
    });
  }

  await t.test('over HTTP/2 (TLS, behind the front proxy): the same rule, exec included', async (t) => {
    const certs = makeCertSet(['127.0.0.1']);
    const host = await startFakeHost({ configMap: authenticationConfigMap(certs), tokens: {}, policy: () => true });
    t.teardown(() => host.close());
    const secure = await secureServingFromFlags({ 'bind-address': '127.0.0.1', 'secure-port': '0' }, logger('test'), { authnClient: host.client(), authzClient: host.client() });
    t.teardown(() => secure.stop());
    const tlsApi = await createApiserver({ store, secure, catalogOptions: { refreshMs: 200 }, proxy: { credentials } });
    const tlsBase = await tlsApi.listen('127.0.0.1', 0);
    t.teardown(() => tlsApi.close());
    const session = h2connect(tlsBase, { ca: secure.tls.certificate, cert: certs.frontProxyClient.cert, key: certs.frontProxyClient.key, servername: 'localhost' });
    session.on('error', () => undefined);
    t.teardown(() => session.close());
    const h2get = (path: string) =>
      new Promise<number>((resolve, reject) => {
        const s = session.request({ ':method': 'GET', ':path': path, 'x-remote-user': 'alice', 'x-remote-group': 'devs' });
        let status = 0;
        s.on('response', (h) => (status = Number(h[':status'])));
        s.on('error', reject);
        s.resume();
        s.on('end', () => resolve(status));
      });
    gateway.seen.length = 0;
    t.equal(await h2get(`${P}/clusters/a/api/v1/namespaces/default/configmaps`), 404, 'a clean request reaches the member');
    t.same(gateway.seen.map((s) => s.path), ['/k8s/clusters/a/api/v1/namespaces/default/configmaps']);
    for (const s of traversalSpellings) {
      for (const path of [`${P}/clusters/a/api/v1/namespaces/${s.segment}/configmaps`, `${P}/clusters/a/api/v1/namespaces/${s.segment}/pods/p/exec?command=true`]) {
        gateway.seen.length = 0;
        const code = await h2get(path);
        t.ok(code === 400 || code === 404, `${s.name}, ${path.includes('/exec') ? 'exec' : 'read'}: refused (${code})`);
        checkSeen(t);
        t.same(gateway.seen.map((x) => x.path), [], `${s.name}: nothing reached a member`);
      }
    }
  });

  await t.test('kubectl exec into the climbing namespace is refused, and reaches no member', async (t) => {
    const cacheDir = mkdtempSync(join(tmpdir(), 'panoptes-kubectl-'));
    t.teardown(() => rmSync(cacheDir, { recursive: true, force: true }));
    gateway.seen.length = 0;
    const run = await runKubectl({ server: `${base}${P}/clusters/a`, cacheDir }, ['exec', '-n', climbing, 'p', '--', 'true'], { timeoutMs: 30_000 });
    t.not(run.code, 0, `kubectl fails: ${run.stderr.trim()}`);
    t.match(run.stderr, /invalid path segment|BadRequest|400/);
    checkSeen(t);
    t.same(gateway.seen.map((s) => s.path), [], 'nothing reached a member');
  });
});
