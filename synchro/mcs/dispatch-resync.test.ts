// The dispatcher's full pass does not hold back a provider's change: the keys a change asks for
// while a long full pass runs (every read of the plans of 30 other Services slowed down here)
// are planned between its keys, and reach the consumer long before the pass ends.
import t from 'tap';
import { dispatchedSliceName } from '../../api/multicluster-service.ts';
import type { ListQuery } from '../../storage/types.ts';
import type { Store } from '../../storage/store.ts';
import { openTestStore } from '../../storage/testing.ts';
import { startSynchro } from '../synchro.ts';
import { fastTimings, tempDir, waitUntil, writeClusters } from '../testutil.ts';
import { ensureNamespace, mcsTimings, provide, putMcs, resources, setEndpoints, simFleet } from './testutil.ts';

const SLICES = 'discovery.k8s.io/endpointslices';
const SLOW_KEYS = 30;
const SLOW_MS = 80;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `store`, with its reads of the slices of the Services named slow-* delayed by SLOW_MS while `slow.on`. */
function slowedStore(store: Store, slow: { on: boolean }): Store {
  return new Proxy(store, {
    get(target, prop) {
      const v = Reflect.get(target, prop, target) as unknown;
      if (prop === 'list') {
        return async (q: ListQuery, ...rest: unknown[]) => {
          const selected = q.labelSelector?.[0]?.values?.[0];
          if (slow.on && q.resource === 'endpointslices' && typeof selected === 'string' && selected.startsWith('slow-')) await sleep(SLOW_MS);
          return (v as (...a: unknown[]) => unknown).call(target, q, ...rest);
        };
      }
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

t.test('a change during a long full pass is dispatched before the pass ends', async (t) => {
  const { store, close } = await openTestStore('sqlite');
  const { dir, cleanup } = tempDir();
  const { sims, fx } = await simFleet(['east', 'west']);
  const [east, west] = sims;
  ensureNamespace(west, fx(west), 'shop');
  provide(east, fx(east), 'shop', 'web', ['10.0.0.1']);
  for (let i = 0; i < SLOW_KEYS; i++) provide(east, fx(east), 'shop', `slow-${String(i).padStart(2, '0')}`, ['10.1.0.1']);
  const file = `${dir}/clusters.yaml`;
  writeClusters(file, sims.map((s) => ({ name: s.name, server: s.url, resources })));
  const slow = { on: false };
  const resyncIntervalMs = 4000;
  const synchro = await startSynchro({ store: slowedStore(store, slow), clustersFile: file, timings: fastTimings, compaction: false, mcs: { ...mcsTimings, resyncIntervalMs } });
  t.teardown(async () => {
    await synchro.stop();
    await Promise.all(sims.map((s) => s.close()));
    await close();
    cleanup();
  });
  t.ok(await synchro.waitForInitialSync(30_000), 'initial sync');
  for (const name of ['web', ...Array.from({ length: SLOW_KEYS }, (_, i) => `slow-${String(i).padStart(2, '0')}`)]) await putMcs(store, 'shop', name, { providerClusters: ['east'], consumerClusters: ['west'] });
  const web = dispatchedSliceName('east', 'web-abcde');
  const held = (n: number) => (west.store.get(SLICES, 'shop', web)?.endpoints as unknown[] | undefined)?.length === n;
  await waitUntil('everything dispatched to west', () => held(1) && west.store.list(SLICES, { namespace: 'shop' }).items.length === SLOW_KEYS + 1, 30_000);

  slow.on = true;
  const resyncs = async () => (await synchro.metrics.mcsPasses.get()).values.find((v) => v.labels.trigger === 'resync')?.value ?? 0;
  const before = await resyncs();
  await waitUntil('a full pass begins', async () => (await resyncs()) > before, resyncIntervalMs + 5000, 10);
  const began = performance.now();
  setEndpoints(east, fx(east), 'shop', 'web', ['10.0.0.1', '10.0.0.2']);
  await waitUntil("west holds the provider's change", () => held(2), 20_000, 10);
  const latency = performance.now() - began;
  t.ok(latency < (SLOW_KEYS * SLOW_MS) / 2, `the change reached west ${Math.round(latency)} ms after a full pass of at least ${SLOW_KEYS * SLOW_MS} ms began`);
});
