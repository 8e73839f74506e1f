// `kubectl get clusters` of one member registered twice: the registration not synced shows
// PHASE Duplicate and READY False; -o wide's MESSAGE of the one synced adds its Duplicate
// condition's message to its health message. -o wide's MCS and INSTALLATION: the roles the
// spec grants (by its source) and the installation syncing it.
import t from 'tap';
import type { KubeObject } from '../../../storage/types.ts';
import { clusterTable } from './table.ts';

const at = '2026-01-01T00:00:00Z';
const cluster = (name: string, status: Record<string, unknown>): KubeObject => ({
  apiVersion: 'panoptes.io/v1alpha1',
  kind: 'Cluster',
  metadata: { name, creationTimestamp: at },
  spec: { source: 'file', server: 'https://10.0.0.1:6443' },
  status,
});
const cells = (o: KubeObject) => clusterTable.cells(o, '', Date.parse('2026-01-01T00:01:00Z'));
const dupSynced = { type: 'Duplicate', status: 'True', reason: 'SameClusterAs', message: 'the member cluster U is also registered as b: it is synced under this name only', lastTransitionTime: at };
const dupNot = { type: 'Duplicate', status: 'True', reason: 'SameClusterAs', message: 'the member cluster U is also registered as a: it is synced as a', lastTransitionTime: at };

t.test('PHASE, READY and MESSAGE of a member registered twice', async (t) => {
  const a = cells(cluster('a', { phase: 'Ready', ready: true, message: 'GET /readyz answered ok', conditions: [{ type: 'Ready', status: 'True' }, dupSynced] }));
  t.same([a[1], a[2]], ['Ready', 'True']);
  t.equal(a[11], `GET /readyz answered ok; ${dupSynced.message}`, 'the synced one says it is registered twice');
  const b = cells(cluster('b', { phase: 'Duplicate', ready: false, reason: 'Duplicate', message: dupNot.message, conditions: [{ type: 'Ready', status: 'False', reason: 'Duplicate' }, dupNot] }));
  t.same([b[1], b[2], b[11]], ['Duplicate', 'False', dupNot.message], 'the other: Duplicate, not Ready, the message once');
  const c = cells(cluster('c', { phase: 'Ready', ready: true, message: 'GET /readyz answered ok', conditions: [{ type: 'Ready', status: 'True' }] }));
  t.equal(c[11], 'GET /readyz answered ok', 'a member registered once: its health message');
});

t.test('-o wide: the multi-cluster Service roles granted, and the installation syncing it', async (t) => {
  const of = (spec: Record<string, unknown>, status: Record<string, unknown> = {}) => cells({ ...cluster('x', status), spec });
  t.same(of({ source: 'file', server: 'https://x' }, { installation: '0123456789ab' }).slice(9, 11), ['provider,consumer', '0123456789ab'], 'clusters.yaml: both unless it says otherwise');
  t.equal(of({ source: 'file', multiClusterServices: { provider: false } })[9], 'consumer');
  t.equal(of({ source: 'api', server: 'https://x' })[9], 'none', 'the API: none unless granted');
  t.same(of({ source: 'clustersource/capi', multiClusterServices: { provider: true } }).slice(9, 11), ['provider', '<none>']);
  t.same(clusterTable.columns.map((c) => c.name).slice(9, 11), ['MCS', 'Installation']);
});
