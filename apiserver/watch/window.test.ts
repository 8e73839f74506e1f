import t from 'tap';
import type { Change } from '../../storage/types.ts';
import { ChangeEvent, type Encoder } from './encode.ts';
import { getHeapStatistics } from 'node:v8';
import { defaultWindowBytes, Window } from './window.ts';
import { parseWatchOptions } from './params.ts';
import { stillReachable } from '../../hack/testing/gc.ts';

const item = (rv: number, size = 10) => ({ rv, size });

t.test('window: covers (startRv, endRv], bounded by count and bytes', async (t) => {
  const w = new Window<{ rv: number; size: number }>(10, { maxEvents: 3, maxBytes: 1000 });
  t.same(w.since(10), [], 'an empty window covers its own rv');
  t.equal(w.since(9), undefined, 'older: not covered');
  t.equal(w.since(11), undefined, 'newer: not covered (the future)');
  for (let rv = 11; rv <= 15; rv++) w.push(item(rv));
  t.equal(w.length, 3);
  t.equal(w.startRv, 12);
  t.same(w.since(12)!.map((i) => i.rv), [13, 14, 15]);
  t.same(w.since(13, 1)!.map((i) => i.rv), [14]);
  t.same(w.since(15), []);
  t.equal(w.since(11), undefined);
  t.throws(() => w.push(item(17)), /does not follow/);
  w.push(item(16, 985));
  t.equal(w.length, 2, 'evicted by bytes');
  t.equal(w.bytes, 995);
  w.push(item(17, 5000));
  t.equal(w.length, 1, 'the newest is kept however large');
  t.equal(w.startRv, 16);
  for (let rv = 18; rv < 5000; rv++) w.push(item(rv, 1));
  t.same(w.since(4996)!.map((i) => i.rv), [4997, 4998, 4999], 'stays correct across compaction of its array');
});

t.test('window: an evicted change is let go at once, not when its array is next compacted', async (t) => {
  const w = new Window<{ rv: number; size: number }>(0, { maxEvents: 10, maxBytes: 1e9 });
  // Fewer than the window evicts before it compacts its array.
  const pushed = (rv: number): WeakRef<object> => {
    const it = item(rv);
    w.push(it);
    return new WeakRef(it);
  };
  const refs = Array.from({ length: 500 }, (_, i) => pushed(i + 1));
  t.equal(await stillReachable(refs), 10, 'only the 10 the window holds');
  t.same(w.since(495)!.map((i) => i.rv), [496, 497, 498, 499, 500]);
});

t.test('window: by default, its byte bound is 1/64 of the heap limit, from 4 to 16 MiB', async (t) => {
  const MiB = 1024 * 1024;
  t.equal(defaultWindowBytes(4096 * MiB), 16 * MiB, 'from a 4 GiB heap up (an unconstrained host): 16 MiB');
  t.equal(defaultWindowBytes(16384 * MiB), 16 * MiB);
  t.equal(defaultWindowBytes(512 * MiB), 8 * MiB, 'a 512 MiB heap (a 2 GiB memory limit): 8 MiB');
  t.equal(defaultWindowBytes(272 * MiB), Math.floor((272 * MiB) / 64), 'the heap of a 1 GiB limit: about 4 MiB');
  t.equal(defaultWindowBytes(64 * MiB), 4 * MiB, 'never below 4 MiB');
  t.equal(defaultWindowBytes(), defaultWindowBytes(getHeapStatistics().heap_size_limit), "this process's heap limit");
  t.equal(new Window(0).maxBytes, defaultWindowBytes(), 'a window without a byte bound gets the default');
  t.equal(new Window(0, { maxBytes: 1234 }).maxBytes, 1234);
});

t.test('window: the byte bound counts every encoding its events cache', async (t) => {
  const object = JSON.stringify({ metadata: { name: 'p', resourceVersion: '1' }, data: 'x'.repeat(1000) });
  const change = (rv: number): Change => ({ rv, type: 'MODIFIED', cluster: 'c', group: '', version: 'v1', resource: 'pods', namespace: 'n', name: 'p', uid: 'u', object, prevObject: object, ts: 0, epoch: null });
  const encoder = (id: string): Encoder => ({ id, encode: (e) => Buffer.from(`${id}:${e.objectJson}`) });
  const w = new Window<ChangeEvent>(0, { maxEvents: 1000, maxBytes: 40_000 });
  const events: ChangeEvent[] = [];
  for (let rv = 1; rv <= 10; rv++) {
    const ev = new ChangeEvent(change(rv));
    w.push(ev);
    events.push(ev);
  }
  t.equal(w.length, 10, 'ten changes of ~2.5 KB fit in 40 KB');
  const held = () => events.filter((e) => e.rv > w.startRv).reduce((n, e) => n + e.size, 0);
  t.equal(w.bytes, held());
  // Five formats per event (JSON, Tables for different column sets, partial metadata...), and a DELETED of the previous state.
  for (const ev of events) {
    for (const id of ['json', 'table;a', 'table;b', 'table;c', 'partial']) ev.as('MODIFIED').bytes(encoder(id));
    ev.as('DELETED').bytes(encoder('json'));
  }
  t.ok(w.length < 10, `cached encodings evicted the oldest changes (${w.length} held)`);
  t.ok(w.bytes <= 40_000, `within the bound: ${w.bytes} bytes`);
  t.equal(w.bytes, held(), 'the bound counts what the held events cache');
  events[0].as('ADDED').bytes(encoder('late'));
  t.equal(w.bytes, held(), 'an evicted event growing later no longer counts');
});

t.test('watch parameters: validated as kube-apiserver does', async (t) => {
  const p = (q: string) => parseWatchOptions(new URLSearchParams(q));
  t.same(p('watch=1'), { allowWatchBookmarks: false });
  t.same(p('resourceVersion=12&allowWatchBookmarks=true&timeoutSeconds=30'), { resourceVersion: 12, allowWatchBookmarks: true, timeoutSeconds: 30 });
  t.same(p('resourceVersion=0'), { resourceVersion: 0, allowWatchBookmarks: false });
  t.same(p('sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=1'), { sendInitialEvents: true, allowWatchBookmarks: true });
  t.same(p('sendInitialEvents=false&resourceVersionMatch=NotOlderThan&resourceVersion=5'), { resourceVersion: 5, sendInitialEvents: false, allowWatchBookmarks: false });
  t.throws(() => p('resourceVersion=abc'), { code: 400, reason: 'BadRequest' });
  t.throws(() => p('timeoutSeconds=-1'), { code: 400 });
  t.equal(p('allowWatchBookmarks=maybe').allowWatchBookmarks, true, 'booleans: anything but 0/false is true');
  t.equal(p('allowWatchBookmarks=').allowWatchBookmarks, true);
  t.equal(p('allowWatchBookmarks=False').allowWatchBookmarks, false);
  t.throws(() => p('sendInitialEvents=true&allowWatchBookmarks=true'), { code: 422, reason: 'Invalid', message: /sendInitialEvents requires setting resourceVersionMatch to NotOlderThan/ });
  t.throws(() => p('sendInitialEvents=true&resourceVersionMatch=NotOlderThan'), { code: 422, message: /allowWatchBookmarks/ });
  t.throws(() => p('resourceVersionMatch=NotOlderThan&resourceVersion=1'), { code: 422, message: /forbidden for watch unless sendInitialEvents/ });
  t.throws(() => p('sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=Exact'), { code: 422 });
});
