// What Panoptes' own write credentials must never do in a member, end to end on SQLite and on
// PostgreSQL: the real synchro over HTTP against simulated clusters (which validate as kube
// does), MultiClusterServices written as the apiserver writes them, every write a cluster
// receives counted.
//   - a MultiClusterService named after a system Service (default/kubernetes,
//     kube-system/kube-dns) adds nothing to any member's own Service of that name;
//   - a consumer that provides the Service itself gets nothing added to its own Service, and a
//     slice an earlier Panoptes added to it goes;
//   - slices of `east` + `a-web-x1` and `east-a` + `web-x1` have names of their own: nothing flaps;
//   - a cluster the operator did not grant the provider role provides nothing (ServiceExport
//     or MultiClusterService); addresses kube refuses, or inside a consumer's own pod range,
//     are not dispatched, and the status says so;
//   - one tenant's refusal (a full quota's 403, a 500) holds back that key only, its status
//     names only its own object, and a deletion whose cleanup keeps failing is released after
//     the grace, the leftovers removed once the consumer accepts;
//   - two installations sharing a consumer (two storages) never change or delete each other's
//     objects, the second one's status says it is in the way; objects without an installation
//     id are adopted by exactly one.
import t from 'tap';
import { annotations, dispatchedSliceName, labels, managedByLabel, managedByValue, type McsConsumerStatus, type MultiClusterServiceStatus } from '../../api/multicluster-service.ts';
import type { SimCluster } from '../../hack/sim/cluster.ts';
import type { KObject } from '../../hack/sim/types.ts';
import { StatusError } from '../../kube/status.ts';
import { backends, openTestStore, stopTestPostgres } from '../../storage/testing.ts';
import type { Store } from '../../storage/store.ts';
import { startSynchro } from '../synchro.ts';
import { fastTimings, tempDir, waitUntil, writeClusters } from '../testutil.ts';
import { deleteMcs, ensureNamespace, getMcs, installServiceExportCrd, mcsTimings as sharedTimings, provide, putMcs, resources, simFleet, resyncs } from './testutil.ts';

t.teardown(stopTestPostgres);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const SLICES = 'discovery.k8s.io/endpointslices';
// A resync every 500 ms: what is waited for is a number of them (resyncs()), not a time.
const mcsTimings = { ...sharedTimings, resyncIntervalMs: 500 };
const withNodes = [...resources, 'nodes'];
/** The label of the installation that wrote an object (api/multicluster-service.ts installationLabel). */
const installationLabel = 'panoptes.io/installation';

for (const backend of backends) {
  t.test(`${backend}: Panoptes' writes reach no further than the MultiClusterService's author could`, async (t) => {
    const a = await openTestStore(backend);
    const b = await openTestStore(backend);
    const { dir, cleanup } = tempDir();
    const { sims, fx, writes, since } = await simFleet(['east', 'east-a', 'west', 'lab']);
    const [east, eastA, west, lab] = sims;
    for (const s of sims) ensureNamespace(s, fx(s), 'shop');
    // west's own pod network: an endpoint address inside it is one of west's pods, not east's.
    west.crud.create(west.registry.byId('/nodes')!, 'v1', undefined, { metadata: { name: 'west-node-1' }, spec: { podCIDR: '10.44.0.0/24', podCIDRs: ['10.44.0.0/24'] } });
    const fileA = `${dir}/a.yaml`;
    const fileB = `${dir}/b.yaml`;
    // lab is a consumer, not a provider (the operator's file says so).
    writeClusters(fileA, sims.map((s) => ({ name: s.name, server: s.url, resources: withNodes, ...(s === lab ? { multiClusterServices: { provider: false } } : {}) })));
    writeClusters(fileB, [east, west].map((s) => ({ name: s.name, server: s.url, resources })));
    const synchroA = await startSynchro({ store: a.store, clustersFile: fileA, timings: fastTimings, compaction: false, shards: { leaseTtlMs: 3000 }, mcs: mcsTimings });
    let synchroB: Awaited<ReturnType<typeof startSynchro>> | undefined;
    t.teardown(async () => {
      await synchroB?.stop();
      await synchroA.stop();
      await Promise.all(sims.map((s) => s.close()));
      await a.close();
      await b.close();
      cleanup();
    });
    t.ok(await synchroA.waitForInitialSync(30_000), 'initial sync');
    const status = async (store: Store, name: string, ns = 'shop') => (await getMcs(store, ns, name))?.status as MultiClusterServiceStatus | undefined;
    const entry = async (store: Store, name: string, cluster: string, ns = 'shop'): Promise<McsConsumerStatus | undefined> => (await status(store, name, ns))?.consumers?.find((c) => c.cluster === cluster);
    const ours = (s: SimCluster, ns: string) => s.store.list(SLICES, { namespace: ns }).items.filter((o) => o.metadata.labels?.[managedByLabel] === managedByValue);
    const endpoints = (o: KObject | undefined) => (Array.isArray(o?.endpoints) ? (o.endpoints as Array<{ addresses: string[] }>).flatMap((e) => e.addresses) : []);

    await t.test('a MultiClusterService named after a system Service: nothing is added to any member\'s own', async (t) => {
      for (const s of sims) {
        provide(s, fx(s), 'default', 'kubernetes', [`10.${sims.indexOf(s) + 10}.0.1`], 'kubernetes');
        provide(s, fx(s), 'kube-system', 'kube-dns', [`10.${sims.indexOf(s) + 20}.0.10`], 'kube-dns-abcde');
      }
      await waitUntil('the system Services in storage', async () => (await a.store.list({ group: '', resource: 'services', names: ['kube-dns'] })).items.length === sims.length, 10_000);
      const before = writes();
      await putMcs(a.store, 'default', 'kubernetes', {});
      await putMcs(a.store, 'kube-system', 'kube-dns', {});
      await waitUntil('the refusal in the status', async () => (await entry(a.store, 'kubernetes', 'west', 'default'))?.conditions.some((c) => c.reason === 'SystemService'), 10_000);
      await resyncs(synchroA, 2);
      const w = since(before);
      for (const s of sims) t.same(w[s.name].filter((x) => x.namespace === 'default' || x.namespace === 'kube-system'), [], `${s.name}: nothing written next to its own kubernetes and kube-dns`);
      t.match((await entry(a.store, 'kube-dns', 'lab', 'kube-system'))?.conditions[0], { status: 'False', reason: 'SystemService', message: /namespace kube-system is one of kube's own \(kube-\*\): Panoptes dispatches no system Service unless the operator allows it with --mcs-allow-system-services/ });
      await deleteMcs(a.store, 'default', 'kubernetes');
      await deleteMcs(a.store, 'kube-system', 'kube-dns');
    });

    await t.test('a consumer that provides the Service itself: nothing added to its own Service, and what an earlier Panoptes added goes', async (t) => {
      provide(east, fx(east), 'shop', 'dual', ['10.1.0.1']);
      provide(west, fx(west), 'shop', 'dual', ['10.2.0.1']);
      // What Panoptes dispatched before (no installation id, the old name): east's slice bound to west's own Service.
      fx(west).create(west.registry.byId(SLICES)!, 'v1', 'shop', {
        metadata: { name: 'east-dual-abcde', labels: { [labels.serviceName]: 'dual', [labels.endpointSliceManagedBy]: 'panoptes.io-mcs-dispatcher', [managedByLabel]: managedByValue }, annotations: { [annotations.source]: 'east/shop/dual-abcde' } },
        addressType: 'IPv4', endpoints: [{ addresses: ['10.1.0.1'] }], ports: [],
      });
      await putMcs(a.store, 'shop', 'dual', { providerClusters: ['east', 'west'] });
      await waitUntil('lab gets both, west keeps its own only', () => ours(lab, 'shop').filter((s) => s.metadata.labels?.[labels.serviceName] === 'dual').length === 2 && ours(west, 'shop').filter((s) => s.metadata.labels?.[labels.serviceName] === 'dual').length === 0, 15_000);
      t.same(ours(east, 'shop').filter((s) => s.metadata.labels?.[labels.serviceName] === 'dual'), [], 'east: nothing added to its own Service either');
      const e = await waitUntil("west's entry", async () => {
        const x = await entry(a.store, 'dual', 'west');
        return x?.conditions.every((c) => c.status === 'True') ? x : undefined;
      }, 10_000);
      t.match(e?.conditions[1], { reason: 'ProviderService', message: /west provides shop\/dual itself: its own Service is used as it is, without the endpoints of east \(Panoptes adds nothing to a Service it did not create\)/ });
      t.equal(lab.store.get('/services', 'shop', 'dual')?.metadata.labels?.[installationLabel], await a.store.installationId(), "lab's Service is this installation's");
    });

    await t.test('east + a-web-x1 and east-a + web-x1: two slices of their own names, nothing flaps', async (t) => {
      provide(east, fx(east), 'shop', 'a-web', ['10.1.1.1'], 'a-web-x1');
      provide(eastA, fx(eastA), 'shop', 'web', ['10.3.1.1'], 'web-x1');
      await putMcs(a.store, 'shop', 'a-web', { providerClusters: ['east'], consumerClusters: ['west'] });
      await putMcs(a.store, 'shop', 'web', { providerClusters: ['east-a'], consumerClusters: ['west'] });
      const one = dispatchedSliceName('east', 'a-web-x1');
      const two = dispatchedSliceName('east-a', 'web-x1');
      t.not(one, two);
      await waitUntil('both in west', () => endpoints(west.store.get(SLICES, 'shop', one))[0] === '10.1.1.1' && endpoints(west.store.get(SLICES, 'shop', two))[0] === '10.3.1.1', 15_000);
      t.equal(west.store.get(SLICES, 'shop', one)?.metadata.labels?.[labels.serviceName], 'a-web');
      t.equal(west.store.get(SLICES, 'shop', two)?.metadata.labels?.[labels.serviceName], 'web');
      await resyncs(synchroA, 1);
      const before = writes();
      await resyncs(synchroA, 3);
      t.same(since(before).west.filter((w) => w.resource === SLICES), [], 'three resyncs: not one slice write');
    });

    await t.test('a cluster that is not a provider provides nothing; refused addresses are left out, and said so', async (t) => {
      installServiceExportCrd(lab, fx(lab));
      provide(lab, fx(lab), 'shop', 'rogue', ['10.5.0.1']);
      await sleep(1000); // the CRD is discovered
      const before = writes();
      fx(lab).create(lab.registry.byId('multicluster.x-k8s.io/serviceexports')!, 'v1alpha1', 'shop', { metadata: { name: 'rogue', namespace: 'shop' } });
      await putMcs(a.store, 'shop', 'rogue2', { providerClusters: ['lab'] });
      provide(lab, fx(lab), 'shop', 'rogue2', ['10.5.0.2']);
      await waitUntil('the status says lab takes no part', async () => /not taking part: lab is not a provider \(spec\.multiClusterServices\.provider of Cluster lab is not true\)/.test((await status(a.store, 'rogue2'))?.conditions?.[0].message ?? ''), 10_000);
      await resyncs(synchroA, 2);
      for (const s of [east, eastA, west]) t.same(since(before)[s.name].filter((w) => w.name.includes('rogue')), [], `${s.name}: nothing of lab's`);

      provide(east, fx(east), 'shop', 'mixed', ['10.1.2.1']);
      // A member that is not kube (or not honest) serves what kube itself refuses in a slice: written past the sim's validation.
      const cur = east.store.get(SLICES, 'shop', 'mixed-abcde')!;
      east.store.put(SLICES, { ...structuredClone(cur), endpoints: ['10.1.2.1', '169.254.169.254', '127.0.0.1', '10.44.0.7'].map((ip) => ({ addresses: [ip], conditions: { ready: true } })) });
      await putMcs(a.store, 'shop', 'mixed', { providerClusters: ['east'], consumerClusters: ['west', 'lab'] });
      const name = dispatchedSliceName('east', 'mixed-abcde');
      await waitUntil('dispatched', () => endpoints(lab.store.get(SLICES, 'shop', name)).length === 2 && endpoints(west.store.get(SLICES, 'shop', name)).length === 1, 15_000);
      t.same(endpoints(west.store.get(SLICES, 'shop', name)), ['10.1.2.1'], "west: not the address inside its own pod range");
      t.same(endpoints(lab.store.get(SLICES, 'shop', name)), ['10.1.2.1', '10.44.0.7'], 'lab: both (not its range)');
      const e = await waitUntil("west's refusal in the status", async () => {
        const x = await entry(a.store, 'mixed', 'west');
        return x?.conditions.some((c) => c.reason === 'AddressesRefused') && x;
      }, 10_000);
      t.match(e && e.conditions[1].message, /^3 endpoints not dispatched \(east\/shop\/mixed-abcde: 169\.254\.169\.254 may not be in the link-local range \(169\.254\.0\.0\/16, fe80::\/10\); east\/shop\/mixed-abcde: 127\.0\.0\.1 may not be in the loopback range \(127\.0\.0\.0\/8, ::1\/128\); east\/shop\/mixed-abcde: 10\.44\.0\.7 is in the pod range 10\.44\.0\.0\/24 of cluster west: it would reach the consumer's own pods\); the others are$/);
      t.equal(e && e.refusedEndpoints, 3);
      t.equal((await entry(a.store, 'mixed', 'lab'))?.refusedEndpoints, 2, 'lab: the loopback and link-local ones');
    });

    await t.test("one tenant's refusals hold back its own key only; a deletion whose cleanup keeps failing is not held forever", async (t) => {
      const crud = lab.crud;
      const orig = { create: crud.create, delete: crud.delete };
      let quota = true;
      let broken = false;
      crud.create = (info, version, ns, body, opts) => {
        if (quota && ns === 'tenant-a') throw new StatusError('Forbidden', `${info.resource} "${(body as KObject).metadata?.name}" is forbidden: exceeded quota: tenant-a-quota, requested: count/${info.resource}=1, used: count/${info.resource}=10, limited: count/${info.resource}=10`);
        return orig.create(info, version, ns, body, opts);
      };
      crud.delete = (info, ns, name, opts) => {
        if (broken && ns === 'tenant-a') throw new StatusError('InternalError', 'Internal error occurred: etcdserver: leader changed');
        return orig.delete(info, ns, name, opts);
      };
      t.teardown(() => Object.assign(crud, orig));
      for (const ns of ['tenant-a', 'tenant-b']) {
        for (const s of [east, lab]) ensureNamespace(s, fx(s), ns);
        provide(east, fx(east), ns, 'app', ['10.1.3.1']);
        await putMcs(a.store, ns, 'app', { providerClusters: ['east'], consumerClusters: ['lab'] });
      }
      await waitUntil("tenant-b's app in lab", () => endpoints(lab.store.get(SLICES, 'tenant-b', dispatchedSliceName('east', 'app-abcde')))[0] === '10.1.3.1', 15_000);
      const e = await waitUntil("tenant-a's error", async () => (await entry(a.store, 'app', 'lab', 'tenant-a'))?.lastError, 10_000);
      t.match(e, /^Forbidden: writing Service tenant-a\/app in cluster lab: HTTP 403 Forbidden: services "app" is forbidden: exceeded quota: tenant-a-quota/, "tenant-a's status: its own object's error");
      t.notMatch(e, /RBAC|role|dispatcher\//, 'not blamed on RBAC');
      // The status is written after the objects: wait for it rather than read it once.
      const b2 = await waitUntil("tenant-b's status", async () => {
        const x = await entry(a.store, 'app', 'lab', 'tenant-b');
        return x?.conditions.every((c) => c.status === 'True') ? x : undefined;
      }, 10_000).catch(() => undefined);
      t.ok(b2, "tenant-b's is in place");
      t.notMatch(JSON.stringify(await status(a.store, 'app', 'tenant-b')), /tenant-a/, "tenant-b's status names nothing of tenant-a");
      t.ok((await entry(a.store, 'app', 'lab', 'tenant-a'))?.failingSince, 'since when it fails');

      // The quota is raised: tenant-a's key gets its state (after its backoff); then its deletion meets a broken consumer.
      quota = false;
      await waitUntil("tenant-a's app in lab", () => endpoints(lab.store.get(SLICES, 'tenant-a', dispatchedSliceName('east', 'app-abcde')))[0] === '10.1.3.1', 20_000);
      broken = true;
      const deletedAt = Date.now();
      await deleteMcs(a.store, 'tenant-a', 'app');
      await waitUntil('the MultiClusterService is released after the grace', async () => !(await getMcs(a.store, 'tenant-a', 'app')), mcsTimings.awayConsumerGraceMs + 20_000);
      // failingSince is a time to the second, as kube's: the grace counts from up to a second earlier.
      t.ok(Date.now() - deletedAt >= mcsTimings.awayConsumerGraceMs - 1500, `not before the grace (${Date.now() - deletedAt} ms)`);
      t.ok(lab.store.get('/services', 'tenant-a', 'app'), 'what lab would not delete is still there');
      broken = false;
      await waitUntil('cleaned once lab accepts', () => !lab.store.get('/services', 'tenant-a', 'app') && !lab.store.get(SLICES, 'tenant-a', dispatchedSliceName('east', 'app-abcde')), 30_000);
    });

    await t.test("two installations sharing west: neither changes the other's objects; an object without an id is adopted by one", async (t) => {
      provide(east, fx(east), 'shop', 'cart', ['10.1.4.1']);
      await putMcs(a.store, 'shop', 'cart', { providerClusters: ['east'], consumerClusters: ['west'] });
      const cartSlice = dispatchedSliceName('east', 'cart-abcde');
      await waitUntil('cart in west', () => endpoints(west.store.get(SLICES, 'shop', cartSlice))[0] === '10.1.4.1', 15_000);
      // A Service Panoptes wrote before installations had ids, and its slice: both installations want it.
      provide(east, fx(east), 'shop', 'old', ['10.1.5.1']);
      fx(west).create(west.registry.byId('/services')!, 'v1', 'shop', { metadata: { name: 'old', labels: { [managedByLabel]: managedByValue } }, spec: { ports: [{ name: 'http', port: 80, protocol: 'TCP' }] } });

      synchroB = await startSynchro({ store: b.store, clustersFile: fileB, timings: fastTimings, compaction: false, shards: { leaseTtlMs: 3000 }, mcs: mcsTimings });
      t.ok(await synchroB.waitForInitialSync(30_000), 'the second installation synced');
      const idA = await a.store.installationId();
      const idB = await b.store.installationId();
      t.not(idB, idA, 'two databases, two installations');
      await putMcs(b.store, 'shop', 'cart', { providerClusters: ['east'], consumerClusters: ['west'] });
      await putMcs(a.store, 'shop', 'old', { providerClusters: ['east'], consumerClusters: ['west'] });
      await putMcs(b.store, 'shop', 'old', { providerClusters: ['east'], consumerClusters: ['west'] });
      const conflict = await waitUntil("B's status: A's cart is in the way", async () => {
        const x = await entry(b.store, 'cart', 'west');
        return x?.conditions.some((c) => /another Panoptes installation/.test(c.message)) && x;
      }, 15_000);
      t.match(JSON.stringify(conflict), new RegExp(`panoptes.io/installation=${idA}`), 'naming the installation whose it is');
      const adopted = await waitUntil('old adopted by one installation', () => west.store.get('/services', 'shop', 'old')?.metadata.labels?.[installationLabel], 15_000);
      t.ok(adopted === idA || adopted === idB, `by one of them (${adopted})`);
      const loser = adopted === idA ? b.store : a.store;
      await waitUntil('the other one says so', async () => (await entry(loser, 'old', 'west'))?.conditions.some((c) => /another Panoptes installation/.test(c.message)), 15_000);
      await resyncs([synchroA, synchroB], 1);
      const before = writes();
      await resyncs([synchroA, synchroB], 4);
      const w = since(before).west.filter((x) => x.namespace === 'shop' && (x.name.startsWith('cart') || x.name.startsWith('east-cart') || x.name.startsWith('old') || x.name.startsWith('east-old')));
      t.same(w, [], 'four resyncs of both installations: no create, update or delete of either one\'s objects');
      t.equal(west.store.get(SLICES, 'shop', cartSlice)?.metadata.labels?.[installationLabel], idA, "A's cart slice is A's");
      t.ok((await entry(a.store, 'cart', 'west'))?.conditions.every((c) => c.status === 'True'), 'A stays Ready');
      // B deletes its cart: A's objects stay.
      await deleteMcs(b.store, 'shop', 'cart');
      await waitUntil("B's cart released", async () => !(await getMcs(b.store, 'shop', 'cart')), 15_000);
      t.ok(west.store.get('/services', 'shop', 'cart') && west.store.get(SLICES, 'shop', cartSlice), "A's cart untouched by B's deletion");
    });
  });
}
