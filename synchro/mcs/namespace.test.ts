// A MultiClusterService whose namespace a consumer lacks: Panoptes creates no namespace, so
// that consumer gets nothing and its status entry says why, reason NamespaceNotFound, whether
// synchro syncs the consumer's Namespaces (no write is tried) or not (the consumer's own 404
// NotFound `namespaces "shop" not found`, as kube's NamespaceLifecycle admission answers a
// create there); once the namespace exists the consumer gets the Service and its slices.
import t from 'tap';
import type { MultiClusterServiceStatus } from '../../api/multicluster-service.ts';
import { dispatchedSliceName } from '../../api/multicluster-service.ts';
import { http } from '../../hack/sim/testutil.ts';
import { waitUntil } from '../testutil.ts';
import { dispatchOver, ensureNamespace, getMcs, provide, putMcs, resources, simFleet } from './testutil.ts';

const SLICES = 'discovery.k8s.io/endpointslices';

t.test('a consumer without the namespace: NamespaceNotFound in its entry, nothing created; dispatched once the namespace exists', async (t) => {
  // west's Namespaces are synced; lab's are not (the dispatcher learns of the namespace from lab's answer).
  const { sims, fx, since, writes } = await simFleet(['east', 'west', 'lab']);
  const [east, west, lab] = sims;
  provide(east, fx(east), 'shop', 'web', ['10.0.0.1', '10.0.0.2']);
  const { store } = await dispatchOver('sqlite', sims, (stop) => t.teardown(stop), (s) => (s === lab ? { resources: resources.filter((r) => r !== 'namespaces') } : {}));
  const status = async () => (await getMcs(store, 'shop', 'web'))?.status as MultiClusterServiceStatus | undefined;
  const entry = async (c: string) => (await status())?.consumers?.find((e) => e.cluster === c);
  const condition = async (c: string, type: string) => (await entry(c))?.conditions.find((x) => x.type === type);

  const probe = await http('POST', `${lab.url}/api/v1/namespaces/shop/services`, { metadata: { name: 'probe' }, spec: { ports: [{ port: 80 }] } });
  t.match([probe.status, probe.json], [404, { kind: 'Status', reason: 'NotFound', message: 'namespaces "shop" not found', details: { name: 'shop', kind: 'namespaces' } }], 'the simulated consumer answers as kube does');
  const before = writes();
  await putMcs(store, 'shop', 'web', {});
  await waitUntil('both entries say NamespaceNotFound', async () => (await condition('west', 'ServiceApplied'))?.reason === 'NamespaceNotFound' && (await condition('lab', 'ServiceApplied'))?.reason === 'NamespaceNotFound', 20_000);
  t.match(await entry('west'), {
    serviceApplied: false,
    endpointSlices: 0,
    lastError: 'NamespaceNotFound: namespace shop does not exist in cluster west',
    conditions: [
      { type: 'ServiceApplied', status: 'False', reason: 'NamespaceNotFound', message: 'namespace shop does not exist in cluster west' },
      { type: 'EndpointSlicesDispatched', status: 'False', reason: 'NamespaceNotFound' },
    ],
  }, "west (its Namespaces synced): said without a write");
  t.match(await entry('lab'), {
    serviceApplied: false,
    lastError: 'NamespaceNotFound: writing Service shop/web in cluster lab: HTTP 404 NotFound: namespaces "shop" not found',
    conditions: [{ type: 'ServiceApplied', status: 'False', reason: 'NamespaceNotFound', message: 'writing Service shop/web in cluster lab: HTTP 404 NotFound: namespaces "shop" not found' }],
  }, "lab (its Namespaces not synced): the consumer's own answer");
  t.match((await status())?.conditions?.find((c) => c.type === 'Ready'), { status: 'False', reason: 'ConsumersNotReady', message: 'not dispatched to lab (NamespaceNotFound), west (NamespaceNotFound)' });
  const w = since(before);
  t.same(w.west, [], 'nothing tried in west');
  t.ok(w.lab.every((x) => x.verb === 'create' && x.resource === '/services'), 'in lab only the Service was tried');
  t.notOk(west.store.get('/namespaces', undefined, 'shop') || lab.store.get('/namespaces', undefined, 'shop'), 'Panoptes creates no namespace');

  for (const s of [west, lab]) ensureNamespace(s, fx(s), 'shop');
  const name = dispatchedSliceName('east', 'web-abcde');
  await waitUntil('dispatched to both once the namespace exists', () => west.store.get(SLICES, 'shop', name) && lab.store.get(SLICES, 'shop', name), 20_000);
  await waitUntil('Ready', async () => (await status())?.conditions?.find((c) => c.type === 'Ready')?.status === 'True', 20_000);
  t.notOk((await entry('lab'))?.lastError, 'the error is gone');
});
