// Watch semantics of the engine on SQLite (apiserver/watch/README.md, "Semantics").
import t, { type Test } from 'tap';
import { parseLabelSelector } from '../../kube/labels.ts';
import { compactNow, openTestStore, podEvent } from '../../storage/testing.ts';
import { Store } from '../../storage/store.ts';
import { initialRv as B } from '../../storage/schema.ts';
import type { HubOptions, WatchHub } from './hub.ts';
import type { Encoder } from './encode.ts';
import { delay, podWatch, Reader, rvOf, startHub } from '../../hack/testing/watch-engine.ts';

async function setup(t: Test, opts: HubOptions = {}, before?: (store: Store) => Promise<void>): Promise<{ store: Store; hub: WatchHub }> {
  const { store, close } = await openTestStore('sqlite');
  if (before) await before(store);
  const hub = await startHub(store, opts);
  t.teardown(async () => {
    await hub.stop();
    await close();
  });
  return { store, hub };
}

const add = (store: Store, ns: string, name: string, urv: string, labels?: Record<string, string>) =>
  store.applyBatch('c1', [podEvent('ADDED', ns, name, urv, { labels })]);
const mod = (store: Store, ns: string, name: string, urv: string, labels?: Record<string, string>) =>
  store.applyBatch('c1', [podEvent('MODIFIED', ns, name, urv, { labels })]);
const del = (store: Store, ns: string, name: string, urv: string) => store.applyBatch('c1', [podEvent('DELETED', ns, name, urv)]);

t.test('from rv N: exactly the changes after N, in order, from the change log and from the window', async (t) => {
  const { store, hub } = await setup(t, { prefill: 0 }, async (s) => {
    for (let i = 1; i <= 5; i++) await add(s, 'n', `p${i}`, String(i));
  });
  t.equal(hub.stats().windowStartRv, B + 5, 'the window starts at the watermark (no prefill)');
  for (let i = 6; i <= 10; i++) await add(store, 'n', `p${i}`, String(i));
  await delay(100);
  t.equal(hub.rv, B + 10);

  const old = new Reader(hub.watch(podWatch({ resourceVersion: B + 2 })));
  const recent = new Reader(hub.watch(podWatch({ resourceVersion: B + 7 })));
  const now = new Reader(hub.watch(podWatch({ resourceVersion: B + 10 })));
  await old.count(8);
  await recent.count(3);
  t.same(old.events.map(rvOf), [3, 4, 5, 6, 7, 8, 9, 10].map((k) => B + k), 'replayed from the log, then the window: rv > 2 only');
  t.same(recent.events.map(rvOf), [8, 9, 10].map((k) => B + k), 'from the window: rv > 7 only');
  t.same(old.types, Array(8).fill('ADDED'));
  await add(store, 'n', 'p11', '11');
  await Promise.all([old.reach(B + 11), recent.reach(B + 11), now.reach(B + 11)]);
  t.same(now.events.map(rvOf), [B + 11], 'a watch at the newest rv sends only later changes');
  t.equal(old.events.length, 9, 'then live, nothing repeated');
  const replays = await hub['metrics'].storageReplays.get();
  t.equal(replays.values[0].value, 1, 'only the watch older than the window queried the change log');
  old.w.close();
  await old.end();
  t.equal(old.w.closeReason, 'closed');
});

t.test('without rv (or "0"): synthetic ADDED from one snapshot, then changes after it', async (t) => {
  const { store, hub } = await setup(t, {}, async (s) => {
    await add(s, 'a', 'x', '1');
    await add(s, 'b', 'y', '1');
    await del(s, 'b', 'y', '2');
    await add(s, 'b', 'z', '3');
  });
  for (const rv of [undefined, 0]) {
    const r = new Reader(hub.watch(podWatch({ resourceVersion: rv })));
    await r.count(2);
    t.same(r.types, ['ADDED', 'ADDED'], `rv ${rv}: current objects only`);
    t.same(r.names.sort(), ['x', 'z']);
    await mod(store, 'a', 'x', rv === undefined ? '2' : '3');
    await r.count(3);
    t.same(r.events[2].type, 'MODIFIED');
    t.equal(r.events.length, 3, 'nothing from before the snapshot is repeated');
    r.w.close();
  }
  const filtered = new Reader(hub.watch(podWatch({}, { namespaces: ['b'] })));
  await filtered.count(1);
  await delay(50);
  t.same(filtered.names, ['z'], 'the snapshot honours the filters');
  filtered.w.close();
});

t.test('selector transitions: starts matching → ADDED, stops matching → DELETED with its previous state at the new rv', async (t) => {
  const { store, hub } = await setup(t);
  const r = new Reader(hub.watch(podWatch({ resourceVersion: 0 }, { labelSelector: parseLabelSelector('app=web') })));
  const all = new Reader(hub.watch(podWatch({ resourceVersion: 0 })));
  await delay(50);
  await add(store, 'n', 'p', '1', { app: 'db' }); // rv 1: not matching
  await mod(store, 'n', 'p', '2', { app: 'web' }); // rv 2: starts matching
  await mod(store, 'n', 'p', '3', { app: 'web', v: '2' }); // rv 3: still matching
  await mod(store, 'n', 'p', '4', { app: 'db' }); // rv 4: stops matching
  await mod(store, 'n', 'p', '5', { app: 'db', v: '3' }); // rv 5: still not
  await add(store, 'n', 'q', '6', { app: 'web' }); // rv 6
  await del(store, 'n', 'q', '7'); // rv 7
  await del(store, 'n', 'p', '8'); // rv 8: deleted while not matching
  await all.reach(B + 8);
  await r.reach(B + 7);
  await delay(50);
  t.same(r.events.map((e) => [e.type, rvOf(e), e.object.metadata?.name]), [
    ['ADDED', B + 2, 'p'],
    ['MODIFIED', B + 3, 'p'],
    ['DELETED', B + 4, 'p'],
    ['ADDED', B + 6, 'q'],
    ['DELETED', B + 7, 'q'],
  ]);
  t.same(r.events[2].object.metadata?.labels, { app: 'web', v: '2' }, 'DELETED carries the state before the change');
  t.same(all.types, ['ADDED', 'MODIFIED', 'MODIFIED', 'MODIFIED', 'MODIFIED', 'ADDED', 'DELETED', 'DELETED'], 'without selector: the plain events');
  r.w.close();
  all.w.close();
});

t.test('a compacted rv: one ERROR event with Status 410 Expired, then the stream ends', async (t) => {
  const { hub } = await setup(t, { prefill: 0 }, async (s) => {
    for (let i = 1; i <= 6; i++) await add(s, 'n', `p${i}`, String(i));
    await compactNow(s, { minAgeMs: 0, minCount: 2 });
  });
  const r = new Reader(hub.watch(podWatch({ resourceVersion: B + 1 })));
  await r.end();
  t.equal(r.events.length, 1);
  t.match(r.events[0], { type: 'ERROR', object: { kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 410, reason: 'Expired', message: `too old resource version: ${B + 1} (${B + 4})` } });
  t.equal(r.w.closeReason, 'error');
  const ok = new Reader(hub.watch(podWatch({ resourceVersion: B + 4 })));
  await ok.count(2);
  t.same(ok.events.map(rvOf), [B + 5, B + 6], 'the compacted rv itself still works');
  ok.w.close();
});

t.test('a future rv waits for it; one never reached gets ERROR 504 ResourceVersionTooLarge', async (t) => {
  const { store, hub } = await setup(t, { futureRvWaitMs: 1500 });
  await add(store, 'n', 'a', '1');
  await delay(50);
  const r = new Reader(hub.watch(podWatch({ resourceVersion: B + 3 })));
  await delay(200);
  t.equal(r.events.length, 0);
  await add(store, 'n', 'b', '1');
  await add(store, 'n', 'c', '1');
  await add(store, 'n', 'd', '1');
  await r.count(1);
  await delay(50);
  t.same(r.events.map(rvOf), [B + 4], 'only changes after the requested rv');
  r.w.close();

  const start = Date.now();
  const far = new Reader(hub.watch(podWatch({ resourceVersion: 100 })));
  await far.end(5000);
  const waited = Date.now() - start;
  t.ok(waited >= 1400, `waited ${waited} ms`);
  t.match(far.events, [
    { type: 'ERROR', object: { code: 504, reason: 'Timeout', message: `Too large resource version: 100, current: ${B + 4}`, details: { causes: [{ reason: 'ResourceVersionTooLarge' }] } } },
  ]);
});

t.test('an rv the poller skipped over by a compaction gets 410 at once, not 504 after the wait', async (t) => {
  const { store, url, close } = await openTestStore('sqlite');
  // The poller only polls when woken: writes through another Store do not wake it.
  // A wait long enough that no load on the machine can make the 410 look like its end.
  const hub = await startHub(store, { prefill: 0, poll: { intervalMs: 60_000 }, futureRvWaitMs: 40_000 });
  const other = await Store.open(url);
  t.teardown(async () => {
    await hub.stop();
    await other.close();
    await close();
  });
  for (let i = 1; i <= 6; i++) await other.applyBatch('c1', [podEvent('ADDED', 'n', `p${i}`, String(i))]);
  await compactNow(other, { minAgeMs: 0, minCount: 0 });
  t.equal(hub.rv, B, 'the poller has not seen any of it');
  // Ended within the 30 s bounded wait, so not by the 40 s future-rv timeout.
  const r = new Reader(hub.watch(podWatch({ resourceVersion: B + 2 })));
  await r.end(30_000);
  t.match(r.events, [{ type: 'ERROR', object: { code: 410, reason: 'Expired', message: `too old resource version: ${B + 2} (${B + 6})` } }], 'answered without waiting for the future-rv timeout (40 s)');
});

t.test('a snapshot ahead of a stuck poller ends with ERROR 504, not silence until the deadline', async (t) => {
  const { store, hub } = await setup(t, { futureRvWaitMs: 1000, poll: { intervalMs: 20, maxBackoffMs: 200 } });
  await add(store, 'n', 'a', '1');
  await delay(100);
  t.equal(hub.rv, B + 1);
  // The poller's reads fail from now on: it stays at B + 1 while storage moves on.
  const changesAfter = store.changesAfter.bind(store);
  store.changesAfter = async () => {
    throw new Error('poll query failing');
  };
  t.teardown(() => {
    store.changesAfter = changesAfter;
  });
  // Written by another process (no commit of this one hands the change over).
  const synchro = await Store.open(store.conn.display);
  t.teardown(() => synchro.close());
  const other = await synchro.applyBatch('c1', [podEvent('ADDED', 'n', 'b', '2')]);
  t.equal(other.watermark, B + 2);
  // A deadline far beyond the bounded wait for the end: an end within it is the future-rv wait's.
  const r = new Reader(hub.watch(podWatch({ timeoutSeconds: 600 })));
  await r.end(30_000);
  t.same(r.types, ['ADDED', 'ADDED', 'ERROR'], 'the snapshot, then the error, not silence until the deadline');
  t.match(r.events[2], { object: { code: 504, details: { causes: [{ reason: 'ResourceVersionTooLarge' }] } } });
});

t.test('after a storage outage, a watch from a fresh rv is served at once (the poller does not sleep through the wait)', async (t) => {
  // The hub's defaults: a future rv waits 3 s. The outage lasts long enough for the poller's
  // back-off to grow past that wait (seven failed polls: 50 ms doubling to 3.2 s before).
  const { store, url, close } = await openTestStore('sqlite');
  const hub = await startHub(store);
  const synchro = await Store.open(url); // writes of another process: no commit hint here
  t.teardown(async () => {
    await hub.stop();
    await synchro.close();
    await close();
  });
  await add(store, 'n', 'a', '1');
  await delay(100);
  t.equal(hub.rv, B + 1);
  const changesAfter = store.changesAfter.bind(store);
  let down = true;
  let failures = 0;
  store.changesAfter = async (rv, limit) => {
    if (!down) return changesAfter(rv, limit);
    failures++;
    throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
  };
  t.teardown(() => {
    store.changesAfter = changesAfter;
  });
  const outage = Date.now();
  while (failures < 7 && Date.now() - outage < 15_000) await delay(20);
  t.equal(failures, 7, `seven failed polls in ${Date.now() - outage} ms`);
  down = false; // storage is back; synchro commits, a client lists (at the watermark) and watches from there
  const { watermark } = await synchro.applyBatch('c1', [podEvent('ADDED', 'n', 'b', '2')]);
  t.ok(watermark > hub.rv, 'an rv this process has not seen yet');
  const started = Date.now();
  const r = new Reader(hub.watch(podWatch({ resourceVersion: watermark })));
  await synchro.applyBatch('c1', [podEvent('ADDED', 'n', 'c', '3')]);
  await r.count(1, 5000);
  const ms = Date.now() - started;
  t.match(r.events, [{ type: 'ADDED', object: { metadata: { name: 'c' } } }], `the next change (${ms} ms after the request), not ERROR 504 after the future-rv wait`);
  r.w.close();
});

t.test('bookmarks: periodic, and one before the deadline; timeoutSeconds ends the stream cleanly', async (t) => {
  const { store, hub } = await setup(t, { bookmarkIntervalMs: 150 });
  await add(store, 'n', 'a', '1');
  await delay(50);
  const started = Date.now();
  const periodic = new Reader(hub.watch(podWatch({ resourceVersion: B, allowWatchBookmarks: true })));
  const none = new Reader(hub.watch(podWatch({ resourceVersion: B, timeoutSeconds: 1 })));
  await periodic.count(2, 2000);
  t.same(periodic.events[0], { type: 'ADDED', object: periodic.events[0].object });
  t.same(periodic.events[1], { type: 'BOOKMARK', object: { kind: 'Pod', apiVersion: 'v1', metadata: { resourceVersion: String(B + 1) } } });
  await add(store, 'n', 'b', '1');
  await periodic.until((r) => r.events.some((e) => e.type === 'BOOKMARK' && rvOf(e) === B + 2), 2000, 'a bookmark after the next change');
  periodic.w.close();
  await none.end(3000);
  t.ok(Date.now() - started >= 950, 'ended at its timeout');
  t.notOk(none.types.includes('BOOKMARK'), 'no bookmarks unless asked for');
  t.equal(none.w.closeReason, 'timeout');
});

t.test('with timeoutSeconds=3: exactly one bookmark, about 2 s before the deadline', async (t) => {
  const { store, hub } = await setup(t);
  await add(store, 'n', 'a', '1');
  await delay(50);
  const start = Date.now();
  const r = new Reader(hub.watch(podWatch({ resourceVersion: B + 1, allowWatchBookmarks: true, timeoutSeconds: 3 })));
  await r.count(1, 10_000);
  const at = Date.now() - start;
  t.ok(at >= 900, `bookmark after ${at} ms, not before the deadline's last 2 s`);
  await r.end(10_000);
  const end = Date.now() - start;
  t.ok(end >= 2900, `ended at its timeout (${end} ms)`);
  // Both are timers: a busy machine makes both late, so what is checked is the gap between them.
  t.ok(end - at >= 1000, `the bookmark came well before the end (${end - at} ms): about 2 s before the deadline`);
  t.same(r.types, ['BOOKMARK']);
});

t.test('watch-list: ADDED for every object, then the initial-events-end bookmark at once on an idle resource', async (t) => {
  // Periodic bookmarks far beyond the bounded wait, and no write meanwhile: the end bookmark is the watch-list's own.
  const { store, hub } = await setup(t, { bookmarkIntervalMs: 600_000 }, async (s) => {
    await add(s, 'n', 'a', '1');
    await add(s, 'n', 'b', '1');
  });
  const r = new Reader(hub.watch(podWatch({ sendInitialEvents: true, allowWatchBookmarks: true, resourceVersion: 0 })));
  await r.count(3, 30_000);
  t.same(r.types, ['ADDED', 'ADDED', 'BOOKMARK'], 'without waiting for a write');
  t.same(r.events[2].object, { kind: 'Pod', apiVersion: 'v1', metadata: { resourceVersion: String(B + 2), annotations: { 'k8s.io/initial-events-end': 'true' } } });
  await mod(store, 'n', 'a', '2');
  await r.count(4);
  t.same([r.events[3].type, rvOf(r.events[3])], ['MODIFIED', B + 3]);
  r.w.close();

  const empty = new Reader(hub.watch(podWatch({ sendInitialEvents: true, allowWatchBookmarks: true }, { namespaces: ['none'] })));
  await empty.count(1, 1000);
  t.same(empty.types, ['BOOKMARK'], 'also when nothing matches');
  empty.w.close();

  const noInitial = new Reader(hub.watch(podWatch({ sendInitialEvents: false, allowWatchBookmarks: true })));
  await delay(100);
  await mod(store, 'n', 'b', '2');
  await noInitial.count(1);
  t.same(noInitial.events.map((e) => [e.type, rvOf(e)]), [['MODIFIED', B + 4]], 'sendInitialEvents=false: from the newest rv, no initial events');
  noInitial.w.close();
});

t.test('a slow watcher is closed with bounded memory; it resumes from its last rv and misses nothing', async (t) => {
  const { store, hub } = await setup(t, { maxQueueBytes: 32 * 1024, maxQueueEvents: 1000 });
  const slow = hub.watch(podWatch({ resourceVersion: 0 }));
  slow.pause();
  const fast = new Reader(hub.watch(podWatch({ resourceVersion: 0 })));
  await delay(50);
  let maxQueued = 0;
  const big = 'x'.repeat(1000);
  for (let i = 0; i < 60; i++) {
    await store.applyBatch('c1', [podEvent('ADDED', 'n', `p${i}`, '1', { labels: { pad: big.slice(0, 60), i: String(i) } }), podEvent('ADDED', 'm', `p${i}`, '1')]);
    maxQueued = Math.max(maxQueued, slow.queuedBytes);
    await delay(5);
  }
  await fast.count(120);
  await delay(100);
  t.equal(slow.closeReason, 'slow', 'closed as slow');
  t.ok(maxQueued <= 32 * 1024 + 4096, `its queue stayed bounded (${maxQueued} bytes)`);
  t.equal(slow.queuedBytes, 0, 'and was dropped at close');
  t.ok(slow.readableLength <= 16 * 1024 + 4096, 'the stream buffer is bounded too');
  t.equal((await hub['metrics'].watchersClosedSlow.get()).values[0].value, 1);
  t.equal(hub.stats().watchers, 1);
  // The client reads what it got, sees a clean end, and re-watches from its last rv.
  const got = new Reader(slow);
  slow.resume();
  await got.end();
  // (Paused from the start, it took nothing: its queue was dropped whole.)
  const last = got.events.length > 0 ? rvOf(got.events[got.events.length - 1]) : B;
  t.ok(last < B + 120, `received up to ${last}`);
  const again = new Reader(hub.watch(podWatch({ resourceVersion: last })));
  await again.reach(B + 120);
  t.same([...got.events, ...again.events].map(rvOf), fast.events.map(rvOf), 'nothing lost, nothing twice');
  again.w.close();
  fast.w.close();
});

t.test('replay → live under concurrent writes: nothing lost or repeated at the switch', async (t) => {
  const { store, hub } = await setup(t, { prefill: 0, window: { maxEvents: 15 }, replayPageSize: 7, poll: { intervalMs: 5, minIntervalMs: 1 } });
  for (let i = 0; i < 40; i++) await add(store, 'n', `seed${i}`, '1');
  await delay(50);
  const total = 400;
  let written = 40;
  const writer = (async () => {
    for (let i = 0; written < 40 + total && i < 10_000; i++) {
      const n = 1 + (i % 3);
      const events = Array.from({ length: n }, (_, k) => podEvent('ADDED', `ns${k}`, `w${i}-${k}`, '1'));
      await store.applyBatch('c2', events);
      written += n;
      if (i % 4 === 0) await delay(1);
    }
  })();
  const readers: Array<{ from: number; r: Reader }> = [];
  for (let i = 0; i < 24; i++) {
    await delay(8);
    const from = B + Math.max(0, written - 5 - ((i * 7) % 60));
    readers.push({ from, r: new Reader(hub.watch(podWatch({ resourceVersion: from }))) });
  }
  await writer;
  const final = await store.watermark();
  for (const { from, r } of readers) {
    await r.reach(final, 10_000);
    const rvs = r.events.map(rvOf);
    const want = Array.from({ length: final - from }, (_, k) => from + 1 + k);
    t.same(rvs, want, `watch from ${from}: every rv once, in order`);
    r.w.close();
  }
  t.ok(((await hub['metrics'].storageReplays.get()).values[0]?.value ?? 0) > 0, 'some watches replayed from the log');
});

t.test('the index: a change visits only the watchers of its resource, cluster and namespace', async (t) => {
  const { store, hub } = await setup(t);
  const ws = [
    new Reader(hub.watch(podWatch({ resourceVersion: 0 }, { namespaces: ['a'] }))),
    new Reader(hub.watch(podWatch({ resourceVersion: 0 }, { namespaces: ['b'] }))),
    new Reader(hub.watch(podWatch({ resourceVersion: 0 }, { clusters: ['c9'] }))),
    new Reader(hub.watch(podWatch({ resourceVersion: 0 }, { fieldSelector: [{ field: 'metadata.namespace', operator: '=', value: 'b' }] }))),
    new Reader(hub.watch({ ...podWatch({ resourceVersion: 0 }), query: { group: 'apps', resource: 'deployments' } })),
    new Reader(hub.watch(podWatch({ resourceVersion: 0 }))),
  ];
  await delay(100);
  const before = hub.stats().dispatchVisits;
  await add(store, 'a', 'p', '1');
  await ws[0].count(1);
  await ws[5].count(1);
  t.equal(hub.stats().dispatchVisits - before, 2, 'namespace a and everything; not b, not cluster c9, not deployments');
  t.same(ws.map((r) => r.events.length), [1, 0, 0, 0, 0, 1]);
  for (const r of ws) r.w.close();
  t.equal(hub.stats().watchers, 0);
});

t.test('events are encoded once: watchers of one format share the same Buffer', async (t) => {
  const { store, hub } = await setup(t);
  const a = new Reader(hub.watch(podWatch({ resourceVersion: 0 })), { keepChunks: true });
  const b = new Reader(hub.watch(podWatch({ resourceVersion: 0 }, { namespaces: ['n'] })), { keepChunks: true });
  await delay(50);
  await add(store, 'n', 'p', '1');
  await a.count(1);
  await b.count(1);
  t.equal(a.chunks[0], b.chunks[0], 'the same Buffer object');
  const obj = (await store.changesAfter(0, 1))[0].object;
  t.equal(a.chunks[0].toString(), `{"type":"ADDED","object":${obj}}\n`, 'the stored JSON spliced in, one line');
  const upper: Encoder = { id: 'upper', encode: (e) => Buffer.from(`${e.type}:${e.object().metadata?.name}\n`) };
  const first: Encoder = { id: 'first', encode: (e) => Buffer.from(`FIRST ${e.type}:${e.object().metadata?.name}\n`) };
  const c = hub.watch({ ...podWatch({ resourceVersion: 0 }), encoder: upper, firstEncoder: first });
  const lines: string[] = [];
  c.on('data', (d: Buffer) => lines.push(d.toString()));
  await delay(50);
  await add(store, 'n', 'q', '1');
  await a.count(2);
  await delay(50);
  t.same(lines, ['FIRST ADDED:p\n', 'ADDED:q\n'], 'the first event in its own format (e.g. a Table with column definitions), then the shared one');
  c.close();
  a.w.close();
  b.w.close();
});

t.test('one poll query stream whatever the number of watchers', async (t) => {
  const { store, hub } = await setup(t, { poll: { intervalMs: 50 } });
  const select = { n: 0 };
  store.conn.knex.on('query', () => select.n++);
  await add(store, 'n', 'seed', '1');
  const measure = async () => {
    await delay(60);
    const q0 = hub.stats().pollQueries;
    const n0 = select.n;
    for (let i = 0; i < 10; i++) {
      await store.applyBatch('c1', [podEvent('MODIFIED', 'n', 'seed', String(1000 + select.n + i))]);
      await delay(40);
    }
    await delay(60);
    return { polls: hub.stats().pollQueries - q0, queries: select.n - n0 };
  };
  const w1 = new Reader(hub.watch(podWatch({ resourceVersion: hub.rv })));
  const one = await measure();
  const n0 = select.n;
  const many: Reader[] = [];
  for (let i = 0; i < 1000; i++) many.push(new Reader(hub.watch(podWatch({ resourceVersion: hub.rv }, { namespaces: [`ns${i % 50}`, 'n'] }))));
  await delay(30);
  const startQueries = select.n - n0;
  const thousand = await measure();
  t.comment(`1 watcher: ${JSON.stringify(one)}; 1,000 watchers: ${JSON.stringify(thousand)}; starting 1,000 watchers from a recent rv: ${startQueries} queries`);
  t.ok(startQueries <= 3, 'starting watchers at a recent rv queries nothing (the window serves them)');
  t.ok(Math.abs(thousand.polls - one.polls) <= Math.max(3, one.polls * 0.3), 'as many polls with 1,000 watchers as with 1');
  t.ok(Math.abs(thousand.queries - one.queries) <= Math.max(6, one.queries * 0.3), 'as many queries in all');
  await many[999].reach(await store.watermark());
  w1.w.close();
  for (const r of many) r.w.close();
});

t.test('a client that goes away is unregistered', async (t) => {
  const { hub } = await setup(t);
  const w = hub.watch(podWatch({ resourceVersion: 0 }));
  await delay(50);
  t.equal(hub.stats().live, 1);
  t.equal((await hub['metrics'].watchers.get()).values[0].value, 1, 'watchers-open gauge');
  w.destroy();
  await delay(10);
  t.equal(hub.stats().watchers, 0);
  t.equal(w.closeReason, 'client');
  t.equal((await hub['metrics'].watchers.get()).values[0].value, 0);
  const d = hub.watch(podWatch({ resourceVersion: 0 }));
  t.ok(d.deadline - Date.now() >= 1799_000 && d.deadline - Date.now() <= 3600_000, 'without timeoutSeconds: a bounded default (1800 s × [1, 2))');
  d.close();
});

t.test('stop ends every watch cleanly', async (t) => {
  const { store, close } = await openTestStore('sqlite');
  t.teardown(close);
  const hub = await startHub(store);
  const r = new Reader(hub.watch(podWatch({ resourceVersion: 0 })));
  await hub.stop();
  await r.end();
  t.equal(r.w.closeReason, 'shutdown');
  t.throws(() => hub.watch(podWatch({})), { code: 503 });
});

t.test("a commit of this process reaches its watchers with the changes it committed, without a poll query", async (t) => {
  const { store, hub } = await setup(t, { poll: { intervalMs: 60_000 } });
  await add(store, 'n', 'a', '1');
  await delay(100);
  const r = new Reader(hub.watch(podWatch({ resourceVersion: hub.rv })));
  const other = new Reader(hub.watch({ ...podWatch({ resourceVersion: hub.rv }), query: { group: '', resource: 'pods', namespaces: ['elsewhere'] } }));
  let flushes = 0;
  let otherFlushes = 0;
  r.w.on('flush', () => flushes++);
  other.w.on('flush', () => otherFlushes++);
  await delay(50);
  const polls = hub.stats().pollQueries;
  const notified = hub.stats().notifiedChanges;
  await store.applyBatch('c1', [podEvent('ADDED', 'n', 'b', '2'), podEvent('ADDED', 'n', 'c', '3')]);
  await r.count(2, 2000);
  t.same(r.types, ['ADDED', 'ADDED']);
  t.equal(hub.stats().pollQueries, polls, 'no query');
  t.equal(hub.stats().notifiedChanges - notified, 2, 'both handed over by the commit');
  t.equal(flushes, 1, 'one flush for the two events of one dispatch');
  t.equal(otherFlushes, 0, 'none for a watcher sent nothing');
  r.w.close();
  other.w.close();
});
