// `kubectl get mcs` while a provider is not Ready: ENDPOINTS counts what is dispatched (a
// provider whose endpoints its policy removed counts 0), and -o wide's MESSAGE says which
// provider is not Ready, since when, and whether its endpoints are kept or removed.
import t from 'tap';
import type { McsConsumerStatus, MultiClusterServiceStatus } from '../../../api/multicluster-service.ts';
import type { KubeObject } from '../../../storage/types.ts';
import { mcsTable } from './table.ts';

const ok = (type: string) => ({ type, status: 'True' as const, reason: 'Dispatched', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' });
const consumer = (cluster: string): McsConsumerStatus => ({ cluster, serviceApplied: true, endpointSlices: 1, endpoints: 2, conditions: [ok('ServiceApplied'), ok('EndpointSlicesDispatched')] });
const ready = { type: 'Ready', status: 'True' as const, reason: 'Dispatched', message: 'every consumer (lab, west) has the Service and its EndpointSlices', lastTransitionTime: '2026-01-01T00:00:00Z' };
const object = (policy: string, status: MultiClusterServiceStatus): KubeObject => ({
  apiVersion: 'panoptes.io/v1alpha1',
  kind: 'MultiClusterService',
  metadata: { name: 'web', namespace: 'shop', creationTimestamp: '2026-01-01T00:00:00Z' },
  spec: { providerClusters: ['east', 'north'], consumerClusters: ['west', 'lab'], providerNotReady: { policy } },
  status,
});
const cells = (o: KubeObject) => mcsTable.cells(o, '', Date.parse('2026-01-01T00:01:00Z'));

t.test('ENDPOINTS and MESSAGE while a provider is not Ready', async (t) => {
  const since = '2026-01-01T00:00:30Z';
  const removed = object('RemoveImmediately', {
    providers: [{ cluster: 'east', endpoints: 2, ready: false, notReadySince: since, dispatched: false }, { cluster: 'north', endpoints: 3, ready: true, dispatched: true }],
    consumers: [consumer('lab'), consumer('west')],
    conditions: [ready],
  });
  t.same(cells(removed), ['web', '2', '2', 3, '2/2', '60s', 'all', 'RemoveImmediately', `provider east not Ready since ${since}: its endpoints are removed; ${ready.message}`]);
  const kept = object('Keep', { ...removed.status as MultiClusterServiceStatus, providers: [{ cluster: 'east', endpoints: 2, ready: false, notReadySince: since, dispatched: true }, { cluster: 'north', endpoints: 3, ready: true, dispatched: true }] });
  t.same(cells(kept).slice(3), [5, '2/2', '60s', 'all', 'Keep', `provider east not Ready since ${since}: its endpoints are kept; ${ready.message}`]);
  const before = object('Keep', { ...removed.status as MultiClusterServiceStatus, providers: [{ cluster: 'east', endpoints: 2, ready: true }] });
  t.same(cells(before).slice(3, 4), [2], 'a status written without `dispatched` counts every provider, as before');
  t.equal(cells(before)[8], ready.message, 'every provider Ready: the Ready condition alone');
});
