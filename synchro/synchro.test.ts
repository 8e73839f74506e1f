// End-to-end: synchro against simulated clusters on SQLite. After each step storage is
// compared with each cluster's own list.
import { writeFileSync } from 'node:fs';
import t from 'tap';
import { startSimCluster } from '../hack/sim/cluster.ts';
import { widgetCRD } from '../hack/sim/workload.ts';
import type { StoreEvent } from '../hack/sim/store.ts';
import { openTestStore } from '../storage/testing.ts';
import { startSynchro, type SynchroHandle } from './synchro.ts';
import { diffCopy, fastTimings, tempDir, waitForCopy, waitUntil, writeClusters } from './testutil.ts';

const A_RES = ['*', 'secrets'];
const B_RES = ['configmaps', 'pods', 'namespaces'];
const bIds = ['/configmaps', '/pods', '/namespaces'];

t.test('synchro keeps an exact copy of each cluster', async (t) => {
  const a = await startSimCluster({ name: 'a', workload: true, bookmarkIntervalMs: 200 });
  const b = await startSimCluster({ name: 'b', workload: true });
  const { store, close } = await openTestStore('sqlite');
  const { dir, cleanup } = tempDir();
  const file = `${dir}/clusters.yaml`;
  let synchro: SynchroHandle | undefined;
  t.teardown(async () => {
    await synchro?.stop();
    await Promise.all([a.close(), b.close()]);
    await close();
    cleanup();
  });
  const aIds = () => a.store.ids().concat(['apiextensions.k8s.io/customresourcedefinitions']);
  const entries = [
    { name: 'a', server: a.url, resources: A_RES },
    { name: 'b', server: b.url, resources: B_RES },
  ];
  writeClusters(file, entries);
  synchro = await startSynchro({ store, clustersFile: file, timings: fastTimings, reloadIntervalMs: 50 });
  const s = synchro;
  const copied = async (what: string) => {
    t.same(await waitForCopy(store, a, 'a', aIds()), [], `${what}: cluster a`);
    t.same(await waitForCopy(store, b, 'b', bIds), [], `${what}: cluster b`);
  };

  await t.test('initial sync', async (t) => {
    t.ok(await s.waitForInitialSync(20_000), 'initial sync completes');
    t.same(await diffCopy(store, a, 'a', aIds()), [], 'a is copied');
    t.same(await diffCopy(store, b, 'b', bIds), [], 'b is copied');
    t.ok(a.store.count('/secrets') > 0 && (await store.list({ group: '', resource: 'secrets', clusters: ['a'] })).items.length > 0, 'secrets synced when named');
    t.equal((await store.list({ group: '', resource: 'secrets', clusters: ['b'] })).items.length, 0, 'no secrets otherwise');
    const row = await store.getCluster('a');
    t.match(row?.status, { phase: 'Ready', initialSync: { complete: true } });
    t.ok((row?.status.resources as Array<{ state: string }>).every((r) => r.state === 'synced'));
    const pod = (await store.list({ group: '', resource: 'pods', clusters: ['a'], limit: 1 })).items[0];
    const obj = JSON.parse(pod.object);
    t.equal(obj.metadata.managedFields, undefined, 'managedFields dropped');
    t.equal(obj.metadata.annotations['panoptes.io/cluster'], 'a');
    t.equal(obj.kind, 'Pod', 'list items get their kind');
  });

  await t.test('churn', async (t) => {
    a.churn.configure({ ratePerSecond: 0, seed: 7, resources: ['configmaps', 'pods', 'secrets'] });
    b.churn.configure({ ratePerSecond: 0, seed: 8 });
    for (let i = 0; i < 5; i++) {
      a.churn.step(80);
      b.churn.step(80);
      await new Promise((r) => setTimeout(r, 20));
    }
    await copied('after churn');
  });

  await t.test('dropped watch', async (t) => {
    const before = (await s.metrics.reconnects.get()).values.reduce((n, v) => n + v.value, 0);
    a.faults.dropWatches({ abrupt: true });
    b.faults.dropWatches();
    a.churn.step(100);
    b.churn.step(100);
    await copied('after dropped watches');
    const after = (await s.metrics.reconnects.get()).values.reduce((n, v) => n + v.value, 0);
    t.ok(after > before, 'reconnects counted');
  });

  await t.test('expired history: relist, deletes in between become DELETED changes', async (t) => {
    const deleted: StoreEvent[] = [];
    const created = new Set<string>();
    const unsub = ['/configmaps', '/pods'].map((id) =>
      a.store.subscribe(id, (e) => {
        if (e.type === 'ADDED') created.add(`${e.id}/${e.key}`);
        // Objects created and deleted while away were never seen: nothing to delete for them.
        if (e.type === 'DELETED' && !created.has(`${e.id}/${e.key}`)) deleted.push(e);
      }),
    );
    await a.faults.down({ mode: 'refuse' });
    const rv0 = await store.watermark();
    a.churn.step(200);
    a.faults.expireHistory();
    unsub.forEach((u) => u());
    t.ok(deleted.length > 0, 'objects were deleted while synchro could not watch');
    await waitUntil('a unreachable in status', async () => (await store.getCluster('a'))?.status.phase === 'Unreachable');
    const st = (await store.getCluster('a'))!.status;
    // Refused, or reset when a probe was in flight as the listener closed.
    t.match(st, { ready: false, reason: 'ProbeFailed', message: /ECONNREFUSED|ECONNRESET/ }, 'status says why');
    t.ok(st.lastTransitionTime, 'and since when');
    t.ok((await store.list({ group: '', resource: 'configmaps', clusters: ['a'] })).items.length > 0, 'data kept while away');
    await a.faults.up();
    await copied('after 410 and relist');
    const changes = await store.changesAfter(rv0, 100_000);
    const gone = new Set(changes.filter((c) => c.cluster === 'a' && c.type === 'DELETED').map((c) => `${c.resource}/${c.namespace}/${c.name}`));
    const missing = deleted.filter((e) => !gone.has(`${e.id.split('/')[1]}/${e.object.metadata.namespace}/${e.object.metadata.name}`) && !a.store.get(e.id, e.object.metadata.namespace, e.object.metadata.name!));
    t.same(missing.map((e) => e.key), [], 'every object deleted in between got a DELETED change');
    const relists = (await s.metrics.relists.get()).values.filter((v) => v.labels.reason === 'expired' && v.labels.cluster === 'a');
    t.ok(relists.length > 0, 'relists after 410 are counted');
    await waitUntil('a ready again', async () => (await store.getCluster('a'))?.status.phase === 'Ready');
  });

  await t.test('cluster down (503) and back with deletes meanwhile, history kept', async (t) => {
    await b.faults.down({ mode: 'unavailable' });
    await waitUntil('b unreachable', () => s.clusters().b?.phase === 'Unreachable');
    t.match(s.clusters().b.message, /503/);
    b.churn.step(150);
    await b.faults.up();
    await copied('after downtime');
  });

  await t.test('CRDs come and go', async (t) => {
    const crds = a.registry.lookup('apiextensions.k8s.io', 'v1', 'customresourcedefinitions')!;
    const gadget = structuredClone(widgetCRD);
    gadget.metadata.name = 'gadgets.demo.panoptes.io';
    Object.assign((gadget.spec as { names: Record<string, unknown> }).names, { plural: 'gadgets', singular: 'gadget', kind: 'Gadget', listKind: 'GadgetList', shortNames: ['gd'] });
    a.crud.create(crds, 'v1', undefined, gadget);
    const info = a.registry.byId('demo.panoptes.io/gadgets')!;
    for (let i = 0; i < 3; i++) a.crud.create(info, 'v1', 'default', { metadata: { name: `g${i}` }, spec: { color: 'red' } });
    await waitUntil('gadgets stored', async () => (await store.list({ group: 'demo.panoptes.io', resource: 'gadgets', clusters: ['a'] })).items.length === 3);
    t.pass('a new CRD is picked up');
    a.crud.delete(crds, undefined, 'gadgets.demo.panoptes.io');
    await waitUntil('gadgets gone', async () => (await store.list({ group: 'demo.panoptes.io', resource: 'gadgets', clusters: ['a'] })).items.length === 0);
    t.pass('a deleted CRD is dropped');
    await copied('after CRD changes');
  });

  await t.test('invalid entries, unreachable clusters and a malformed file stop nothing else', async (t) => {
    writeClusters(file, [...entries, { name: 'bad', server: 'ftp://nowhere' }, { name: 'away', server: 'http://127.0.0.1:1' }]);
    await waitUntil('bad is Invalid', async () => (await store.getCluster('bad'))?.status.phase === 'Invalid');
    t.match((await store.getCluster('bad'))!.status, { reason: 'InvalidConfig', message: /http:\/\/ or https:\/\// });
    await waitUntil('away is Unreachable', async () => (await store.getCluster('away'))?.status.phase === 'Unreachable');
    t.match((await store.getCluster('away'))!.status, { message: /ECONNREFUSED/ });
    writeFileSync(file, 'clusters: [\n  - name: a\n  broken');
    await waitUntil('config error reported', () => s.configError());
    t.match(s.configError(), /not valid YAML/);
    await waitUntil('config error in status', async () => (await store.getCluster('a'))?.status.configError);
    a.churn.step(50);
    b.churn.step(50);
    await copied('with a broken file');
    t.ok(s.clusters().away, 'the last good configuration stays in effect');
  });

  const epochOf = async (name: string) => ((await store.getCluster(name))?.status.owner as { epoch?: number } | undefined)?.epoch;
  let removedEpoch: number | undefined;

  await t.test('removed clusters: DELETED for each object, then the row is gone', async (t) => {
    removedEpoch = await epochOf('b');
    t.ok(removedEpoch, 'b is written under a lease epoch');
    const rv0 = await store.watermark();
    const count = (await store.storedResources('b')).reduce((n, r) => n + r.count, 0);
    t.ok(count > 0);
    writeClusters(file, [entries[0]]);
    await waitUntil('b removed', async () => !(await store.getCluster('b')) && !(await store.getCluster('away')) && !(await store.getCluster('bad')));
    t.same(await store.storedResources('b'), [], 'no objects of b left');
    const deletes = (await store.changesAfter(rv0, 100_000)).filter((c) => c.cluster === 'b');
    t.equal(deletes.length, count, 'one change per object');
    t.ok(deletes.every((c) => c.type === 'DELETED'), 'all DELETED');
    t.equal(s.configError(), undefined, 'the fixed file clears the error');
    a.churn.step(50);
    t.same(await waitForCopy(store, a, 'a', aIds()), [], 'a still copied');
  });

  await t.test('a removed cluster added again is written under a higher epoch than before', async (t) => {
    writeClusters(file, entries);
    await waitUntil('b back', async () => (await store.getCluster('b'))?.status.phase === 'Ready');
    const epoch = await epochOf('b');
    t.ok(epoch !== undefined && removedEpoch !== undefined && epoch > removedEpoch, `epoch ${epoch} > ${removedEpoch}: the fences of its earlier tenure stay invalid`);
    t.same(await waitForCopy(store, b, 'b', bIds), [], 'b copied again');
  });
});
