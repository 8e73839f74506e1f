// Clusters registered through the API, followed by synchro (in process, SQLite, simulated
// clusters on 127.0.0.1, which the operator allows with --allow-member-networks; the
// apiserver serves the writes): inline credentials, a Secret of the host cluster and its
// rotation, a spec change, a Secret that is missing, not labelled for the cluster or not
// annotated for its server, inline credentials stored for another endpoint, a name in both
// clusters.yaml and the API (the file
// wins, the object says so), the objects of clusters.yaml, and deletion (the cluster's
// objects go as DELETED, then the object).
import t from 'tap';
import { createApiserver } from '../../apiserver/server.ts';
import { startSimCluster, type SimCluster } from '../../hack/sim/cluster.ts';
import { http } from '../../hack/sim/testutil.ts';
import { MemberNetworks } from '../../member/networks.ts';
import { clusterObjectsCluster } from '../../storage/cluster-objects.ts';
import { openTestStore } from '../../storage/testing.ts';
import { startSynchro } from '../synchro.ts';
import { fastTimings, tempDir, waitForCopy, waitUntil, writeClusters } from '../testutil.ts';

const C = '/apis/panoptes.io/v1alpha1/clusters';
const b64 = (s: string) => Buffer.from(s).toString('base64');

t.test('API-registered clusters', async (t) => {
  const sims: SimCluster[] = [];
  // One simulated member per registration: two registrations of one member are synced once (synchro/cluster/identity.ts).
  for (const name of ['east', 'north', 'west', 'host', 'south', 'other']) sims.push(await startSimCluster({ name }));
  const [east, north, west, host, south, other] = sims;
  east.auth.tokens = ['east-token-1'];
  north.auth.tokens = ['north-token-1'];
  const { store, close } = await openTestStore('sqlite');
  const { dir, cleanup } = tempDir();
  const file = `${dir}/clusters.yaml`;
  writeClusters(file, [{ name: 'west', server: west.url, resources: ['configmaps'] }]);
  const memberNetworks = MemberNetworks.parse('127.0.0.0/8');
  const api = await createApiserver({ store, catalogOptions: { refreshMs: 200 }, memberNetworks });
  const base = await api.listen('127.0.0.1', 0);
  const synchro = await startSynchro({
    store,
    memberNetworks,
    clustersFile: file,
    hostCluster: { server: host.url },
    credentialsNamespace: 'panoptes',
    timings: fastTimings,
    reloadIntervalMs: 100,
    shards: { identity: 's1', assignIntervalMs: 200 },
    compaction: false,
  });
  t.teardown(async () => {
    await synchro.stop();
    await api.close();
    await close();
    await Promise.all(sims.map((s) => s.close()));
    cleanup();
  });
  const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => http(method, base + path, body, headers);
  const MERGE = { 'Content-Type': 'application/merge-patch+json' };
  const cluster = async (name: string) => (await call('GET', `${C}/${name}`)).json;
  const hostPost = (path: string, body: unknown) => http('POST', host.url + path, body);
  await hostPost('/api/v1/namespaces', { metadata: { name: 'panoptes' } });

  t.test('inline credentials: synced within seconds, status on the object', async (t) => {
    const r = await call('POST', C, { metadata: { name: 'east' }, spec: { server: east.url, resources: ['configmaps'], credentials: { token: 'east-token-1' } } });
    t.equal(r.status, 201, 'created');
    t.same(await waitForCopy(store, east, 'east', ['/configmaps']), [], 'its objects are listable');
    const c = await waitUntil('east Ready with its status', async () => {
      const o = await cluster('east');
      return o.status?.ready && o.status.initialSync?.complete ? o : undefined;
    });
    t.match(c.status, { phase: 'Ready', observedGeneration: 1, credentials: { source: 'Inline', kinds: ['token'] }, owner: { member: 's1' } });
    t.match(c.status.conditions, [{ type: 'Ready', status: 'True' }, { type: 'Accepted', status: 'True' }]);
    t.ok(east.auth.seen.includes('east-token-1'), 'the inline token was used');
    t.notOk(JSON.stringify(await store.listClusters()).includes('east-token-1'), 'nor kept in the clusters table');
  });

  t.test('a spec change is followed: resources added, then dropped', async (t) => {
    const p = await call('PATCH', `${C}/east`, { spec: { resources: ['configmaps', 'services'] } }, MERGE);
    t.equal(p.json.metadata.generation, 2);
    t.same(await waitForCopy(store, east, 'east', ['/configmaps', '/services']), []);
    await waitUntil('observedGeneration 2', async () => (await cluster('east')).status?.observedGeneration === 2);
    await call('PATCH', `${C}/east`, { spec: { resources: ['services'] } }, MERGE);
    await waitUntil('east configmaps gone', async () => (await store.list({ group: '', resource: 'configmaps', clusters: ['east'] })).items.length === 0);
    t.same(await waitForCopy(store, east, 'east', ['/services']), []);
  });

  t.test('credentials from a Secret of the host cluster, and its rotation', async (t) => {
    const secret = (token: string) => ({ metadata: { name: 'north-creds', namespace: 'panoptes', labels: { 'panoptes.io/cluster': 'north' }, annotations: { 'panoptes.io/server': north.url } }, type: 'Opaque', data: { token: b64(token) } });
    t.equal((await hostPost('/api/v1/namespaces/panoptes/secrets', secret('north-token-1'))).status, 201);
    const r = await call('POST', C, { metadata: { name: 'north' }, spec: { server: north.url, resources: ['configmaps'], credentials: { secretRef: { name: 'north-creds' } } } });
    t.equal(r.status, 201, 'created');
    t.same(await waitForCopy(store, north, 'north', ['/configmaps']), []);
    await waitUntil('north Ready', async () => (await cluster('north')).status?.ready === true);
    t.match((await cluster('north')).status.credentials, { source: 'Secret', secret: 'panoptes/north-creds', kinds: ['token'] });

    north.auth.tokens = ['north-token-2'];
    const cur = (await http('GET', `${host.url}/api/v1/namespaces/panoptes/secrets/north-creds`)).json;
    t.equal((await http('PUT', `${host.url}/api/v1/namespaces/panoptes/secrets/north-creds`, { ...cur, data: { token: b64('north-token-2') } })).status, 200);
    await waitUntil('the rotated token in use', () => north.auth.seen[north.auth.seen.length - 1] === 'north-token-2', 15_000);
    north.crud.create(north.registry.lookup('', 'v1', 'configmaps')!, 'v1', 'default', { metadata: { name: 'after-rotation' }, data: {} });
    t.same(await waitForCopy(store, north, 'north', ['/configmaps']), [], 'syncing with the new token');
    await waitUntil('north Ready again', async () => (await cluster('north')).status?.ready === true);
  });

  t.test('a Secret that is missing or not labelled for the cluster', async (t) => {
    const annotations = { 'panoptes.io/server': '*' };
    await hostPost('/api/v1/namespaces/panoptes/secrets', { metadata: { name: 'unlabelled', namespace: 'panoptes', annotations }, data: { token: b64('x') } });
    await hostPost('/api/v1/namespaces/panoptes/secrets', { metadata: { name: 'for-north', namespace: 'panoptes', labels: { 'panoptes.io/cluster': 'north' }, annotations }, data: { token: b64('x') } });
    for (const [name, secret, why] of [
      ['south', 'unlabelled', /Secret panoptes\/unlabelled not found with label panoptes.io\/cluster=south/],
      ['south2', 'for-north', /is labelled panoptes.io\/cluster=north: it is for that cluster, not south2/],
    ] as const) {
      t.equal((await call('POST', C, { metadata: { name }, spec: { server: north.url, credentials: { secretRef: { name: secret } } } })).status, 201);
      const o = await waitUntil(`${name} Invalid`, async () => {
        const c = await cluster(name);
        return c.status?.phase === 'Invalid' ? c : undefined;
      });
      t.match(o.status.message, why);
      t.equal(north.auth.seen.includes('x'), false, 'the Secret was not used');
    }
  });

  t.test('a Secret names the server it is for', async (t) => {
    const TOKEN = 'south-token-PLANTED-31';
    const created = await hostPost('/api/v1/namespaces/panoptes/secrets', { metadata: { name: 'southeast-creds', namespace: 'panoptes', labels: { 'panoptes.io/cluster': 'southeast' } }, data: { token: b64(TOKEN) } });
    t.equal(created.status, 201);
    t.equal((await call('POST', C, { metadata: { name: 'southeast' }, spec: { server: south.url, resources: ['configmaps'], credentials: { secretRef: { name: 'southeast-creds' } } } })).status, 201);
    const invalid = await waitUntil('southeast Invalid', async () => {
      const c = await cluster('southeast');
      return c.status?.phase === 'Invalid' ? c : undefined;
    });
    t.match(invalid.status.message, new RegExp(`does not say which server its credentials are for: add the annotation panoptes.io/server: ${south.url.replace(/[.]/g, '\\.')}`));
    t.notOk(south.auth.seen.includes(TOKEN), 'not sent anywhere');
    const cur = (await http('GET', `${host.url}/api/v1/namespaces/panoptes/secrets/southeast-creds`)).json;
    await http('PUT', `${host.url}/api/v1/namespaces/panoptes/secrets/southeast-creds`, { ...cur, metadata: { ...cur.metadata, annotations: { 'panoptes.io/server': 'https://elsewhere.example' } } });
    await waitUntil('southeast says which server its Secret is for', async () => /is for server https:\/\/elsewhere\.example/.test((await cluster('southeast')).status?.message ?? ''));
    t.notOk(south.auth.seen.includes(TOKEN), 'nor to a server it is not for');
    const again = (await http('GET', `${host.url}/api/v1/namespaces/panoptes/secrets/southeast-creds`)).json;
    south.auth.tokens = [...south.auth.tokens, TOKEN];
    await http('PUT', `${host.url}/api/v1/namespaces/panoptes/secrets/southeast-creds`, { ...again, metadata: { ...again.metadata, annotations: { 'panoptes.io/server': `${south.url}/` } } });
    await waitUntil('southeast Ready once annotated for its server', async () => (await cluster('southeast')).status?.ready === true);
    t.ok(south.auth.seen.includes(TOKEN));
    t.equal((await call('DELETE', `${C}/southeast`)).status, 200);
  });

  t.test('inline credentials stored for another endpoint are not used', async (t) => {
    const TOKEN = 'moved-token-PLANTED-77';
    east.auth.tokens = [...east.auth.tokens, TOKEN];
    // As a writer that does not check the endpoint (an apiserver of the previous release) could leave it.
    await store.writeClusterObjectWithoutLease('moved', () => ({
      action: 'put',
      object: { apiVersion: 'panoptes.io/v1alpha1', kind: 'Cluster', metadata: { name: 'moved', uid: 'uid-moved', generation: 1, finalizers: ['panoptes.io/synchro'] }, spec: { source: 'api', server: east.url, resources: ['configmaps'] } },
      credentials: { token: TOKEN, endpoint: { server: 'https://where-it-was-given.example' } },
    }));
    const o = await waitUntil('moved Invalid', async () => {
      const c = await cluster('moved');
      return c.status?.phase === 'Invalid' ? c : undefined;
    });
    t.match(o.status.message, /the stored inline credentials were given for another spec.server \(server https:\/\/where-it-was-given.example\), so they are not used: inline credentials are bound to the endpoint they were given for/);
    t.notOk(east.auth.seen.includes(TOKEN), 'the token was not sent');
    t.equal((await call('DELETE', `${C}/moved`)).status, 200);
  });

  t.test('a name in clusters.yaml and in the API: the file wins, the object says so', async (t) => {
    t.match(await call('POST', C, { metadata: { name: 'west' }, spec: { server: east.url } }), { status: 409, json: { reason: 'AlreadyExists' } }, 'a file cluster holds its name');
    const westObj = await cluster('west');
    t.match(westObj, { spec: { source: 'file', server: west.url, resources: ['configmaps'] }, status: { credentials: { source: 'File' } } });

    t.equal((await call('POST', C, { metadata: { name: 'dup' }, spec: { server: north.url, resources: ['configmaps'] } })).status, 201);
    await waitUntil('dup (API, no credentials) not Ready: the member refuses it', async () => (await cluster('dup')).status?.phase === 'Unauthorized');
    writeClusters(file, [
      { name: 'west', server: west.url, resources: ['configmaps'] },
      { name: 'dup', server: other.url, resources: ['configmaps'] },
    ]);
    const o = await waitUntil('dup synced from the file, the object saying so', async () => {
      const c = await cluster('dup');
      return c.status?.ready && c.status.conditions?.some((x: { type: string; status: string }) => x.type === 'Accepted' && x.status === 'False') ? c : undefined;
    });
    t.match(o, { spec: { source: 'api', server: north.url }, status: { server: `${other.url}/`, conditions: [{ type: 'Ready' }, { type: 'Accepted', reason: 'DefinedInClustersFile' }] } });
    t.same(await waitForCopy(store, other, 'dup', ['/configmaps']), [], 'the file\'s server is synced');

    writeClusters(file, [{ name: 'dup', server: other.url, resources: ['configmaps'] }]);
    await waitUntil('west removed with the file entry', async () => (await call('GET', `${C}/west`)).status === 404);
    t.equal((await store.list({ group: '', resource: 'configmaps', clusters: ['west'] })).items.length, 0, 'its objects too');
    writeClusters(file, []);
    await waitUntil('dup follows its object again', async () => {
      const c = await cluster('dup');
      return c.status?.server === `${north.url}/` && c.status.conditions?.some((x: { type: string; status: string }) => x.type === 'Accepted' && x.status === 'True');
    });
  });

  t.test('delete: the objects go as DELETED, then the Cluster', async (t) => {
    const before = await store.watermark();
    const d = await call('DELETE', `${C}/east`);
    t.equal(d.status, 200);
    t.ok(d.json.metadata.deletionTimestamp, 'answered with the object marked for deletion');
    await waitUntil('east gone', async () => (await call('GET', `${C}/east`)).status === 404);
    t.equal((await store.list({ group: '', resource: 'services', clusters: ['east'] })).items.length, 0);
    const changes = await store.changesAfter(before, 10_000);
    const dataDeletes = changes.filter((c) => c.cluster === 'east' && c.type === 'DELETED');
    const objectDelete = changes.find((c) => c.cluster === clusterObjectsCluster && c.name === 'east' && c.type === 'DELETED');
    t.equal(dataDeletes.length, east.store.list('/services').items.length, 'one DELETED per object');
    t.ok(objectDelete && dataDeletes.every((c) => c.rv < objectDelete.rv), 'the Cluster goes last');
    t.same((await store.listClusters()).map((c) => c.name).includes('east'), false, 'its status row too');
  });
});
