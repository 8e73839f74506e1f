// publishProfiles against a recording host: what a profile says of a Cluster (conditions,
// properties, access provider, never a credential), that every write is conditional on what was
// read, that only this installation's profiles are changed or deleted, and that no write is
// made once the importer lease is lost or about to end.
import t from 'tap';
import { logger } from '../../lib/log.ts';
import type { WritableClusterClient } from '../../member/client.ts';
import type { ClusterRegistration } from '../../storage/cluster-objects.ts';
import type { KubeObject } from '../../storage/types.ts';
import { desiredProfile, publishProfiles, type PublishOptions } from './publish-profiles.ts';

const path = '/apis/multicluster.x-k8s.io/v1alpha1/namespaces/inventory/clusterprofiles';
const reg = (name: string, status: Record<string, unknown>, spec: Record<string, unknown> = { server: `https://${name}.example.com`, caData: 'Q0E=' }): ClusterRegistration =>
  ({ name, uid: `uid-${name}`, rv: 1, object: { metadata: { name }, spec, status }, credentials: { token: 'SECRET-TOKEN' } }) as unknown as ClusterRegistration;
const profile = (name: string, labels: Record<string, string>, rv = '5'): KubeObject => ({ apiVersion: 'multicluster.x-k8s.io/v1alpha1', kind: 'ClusterProfile', metadata: { name, namespace: 'inventory', uid: `p-${name}`, resourceVersion: rv, labels }, spec: { clusterManager: { name: labels['x-k8s.io/cluster-manager'] } } });

function host(initial: KubeObject[]) {
  const calls: Array<{ verb: string; path: string; body?: KubeObject; preconditions?: unknown }> = [];
  let rv = 10;
  const client = {
    server: 'https://host',
    warnings: [],
    get: async () => ({ items: initial }),
    create: async (p: string, body: KubeObject) => (calls.push({ verb: 'create', path: p, body }), { ...body, metadata: { ...body.metadata, uid: 'new', resourceVersion: String(++rv) } }),
    update: async (p: string, body: KubeObject) => (calls.push({ verb: 'update', path: p, body }), { ...body, metadata: { ...body.metadata, resourceVersion: String(++rv) } }),
    delete: async (p: string, o: { preconditions?: unknown }) => (calls.push({ verb: 'delete', path: p, preconditions: o.preconditions }), {}),
    stream: async () => {
      throw new Error('not used');
    },
    close: () => undefined,
  } as unknown as WritableClusterClient;
  return { client, calls };
}

const opts = (client: WritableClusterClient, clusters: ClusterRegistration[], held: PublishOptions['lease']['held']): PublishOptions => ({ client, namespace: 'inventory', installation: 'inst-a', clusters: async () => clusters, lease: { held }, log: logger('test') });
const ours = { 'x-k8s.io/cluster-manager': 'panoptes', 'panoptes.io/installation': 'inst-a' };

t.test('a profile says what Panoptes observes, never a credential', async (t) => {
  const ready = desiredProfile(reg('east', { phase: 'Ready', ready: true, clusterID: 'u-1', clusterIDSource: 'KubeSystemNamespace', kubernetesVersion: 'v1.31.2', initialSync: { objects: 42, complete: true, resourcesSynced: 3, resourcesTotal: 3 } }), 'inventory', 'inst-a', undefined);
  t.same(ready.object.metadata, { name: 'east', namespace: 'inventory', labels: ours });
  t.same(ready.object.spec, { displayName: 'east', clusterManager: { name: 'panoptes' } });
  t.match(ready.status.conditions, [{ type: 'ControlPlaneHealthy', status: 'True', reason: 'ProbeSucceeded' }, { type: 'Joined', status: 'True', reason: 'Reached' }]);
  t.same(ready.status.version, { kubernetes: 'v1.31.2' });
  t.same(ready.status.accessProviders, [{ name: 'panoptes', cluster: { server: 'https://east.example.com', 'certificate-authority-data': 'Q0E=' } }]);
  t.match(ready.status.properties, [{ name: 'panoptes.io/phase', value: 'Ready' }, { name: 'panoptes.io/initial-sync-complete', value: 'true' }, { name: 'panoptes.io/objects', value: '42' }, { name: 'panoptes.io/resources-synced', value: '3/3' }]);
  t.notOk(JSON.stringify(ready).includes('SECRET-TOKEN'), 'no credential');
  const down = desiredProfile(reg('east', { phase: 'Unauthorized', ready: false, message: 'HTTP 401' }), 'inventory', 'inst-a', { ...ready.object, status: ready.status });
  t.match(down.status.conditions, [{ type: 'ControlPlaneHealthy', status: 'False', reason: 'Unauthorized', message: 'HTTP 401' }, { type: 'Joined', status: 'False' }]);
  const pending = desiredProfile(reg('east', {}), 'inventory', 'inst-a', undefined);
  t.match(pending.status.conditions, [{ type: 'ControlPlaneHealthy', status: 'Unknown', reason: 'Pending' }]);
});

t.test('only this installation\'s profiles are written; writes are conditional; the lease is checked before each', async (t) => {
  const live = [profile('east', { 'x-k8s.io/cluster-manager': 'ocm' }), profile('gone', ours, '7'), profile('other', { 'x-k8s.io/cluster-manager': 'panoptes', 'panoptes.io/installation': 'inst-b' }), profile('legacy', { 'x-k8s.io/cluster-manager': 'panoptes' })];
  const { client, calls } = host(live);
  const r = await publishProfiles(opts(client, [reg('east', { ready: true }), reg('west', { ready: true })], () => ({ epoch: 3, remainingMs: 10_000 })));
  t.same(r, { created: ['west'], updated: [], deleted: ['gone'], leftAlone: ['east'] });
  t.same(calls.map((c) => [c.verb, c.path]), [
    ['create', path],
    ['update', `${path}/west/status`],
    ['delete', `${path}/gone`],
  ], "east (another manager's), other (another installation's) and legacy (no installation id) are never written");
  t.equal(calls[1].body?.metadata?.resourceVersion, '11', 'the status write carries the resourceVersion just created');
  t.same(calls[2].preconditions, { uid: 'p-gone', resourceVersion: '7' }, 'the delete is conditional on what was read');

  // The lease moves on mid-pass: nothing more is written.
  const second = host([]);
  let n = 0;
  const lost = await publishProfiles(opts(second.client, [reg('a', {}), reg('b', {})], () => (n++ < 3 ? { epoch: 3, remainingMs: 10_000 } : { epoch: 4, remainingMs: 10_000 })));
  t.match(lost, { created: ['a'], stopped: /no longer held at epoch 3/ });
  t.equal(second.calls.length, 2, 'a written (create and status), b not');
  const ending = host([]);
  t.match(await publishProfiles(opts(ending.client, [reg('a', {})], () => ({ epoch: 3, remainingMs: 200 }))), { created: [], stopped: /ends in 200 ms: no write is started/ });
  t.equal(ending.calls.length, 0);
  t.match(await publishProfiles(opts(ending.client, [reg('a', {})], () => undefined)), { stopped: /not held/ });
});
