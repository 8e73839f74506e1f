import t from 'tap';
import { get, http, openWatch, simCluster } from './testutil.ts';

const cmBody = (name: string, labels: Record<string, string> = {}) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, labels }, data: { k: 'v' } });

t.test('watch resumed inside the window gets exactly the missed events; outside it, one ERROR 410', async (t) => {
  const c = await simCluster(t, { historySize: 20 });
  const base = `${c.url}/api/v1/namespaces/default/configmaps`;
  await http('POST', base, cmBody('a'));
  const from = c.store.resourceVersion;
  // Missed while "disconnected": a create, an update, a delete, and writes to other resources.
  await http('POST', base, cmBody('b'));
  await http('PATCH', `${base}/a`, { data: { k: 'v2' } }, { 'Content-Type': 'application/merge-patch+json' });
  await http('POST', `${c.url}/api/v1/namespaces/default/secrets`, { metadata: { name: 's' } });
  await http('DELETE', `${base}/b`);
  const w = await openWatch(`${base}?watch=1&resourceVersion=${from}`);
  t.equal(w.status, 200);
  t.match(w.headers['content-type'], /^application\/json/);
  t.equal(w.headers['transfer-encoding'], 'chunked');
  const events = await w.waitFor(3);
  t.same(events.map((e) => [e.type, e.object.metadata.name]), [['ADDED', 'b'], ['MODIFIED', 'a'], ['DELETED', 'b']]);
  const rvs = events.map((e) => Number(e.object.metadata.resourceVersion));
  t.ok(rvs.every((rv, i) => rv > from && (i === 0 || rv > rvs[i - 1])), 'strictly increasing, after the start rv');
  t.equal(rvs[2], c.store.resourceVersion, 'DELETED carries the deletion rv');
  // Live events follow on the same stream.
  await http('POST', base, cmBody('c'));
  t.same((await w.waitFor(4)).slice(3).map((e) => [e.type, e.object.metadata.name]), [['ADDED', 'c']]);
  w.close();

  // Push `from` out of the window (20 events).
  for (let i = 0; i < 25; i++) await http('POST', base, cmBody(`z${i}`));
  const old = await openWatch(`${base}?watch=1&resourceVersion=${from}`);
  t.equal(old.status, 200);
  t.equal(await old.ended, true, 'the stream ends');
  t.equal(old.events.length, 1, 'exactly one event');
  const [e] = old.events;
  t.equal(e.type, 'ERROR');
  t.match(e.object, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Expired', code: 410 });
  t.equal(e.object.message, `too old resource version: ${from} (${c.store.compactedRv})`);
});

t.test('rv unset or 0: synthetic ADDED for current objects, then changes', async (t) => {
  const c = await simCluster(t);
  const base = `${c.url}/api/v1/namespaces/default/configmaps`;
  await http('POST', base, cmBody('b'));
  await http('POST', base, cmBody('a'));
  for (const rv of ['', '&resourceVersion=0']) {
    const w = await openWatch(`${base}?watch=true${rv}`);
    t.same((await w.waitFor(2)).map((e) => [e.type, e.object.metadata.name]), [['ADDED', 'a'], ['ADDED', 'b']]);
    w.close();
  }
});

t.test('selector transitions: starts matching -> ADDED, stops matching -> DELETED (previous state, new rv)', async (t) => {
  const c = await simCluster(t);
  const base = `${c.url}/api/v1/namespaces/default/configmaps`;
  await http('POST', base, cmBody('x', { color: 'red' }));
  const w = await openWatch(`${base}?watch=1&labelSelector=color%3Dblue&resourceVersion=${c.store.resourceVersion}`);
  const patch = (color: string) => http('PATCH', `${base}/x`, { metadata: { labels: { color } } }, { 'Content-Type': 'application/merge-patch+json' });
  await patch('blue');
  await patch('blue2');
  const after = c.store.resourceVersion;
  await patch('blue');
  await http('DELETE', `${base}/x`);
  const ev = await w.waitFor(3);
  t.same(ev.map((e) => [e.type, e.object.metadata.labels.color]), [['ADDED', 'blue'], ['DELETED', 'blue'], ['ADDED', 'blue']].slice(0, 3));
  t.equal(ev[1].object.metadata.resourceVersion, String(after), 'DELETED at the rv of the change');
  t.same((await w.waitFor(4)).slice(3).map((e) => e.type), ['DELETED']);
  w.close();
  // Field selectors too (kubectl get NAME -w).
  const f = await openWatch(`${base}?watch=1&fieldSelector=metadata.name%3Dy`);
  await http('POST', base, cmBody('other'));
  await http('POST', base, cmBody('y'));
  t.same((await f.waitFor(1)).map((e) => e.object.metadata.name), ['y']);
  f.close();
  const bad = await get(`${base}?watch=1&fieldSelector=spec.nope%3D1`);
  t.equal(bad.status, 400);
  t.equal(bad.json.kind, 'Status');
});

t.test('bookmarks and timeoutSeconds', async (t) => {
  const c = await simCluster(t);
  const start = Date.now();
  const w = await openWatch(`${c.url}/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=${c.store.resourceVersion}&allowWatchBookmarks=true&timeoutSeconds=3`);
  t.equal(await w.ended, true);
  const elapsed = Date.now() - start;
  t.ok(elapsed >= 2900, `closed at the timeout, not before (${elapsed} ms)`);
  t.equal(w.events.length, 1, 'one bookmark, 2 s before the deadline');
  t.same(w.events[0], { type: 'BOOKMARK', object: { kind: 'ConfigMap', apiVersion: 'v1', metadata: { resourceVersion: String(c.store.resourceVersion) } } });
});

t.test('periodic bookmarks and the watch-list initial-events-end bookmark', async (t) => {
  const c = await simCluster(t, { bookmarkIntervalMs: 200 });
  await http('POST', `${c.url}/api/v1/namespaces/default/configmaps`, cmBody('a'));
  const w = await openWatch(`${c.url}/api/v1/configmaps?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true`);
  const ev = await w.waitFor(3, 3000);
  t.same(ev.slice(0, 2).map((e) => e.type), ['ADDED', 'BOOKMARK']);
  t.same(ev[1].object.metadata.annotations, { 'k8s.io/initial-events-end': 'true' });
  t.equal(ev[2].type, 'BOOKMARK', 'then periodic bookmarks');
  w.close();
  const bad = await get(`${c.url}/api/v1/configmaps?watch=1&sendInitialEvents=true`);
  t.equal(bad.status, 422);
});

t.test('JSON even when protobuf is offered first; 406 when JSON is not acceptable', async (t) => {
  const c = await simCluster(t);
  const r = await get(`${c.url}/api/v1/namespaces`, { Accept: 'application/vnd.kubernetes.protobuf,application/json' });
  t.equal(r.status, 200);
  t.equal(r.json.kind, 'NamespaceList');
  const w = await openWatch(`${c.url}/api/v1/namespaces?watch=1`, { Accept: 'application/vnd.kubernetes.protobuf;stream=watch,application/json' });
  t.equal(w.status, 200);
  t.equal((await w.waitFor(4)).length, 4);
  w.close();
  const n = await get(`${c.url}/api/v1/namespaces`, { Accept: 'application/vnd.kubernetes.protobuf' });
  t.equal(n.status, 406);
  t.equal(n.json.reason, 'NotAcceptable');
});

t.test('watch from a future rv waits, then 504', async (t) => {
  const c = await simCluster(t, { tooLargeWaitMs: 300 });
  const r = await get(`${c.url}/api/v1/configmaps?watch=1&resourceVersion=${c.store.resourceVersion + 100}`);
  t.equal(r.status, 504);
  t.match(r.json, { reason: 'Timeout', details: { causes: [{ reason: 'ResourceVersionTooLarge' }] } });
  const l = await get(`${c.url}/api/v1/configmaps?resourceVersion=${c.store.resourceVersion + 100}`);
  t.equal(l.status, 504);
});
