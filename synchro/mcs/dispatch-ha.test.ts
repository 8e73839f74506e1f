// Multi-cluster Services with two synchro members sharing PostgreSQL: each member writes only
// to the consumers whose lease it holds. A member joins in the middle (half the consumers are
// handed over while a provider's endpoints change) and later one leaves (every consumer to the
// other, again while they change): the consumers end up with the provider's endpoints, and
// once the handover has settled one provider change is exactly one write per consumer, none
// to the provider, and a resync writes nothing. A MultiClusterService whose consumers are
// split over the two members is released only after both cleaned theirs.
import t, { type Test } from 'tap';
import { dispatchedSliceName, type MultiClusterServiceStatus } from '../../api/multicluster-service.ts';
import type { SimCluster } from '../../hack/sim/cluster.ts';
import { Store } from '../../storage/store.ts';
import { emptyStorageUrl, stopTestPostgres } from '../../storage/testing.ts';
import { fastTimings, synchroMembers, tempDir, waitUntil, writeClusters } from '../testutil.ts';
import { deleteMcs, getMcs, mcsTimings, provide, putMcs, simFleet, resources, setEndpoints } from './testutil.ts';

t.teardown(stopTestPostgres);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const SLICES = 'discovery.k8s.io/endpointslices';
const ips = (n: number) => Array.from({ length: n }, (_, i) => `10.0.0.${i + 1}`);

t.test('postgres: two synchro members, a member joining and one leaving in the middle', async (t) => {
  const { url } = await emptyStorageUrl('postgres');
  const store = await Store.open(url);
  const { dir, cleanup } = tempDir();
  const { sims, fx, writes, since } = await simFleet(['east', 'west', 'lab', 'north', 'south']);
  const [east, ...consumers] = sims;
  for (const s of sims) provide(s, fx(s), 'shop', 'unrelated', ['10.9.0.1']);
  provide(east, fx(east), 'shop', 'web', ips(2));
  provide(east, fx(east), 'shop', 'cart', ips(1));
  const file = `${dir}/clusters.yaml`;
  writeClusters(file, sims.map((s) => ({ name: s.name, server: s.url, resources })));

  const { start, stop, stopAll } = synchroMembers(url, (identity) => ({ clustersFile: file, timings: fastTimings, compaction: false, shards: { identity, leaseTtlMs: 3000 }, mcs: mcsTimings }));
  t.teardown(async () => {
    await stopAll();
    await Promise.all(sims.map((s) => s.close()));
    await store.close();
    cleanup();
  });
  /** The holder of each cluster's lease. */
  const owners = async () => new Map((await store.listLeases()).filter((l) => l.name.startsWith('cluster/') && l.holder).map((l) => [l.name.slice('cluster/'.length), l.holder!]));
  const web = dispatchedSliceName('east', 'web-abcde');
  const endpointsIn = (s: SimCluster, name = web) => (s.store.get(SLICES, 'shop', name)?.endpoints as unknown[] | undefined)?.length;
  const everywhere = (n: number, name = web) => consumers.every((s) => endpointsIn(s, name) === n);
  const status = async (name: string) => (await getMcs(store, 'shop', name))?.status as MultiClusterServiceStatus | undefined;
  const settled = async (n: number) => {
    if (!everywhere(n)) return false;
    const o = await owners();
    if (sims.some((s) => !o.has(s.name))) return false;
    const st = await status('web');
    return st?.conditions?.[0].status === 'True' && st.consumers?.length === sims.length && st.consumers.every((c) => c.endpoints === (c.cluster === 'east' ? 0 : n));
  };
  /** One provider change after the fleet has settled: one update per consumer, none to the provider, then nothing on a resync. */
  const exactlyOnce = async (t: Test, n: number) => {
    await sleep(mcsTimings.resyncIntervalMs);
    const before = writes();
    setEndpoints(east, fx(east), 'shop', 'web', ips(n));
    await waitUntil(`${n} endpoints in every consumer`, () => everywhere(n), 15_000);
    await sleep(mcsTimings.resyncIntervalMs * 2);
    const w = since(before);
    t.same(w.east, [], 'nothing written to the provider');
    for (const s of consumers) t.same(w[s.name].map((x) => `${x.verb} ${x.name}`), [`update ${web}`], `${s.name}: exactly one write`);
  };

  await start('s1');
  await putMcs(store, 'shop', 'web', {});
  await putMcs(store, 'shop', 'cart', {});
  await waitUntil('s1 alone: dispatched everywhere', () => settled(2), 40_000);
  t.same(new Set((await owners()).values()), new Set(['s1']));

  // s2 joins: about half the clusters move to it, while the provider's endpoints change.
  await start('s2');
  setEndpoints(east, fx(east), 'shop', 'web', ips(3));
  await waitUntil('both members hold consumers', async () => new Set((await owners()).values()).size === 2, 20_000);
  setEndpoints(east, fx(east), 'shop', 'web', ips(4));
  await waitUntil('settled after the handover', () => settled(4), 30_000);
  const split = await owners();
  t.ok(consumers.some((s) => split.get(s.name) === 's1') && consumers.some((s) => split.get(s.name) === 's2'), `the consumers are split: ${JSON.stringify([...split])}`);
  for (const s of consumers) t.same(s.store.get(SLICES, 'shop', web)?.endpoints, east.store.get(SLICES, 'shop', 'web-abcde')?.endpoints, `${s.name}: the provider's endpoints`);
  await t.test('after the handover settled: one write per consumer', (t) => exactlyOnce(t, 5));

  await t.test('a MultiClusterService whose consumers are split: released once both members cleaned theirs', async (t) => {
    const cart = dispatchedSliceName('east', 'cart-abcde');
    t.ok(everywhere(1, cart));
    await deleteMcs(store, 'shop', 'cart');
    await waitUntil('cart gone', async () => !(await getMcs(store, 'shop', 'cart')), 20_000);
    for (const s of consumers) t.notOk(s.store.get(SLICES, 'shop', cart) || s.store.get('/services', 'shop', 'cart'), `${s.name}: cleaned`);
    const cleaned = (await store.changesAfter(0, 100_000)).filter((c) => c.resource === 'multiclusterservices' && c.name === 'cart' && c.type === 'MODIFIED').map((c) => c.epoch);
    t.equal(cleaned.filter((e) => e === null).length, 1, "the test's deletion mark is the one write without a lease");
    t.ok(cleaned.filter((e) => e !== null).length >= 2, "every member's status write carried its consumer's lease epoch");
  });

  // s1 leaves: every consumer goes to s2, while the endpoints change.
  const leaving = stop('s1');
  setEndpoints(east, fx(east), 'shop', 'web', ips(6));
  await leaving;
  setEndpoints(east, fx(east), 'shop', 'web', ips(7));
  await waitUntil('settled on s2 alone', async () => (await settled(7)) && new Set((await owners()).values()).size === 1, 30_000);
  t.same(new Set((await owners()).values()), new Set(['s2']));
  await t.test('after the second handover settled: one write per consumer', (t) => exactlyOnce(t, 8));
});
