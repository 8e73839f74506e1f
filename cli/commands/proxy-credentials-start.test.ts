// The apiserver's proxy reads the credentials Secrets API-registered Clusters name at start,
// and /readyz waits for them: a real apiserver (startServing, as `panoptes apiserver` runs it)
// against a simulated host cluster holding a Cluster's Secret, behind a gate that holds the
// Secrets' list. The Secrets are listed with no proxied request made, /readyz fails until the
// list answers and passes after, and a proxied request sent meanwhile waits for the list and
// succeeds rather than a 503. A host that does not answer keeps no replica unready: /readyz
// passes once the first list failed, and the Cluster's proxied requests are 503s naming why.
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { createApiserver } from '../../apiserver/server.ts';
import { freePort } from '../../storage/testing/postgres.ts';
import { impersonatorRules, readOnlyUser, readVerbs } from '../../hack/sim/auth.ts';
import { startSimCluster } from '../../hack/sim/cluster.ts';
import { get, http } from '../../hack/sim/testutil.ts';
import { logger, setLogLevel } from '../../lib/log.ts';
import { MemberNetworks } from '../../member/networks.ts';
import type { Store } from '../../storage/store.ts';
import { openTestStore } from '../../storage/testing.ts';
import { startSynchro } from '../../synchro/synchro.ts';
import { fastTimings, waitUntil } from '../../synchro/testutil.ts';
import { startServing } from './apiserver.ts';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');

const TOKEN = 'east-proxy-start-token';
const secretsPath = '/api/v1/namespaces/panoptes/secrets';
const proxied = '/apis/panoptes.io/v1alpha1/resources/clusters/east/api/v1/namespaces';

/** A forwarder to `target` that holds lists (not watches) of the credentials Secrets while `held`. */
async function gate(t: Test, target: string) {
  const waiting: Array<() => void> = [];
  const state = { held: true, lists: 0 };
  const forward = (req: IncomingMessage, res: ServerResponse) => {
    const up = request(new URL(req.url ?? '/', target), { method: req.method, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    up.on('error', () => res.destroy());
    res.on('close', () => up.destroy());
    req.pipe(up);
  };
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://gate');
    if (url.pathname === secretsPath && !url.searchParams.has('watch')) {
      state.lists++;
      if (state.held) return void waiting.push(() => forward(req, res));
    }
    forward(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  }));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    state,
    release() {
      state.held = false;
      for (const go of waiting.splice(0)) go();
    },
  };
}

/** A member, a host cluster holding its Secret, storage with its Cluster, synchro syncing it until it is Ready. */
async function fleet(t: Test): Promise<{ store: Store; hostUrl: string }> {
  const east = await startSimCluster({ name: 'east' });
  const host = await startSimCluster({ name: 'host' });
  t.teardown(() => Promise.all([east.close(), host.close()]));
  east.auth.tokens = [TOKEN];
  east.auth.grant(TOKEN, { name: 'panoptes', rules: [...impersonatorRules, { verbs: readVerbs }] });
  east.auth.grant('dev-token', readOnlyUser('dev'));
  t.equal((await http('POST', `${host.url}/api/v1/namespaces`, { metadata: { name: 'panoptes' } })).status, 201);
  const secret = { metadata: { name: 'east-creds', namespace: 'panoptes', labels: { 'panoptes.io/cluster': 'east' }, annotations: { 'panoptes.io/server': east.url } }, type: 'Opaque', data: { token: Buffer.from(TOKEN).toString('base64') } };
  t.equal((await http('POST', `${host.url}${secretsPath}`, secret)).status, 201);

  const { store, close } = await openTestStore('sqlite');
  const memberNetworks = MemberNetworks.parse('127.0.0.0/8');
  const registry = await createApiserver({ store, memberNetworks, catalogOptions: { refreshMs: 60_000 } });
  const base = await registry.listen('127.0.0.1', 0);
  const synchro = await startSynchro({ store, memberNetworks, hostCluster: { server: host.url }, credentialsNamespace: 'panoptes', timings: fastTimings, reloadIntervalMs: 100, compaction: false });
  t.teardown(async () => {
    await synchro.stop();
    await registry.close();
    await close();
  });
  const cluster = { metadata: { name: 'east' }, spec: { server: east.url, resources: ['configmaps'], credentials: { secretRef: { name: 'east-creds' } } } };
  t.equal((await http('POST', `${base}/apis/panoptes.io/v1alpha1/clusters`, cluster)).status, 201);
  await waitUntil('east Ready', async () => (await store.getCluster('east'))?.status.ready === true, 30_000);
  return { store, hostUrl: host.url };
}

/** `panoptes apiserver` in process: plain HTTP, the proxy as user dev, the host cluster's Secrets read from `hostUrl`. */
async function apiserver(t: Test, store: Store, hostUrl: string): Promise<string> {
  const values = { 'insecure-listen': '127.0.0.1:0', 'insecure-proxy-user': 'dev', 'allow-member-networks': '127.0.0.0/8' };
  const server = await startServing(store, values, logger('apiserver'), undefined, { members: { hostCluster: { server: hostUrl }, credentialsNamespace: 'panoptes' } });
  t.teardown(() => server.close());
  return server.url;
}

t.test('the credentials Secrets are listed at start; /readyz and the first proxied request wait for them', async (t) => {
  const { store, hostUrl } = await fleet(t);
  const g = await gate(t, hostUrl);
  const url = await apiserver(t, store, g.url);

  await waitUntil('the Secrets listed at start, before any proxied request', () => g.state.lists > 0, 15_000);
  const before = await get(`${url}/readyz?verbose`);
  t.equal(before.status, 500, '/readyz fails while the Secrets are not listed (500, as kube-apiserver)');
  t.match(before.text, /\[-\]member-credentials failed: the credentials Secrets of the host cluster \(namespace panoptes\) are not listed yet/);
  t.match((await get(`${url}/readyz/member-credentials`)).status, 500);

  let settled = false;
  const first = get(`${url}${proxied}`).finally(() => (settled = true));
  for (let i = 0; i < 2; i++) t.equal((await get(`${url}/readyz`)).status, 500, 'still not ready while the list is held');
  t.notOk(settled, 'the proxied request waits for the list rather than answering 503');
  g.release();
  const r = await first;
  t.equal(r.status, 200, `the first proxied request, sent before the Secrets were listed, succeeds: ${r.status === 200 ? '' : r.text}`);
  t.match(r.json, { kind: 'NamespaceList', items: [{ metadata: { name: 'default' } }] });
  await waitUntil('/readyz passes once the Secrets are listed', async () => (await get(`${url}/readyz`)).status === 200, 15_000);
  t.match((await get(`${url}/readyz?verbose`)).text, /\[\+\]member-credentials ok/);
});

t.test('right after start, with the host answering at once: the first proxied request succeeds', async (t) => {
  const { store, hostUrl } = await fleet(t);
  const url = await apiserver(t, store, hostUrl);
  const r = await get(`${url}${proxied}`);
  t.equal(r.status, 200, r.status === 200 ? 'answered by the member' : r.text);
});

t.test('a host cluster that does not answer does not keep the replica unready', async (t) => {
  const { store } = await fleet(t);
  const nowhere = `http://127.0.0.1:${await freePort()}`;
  const url = await apiserver(t, store, nowhere);
  await waitUntil('/readyz passes once the first list failed', async () => (await get(`${url}/readyz`)).status === 200, 30_000);
  const r = await get(`${url}${proxied}`);
  t.equal(r.status, 503);
  t.match(r.json.message, /cannot read \/api\/v1\/namespaces\/panoptes\/secrets of the host cluster: ECONNREFUSED/);
});
