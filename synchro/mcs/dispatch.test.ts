// Multi-cluster Services end to end, on SQLite and on PostgreSQL: the real synchro (one member)
// over HTTP against simulated clusters, MultiClusterServices written to storage as the
// apiserver writes them. Every write a simulated cluster receives is counted: an export, one
// write per consumer for one changed provider slice and none to the provider, nothing on an
// unchanged resync, a consumer added and removed, a dispatched slice deleted by hand and
// repaired, a pre-existing Service of a consumer's own (conflict, untouched), a ServiceImport
// where the CRD is, a ServiceExport in a member, a consumer without RBAC (a condition and a
// backoff, not a storm), a consumer away and back (its state once), a provider made
// unreachable under each not-Ready policy, and the MultiClusterService deleted (everything
// cleaned, then the finalizer released).
import t from 'tap';
import { annotations, dispatchedSliceName, mcsFinalizer, providerReadyAnnotation, type McsConsumerStatus, type MultiClusterServiceStatus } from '../../api/multicluster-service.ts';
import type { SimCluster } from '../../hack/sim/cluster.ts';
import { readOnlyUser } from '../../hack/sim/auth.ts';
import type { KubeObject } from '../../storage/types.ts';
import { backends, openTestStore, stopTestPostgres } from '../../storage/testing.ts';
import { startSynchro } from '../synchro.ts';
import { fastTimings, tempDir, waitUntil, writeClusters } from '../testutil.ts';
import { deleteMcs, dispatched, getMcs, installServiceExportCrd, installServiceImportCrd, mcsTimings as sharedTimings, provide, putMcs, resyncs, simFleet, resources, setEndpoints } from './testutil.ts';

t.teardown(stopTestPostgres);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const SLICES = 'discovery.k8s.io/endpointslices';
// A resync every 500 ms: what is waited for is a number of them (resyncs()), not a time.
const mcsTimings = { ...sharedTimings, resyncIntervalMs: 500 };
const labToken = 'lab-dispatcher';

const ips = (n: number, base = '10.0.0') => Array.from({ length: n }, (_, i) => `${base}.${i + 1}`);
const endpointsOf = (sim: SimCluster, ns: string, name: string) => (sim.store.get(SLICES, ns, name)?.endpoints as unknown[] | undefined)?.length;

for (const backend of backends) {
  t.test(`${backend}: dispatch to consumers, one synchro`, async (t) => {
    const { store, close } = await openTestStore(backend);
    const { dir, cleanup } = tempDir();
    const { sims, fx, writes, since } = await simFleet(['east', 'west', 'lab']);
    const [east, west, lab] = sims;

    for (const s of sims) provide(s, fx(s), 'shop', 'unrelated', ['10.9.0.1']);
    provide(east, fx(east), 'shop', 'web', ips(2));
    installServiceImportCrd(west, fx(west));
    // lab's token may do everything until the RBAC test takes its writes away.
    lab.auth.grant(labToken, { name: 'panoptes' });
    const file = `${dir}/clusters.yaml`;
    writeClusters(file, sims.map((s) => ({ name: s.name, server: s.url, resources, ...(s === lab ? { token: labToken } : {}) })));
    // The change log as the synchro reads it can be held back (watermark() answers an old
    // value) until a read of objects finds 10.0.1.1: a resync then meets a provider's change
    // before the change log has shown it.
    let heldAt: number | undefined;
    const lagging = new Proxy(store, {
      get(target, prop) {
        const v: unknown = Reflect.get(target, prop, target);
        if (prop === 'watermark') return async () => heldAt ?? (await target.watermark());
        if (prop === 'list') {
          return async (...args: Parameters<typeof target.list>) => {
            const read = await target.list(...args);
            if (heldAt !== undefined && read.items.some((o) => o.object.includes('"10.0.1.1"'))) heldAt = undefined;
            return read;
          };
        }
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const synchro = await startSynchro({ store: lagging, clustersFile: file, timings: fastTimings, compaction: false, shards: { leaseTtlMs: 3000 }, mcs: mcsTimings });
    t.teardown(async () => {
      await synchro.stop();
      await Promise.all(sims.map((s) => s.close()));
      await close();
      cleanup();
    });
    t.ok(await synchro.waitForInitialSync(30_000), 'initial sync');
    const status = async (name: string, ns = 'shop') => (await getMcs(store, ns, name))?.status as MultiClusterServiceStatus | undefined;
    const entry = async (name: string, cluster: string) => (await status(name))?.consumers?.find((c) => c.cluster === cluster);
    const ready = async (name: string) => (await status(name))?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';

    await t.test('export: every consumer gets the Service and the slice, the provider nothing', async (t) => {
      const before = writes();
      await putMcs(store, 'shop', 'web', {});
      const name = dispatchedSliceName('east', 'web-abcde');
      await waitUntil('west and lab hold the slice', () => endpointsOf(west, 'shop', name) === 2 && endpointsOf(lab, 'shop', name) === 2, 20_000);
      await waitUntil('the ServiceImport in west', () => west.store.get('multicluster.x-k8s.io/serviceimports', 'shop', 'web'), 10_000);
      await waitUntil('Ready', () => ready('web'), 10_000);
      const w = since(before);
      t.same(w.east, [], 'nothing written to the provider');
      const kinds = (list: typeof w.west) => list.map((x) => `${x.verb} ${x.resource}${x.subresource ? `/${x.subresource}` : ''} ${x.name}`).sort();
      t.same(kinds(w.lab), ['create /services web', `create ${SLICES} ${name}`]);
      t.same(kinds(w.west), ['create /services web', `create ${SLICES} ${name}`, 'create multicluster.x-k8s.io/serviceimports web', 'update multicluster.x-k8s.io/serviceimports/status web']);
      const svc = west.store.get('/services', 'shop', 'web')!;
      t.match(svc, { metadata: { labels: { 'app.kubernetes.io/managed-by': 'panoptes.io' } }, spec: { type: 'ClusterIP', ports: [{ name: 'http', port: 80, protocol: 'TCP' }] } });
      t.notOk((svc.spec as Record<string, unknown>).selector, 'no selector');
      const slice = west.store.get(SLICES, 'shop', name)!;
      t.match(slice.metadata.labels, { 'kubernetes.io/service-name': 'web', 'multicluster.kubernetes.io/service-name': 'web', 'multicluster.kubernetes.io/source-cluster': 'east', 'endpointslice.kubernetes.io/managed-by': 'panoptes.io-mcs-dispatcher' });
      t.equal(slice.metadata.annotations?.[annotations.source], 'east/shop/web-abcde');
      t.same(slice.endpoints, east.store.get(SLICES, 'shop', 'web-abcde')!.endpoints, "the provider's endpoints as they are");
      t.match(west.store.get('multicluster.x-k8s.io/serviceimports', 'shop', 'web'), { spec: { type: 'ClusterSetIP', ports: [{ name: 'http', port: 80 }] }, status: { clusters: [{ cluster: 'east' }] } });
      t.same(dispatched(east, SLICES), [], 'no slice of its own goes back to the provider');
      const st = (await status('web'))!;
      t.same(st.consumers?.map((c) => [c.cluster, c.serviceApplied, c.endpointSlices, c.endpoints]), [['east', true, 0, 0], ['lab', true, 1, 2], ['west', true, 1, 2]]);
      t.match(st.providers, [{ cluster: 'east', endpoints: 2, ready: true }]);
      t.equal(st.observedGeneration, 1);
    });

    await t.test('a provider slice change: exactly one write per consumer, none to the provider; nothing on an unchanged resync', async (t) => {
      await resyncs(synchro, 1);
      const before = writes();
      setEndpoints(east, fx(east), 'shop', 'web', ips(3));
      const name = dispatchedSliceName('east', 'web-abcde');
      await waitUntil('3 endpoints in west and lab', () => endpointsOf(west, 'shop', name) === 3 && endpointsOf(lab, 'shop', name) === 3, 10_000);
      await resyncs(synchro, 2);
      const w = since(before);
      t.same(w.east, [], 'none to the provider');
      t.same(w.west, [{ verb: 'update', resource: SLICES, namespace: 'shop', name }], 'west: one update');
      t.same(w.lab, [{ verb: 'update', resource: SLICES, namespace: 'shop', name }], 'lab: one update');
      await waitUntil('the status counts follow', async () => (await entry('web', 'west'))?.endpoints === 3, 5000);
      const quiet = writes();
      await resyncs(synchro, 2);
      t.same(since(quiet), { east: [], west: [], lab: [] }, 'resyncs of an unchanged fleet write nothing');
      const passes = (await synchro.metrics.registry.getSingleMetric('panoptes_synchro_mcs_passes_total')!.get()).values.find((v) => v.labels.trigger === 'resync')?.value ?? 0;
      t.ok(passes >= 2, `resyncs ran meanwhile (${passes})`);
      const latency = await synchro.metrics.registry.getSingleMetric('panoptes_synchro_mcs_dispatch_latency_seconds')!.get();
      t.ok(latency.values.some((v) => 'metricName' in v && String(v.metricName).endsWith('_count') && v.value > 0), 'dispatch latency observed');
    });

    await t.test("a provider's change a resync reads before the change log shows it: its write is timed", async (t) => {
      const metric = synchro.metrics.registry.getSingleMetric('panoptes_synchro_mcs_dispatch_latency_seconds')!;
      const observed = async () => (await metric.get()).values.filter((v) => 'metricName' in v && String(v.metricName).endsWith('_count')).reduce((n, v) => n + v.value, 0);
      const name = dispatchedSliceName('east', 'web-abcde');
      await resyncs(synchro, 1);
      const before = await observed();
      heldAt = await store.watermark();
      setEndpoints(east, fx(east), 'shop', 'web', ips(3, '10.0.1'));
      const moved = () => (west.store.get(SLICES, 'shop', name)?.endpoints as Array<{ addresses: string[] }> | undefined)?.[0]?.addresses[0] === '10.0.1.1';
      await waitUntil('the new endpoints in west and lab', () => moved() && endpointsOf(lab, 'shop', name) === 3, 10_000);
      t.equal(heldAt, undefined, 'the change was planned from a read of its key, the change log held back');
      // Observed once each write's answer is back, which can be after the consumer shows it.
      await waitUntil('a timed write to each consumer', async () => (await observed()) >= before + 2, 10_000);
      t.ok((await observed()) >= before + 2, 'a timed write to each consumer');
    });

    // Right after the writes above, before any resync: the record of the write must not hide
    // the deletion (storage's missing copy is not one that has yet to catch up with the write).
    await t.test('a dispatched slice deleted by hand comes back', async (t) => {
      const name = dispatchedSliceName('east', 'web-abcde');
      fx(lab).delete(lab.registry.byId(SLICES)!, 'shop', name);
      t.notOk(lab.store.get(SLICES, 'shop', name));
      await waitUntil('the slice is back in lab', () => endpointsOf(lab, 'shop', name) === 3, 10_000);
    });

    await t.test('a consumer added and one removed', async (t) => {
      provide(east, fx(east), 'shop', 'cart', ips(1, '10.2.0'));
      await putMcs(store, 'shop', 'cart', { consumerClusters: ['west'] });
      const name = dispatchedSliceName('east', 'cart-abcde');
      await waitUntil('west holds cart', () => endpointsOf(west, 'shop', name) === 1, 10_000);
      t.notOk(lab.store.get(SLICES, 'shop', name), 'lab is no consumer');
      t.notOk(lab.store.get('/services', 'shop', 'cart'));
      await putMcs(store, 'shop', 'cart', { consumerClusters: ['lab'] });
      await waitUntil('lab holds cart, west does not any more', () => endpointsOf(lab, 'shop', name) === 1 && !west.store.get(SLICES, 'shop', name) && !west.store.get('/services', 'shop', 'cart') && !west.store.get('multicluster.x-k8s.io/serviceimports', 'shop', 'cart'), 10_000);
      await waitUntil("west's entry goes, lab's is there", async () => {
        const s = await status('cart');
        return s?.observedGeneration === 2 && s.consumers?.map((c) => c.cluster).join() === 'lab' && s.conditions?.[0].status === 'True';
      }, 10_000);
    });

    await t.test("a Service of a consumer's own: a conflict, untouched", async (t) => {
      provide(east, fx(east), 'shop', 'api', ips(1, '10.3.0'));
      provide(lab, fx(lab), 'shop', 'api', ips(1, '10.4.0'));
      const own = structuredClone(lab.store.get('/services', 'shop', 'api'));
      // Synced before the export: the plan itself finds the conflict (no write meets it).
      await waitUntil("lab's Service in storage", async () => (await store.list({ group: '', resource: 'services', clusters: ['lab'] })).items.some((o) => o.name === 'api'), 10_000);
      const before = writes();
      await putMcs(store, 'shop', 'api', { providerClusters: ['east'] });
      await waitUntil('west holds api', () => endpointsOf(west, 'shop', dispatchedSliceName('east', 'api-abcde')) === 1, 10_000);
      let lastEntry: McsConsumerStatus | undefined;
      await waitUntil("lab's conflict reported", async () => (lastEntry = await entry('api', 'lab'))?.conditions.some((c) => c.type === 'ServiceApplied' && c.reason === 'ServiceConflict'), 10_000);
      t.equal(lastEntry?.serviceApplied, false);
      await resyncs(synchro, 1);
      t.same(since(before).lab.filter((w) => w.name === 'api' || w.name.startsWith('east-api')), [], 'nothing written to lab for it');
      t.same(lab.store.get('/services', 'shop', 'api'), own, 'its Service untouched');
      t.notOk(lab.store.get(SLICES, 'shop', dispatchedSliceName('east', 'api-abcde')), 'no slice bound to it');
      t.match((await status('api'))?.conditions?.[0], { type: 'Ready', status: 'False', reason: 'ConsumersNotReady' });
      const conflicts = (await synchro.metrics.registry.getSingleMetric('panoptes_synchro_mcs_conflicts_total')!.get()).values.find((v) => v.labels.cluster === 'lab' && v.labels.kind === 'Service')?.value ?? 0;
      t.ok(conflicts >= 1, `the conflict counted in panoptes_synchro_mcs_conflicts_total (${conflicts})`);
    });

    await t.test('a ServiceExport in a member exports its Service to every other cluster; gone, everything goes', async (t) => {
      installServiceExportCrd(east, fx(east));
      provide(east, fx(east), 'shop', 'search', ips(2, '10.5.0'));
      await sleep(1000); // the CRD is discovered
      const sx = east.registry.byId('multicluster.x-k8s.io/serviceexports');
      t.ok(sx, 'the sim serves ServiceExports');
      fx(east).create(sx!, 'v1alpha1', 'shop', { metadata: { name: 'search', namespace: 'shop' } });
      const name = dispatchedSliceName('east', 'search-abcde');
      await waitUntil('west and lab hold search', () => endpointsOf(west, 'shop', name) === 2 && endpointsOf(lab, 'shop', name) === 2 && west.store.get('/services', 'shop', 'search'), 15_000);
      t.ok(west.store.get('multicluster.x-k8s.io/serviceimports', 'shop', 'search'), 'and the ServiceImport where the CRD is');
      fx(east).delete(sx!, 'shop', 'search');
      await waitUntil('search gone from west and lab', () => !west.store.get(SLICES, 'shop', name) && !lab.store.get(SLICES, 'shop', name) && !west.store.get('/services', 'shop', 'search') && !lab.store.get('/services', 'shop', 'search') && !west.store.get('multicluster.x-k8s.io/serviceimports', 'shop', 'search'), 15_000);
    });

    await t.test('a consumer without RBAC: a clear condition and a backoff, then its state once it may write', async (t) => {
      // The dispatcher's token in lab may read but not write: every write is a 403, which a SelfSubjectAccessReview confirms.
      lab.auth.grant(labToken, readOnlyUser('panoptes'));
      t.teardown(() => lab.auth.grant(labToken, { name: 'panoptes' }));
      const denied = () => lab.auth.denied.filter((d) => d.namespace === 'shop').length;
      provide(east, fx(east), 'shop', 'pay', ips(1, '10.6.0'));
      await putMcs(store, 'shop', 'pay', {});
      let e: McsConsumerStatus | undefined;
      await waitUntil('the Forbidden condition', async () => (e = await entry('pay', 'lab'))?.conditions.some((c) => c.reason === 'Forbidden'), 10_000);
      t.match(e?.lastError, /^Forbidden: the dispatcher's identity in cluster lab may not create services in namespace shop \(HTTP 403 Forbidden: services is forbidden: User "panoptes" cannot create resource "services" in API group "" in the namespace "shop"; confirmed by a SelfSubjectAccessReview\): give it the role of manifests\/member-cluster\/dispatcher\/$/);
      const first = denied();
      await sleep(3000);
      t.ok(denied() - first <= 2, `a backoff, not a retry storm (${denied() - first} refused writes in 3 s)`);
      t.ok(endpointsOf(west, 'shop', dispatchedSliceName('east', 'pay-abcde')) === 1, 'the other consumers are served meanwhile');
      lab.auth.grant(labToken, { name: 'panoptes' });
      await waitUntil('lab gets pay once it may write', () => endpointsOf(lab, 'shop', dispatchedSliceName('east', 'pay-abcde')) === 1, 15_000);
      await waitUntil('the condition clears', async () => (await entry('pay', 'lab'))?.conditions.every((c) => c.status === 'True'), 10_000);
    });

    await t.test('a consumer that is away gets its state when it is back, once', async (t) => {
      const name = dispatchedSliceName('east', 'web-abcde');
      const before = writes();
      await lab.faults.down({ mode: 'unavailable' });
      await waitUntil('lab is Unreachable', async () => (await store.getCluster('lab'))?.status.phase === 'Unreachable', 10_000);
      setEndpoints(east, fx(east), 'shop', 'web', ips(4));
      await waitUntil('west has 4 endpoints', () => endpointsOf(west, 'shop', name) === 4, 10_000);
      await waitUntil("lab's entry says why it waits", async () => (await entry('web', 'lab'))?.conditions.some((c) => c.reason === 'ConsumerUnreachable'), 10_000);
      t.equal(endpointsOf(lab, 'shop', name), 3, 'lab still has what it had');
      await lab.faults.up();
      await waitUntil('lab has 4 endpoints', () => endpointsOf(lab, 'shop', name) === 4, 15_000);
      await waitUntil("lab's entry is current again", async () => (await entry('web', 'lab'))?.conditions.every((c) => c.status === 'True'), 10_000);
      await resyncs(synchro, 1);
      t.same(since(before).lab.map((w) => `${w.verb} ${w.name}`), [`update ${name}`], 'one write, after it came back');
    });

    await t.test('a provider made unreachable, under each policy', async (t) => {
      provide(east, fx(east), 'web', 'grace', ips(2, '10.7.0'));
      provide(east, fx(east), 'web', 'remove', ips(2, '10.7.1'));
      provide(east, fx(east), 'web', 'keep', ips(2, '10.7.2'));
      for (const s of [west, lab]) provide(s, fx(s), 'web', 'unrelated', ['10.8.0.1']); // the namespace, in every consumer
      await putMcs(store, 'web', 'grace', { providerNotReady: { policy: 'KeepForGracePeriod', gracePeriodSeconds: 4 } });
      await putMcs(store, 'web', 'remove', { providerNotReady: { policy: 'RemoveImmediately' } });
      await putMcs(store, 'web', 'keep', { providerNotReady: { policy: 'Keep' } });
      const slice = (svc: string) => dispatchedSliceName('east', `${svc}-abcde`);
      await waitUntil('all three dispatched', () => ['grace', 'remove', 'keep'].every((s) => endpointsOf(west, 'web', slice(s)) === 2 && endpointsOf(lab, 'web', slice(s)) === 2), 15_000);
      const before = writes();
      await east.faults.down({ mode: 'unavailable' });
      const downAt = Date.now();
      await waitUntil('RemoveImmediately: removed', () => !west.store.get(SLICES, 'web', slice('remove')) && !lab.store.get(SLICES, 'web', slice('remove')), 10_000);
      const stale = (s: SimCluster, svc: string) => s.store.get(SLICES, 'web', slice(svc))?.metadata.annotations?.[providerReadyAnnotation] === 'false';
      await waitUntil('KeepForGracePeriod and Keep: kept, marked as not current', () => stale(west, 'grace') && stale(lab, 'grace') && stale(west, 'keep') && stale(lab, 'keep'), 10_000);
      // Within the grace period, the grace slices are still there: marked (an update), deleted
      // only later (the writes checked below), not before the grace (the time checked below).
      t.match(west.store.get(SLICES, 'web', slice('keep'))?.metadata.annotations?.[annotations.providerLastSync], /^\d{4}-\d\d-\d\dT/);
      t.equal(endpointsOf(west, 'web', slice('grace')), 2, 'the last endpoints are kept');
      const conditions = (s: SimCluster, svc: string) => (s.store.get(SLICES, 'web', slice(svc))?.endpoints as Array<{ conditions?: unknown }> | undefined)?.map((e) => e.conditions);
      t.same(conditions(west, 'grace'), [{ ready: false, serving: true, terminating: true }, { ready: false, serving: true, terminating: true }], 'KeepForGracePeriod: going away (not ready, serving, terminating)');
      t.same(conditions(west, 'keep'), [{ ready: true, serving: true, terminating: false }, { ready: true, serving: true, terminating: false }], "Keep: as the provider last said");
      await waitUntil('KeepForGracePeriod: removed once the grace ends', () => !west.store.get(SLICES, 'web', slice('grace')) && !lab.store.get(SLICES, 'web', slice('grace')), 15_000);
      t.ok(Date.now() - downAt >= 3500, `not before the grace period (${Date.now() - downAt} ms)`);
      await resyncs(synchro, 1);
      t.ok(stale(west, 'keep') && stale(lab, 'keep'), 'Keep: still there');
      t.match((await status('keep', 'web'))?.providers, [{ cluster: 'east', ready: false, notReadySince: String }]);
      t.match((await status('remove', 'web'))?.consumers?.find((c) => c.cluster === 'west'), { endpointSlices: 0 });
      t.ok(west.store.get('/services', 'web', 'remove'), 'the Service stays (its ports are known): only the endpoints go');
      const w = since(before);
      t.same(w.east, [], 'nothing written to the provider');
      for (const s of ['west', 'lab']) {
        const mine = (svc: string) => w[s].filter((x) => x.name === slice(svc)).map((x) => x.verb);
        t.same(mine('remove'), ['delete'], `${s}: RemoveImmediately: one delete`);
        t.same(mine('grace'), ['update', 'delete'], `${s}: KeepForGracePeriod: marked, then deleted`);
        t.same(mine('keep'), ['update'], `${s}: Keep: marked once`);
      }
      const back = writes();
      await east.faults.up();
      await waitUntil('back: every slice there again and current', () => ['grace', 'remove', 'keep'].every((s) => west.store.get(SLICES, 'web', slice(s))?.metadata.annotations?.[providerReadyAnnotation] === 'true' && lab.store.get(SLICES, 'web', slice(s))?.metadata.annotations?.[providerReadyAnnotation] === 'true'), 20_000);
      await resyncs(synchro, 1);
      const after = since(back);
      const mine = (s: string) => after[s].filter((x) => x.resource === SLICES && x.namespace === 'web').map((x) => `${x.verb} ${x.name}`).sort();
      for (const s of ['west', 'lab']) t.same(mine(s), [`create ${slice('grace')}`, `create ${slice('remove')}`, `update ${slice('keep')}`], `${s}: once each`);
      t.same(after.west.filter((x) => x.resource === SLICES && x.namespace === 'shop').map((x) => x.name).sort(), [dispatchedSliceName('east', 'api-abcde'), dispatchedSliceName('east', 'cart-abcde'), dispatchedSliceName('east', 'pay-abcde'), dispatchedSliceName('east', 'web-abcde')].filter((n) => west.store.get(SLICES, 'shop', n)).sort(), "the other services' slices (the default policy kept them, marked): current again, once each");
    });

    await t.test('the MultiClusterService deleted: everything cleaned from every consumer, then the finalizer released', async (t) => {
      const name = dispatchedSliceName('east', 'web-abcde');
      t.ok(west.store.get(SLICES, 'shop', name) && lab.store.get(SLICES, 'shop', name));
      t.same((await getMcs(store, 'shop', 'web'))?.metadata?.finalizers, [mcsFinalizer]);
      await deleteMcs(store, 'shop', 'web');
      await waitUntil('the object is gone', async () => !(await getMcs(store, 'shop', 'web')), 15_000);
      for (const s of [west, lab]) {
        t.notOk(s.store.get(SLICES, 'shop', name), `${s.name}: the slice is gone`);
        t.notOk(s.store.get('/services', 'shop', 'web'), `${s.name}: the Service is gone`);
      }
      t.notOk(west.store.get('multicluster.x-k8s.io/serviceimports', 'shop', 'web'), 'the ServiceImport is gone');
      t.ok(east.store.get('/services', 'shop', 'web') && east.store.get(SLICES, 'shop', 'web-abcde'), "the provider's own are untouched");
      t.ok(lab.store.get('/services', 'shop', 'api'), "lab's own Service of the other MultiClusterService too");
      const changes = (await store.changesAfter(0, 100_000)).filter((c) => c.resource === 'multiclusterservices' && c.name === 'web');
      const last = changes.at(-1)!;
      t.equal(last.type, 'DELETED', 'the object went with a DELETED change');
      // One member holds every consumer here: its entries go in one write under all their
      // leases, and the write that finds every consumer cleaned removes the object
      // (dispatch-ha.test.ts: two members, each one's cleanup recorded first).
      const marked = changes.findIndex((c) => (JSON.parse(c.object) as KubeObject).metadata?.deletionTimestamp);
      t.equal(changes[marked]?.epoch, null, 'the deletion mark, written as the apiserver writes it');
      t.ok(changes.slice(marked + 1).every((c) => c.epoch !== null), 'then only writes under the consumers\' leases, the removal too');
    });

    await t.test('deleted while a consumer is away: not waited for past the grace; what it holds goes when it is back', async (t) => {
      provide(east, fx(east), 'shop', 'gone', ips(1, '10.6.0'));
      await putMcs(store, 'shop', 'gone', {});
      const name = dispatchedSliceName('east', 'gone-abcde');
      await waitUntil('west and lab hold the slice', () => endpointsOf(west, 'shop', name) === 1 && endpointsOf(lab, 'shop', name) === 1, 20_000);
      await lab.faults.down({ mode: 'unavailable' });
      const downAt = Date.now();
      await waitUntil('lab is Unreachable', async () => (await store.getCluster('lab'))?.status.phase === 'Unreachable', 10_000);
      await deleteMcs(store, 'shop', 'gone');
      await waitUntil('west cleaned', () => !west.store.get(SLICES, 'shop', name) && !west.store.get('/services', 'shop', 'gone'), 10_000);
      await waitUntil('the Ready condition says it does not wait for lab', async () => /not waiting for lab/.test((await status('gone'))?.conditions?.find((c) => c.type === 'Ready')?.message ?? '') || !(await getMcs(store, 'shop', 'gone')), 10_000);
      await waitUntil('the object is gone', async () => !(await getMcs(store, 'shop', 'gone')), 15_000);
      const goneAfter = Date.now() - downAt;
      t.ok(goneAfter >= mcsTimings.awayConsumerGraceMs, `not before the grace (${goneAfter} ms after lab went away; grace ${mcsTimings.awayConsumerGraceMs} ms)`);
      t.ok(lab.store.get(SLICES, 'shop', name) && lab.store.get('/services', 'shop', 'gone'), 'lab, away, still holds what was dispatched');
      await lab.faults.up();
      await waitUntil('lab cleaned once it is back', () => !lab.store.get(SLICES, 'shop', name) && !lab.store.get('/services', 'shop', 'gone'), 20_000);
      t.ok(east.store.get('/services', 'shop', 'gone') && east.store.get(SLICES, 'shop', 'gone-abcde'), "the provider's own are untouched");
    });
  });
}
