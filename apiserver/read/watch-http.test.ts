// Watch over HTTP, one test per Watch rule (apiserver/watch/README.md, "Semantics"; and the watch side of Output
// formats), against a SQLite store written in process: the writes wake the hub's poller.
import t from 'tap';
import { get } from '../../hack/sim/testutil.ts';
import { setLogLevel } from '../../lib/log.ts';
import { compactNow, openTestStore, podEvent, seedCluster } from '../../storage/testing.ts';
import type { Store } from '../../storage/store.ts';
import { createApiserver } from '../server.ts';
import { httpWatch, rvOf, type HttpWatch } from '../../hack/testing/watch-http.ts';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');

const P = '/apis/panoptes.io/v1alpha1/resources';
const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';
const apiResources = [{ group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, singularName: 'pod', shortNames: ['po'] }];

const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
let urv = 1000;
const add = (s: Store, c: string, ns: string, name: string, labels?: Record<string, string>) => s.applyBatch(c, [podEvent('ADDED', ns, name, String(++urv), { labels, uid: `${c}-${ns}-${name}` })]);
const mod = (s: Store, c: string, ns: string, name: string, labels?: Record<string, string>) => s.applyBatch(c, [podEvent('MODIFIED', ns, name, String(++urv), { labels, uid: `${c}-${ns}-${name}` })]);
const del = (s: Store, c: string, ns: string, name: string, labels?: Record<string, string>) => s.applyBatch(c, [podEvent('DELETED', ns, name, String(++urv), { labels, uid: `${c}-${ns}-${name}` })]);

t.test('watch over HTTP', async (t) => {
  const { store, close } = await openTestStore('sqlite');
  for (const c of ['a', 'b']) {
    await seedCluster(store, c, { phase: 'Ready', ready: true, apiResources });
  }
  for (let i = 0; i < 4; i++) await add(store, 'a', 'n1', `pa${i}`, { app: i % 2 ? 'web' : 'db' });
  for (let i = 0; i < 3; i++) await add(store, 'b', 'n2', `pb${i}`, { app: 'web' });
  const api = await createApiserver({
    store,
    catalogOptions: { refreshMs: 100 },
    // A small window, so that old rvs are read from the change log (and compacted ones get 410);
    // a small queue bound for the slow-watcher test.
    watch: { poll: { intervalMs: 50 }, window: { maxEvents: 20 }, prefill: 0, maxQueueBytes: 1024 * 1024, maxQueueEvents: 2000 },
  });
  const base = await api.listen('127.0.0.1', 0);
  const open: HttpWatch[] = [];
  const watch = async (path: string, headers: Record<string, string> = {}, opts: { paused?: boolean } = {}) => {
    const w = await httpWatch(base + path, headers, opts);
    open.push(w);
    return w;
  };
  t.teardown(async () => {
    for (const w of open) w.close();
    await api.close();
    await close();
  });

  t.test('watch=1 and watch=true: 200, application/json, chunked, one compact JSON event per line', async (t) => {
    const rv = await store.watermark();
    // kube decodes boolean query parameters as true unless 0 or false (any case).
    for (const flag of ['1', 'true', 'yes']) {
      const w = await watch(`${P}/api/v1/pods?watch=${flag}&resourceVersion=${rv}&timeoutSeconds=30`);
      t.equal(w.status, 200);
      t.equal(w.headers['content-type'], 'application/json');
      t.equal(w.headers['transfer-encoding'], 'chunked');
      t.equal(w.headers['content-length'], undefined);
      t.same(w.events, [], 'headers arrive before any event');
    }
    await add(store, 'a', 'n1', 'fresh', { app: 'web' });
    for (const w of open.slice(-3)) {
      await w.until((x) => x.events.length === 1, 5000, 'the ADDED');
      t.match(w.events[0], { type: 'ADDED', object: { kind: 'Pod', apiVersion: 'v1', metadata: { name: 'fresh', resourceVersion: String(rv + 1), annotations: { 'panoptes.io/cluster': 'a' } } } });
      const raw = w.raw();
      t.ok(raw.endsWith('\n') && raw.split('\n').length === 2, 'one line per event');
      t.notOk(/\n\s/.test(raw) || /": /.test(raw), 'never pretty-printed');
      w.close();
    }
  });

  t.test('from rv N: only changes after N, in rv order (from the change log and from the window)', async (t) => {
    const start = await store.watermark();
    for (let i = 0; i < 30; i++) await mod(store, 'a', 'n1', 'fresh', { app: 'web', i: String(i) });
    const end = await store.watermark();
    const old = await watch(`${P}/api/v1/pods?watch=1&resourceVersion=${start + 2}`); // older than the 20-change window
    const recent = await watch(`${P}/api/v1/pods?watch=1&resourceVersion=${end - 3}`);
    await old.until((w) => w.events.length >= end - start - 2, 5000, 'the replay');
    await recent.until((w) => w.events.length >= 3, 5000, 'the window');
    t.same(old.events.map(rvOf), Array.from({ length: end - start - 2 }, (_, i) => start + 3 + i), 'exactly rv > N, in order');
    t.same(recent.events.map(rvOf), [end - 2, end - 1, end]);
    t.ok(old.events.every((e) => e.type === 'MODIFIED'));
    await del(store, 'a', 'n1', 'fresh', { app: 'web' });
    await old.until((w) => w.events.length === end - start - 1, 5000, 'live after the replay');
    t.match(old.events.at(-1), { type: 'DELETED', object: { metadata: { name: 'fresh', resourceVersion: String(end + 1) } } });
    old.close();
    recent.close();
  });

  t.test('resourceVersion unset or "0": synthetic ADDED for every matching object, then changes', async (t) => {
    for (const q of ['', '&resourceVersion=0']) {
      const w = await watch(`${P}/api/v1/pods?watch=1${q}`);
      await w.until((x) => x.events.length >= 7, 5000, 'the initial ADDED');
      t.same(w.events.map((e) => e.type), Array(7).fill('ADDED'));
      t.same(w.events.map((e) => e.object.metadata.name).sort(), ['pa0', 'pa1', 'pa2', 'pa3', 'pb0', 'pb1', 'pb2']);
      await delay(100);
      t.equal(w.events.length, 7, 'no BOOKMARK without watch-list');
    }
    await add(store, 'b', 'n2', 'pb9', { app: 'db' });
    for (const w of open.slice(-2)) {
      await w.until((x) => x.events.length === 8, 5000, 'the change');
      t.match(w.events[7], { type: 'ADDED', object: { metadata: { name: 'pb9' } } });
      w.close();
    }
    // In one cluster's view, its objects only; namespace and label selector.
    const one = await watch(`${P}/clusters/b/api/v1/namespaces/n2/pods?watch=1&labelSelector=app%3Dweb`);
    await one.until((x) => x.events.length >= 3, 5000, 'b web pods');
    await delay(100);
    t.same(one.events.map((e) => e.object.metadata.name).sort(), ['pb0', 'pb1', 'pb2']);
    one.close();
  });

  t.test('selector transitions: ADDED when it starts matching, DELETED (previous state, new rv) when it stops', async (t) => {
    const rv = await store.watermark();
    const w = await watch(`${P}/api/v1/pods?watch=1&resourceVersion=${rv}&labelSelector=app%3Dweb`);
    const f = await watch(`${P}/api/v1/pods?watch=1&resourceVersion=${rv}&fieldSelector=metadata.name%3Dpa0`);
    await mod(store, 'a', 'n1', 'pa0', { app: 'web' }); // db → web
    await mod(store, 'a', 'n1', 'pa0', { app: 'web', x: '1' });
    await mod(store, 'a', 'n1', 'pa0', { app: 'db' }); // web → db
    await mod(store, 'a', 'n1', 'pa2', { app: 'db', y: '1' }); // never matches
    await w.until((x) => x.events.length >= 3, 5000, 'transitions');
    await delay(150);
    t.same(w.events.map((e) => e.type), ['ADDED', 'MODIFIED', 'DELETED']);
    t.same(w.events.map(rvOf), [rv + 1, rv + 2, rv + 3]);
    t.same(w.events[2].object.metadata.labels, { app: 'web', x: '1' }, 'DELETED carries the previous state');
    await f.until((x) => x.events.length >= 3, 5000, 'field selector');
    t.same(f.events.map((e) => e.type), ['MODIFIED', 'MODIFIED', 'MODIFIED'], 'metadata.name never changes: kubectl get NAME -w');
    w.close();
    f.close();
  });

  t.test('a compacted rv: 200, then one ERROR 410 Expired, then the end', async (t) => {
    const before = await store.watermark();
    for (let i = 0; i < 25; i++) await mod(store, 'b', 'n2', 'pb0', { app: 'web', i: String(i) });
    await compactNow(store, { minAgeMs: 0, minCount: 5 });
    const w = await watch(`${P}/api/v1/pods?watch=1&resourceVersion=${before}`);
    t.equal(w.status, 200);
    t.ok(await w.done, 'the stream ends cleanly');
    t.equal(w.events.length, 1);
    t.match(w.events[0], { type: 'ERROR', object: { kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 410, reason: 'Expired', message: /too old resource version/ } });
  });

  t.test('allowWatchBookmarks with timeoutSeconds=4: one BOOKMARK (kind, apiVersion, rv only) before the end', async (t) => {
    const rv = await store.watermark();
    const started = Date.now();
    const w = await watch(`${P}/api/v1/pods?watch=1&resourceVersion=${rv}&allowWatchBookmarks=true&timeoutSeconds=4`);
    t.ok(await w.done, 'clean end');
    const took = Date.now() - started;
    t.ok(took >= 3800, `ended at the deadline, not before (${took} ms)`);
    t.equal(w.events.length, 1);
    t.same(w.events[0], { type: 'BOOKMARK', object: { kind: 'Pod', apiVersion: 'v1', metadata: { resourceVersion: String(rv) } } });
  });

  t.test('timeoutSeconds closes the stream cleanly', async (t) => {
    const started = Date.now();
    const w = await watch(`${P}/api/v1/pods?watch=true&resourceVersion=0&timeoutSeconds=1`);
    t.ok(await w.done, 'a clean end (chunked terminator), not a reset');
    t.ok(Date.now() - started >= 900, 'at the timeout, not before');
    t.ok(w.events.length >= 7 && w.events.every((e) => e.type === 'ADDED'));
  });

  t.test('watch-list: ADDED for each object, then the initial-events-end BOOKMARK at once on an idle resource', async (t) => {
    const rv = await store.watermark();
    const w = await watch(`${P}/api/v1/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion=`);
    // Nothing is written meanwhile, and the bookmark is the initial-events-end one: sent without waiting for a change.
    await w.until((x) => x.events.some((e) => e.type === 'BOOKMARK'), 30_000, 'the initial-events-end bookmark');
    const bm = w.events.at(-1)!;
    t.same(bm, { type: 'BOOKMARK', object: { kind: 'Pod', apiVersion: 'v1', metadata: { resourceVersion: String(rv), annotations: { 'k8s.io/initial-events-end': 'true' } } } });
    t.ok(w.events.slice(0, -1).every((e) => e.type === 'ADDED'));
    t.equal(w.events.length - 1, 8);
    await add(store, 'a', 'n1', 'after-list');
    await w.until((x) => x.events.length === 10, 5000, 'live');
    t.match(w.events[9], { type: 'ADDED', object: { metadata: { name: 'after-list', resourceVersion: String(rv + 1) } } });
    w.close();
    // The metadata client's watch-list: the bookmark keeps its annotation as PartialObjectMetadata.
    const pm = await watch(`${P}/api/v1/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true`, {
      Accept: 'application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json',
    });
    await pm.until((x) => x.events.some((e) => e.type === 'BOOKMARK'), 2000, 'partial bookmark');
    t.match(pm.events.at(-1), { type: 'BOOKMARK', object: { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: { annotations: { 'k8s.io/initial-events-end': 'true' } } } });
    pm.close();
  });

  t.test('watch parameter errors are answered before the 200', async (t) => {
    const cases: Array<[string, number, string]> = [
      ['sendInitialEvents=true&allowWatchBookmarks=true', 422, 'Invalid'],
      ['sendInitialEvents=true&resourceVersionMatch=NotOlderThan', 422, 'Invalid'],
      ['resourceVersionMatch=NotOlderThan&resourceVersion=1', 422, 'Invalid'],
      ['resourceVersion=abc', 400, 'BadRequest'],
      ['timeoutSeconds=-1', 400, 'BadRequest'],
      ['labelSelector=a%20in', 400, 'BadRequest'],
      ['fieldSelector=spec.nope%3D1', 400, 'BadRequest'],
    ];
    for (const [q, code, reason] of cases) {
      const r = await get(`${base}${P}/api/v1/pods?watch=1&${q}`);
      t.equal(r.status, code, q);
      t.match(r.json, { kind: 'Status', code, reason }, q);
    }
    const r = await get(`${base}${P}/api/v1/pods?watch=1&sendInitialEvents=true`);
    t.match(r.json.message, /sendInitialEvents requires setting resourceVersionMatch to NotOlderThan/);
    const c = await get(`${base}/apis/panoptes.io/v1alpha1/clusters?watch=1&timeoutSeconds=1&sendInitialEvents=true`);
    t.match(c.json, { kind: 'Status', code: 422, reason: 'Invalid' }, 'the Cluster resource is watched by the same engine, with the same checks');
  });

  t.test('protobuf first, JSON as fallback: JSON', async (t) => {
    const w = await watch(`${P}/api/v1/pods?watch=1&timeoutSeconds=1`, { Accept: 'application/vnd.kubernetes.protobuf, application/json' });
    t.equal(w.status, 200);
    t.equal(w.headers['content-type'], 'application/json');
    await w.done;
    t.ok(w.events.length > 0 && w.events.every((e) => e.object.kind === 'Pod'));
    const r = await get(`${base}${P}/api/v1/pods?watch=1`, { Accept: 'application/vnd.kubernetes.protobuf' });
    t.equal(r.status, 406);
  });

  t.test('Table: only the first event carries columnDefinitions; a Cluster column in the all-clusters view', async (t) => {
    const w = await watch(`${P}/api/v1/pods?watch=1&timeoutSeconds=30`, { Accept: TABLE });
    t.equal(w.status, 200);
    t.equal(w.headers['content-type'], 'application/json', 'as kube-apiserver: the stream serializer media type');
    await w.until((x) => x.events.length >= 9, 5000, 'initial rows');
    const first = w.events[0].object;
    t.match(first, { kind: 'Table', apiVersion: 'meta.k8s.io/v1', metadata: { resourceVersion: /^\d+$/ } });
    t.same(first.columnDefinitions.slice(0, 3).map((c: { name: string }) => c.name), ['Cluster', 'Name', 'Ready']);
    t.equal(first.rows.length, 1);
    t.equal(first.rows[0].cells.length, first.columnDefinitions.length);
    t.match(first.rows[0].object, { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1' }, 'includeObject defaults to Metadata');
    t.ok(w.events.slice(1).every((e) => e.object.kind === 'Table' && e.object.columnDefinitions === null && e.object.rows.length === 1), 'later events: columnDefinitions null');
    await mod(store, 'a', 'n1', 'pa1', { app: 'web', t: '1' });
    await w.until((x) => x.events.some((e) => e.type === 'MODIFIED'), 5000, 'a MODIFIED row');
    const m = w.events.find((e) => e.type === 'MODIFIED')!.object;
    t.equal(m.columnDefinitions, null);
    t.same(m.rows[0].cells.slice(0, 2), ['a', 'pa1'], 'cluster, then name');
    t.equal(m.metadata.resourceVersion, String(await store.watermark()));
    w.close();
    const one = await watch(`${P}/clusters/a/api/v1/pods?watch=1&includeObject=Object`, { Accept: TABLE });
    await one.until((x) => x.events.length >= 1, 5000, 'a row');
    t.equal(one.events[0].object.columnDefinitions[0].name, 'Name', 'no Cluster column in a one-cluster view');
    t.match(one.events[0].object.rows[0].object, { kind: 'Pod' });
    one.close();
    const v1beta1 = await watch(`${P}/api/v1/pods?watch=1`, { Accept: 'application/json;as=Table;v=v1beta1;g=meta.k8s.io' });
    await v1beta1.until((x) => x.events.length >= 1, 5000, 'a v1beta1 row');
    t.equal(v1beta1.events[0].object.apiVersion, 'meta.k8s.io/v1beta1');
    v1beta1.close();
  });

  t.test('PartialObjectMetadata watch: metadata only', async (t) => {
    const w = await watch(`${P}/api/v1/namespaces/n2/pods?watch=1&timeoutSeconds=30`, { Accept: 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1' });
    t.equal(w.headers['content-type'], 'application/json');
    await w.until((x) => x.events.length >= 4, 5000, 'n2 pods');
    for (const e of w.events) {
      t.same(Object.keys(e.object).sort(), ['apiVersion', 'kind', 'metadata']);
      t.match(e.object, { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: { namespace: 'n2', labels: {} } });
    }
    w.close();
  });

  t.test('legacy /watch/ paths and a single object', async (t) => {
    const w = await watch(`${P}/api/v1/watch/namespaces/n1/pods/pa3?timeoutSeconds=1`);
    await w.done;
    t.same(w.events.map((e) => `${e.type} ${e.object.metadata.name}`), ['ADDED pa3']);
  });

  t.test('a watcher that cannot keep up is closed; the server stays bounded', async (t) => {
    const metric = async (name: string) => {
      const text = (await get(`${base}/metrics`)).text;
      const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text);
      return m ? Number(m[1]) : NaN;
    };
    const closedBefore = await metric('panoptes_watch_watchers_closed_slow_total');
    const rv = await store.watermark();
    const slow = await watch(`${P}/api/v1/pods?watch=1&resourceVersion=${rv}`, {}, { paused: true });
    const fast = await watch(`${P}/api/v1/pods?watch=1&resourceVersion=${rv}`);
    const pad = 'x'.repeat(60);
    // ~16 MB of events: more than the socket buffers and the 1 MiB queue bound, in batches well below it.
    const labels: Record<string, string> = {};
    for (let k = 0; k < 200; k++) labels[`pad${k}`] = pad;
    const n = 1200;
    for (let i = 0; i < n; i += 20) {
      const batch = Array.from({ length: 20 }, (_, k) => podEvent('ADDED', 'bulk', `slow-${i + k}`, String(++urv), { labels, uid: `bulk-${i + k}` }));
      await store.applyBatch('a', batch);
      // Paced by the fast watcher: it has at most one batch (~260 KB) queued, the paused one all of them.
      await fast.until((x) => x.events.length >= i + 20, 60_000, 'the fast watcher keeps up');
    }
    await fast.until((x) => x.events.length >= n, 20_000, 'the fast watcher gets everything');
    await delay(200);
    t.equal(await metric('panoptes_watch_watchers_closed_slow_total'), closedBefore + 1, 'closed as slow');
    slow.resume();
    t.ok(await Promise.race([slow.done, delay(10_000).then(() => 'timeout')]), 'the slow client sees the end of its stream');
    t.ok(slow.events.length < n, `it got a prefix (${slow.events.length} of ${n}) and re-watches from its last rv`);
    const rvs = slow.events.map(rvOf);
    t.same(rvs, rvs.map((_, i) => rv + 1 + i), 'a gap-free prefix');
    fast.close();
  });

  t.test('metrics on /metrics', async (t) => {
    const w = await watch(`${P}/api/v1/pods?watch=1&resourceVersion=${await store.watermark()}`);
    await delay(50);
    const text = (await get(`${base}/metrics`)).text;
    for (const name of ['panoptes_watch_watchers', 'panoptes_watch_events_sent_total', 'panoptes_watch_watchers_closed_slow_total', 'panoptes_watch_poller_lag', 'panoptes_watch_poll_queries_total']) {
      t.match(text, new RegExp(`^${name} \\d+`, 'm'), name);
    }
    t.ok(Number(/^panoptes_watch_watchers (\d+)/m.exec(text)![1]) >= 1, 'open watchers counted');
    // Long-running, as kube-apiserver counts them: the open watch is not in flight; the scrape is.
    t.match(text, /^panoptes_apiserver_current_inflight_requests\{request_kind="readOnly"\} 1$/m, 'the open watch is not in flight');
    t.match(text, /panoptes_apiserver_requests_total\{verb="watch",group="",resource="pods",code="200"\}/);
    w.close();
  });
});
