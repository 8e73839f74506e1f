// What the dispatcher spares itself, so that a provider's change reaches the consumers at
// once: it does not wait for a long full pass (the keys a change asks for while one runs,
// every read of the plans of 30 other Services slowed down here, are planned between its
// keys), it does not plan a key again for its own writes synced back from the consumers, it
// writes the status entries of the consumers it holds in one write, not one each, and a status
// write that waits for storage (the change log's lock) holds back no consumer's write.
import t, { type Test } from 'tap';
import { dispatchedSliceName, type MultiClusterServiceStatus } from '../../api/multicluster-service.ts';
import type { ListQuery } from '../../storage/types.ts';
import type { Store } from '../../storage/store.ts';
import { backends, openTestStore, type Backend } from '../../storage/testing.ts';
import { startSynchro } from '../synchro.ts';
import type { DispatcherOptions } from './dispatcher.ts';
import { fastTimings, tempDir, waitUntil, writeClusters } from '../testutil.ts';
import { annotateService, ensureNamespace, mcsTimings, provide, putMcs, resources, setEndpoints, simFleet } from './testutil.ts';

const SLICES = 'discovery.k8s.io/endpointslices';
const SLOW_KEYS = 30;
const SLOW_MS = 80;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** How watchedStore slows its reads: `busy`, on the event loop; `turn`, noted in `turns` at every slow read. */
interface Slow {
  on: boolean;
  busy?: boolean;
  turn?: () => number;
  turns?: number[];
  /** While set, the dispatcher's reads of the change log wait for it. */
  changes?: Promise<void>;
}

/**
 * `store`, with its reads of one Service's slices (a plan of that key: inputs.ts readKey)
 * counted per Service, and slowed down by SLOW_MS for the Services named slow-* while `slow.on`.
 */
function watchedStore(store: Store, slow: Slow, plans: Map<string, number>): Store {
  return new Proxy(store, {
    get(target, prop) {
      const v = Reflect.get(target, prop, target) as unknown;
      if (prop === 'changesOfResources') {
        return async (...args: unknown[]) => {
          await slow.changes;
          return (v as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
      if (prop === 'list') {
        return async (q: ListQuery, ...rest: unknown[]) => {
          const selected = q.resource === 'endpointslices' ? q.labelSelector?.[0]?.values?.[0] : undefined;
          if (typeof selected === 'string') {
            plans.set(selected, (plans.get(selected) ?? 0) + 1);
            if (slow.on && selected.startsWith('slow-')) {
              if (slow.turn) slow.turns?.push(slow.turn());
              // A slow database (the event loop free meanwhile), or work on the event loop, as parsing and planning many objects is.
              if (slow.busy) for (const end = performance.now() + SLOW_MS; performance.now() < end; );
              else await sleep(SLOW_MS);
            }
          }
          return (v as (...a: unknown[]) => unknown).call(target, q, ...rest);
        };
      }
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

/**
 * Simulated clusters `names` (east provides shop/web, the others have the namespace) and one
 * synchro over them on `backend` (SQLite unless said), through `wrap(store)`, with the tests'
 * timings and `mcs`; stopped at teardown.
 */
async function dispatching(t: Test, names: string[], mcs: Partial<DispatcherOptions>, wrap: (s: Store) => Store = (s) => s, backend: Backend = 'sqlite') {
  const { store, close } = await openTestStore(backend);
  const { dir, cleanup } = tempDir();
  const { sims, fx } = await simFleet(names);
  const [east, ...others] = sims;
  for (const s of others) ensureNamespace(s, fx(s), 'shop');
  provide(east, fx(east), 'shop', 'web', ['10.0.0.1']);
  const file = `${dir}/clusters.yaml`;
  writeClusters(file, sims.map((s) => ({ name: s.name, server: s.url, resources })));
  const synchro = await startSynchro({ store: wrap(store), clustersFile: file, timings: fastTimings, compaction: false, mcs: { ...mcsTimings, ...mcs } });
  t.teardown(async () => {
    await synchro.stop();
    await Promise.all(sims.map((s) => s.close()));
    await close();
    cleanup();
  });
  t.ok(await synchro.waitForInitialSync(30_000), 'initial sync');
  return { store, synchro, sims, fx };
}

t.test('a change during a long full pass is dispatched before the pass ends', async (t) => {
  const slow = { on: false };
  const resyncIntervalMs = 4000;
  const plans = new Map<string, number>();
  const { store, synchro, sims, fx } = await dispatching(t, ['east', 'west'], { resyncIntervalMs }, (s) => watchedStore(s, slow, plans));
  const [east, west] = sims;
  for (let i = 0; i < SLOW_KEYS; i++) provide(east, fx(east), 'shop', `slow-${String(i).padStart(2, '0')}`, ['10.1.0.1']);
  for (const name of ['web', ...Array.from({ length: SLOW_KEYS }, (_, i) => `slow-${String(i).padStart(2, '0')}`)]) await putMcs(store, 'shop', name, { providerClusters: ['east'], consumerClusters: ['west'] });
  const web = dispatchedSliceName('east', 'web-abcde');
  const held = (n: number) => (west.store.get(SLICES, 'shop', web)?.endpoints as unknown[] | undefined)?.length === n;
  await waitUntil('everything dispatched to west', () => held(1) && west.store.list(SLICES, { namespace: 'shop' }).items.length === SLOW_KEYS + 1, 30_000);

  slow.on = true;
  const resyncs = async () => (await synchro.metrics.mcsPasses.get()).values.find((v) => v.labels.trigger === 'resync')?.value ?? 0;
  const before = await resyncs();
  const slowPlans = () => [...plans].filter(([k]) => k.startsWith('slow-')).reduce((n, [, v]) => n + v, 0);
  const plannedBefore = slowPlans();
  await waitUntil('a full pass begins', async () => (await resyncs()) > before, resyncIntervalMs + 5000, 10);
  setEndpoints(east, fx(east), 'shop', 'web', ['10.0.0.1', '10.0.0.2']);
  // Observed as the change lands: how many of the pass's slow keys it had started by then.
  let planned = 0;
  await waitUntil("west holds the provider's change", () => held(2) && ((planned = slowPlans() - plannedBefore), true), 20_000, 10);
  t.ok(planned < SLOW_KEYS, `the change reached west with ${planned} of the full pass's ${SLOW_KEYS} slow keys (${SLOW_MS} ms each) started: before the pass ended`);
});

t.test("the consumers' copies of the dispatcher's own writes plan nothing again", async (t) => {
  const plans = new Map<string, number>();
  // No full pass and no status left for later in the test's time: every plan is a change's.
  const { store, sims, fx } = await dispatching(t, ['east', 'west', 'lab'], { resyncIntervalMs: 600_000, statusCountsIntervalMs: 0 }, (s) => watchedStore(s, { on: false }, plans));
  const [east, west, lab] = sims;
  await putMcs(store, 'shop', 'web', { providerClusters: ['east'], consumerClusters: ['west', 'lab'] });
  const web = dispatchedSliceName('east', 'web-abcde');
  const held = (n: number) => [west, lab].every((c) => (c.store.get(SLICES, 'shop', web)?.endpoints as unknown[] | undefined)?.length === n);
  await waitUntil('dispatched to west and lab', () => held(1), 20_000);
  await sleep(1500);

  const before = plans.get('web') ?? 0;
  setEndpoints(east, fx(east), 'shop', 'web', ['10.0.0.1', '10.0.0.2']);
  await waitUntil('the change in west and lab', () => held(2), 10_000);
  // Their watches bring the two updates back into storage: changes of the key, and the dispatcher's own.
  await waitUntil('west and lab synced back', async () => {
    const rows = (await store.list({ group: 'discovery.k8s.io', resource: 'endpointslices', clusters: ['west', 'lab'], names: [web] })).items;
    return rows.length === 2 && rows.every((r) => (JSON.parse(r.object).endpoints as unknown[]).length === 2);
  }, 10_000);
  await sleep(1500);
  t.equal((plans.get('web') ?? 0) - before, 1, "one plan of web: the provider's change, none for the copies of its own writes");
});

t.test('the status entries of the consumers one member holds: one write', async (t) => {
  const { store, sims } = await dispatching(t, ['east', 'west', 'lab', 'north'], { resyncIntervalMs: 600_000 });
  const [, ...consumers] = sims;
  const from = await store.watermark();
  await putMcs(store, 'shop', 'web', { providerClusters: ['east'], consumerClusters: consumers.map((s) => s.name) });
  const web = dispatchedSliceName('east', 'web-abcde');
  await waitUntil('dispatched to every consumer', () => consumers.every((c) => c.store.get(SLICES, 'shop', web)), 20_000);
  const status = async () => ((await store.getOwnObject({ resource: 'multiclusterservices', namespace: 'shop', name: 'web' }))?.object.status ?? {}) as MultiClusterServiceStatus;
  await waitUntil('Ready', async () => (await status()).conditions?.find((c) => c.type === 'Ready')?.status === 'True', 10_000);
  await sleep(1500);
  const writes = (await store.changesAfter(from, 10_000)).filter((c) => c.resource === 'multiclusterservices' && c.epoch !== null);
  t.equal(writes.length, 1, `the three consumers' entries in one status write (${writes.length})`);
  t.same((await status()).consumers?.map((c) => [c.cluster, c.endpoints]), [['lab', 1], ['north', 1], ['west', 1]]);
});

t.test('a long full pass, and many changed keys at once, let the event loop run between keys (watches, leases, changes)', async (t) => {
  const turns: number[] = [];
  const slow: Slow = { on: false, busy: true, turns };
  const resyncIntervalMs = 3000;
  const keyConcurrency = 4;
  const { store, synchro, sims, fx } = await dispatching(t, ['east', 'west'], { resyncIntervalMs, keyConcurrency }, (s) => watchedStore(s, slow, new Map()));
  const [east, west] = sims;
  const slowKeys = Array.from({ length: SLOW_KEYS }, (_, i) => `slow-${String(i).padStart(2, '0')}`);
  for (const name of slowKeys) provide(east, fx(east), 'shop', name, ['10.1.0.1']);
  for (const name of slowKeys) await putMcs(store, 'shop', name, { providerClusters: ['east'], consumerClusters: ['west'] });
  await waitUntil('everything dispatched to west', () => west.store.list(SLICES, { namespace: 'shop' }).items.length === SLOW_KEYS, 30_000);

  // The turns of the event loop, counted by a timer: every slow read notes the count it sees.
  // Reads that see the same count ran one after another without a timer in between.
  let turn = 0;
  const tick = setInterval(() => turn++, 1);
  t.teardown(() => clearInterval(tick));
  slow.turn = () => turn;
  const resyncs = async () => (await synchro.metrics.mcsPasses.get()).values.find((v) => v.labels.trigger === 'resync')?.value ?? 0;
  const first = await resyncs();
  slow.on = true;
  await waitUntil('two full passes', async () => (await resyncs()) >= first + 2, 3 * (resyncIntervalMs + SLOW_KEYS * SLOW_MS) + 5000, 20);
  const passes = longestRun(turns);
  t.ok(turns.length >= SLOW_KEYS, `full passes read the ${SLOW_KEYS} slow keys (${turns.length} reads)`);
  t.ok(passes <= keyConcurrency, `full passes: the event loop ran after ${passes} slow keys at most (${SLOW_MS} ms each of its time)`);

  // Every provided Service changed at once, and the dispatcher reads all of the changes in one
  // go: the keys they ask for are planned keyConcurrency at once, each plan finding nothing to
  // write (no consumer's answer to wait for).
  let release = () => {};
  slow.changes = new Promise<void>((r) => (release = r));
  turns.length = 0;
  for (const name of slowKeys) annotateService(east, fx(east), 'shop', name, 'yes');
  await waitUntil("the providers' changes in storage", async () => {
    const rows = (await store.list({ group: '', resource: 'services', clusters: ['east'], namespaces: ['shop'] })).items;
    return rows.filter((r) => JSON.parse(r.object).metadata?.annotations?.['example.com/touched'] === 'yes').length === SLOW_KEYS;
  }, 20_000);
  slow.changes = undefined;
  release();
  await waitUntil('every changed key planned', () => turns.length >= SLOW_KEYS, 3 * SLOW_KEYS * SLOW_MS + 10_000, 20);
  clearInterval(tick);
  const changes = longestRun(turns);
  t.ok(turns.length >= SLOW_KEYS, `the changes read the ${SLOW_KEYS} slow keys (${turns.length} reads)`);
  t.ok(changes <= keyConcurrency, `${SLOW_KEYS} changed keys: the event loop ran after ${changes} slow keys at most (keyConcurrency ${keyConcurrency})`);
});

/** The longest run of equal neighbours in `xs`. */
function longestRun(xs: number[]): number {
  let longest = 0;
  for (let i = 0, run = 0; i < xs.length; i++) {
    run = i > 0 && xs[i] === xs[i - 1] ? run + 1 : 1;
    longest = Math.max(longest, run);
  }
  return longest;
}

/**
 * `store`, with the MultiClusterService writes of the Services named slow-* held until
 * `gate.open()` while `gate.closed` (`gate.held`: how many wait).
 */
function gatedStatusStore(store: Store, gate: { closed: boolean; held: number; open: () => void; opened: Promise<void> }): Store {
  return new Proxy(store, {
    get(target, prop) {
      const v = Reflect.get(target, prop, target) as unknown;
      if (prop === 'writeOwnObjectUnder') {
        return async (ref: { name: string }, ...rest: unknown[]) => {
          if (gate.closed && ref.name.startsWith('slow-')) {
            gate.held++;
            await gate.opened;
          }
          return (v as (...a: unknown[]) => unknown).call(target, ref, ...rest);
        };
      }
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

for (const backend of backends) {
  t.test(`a status write that waits for storage holds back no other Service's dispatch (${backend})`, async (t) => {
    let open = () => {};
    const opened = new Promise<void>((r) => (open = r));
    const gate = { closed: false, held: 0, open, opened };
    t.teardown(() => gate.open());
    // Counts written at once: the slow Service's change makes a status write.
    const { store, sims, fx } = await dispatching(t, ['east', 'west'], { resyncIntervalMs: 600_000, statusCountsIntervalMs: 0 }, (s) => gatedStatusStore(s, gate), backend);
    const [east, west] = sims;
    provide(east, fx(east), 'shop', 'slow-00', ['10.1.0.1']);
    for (const name of ['web', 'slow-00']) await putMcs(store, 'shop', name, { providerClusters: ['east'], consumerClusters: ['west'] });
    const held = (name: string, n: number) => (west.store.get(SLICES, 'shop', dispatchedSliceName('east', `${name}-abcde`))?.endpoints as unknown[] | undefined)?.length === n;
    await waitUntil('both dispatched to west', () => held('web', 1) && held('slow-00', 1), 30_000);
    const endpoints = async (name: string) => ((await store.getOwnObject({ resource: 'multiclusterservices', namespace: 'shop', name }))?.object.status as MultiClusterServiceStatus | undefined)?.consumers?.[0]?.endpoints;
    await waitUntil("slow-00's status written", async () => (await endpoints('slow-00')) === 1, 20_000);

    gate.closed = true;
    setEndpoints(east, fx(east), 'shop', 'slow-00', ['10.1.0.1', '10.1.0.2']);
    await waitUntil('west holds the change of slow-00', () => held('slow-00', 2), 20_000);
    await waitUntil("slow-00's status write waits for storage", () => gate.held > 0, 20_000);
    setEndpoints(east, fx(east), 'shop', 'web', ['10.0.0.1', '10.0.0.2']);
    await waitUntil("west holds web's change while slow-00's status write still waits", () => held('web', 2), 20_000);
    t.equal(await endpoints('slow-00'), 1, "slow-00's status is not written yet");
    t.ok(gate.held > 0, 'a status write of slow-00 still waits');

    gate.closed = false;
    gate.open();
    await waitUntil('both statuses written once storage answers', async () => (await endpoints('slow-00')) === 2 && (await endpoints('web')) === 2, 20_000);
  });
}
