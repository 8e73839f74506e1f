// The catalog's refreshes asked for by a change or a miss read storage after they were asked
// for: a refresh already in flight may have read before the change, and joining it would
// serve the old discovery (a cluster shown synced whose resources are not found).
import t, { type Test } from 'tap';
import { Catalog } from './catalog.ts';
import { crdEvent, openTestStore, seedCluster } from '../../storage/testing.ts';
import type { Store } from '../../storage/store.ts';

const pods = [{ group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, singularName: 'pod' }];

/** Makes the next listClusters read storage at once but answer only when `release` is called: a refresh in flight that read before a change. */
function holdNextRead(store: Store): { release: () => void } {
  const original = store.listClusters.bind(store);
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  store.listClusters = async () => {
    store.listClusters = original;
    const records = await original();
    await released;
    return records;
  };
  return { release };
}

async function setup(t: Test) {
  const { store, close } = await openTestStore('sqlite');
  await seedCluster(store, 'a', { phase: 'Ready', ready: true, apiResources: [] });
  const catalog = new Catalog(store, { refreshMs: 60_000 });
  await catalog.start();
  t.teardown(async () => {
    catalog.stop();
    await close();
  });
  t.notOk(catalog.view()?.find('', 'v1', 'pods'), 'no pods before the change');
  return { store, catalog };
}

t.test('a miss reads storage after it, not the refresh in flight', async (t) => {
  const { store, catalog } = await setup(t);
  const held = holdNextRead(store);
  const stale = catalog.refresh(); // reads the old status, answers later
  await seedCluster(store, 'a', { phase: 'Ready', ready: true, apiResources: pods });
  const miss = catalog.refreshOnMiss();
  held.release();
  await Promise.all([stale, miss]);
  t.ok(catalog.view()?.find('', 'v1', 'pods'), 'the resource the change added is found');
});

t.test('a second miss within 500 ms waits for a refresh after it', async (t) => {
  const { store, catalog } = await setup(t);
  await catalog.refreshOnMiss();
  await seedCluster(store, 'a', { phase: 'Ready', ready: true, apiResources: pods });
  // The periodic refresh is a minute away, beyond the bounded wait: a refresh within it is the miss's own, after the 500 ms spacing.
  let timer: NodeJS.Timeout | undefined;
  const refreshed = await Promise.race([catalog.refreshOnMiss().then(() => true), new Promise<boolean>((r) => (timer = setTimeout(() => r(false), 30_000)))]);
  clearTimeout(timer);
  t.ok(refreshed, 'within the rate limit, not an unbounded wait (nor the periodic refresh)');
  t.ok(catalog.view()?.find('', 'v1', 'pods'), 'found');
});

t.test('discovery waits for the refresh a change asked for (bounded)', async (t) => {
  const { store, catalog } = await setup(t);
  const held = holdNextRead(store);
  const stale = catalog.refresh();
  await seedCluster(store, 'a', { phase: 'Ready', ready: true, apiResources: pods });
  catalog.refreshSoon(); // what the poller does when a Cluster object changes
  setTimeout(() => held.release(), 50);
  await catalog.caughtUp(5000);
  await stale;
  t.ok(catalog.view()?.find('', 'v1', 'pods'), 'caught up with the change');

  // A refresh that does not answer: caughtUp gives up after its bound.
  const stuck = holdNextRead(store);
  catalog.refreshSoon();
  await new Promise((r) => setTimeout(r, 600)); // past the 500 ms spacing: the refresh is running, held
  const started = Date.now();
  await catalog.caughtUp(200);
  const waited = Date.now() - started;
  t.ok(waited >= 150 && waited < 2000, `bounded: ${waited} ms`);
  stuck.release();
  await catalog.caughtUp(5000);
});

t.test("the fleet's CRDs are read again when one changed, not at every refresh", async (t) => {
  const { store, close } = await openTestStore('sqlite');
  const widgets = [{ group: 'example.com', version: 'v1', resource: 'widgets' }];
  await seedCluster(store, 'a', { phase: 'Ready', ready: true, apiResources: widgets });
  await store.applyBatch('a', [crdEvent('ADDED', 'widgets', 'Widget', '1', ['wd'])]);
  const catalog = new Catalog(store, { refreshMs: 60_000 });
  await catalog.start();
  t.teardown(async () => {
    catalog.stop();
    await close();
  });
  const list = store.list.bind(store);
  let crdReads = 0;
  store.list = (q) => {
    if (q.resource === 'customresourcedefinitions') crdReads++;
    return list(q);
  };
  const shortNames = () => catalog.view()?.find('example.com', 'v1', 'widgets')?.shortNames;
  t.same(shortNames(), ['wd'], 'what the CRD says, from the first refresh');
  await catalog.refresh();
  await catalog.refresh();
  t.equal(crdReads, 0, 'refreshes without a CRD change read no CRD');
  await store.applyBatch('a', [crdEvent('MODIFIED', 'widgets', 'Widget', '2', ['wdg'])]);
  catalog.crdsChanged();
  await catalog.refreshOnMiss(); // a refresh that reads after now
  t.equal(crdReads, 1, 'a CRD changed: read once');
  t.same(shortNames(), ['wdg'], 'the changed CRD is served');
});
