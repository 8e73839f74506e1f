// The upgrade path of the proxy on its own: which URLs it serves, what of the client's
// request reaches the member (never the client's credentials or Impersonate-*), and the
// idle and overall limits of a stream.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { get, until } from '../../hack/sim/testutil.ts';
import { startProxyFleet } from '../../hack/testing/proxy-fleet.ts';
import { openExec } from '../../hack/testing/ws-exec.ts';
import { setLogLevel } from '../../lib/log.ts';
import { StatusError } from '../../kube/status.ts';
import { openTestStore, seedCluster } from '../../storage/testing.ts';
import { createApiserver } from '../server.ts';
import { upgradeTarget } from './upgrade.ts';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');

const P = '/apis/panoptes.io/v1alpha1/resources';

t.test('upgradeTarget: one-cluster pod streams only', async (t) => {
  t.same(upgradeTarget(`${P}/clusters/east/api/v1/namespaces/ns/pods/web-1/exec?command=sh&stdin=true`), {
    cluster: 'east', namespace: 'ns', pod: 'web-1', subresource: 'exec', segments: ['api', 'v1', 'namespaces', 'ns', 'pods', 'web-1', 'exec'], query: 'command=sh&stdin=true',
  });
  const code = (u: string) => {
    try {
      upgradeTarget(u);
      return 0;
    } catch (e) {
      return (e as StatusError).code;
    }
  };
  t.equal(code(`${P}/api/v1/namespaces/ns/pods/p/attach`), 405, 'all-clusters view');
  t.equal(code(`${P}/clusters/east/api/v1/namespaces/ns/pods/p/log`), 404, 'log is no upgrade');
  t.equal(code(`${P}/clusters/east/api/v1/namespaces/ns/services/p/exec`), 404);
  t.equal(code('/api/v1/namespaces/ns/pods/p/exec'), 404, 'outside the views');
  t.equal(code(`${P}/clusters/a%2Fb/api/v1/namespaces/ns/pods/p/portforward`), 400, 'a cluster name is one segment');
  t.equal(code(`${P}/clusters/east/api/v1/namespaces/..\\..\\b/pods/p/exec`), 400, 'the one segment rule (kube/path-segments.ts)');
  t.equal(code(`${P}/clusters/east/api/v1/namespaces/Shop/pods/p/exec`), 400, 'a namespace is a DNS-1123 label');
  t.equal(code(`${P}/clusters/east/api/v1/namespaces/ns/pods/p_q/exec`), 400, 'a pod name is a DNS-1123 subdomain');
});

t.test('through the proxy: credentials stay, limits hold', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'panoptes-upgrade-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const fleet = await startProxyFleet({ mode: 'plain', names: ['east'], dir, streams: { idleTimeoutMs: 400, maxDurationMs: 2500 } });
  t.teardown(() => fleet.close());
  const east = fleet.sims[0];
  const pod = east.store.list('/pods', { namespace: 'kube-system' }).items.find((p) => p.metadata.name!.startsWith('coredns-'))!.metadata.name!;
  const cat = `${await fleet.clusterServer('east')}/api/v1/namespaces/kube-system/pods/${pod}/exec?command=cat&stdin=true&stdout=true`;

  await t.test("the client's credentials and impersonation do not reach the member", async (t) => {
    const s = await openExec(cat, { Authorization: 'Bearer alice-token', 'Impersonate-User': 'system:admin', 'Impersonate-Group': 'system:masters' });
    s.write('hi\n');
    t.equal(await s.read(), 'hi\n');
    t.same(east.auth.impersonations.at(-1), { caller: 'panoptes', user: 'alice', groups: ['devs'], extra: {} }, 'the development user, not system:admin');
    t.notOk(east.auth.seen.includes('alice-token'), "the client's token was not forwarded");
    t.match(await s.finish(), { status: { status: 'Success' } });
    const metrics = await get(`${await fleet.base()}/metrics`);
    t.match(metrics.text, /^panoptes_proxy_streams_total\{subresource="exec",code="101"\} 1$/m, 'counted');
    t.ok(await until(() => fleet.api.streams.open === 0, 3000));
    t.match((await get(`${await fleet.base()}/metrics`)).text, /^panoptes_proxy_streams_open 0$/m);
  });

  await t.test('an idle stream is closed, a busy one is not (until the overall limit)', async (t) => {
    // Each time is counted from before its stream was opened (its last activity is the
    // handshake): a busy machine may take a while to open the second one.
    const idleOpened = Date.now();
    const idle = await openExec(cat);
    const busyOpened = Date.now();
    const busy = await openExec(cat);
    let idleClosed = 0;
    let busyClosed = 0;
    idle.socket.once('close', () => (idleClosed = Date.now() - idleOpened));
    busy.socket.once('close', () => (busyClosed = Date.now() - busyOpened));
    const timer = setInterval(() => busy.write('.\n'), 100);
    t.teardown(() => clearInterval(timer));
    t.ok(await until(() => idleClosed > 0, 3000), 'the idle stream was closed');
    t.ok(idleClosed >= 350, `after its idle time (${idleClosed} ms)`);
    t.equal(busyClosed, 0, 'the busy one stays');
    t.ok(await until(() => busyClosed > 0, 5000), 'the busy one ends at the overall limit');
    t.ok(busyClosed >= 2400, `at ${busyClosed} ms`);
    clearInterval(timer);
    t.ok(await until(() => east.streams.open.size === 0, 3000), 'both member sessions closed');
  });
});

t.test("a member's refusal comes back whole, whatever its framing", async (t) => {
  // A member answering the upgrade with a chunked 403 (no Content-Length).
  const member = createServer((_req, res) => res.writeHead(500).end());
  member.on('upgrade', (_req, socket: Duplex) => {
    const body = JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'pods "p" is forbidden: chunked', reason: 'Forbidden', code: 403 });
    socket.end(`HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`);
  });
  await new Promise<void>((r) => member.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => member.close(() => r())));
  const { store, close } = await openTestStore('sqlite');
  t.teardown(close);
  await seedCluster(store, 'm', { phase: 'Ready', ready: true, apiResources: [{ group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, singularName: 'pod' }] });
  const server = `http://127.0.0.1:${(member.address() as AddressInfo).port}`;
  const api = await createApiserver({ store, proxy: { credentials: { lookup: async () => ({ connection: { server }, fingerprint: server }) }, unauthenticatedUser: { name: 'u', groups: [], extra: {} } } });
  const base = await api.listen('127.0.0.1', 0);
  t.teardown(() => api.close());
  const refused = (b: string) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(`${b}${P}/clusters/m/api/v1/namespaces/ns/pods/p/exec?command=true&stdout=true`, { method: 'POST', headers: { Connection: 'Upgrade', Upgrade: 'SPDY/3.1' } });
      req.on('response', (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('upgrade', () => reject(new Error('upgraded')));
      req.on('error', reject);
      req.end();
    });
  const answer = await refused(base);
  t.equal(answer.status, 403);
  t.equal(JSON.parse(answer.body).message, 'pods "p" is forbidden: chunked');

  // The development mode without --insecure-proxy-user proxies nothing, streams included.
  const nobody = await createApiserver({ store, proxy: { credentials: { lookup: async () => ({ connection: { server }, fingerprint: server }) } } });
  const nobodyBase = await nobody.listen('127.0.0.1', 0);
  t.teardown(() => nobody.close());
  const none = await refused(nobodyBase);
  t.equal(none.status, 403);
  t.match(JSON.parse(none.body).message, /authenticates nobody/);
});
