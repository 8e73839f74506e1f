// Two `panoptes apiserver` processes, one reading the PostgreSQL primary and one a streaming
// hot standby of it (--storage-read), both started here (hack/postgres-standby.ts: CI runs no
// server we could stream from). Through the standby replica: the same watch sequence as
// through the primary one; a most-recent list right after a commit has it; with replay paused
// a most-recent list waits 3 s and is then served by the primary, resourceVersion=N (list,
// get, watch) and a continue token of a newer first page answer kube's 504 after 3 s, and
// resourceVersion=0 the standby's state at once; with replay paused, a watch without
// resourceVersion, a watch-list and a watch from now start from the primary's state as a
// most-recent list does (rv=0 from the standby's); the standby stopped and started; the primary
// down (a Warning); the standby promoted while the primary answers is not read, and /readyz
// says so by its position; the primary down then, the promoted database is read, with a Warning.
import t from 'tap';
import { startApiserverProcess, until as waitUntil, type ApiserverProcess } from '../hack/testing/apiserver-process.ts';
import { startStandbyPair } from '../hack/postgres-standby.ts';
import { get } from '../hack/sim/testutil.ts';
import { httpWatch, rvOf, type HttpWatch, type HttpWatchEvent } from '../hack/testing/watch-http.ts';
import { setLogLevel } from '../lib/log.ts';
import { Store } from '../storage/store.ts';
import { podEvent, seedCluster } from '../storage/testing.ts';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');

const P = '/apis/panoptes.io/v1alpha1/resources';
const PODS = `${P}/api/v1/pods`;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const apiResources = [{ group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, singularName: 'pod', shortNames: ['po'] }];

const startReplica = (args: string[]) => startApiserverProcess(args, `${PODS}?limit=1`, 'error');
const until = (what: string, fn: () => Promise<boolean>) => waitUntil(what, fn, 20_000, 50);

const key = (e: HttpWatchEvent) => `${e.type} ${rvOf(e)} ${e.object.metadata?.namespace}/${e.object.metadata?.name}`;
const names = (body: { items: Array<{ metadata: { name: string } }> }) => body.items.map((i) => i.metadata.name);
const timed = async <T>(f: () => Promise<T>): Promise<{ value: T; ms: number }> => {
  const start = Date.now();
  const value = await f();
  return { value, ms: Date.now() - start };
};
const metric = (text: string, name: string, role: string) => {
  const m = new RegExp(`^${name}\\{[^}]*role="${role}"[^}]*\\} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
};

t.test('an apiserver replica on a PostgreSQL standby', async (t) => {
  const pair = await startStandbyPair();
  const db = await pair.createDatabase('panoptes');
  const writer = await Store.open(db.primary);
  await seedCluster(writer, 'a', { phase: 'Ready', ready: true, apiResources });
  await writer.applyBatch('a', [podEvent('ADDED', 'ns', 'seed', '1')]);
  await pair.caughtUp();
  const watches: HttpWatch[] = [];
  const replicas: ApiserverProcess[] = [];
  let promotedWriter: Store | undefined;
  t.teardown(async () => {
    for (const w of watches) w.close();
    for (const r of replicas) await r.stop();
    await writer.close();
    await promotedWriter?.close();
    await pair.close();
  });
  const onPrimary = await startReplica(['--storage', db.primary]);
  // A generous lag bound: the paused standby below must stay the one read.
  const onStandby = await startReplica(['--storage', db.primary, '--storage-read', db.standby, '--storage-read-max-lag', '60s']);
  replicas.push(onPrimary, onStandby);
  const watch = async (base: string, from: number) => {
    const w = await httpWatch(`${base}${PODS}?watch=1&resourceVersion=${from}`);
    watches.push(w);
    return w;
  };
  let n = 0;
  const writePod = async (store = writer) => {
    const name = `p${++n}`;
    const r = await store.applyBatch('a', [podEvent('ADDED', 'ns', name, String(100 + n))]);
    return { name, rv: r.watermark };
  };

  await t.test('readyz and metrics name the database read', async (t) => {
    const ready = await get(`${onStandby.base}/readyz?verbose`);
    t.equal(ready.status, 200);
    t.match(ready.text, /\[\+\]storage ok: reads standby 1 of 1, \d+ resource versions and [\d.]+ s behind the primary/);
    t.notMatch(ready.text, /127\.0\.0\.1|postgres:/, 'without the database address (no credentials are needed for /readyz)');
    const m = (await get(`${onStandby.base}/metrics`)).text;
    t.equal(metric(m, 'panoptes_storage_read_selected', 'standby'), 1, 'reads go to the standby');
    t.match(m, new RegExp(`panoptes_storage_read_selected\\{database="127\\.0\\.0\\.1:${pair.standby.port}/panoptes",role="standby"\\} 1`), 'named host:port/database');
    t.notMatch(m, /postgres@|postgres:\/\//, 'without the user');
    t.equal(metric(m, 'panoptes_storage_read_selected', 'primary'), 0);
    t.type(metric(m, 'panoptes_storage_read_lag_seconds', 'standby'), 'number');
    t.type(metric(m, 'panoptes_storage_read_lag_resource_versions', 'standby'), 'number');
  });

  await t.test('the same watch sequence from the same rv through either replica', async (t) => {
    const from = await writer.watermark();
    const ws = [await watch(onPrimary.base, from), await watch(onStandby.base, from)];
    for (let i = 0; i < 40; i++) {
      const events = Array.from({ length: 1 + (i % 3) }, (_, k) => podEvent(i % 4 === 3 ? 'MODIFIED' : 'ADDED', 'ns', `w${Math.floor(i / 4)}-${k}`, String(1000 + i)));
      await writer.applyBatch('a', events);
      if (i % 10 === 0) await sleep(5);
    }
    const final = await writer.watermark();
    for (const w of ws) await w.until((x) => x.events.some((e) => rvOf(e) >= final), 15_000, `rv ${final}`);
    const want = Array.from({ length: final - from }, (_, k) => from + 1 + k);
    t.same(ws[0].events.map(rvOf), want, 'primary replica: every change once, in rv order');
    t.same(ws[1].events.map(key), ws[0].events.map(key), 'standby replica: the identical sequence');
    for (const w of ws) w.close();
  });

  await t.test('a most-recent list right after a commit has it', async (t) => {
    for (let i = 0; i < 15; i++) {
      const { name, rv } = await writePod();
      const r = await get(`${onStandby.base}${PODS}?fieldSelector=metadata.name%3D${name}`);
      t.equal(r.status, 200);
      t.same(names(r.json), [name], `list ${i} has the pod just written`);
      t.ok(Number(r.json.metadata.resourceVersion) >= rv, 'at an rv not older than the commit');
      const g = await get(`${onStandby.base}${P}/clusters/a/api/v1/namespaces/ns/pods/${name}`);
      t.equal(g.status, 200, `get ${i} finds it`);
    }
  });

  await t.test('replay paused: most recent waits, then the primary answers; rv=N is 504; rv=0 at once', async (t) => {
    const before = await writer.watermark();
    await pair.pauseReplay();
    const { name, rv } = await writePod();
    const w = await watch(onStandby.base, before);

    // A first page through the primary replica, at the rv the standby has not replayed.
    const page1 = await get(`${onPrimary.base}${PODS}?limit=1`);
    t.equal(page1.json.metadata.resourceVersion, String(rv));
    const future = await watch(onStandby.base, rv);
    // The order in which the reads below answer: rv=0, started while the others wait out their
    // 3 s, answers before any of them (it does not wait).
    const answered: string[] = [];
    const noted = <T>(what: string, p: Promise<T>) => p.finally(() => answered.push(what));
    const [recent, exact, getN, page2, any] = await Promise.all([
      noted('recent', timed(() => get(`${onStandby.base}${PODS}?fieldSelector=metadata.name%3D${name}`))),
      noted('exact', timed(() => get(`${onStandby.base}${PODS}?resourceVersion=${rv}&resourceVersionMatch=NotOlderThan`))),
      noted('getN', get(`${onStandby.base}${P}/clusters/a/api/v1/namespaces/ns/pods/seed?resourceVersion=${rv}`)),
      noted('page2', get(`${onStandby.base}${PODS}?limit=1&continue=${encodeURIComponent(page1.json.metadata.continue)}`)),
      noted('any', get(`${onStandby.base}${PODS}?resourceVersion=0&fieldSelector=metadata.name%3D${name}`)),
    ]);
    // Replay stays paused until further down: each of these answered because its wait ended, not
    // because the standby caught up (the 504s below name the standby's rv, `before`).
    t.equal(recent.value.status, 200);
    t.same(names(recent.value.json), [name], 'most recent: served with the change (by the primary)');
    t.ok(recent.ms >= 2900, `after the 3 s wait (${recent.ms} ms)`);

    t.equal(exact.value.status, 504);
    t.ok(exact.ms >= 2900, `after the 3 s wait (${exact.ms} ms)`);
    t.match(exact.value.json, {
      kind: 'Status',
      status: 'Failure',
      reason: 'Timeout',
      code: 504,
      message: `Too large resource version: ${rv}, current: ${before}`,
      details: { causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }], retryAfterSeconds: 1 },
    });
    t.equal(getN.status, 504, 'a get at rv=N too');
    t.equal(page2.status, 504, 'a later page is not read from a snapshot older than its first page');
    t.match(page2.json, { reason: 'Timeout', message: `Too large resource version: ${rv}, current: ${before}` });
    await future.until((x) => x.events.some((e) => e.type === 'ERROR'), 20_000, 'the watch from rv=N ends');
    t.match(future.events, [{ type: 'ERROR', object: { kind: 'Status', code: 504, reason: 'Timeout', details: { causes: [{ reason: 'ResourceVersionTooLarge' }] } } }], 'a watch from rv=N too');

    t.equal(any.status, 200);
    t.same(names(any.json), [], 'rv=0: the standby as it is, without the change');
    t.equal(answered[0], 'any', `at once: before the reads that wait (answered in the order ${answered.join(', ')})`);
    t.equal(w.events.length, 0, 'the watch has nothing the standby has not replayed');

    const metrics = (await get(`${onStandby.base}/metrics`)).text;
    t.ok(Number(/^panoptes_storage_read_primary_fallbacks (\S+)$/m.exec(metrics)?.[1]) >= 1, 'the fallback is counted');
    t.ok((metric(metrics, 'panoptes_storage_read_lag_resource_versions', 'standby') ?? 0) >= 1, 'the lag shows in rv');

    await pair.resumeReplay();
    await w.until((x) => x.events.some((e) => rvOf(e) === rv), 20_000, 'the change after replay resumed');
    t.same(w.events.map((e) => e.object.metadata.name), [name]);
  });

  await t.test('replay paused: every most-recent start has what the primary had, as a most-recent list does', async (t) => {
    await pair.caughtUp();
    await pair.pauseReplay();
    const { name, rv } = await writePod();
    const only = `fieldSelector=metadata.name%3D${name}`;
    const list = await get(`${onStandby.base}${PODS}?${only}`);
    t.same(names(list.json), [name], 'a most-recent list has it');
    const open = async (q: string) => {
      const w = await httpWatch(`${onStandby.base}${PODS}?watch=1&${q}`);
      watches.push(w);
      return w;
    };
    const watchList = `${only}&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan`;
    const [plain, initial, fromNow, any] = await Promise.all([
      open(only),
      open(watchList),
      open(`${only}&sendInitialEvents=false&resourceVersionMatch=NotOlderThan`),
      open(`${watchList}&resourceVersion=0`),
    ]);
    const endOfInitial = (w: HttpWatch) => w.events.find((e) => e.type === 'BOOKMARK' && e.object.metadata.annotations?.['k8s.io/initial-events-end'] === 'true');
    // Each wait is bounded and what arrived is then asserted: a start from the standby's past shows as a failed assertion.
    const settle = (p: Promise<void>) => p.catch(() => undefined);
    await settle(plain.until((x) => x.events.length > 0, 10_000));
    t.same(plain.events.map(key), [`ADDED ${rv} ns/${name}`], 'a watch without resourceVersion starts from the most recent state');
    await settle(initial.until((x) => x.events.some((e) => e.type === 'ADDED') && endOfInitial(x) !== undefined, 10_000));
    t.same(initial.events.filter((e) => e.type !== 'BOOKMARK').map(key), [`ADDED ${rv} ns/${name}`], 'a watch-list (sendInitialEvents=true) too');
    t.ok(rvOf(endOfInitial(initial) ?? { type: 'BOOKMARK', object: {} }) >= rv, 'its initial-events-end bookmark is not older than the commit');
    await any.until((x) => endOfInitial(x) !== undefined, 10_000, 'the rv=0 watch-list initial events');
    t.same(any.events.filter((e) => e.type !== 'BOOKMARK'), [], 'resourceVersion=0 (any): the standby as it is');
    t.ok(rvOf(endOfInitial(any)!) < rv, 'at its own rv');

    await pair.resumeReplay();
    const changed = await writer.applyBatch('a', [podEvent('MODIFIED', 'ns', name, '9999', { labels: { changed: 'yes' } })]);
    const next = `MODIFIED ${changed.watermark} ns/${name}`;
    for (const [w, what] of [[plain, 'plain'], [initial, 'watch-list'], [fromNow, 'sendInitialEvents=false'], [any, 'rv=0']] as const) {
      await w.until((x) => x.events.some((e) => rvOf(e) === changed.watermark), 15_000, `${what}: the change after it`);
    }
    t.same(plain.events.map(key), [`ADDED ${rv} ns/${name}`, next], 'then the changes after it, once');
    t.same(initial.events.filter((e) => e.type !== 'BOOKMARK').map(key), [`ADDED ${rv} ns/${name}`, next], 'the watch-list too');
    t.same(fromNow.events.map(key), [next], 'a watch from now (sendInitialEvents=false) starts after the commit: nothing from before it');
    t.same(any.events.filter((e) => e.type !== 'BOOKMARK').map(key), [`ADDED ${rv} ns/${name}`, next], 'rv=0 catches up from its own rv');
    for (const w of [plain, initial, fromNow, any]) w.close();
  });

  await t.test('the standby stopped and started', async (t) => {
    const w = await watch(onStandby.base, await writer.watermark());
    await pair.standby.stop();
    const down = await get(`${onStandby.base}${PODS}`);
    t.equal(down.status, 200, 'a list is served (by the primary)');
    const { name, rv } = await writePod();
    await w.until((x) => x.events.some((e) => rvOf(e) === rv), 20_000, 'the change, read from the primary');
    t.same(w.events.map((e) => e.object.metadata.name), [name], 'watches go on');
    const r = await get(`${onStandby.base}${PODS}?fieldSelector=metadata.name%3D${name}`);
    t.same(names(r.json), [name], 'with the latest change');
    t.equal((await get(`${onStandby.base}/readyz`)).status, 200, 'still ready');
    await until('the primary is read', async () => metric((await get(`${onStandby.base}/metrics`)).text, 'panoptes_storage_read_selected', 'primary') === 1);
    await pair.standby.start();
    await pair.caughtUp();
    await until('the standby is read again', async () => metric((await get(`${onStandby.base}/metrics`)).text, 'panoptes_storage_read_selected', 'standby') === 1);
    const again = await get(`${onStandby.base}${PODS}?fieldSelector=metadata.name%3D${name}`);
    t.same(names(again.json), [name]);
  });

  await t.test('the primary down: served from the standby with a Warning', async (t) => {
    await pair.caughtUp();
    await pair.primary.stop();
    const r = await get(`${onStandby.base}${PODS}`);
    t.equal(r.status, 200, 'reads go on');
    t.match(String(r.headers.warning), /299 - "the primary database did not answer/, 'with a Warning');
    t.equal((await get(`${onStandby.base}/readyz`)).status, 200, 'still ready');
    await pair.primary.start();
    await pair.caughtUp();
    await until('a most-recent list without a Warning again', async () => {
      const again = await get(`${onStandby.base}${PODS}`);
      return again.status === 200 && !again.headers.warning;
    });
  });

  await t.test('a standby promoted while the primary answers is not read', async (t) => {
    const from = await writer.watermark();
    const w = await watch(onStandby.base, from);
    await pair.promote();
    promotedWriter = await Store.open(db.standby);
    // Another timeline now: what is written there is not the primary's.
    const other = await writePod(promotedWriter);
    const { name, rv } = await writePod();
    await until('the promotion is seen', async () => /promoted/.test((await get(`${onStandby.base}/readyz?verbose`)).text));

    const r = await get(`${onStandby.base}${PODS}`);
    t.equal(r.status, 200);
    t.ok(names(r.json).includes(name), 'a most-recent list has the pod committed on the primary');
    t.notOk(names(r.json).includes(other.name), 'and nothing of the promoted database');
    t.ok(Number(r.json.metadata.resourceVersion) >= rv, 'at the primary\'s rv');
    t.notOk(r.headers.warning, 'the primary answered: no Warning');
    const any = await get(`${onStandby.base}${PODS}?resourceVersion=0`);
    t.ok(names(any.json).includes(name) && !names(any.json).includes(other.name), 'resourceVersion=0 does not read it either');
    await w.until((x) => x.events.some((e) => rvOf(e) === rv), 20_000, 'the change committed on the primary');
    t.same(w.events.map((e) => e.object.metadata.name), [name], 'watches follow the primary');

    const ready = await get(`${onStandby.base}/readyz?verbose`);
    t.equal(ready.status, 200, 'ready: the primary serves reads');
    t.match(ready.text, /\[\+\]storage ok: reads the primary; standby 1 of 1 is out of recovery \(promoted\): not read while the primary answers/);
    t.notMatch(ready.text, /127\.0\.0\.1|postgres:|:\d{4,5}\//, 'by its position, not its address');
    const m = (await get(`${onStandby.base}/metrics`)).text;
    t.equal(metric(m, 'panoptes_storage_read_selected', 'primary'), 1, 'metrics: the primary is read');
    t.equal(metric(m, 'panoptes_storage_read_selected', 'promoted'), 0, 'not the promoted database');
    w.close();
  });

  await t.test('the primary down: the promoted database is read, with a Warning', async (t) => {
    const w = await watch(onStandby.base, await promotedWriter!.watermark());
    await pair.primary.stop();
    const r = await get(`${onStandby.base}${PODS}`);
    t.equal(r.status, 200, 'reads go on');
    t.match(String(r.headers.warning), /299 - "the primary database did not answer/, 'with a Warning');
    const ready = await get(`${onStandby.base}/readyz?verbose`);
    t.equal(ready.status, 200, 'still ready');
    t.match(ready.text, /reads promoted 1 of 1, .* \(the primary does not answer\)/, '/readyz says which');
    const { name, rv } = await writePod(promotedWriter);
    await w.until((x) => x.events.some((e) => rvOf(e) === rv), 10_000, 'a change written on the promoted database');
    t.same(w.events.map((e) => e.object.metadata.name), [name], 'the watch follows what is read');
    const after = await get(`${onStandby.base}${PODS}?fieldSelector=metadata.name%3D${name}`);
    t.same(names(after.json), [name], 'a most-recent list on the promoted database');
  });
});
