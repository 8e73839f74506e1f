// Two `panoptes apiserver` processes on one PostgreSQL, fed by concurrent writers (two
// Stores of this process applying batches, as synchro shards would): watchers on both
// replicas, over HTTP, each receive every event exactly once in rv order, the same sequence;
// a client whose replica dies resumes on the other from its last rv and misses nothing.
import t from 'tap';
import { startApiserverProcess } from '../../hack/testing/apiserver-process.ts';
import { get } from '../../hack/sim/testutil.ts';
import { setLogLevel } from '../../lib/log.ts';
import { Store } from '../../storage/store.ts';
import { emptyStorageUrl, podEvent, seedCluster, stopTestPostgres } from '../../storage/testing.ts';
import { httpWatch, rvOf, type HttpWatch, type HttpWatchEvent } from '../../hack/testing/watch-http.ts';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');

const P = '/apis/panoptes.io/v1alpha1/resources';
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const apiResources = [{ group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, singularName: 'pod', shortNames: ['po'] }];

const startReplica = (storage: string) => startApiserverProcess(['--storage', storage], `${P}/api/v1/pods?limit=1`);

const key = (e: HttpWatchEvent) => `${e.type} ${rvOf(e)} ${e.object.metadata?.annotations?.['panoptes.io/cluster']}/${e.object.metadata?.namespace}/${e.object.metadata?.name}`;

t.test('two apiserver processes on PostgreSQL: every watcher gets every event once, in rv order', async (t) => {
  const { url: storage } = await emptyStorageUrl('postgres');
  const writerA = await Store.open(storage);
  const writerB = await Store.open(storage);
  for (const c of ['a', 'b']) {
    await seedCluster(writerA, c, { phase: 'Ready', ready: true, apiResources });
  }
  await writerA.applyBatch('a', [podEvent('ADDED', 'ns0', 'seed', '1')]);
  const replicas = [await startReplica(storage), await startReplica(storage)];
  const watches: HttpWatch[] = [];
  t.teardown(async () => {
    for (const w of watches) w.close();
    for (const r of replicas) {
      r.proc.kill('SIGTERM');
      const timer = setTimeout(() => r.proc.kill('SIGKILL'), 10_000);
      await r.exited;
      clearTimeout(timer);
    }
    await writerA.close();
    await writerB.close();
    await stopTestPostgres();
  });
  const w0 = await writerA.watermark();
  const open = async (base: string, query = '', from = w0) => {
    const w = await httpWatch(`${base}${P}/api/v1/pods?watch=1&resourceVersion=${from}${query}`);
    watches.push(w);
    return w;
  };
  const all = [await open(replicas[0].base), await open(replicas[0].base), await open(replicas[1].base)];
  const filtered = [await open(replicas[0].base, '&labelSelector=tier%3Dweb'), await open(replicas[1].base, '&labelSelector=tier%3Dweb')];
  const dying = await open(replicas[1].base);

  // Two writers committing concurrently (each its own Store and connection pool).
  const write = async (store: Store, cluster: string) => {
    for (let i = 0; i < 80; i++) {
      const n = 1 + (i % 3);
      const events = Array.from({ length: n }, (_, k) =>
        podEvent(i % 5 === 4 ? 'MODIFIED' : 'ADDED', `ns${k}`, `p${Math.floor(i / 5)}-${k}`, String(i + 10), { labels: { tier: i % 2 ? 'web' : 'db' } }),
      );
      await store.applyBatch(cluster, events);
      if (i % 8 === 0) await sleep(5);
    }
  };
  const writing = Promise.all([write(writerA, 'a'), write(writerB, 'b')]);
  await dying.until((w) => w.events.length >= 60, 15_000, '60 events from replica 2');
  // Replica 2 dies (SIGKILL: no clean end); its client resumes on replica 1 from its last rv.
  replicas[1].proc.kill('SIGKILL');
  await replicas[1].exited;
  await dying.done;
  const last = rvOf(dying.events[dying.events.length - 1]);
  const resumed = await open(replicas[0].base, '', last);
  await writing;
  const final = await writerA.watermark();
  t.ok(final - w0 >= 300, `${final - w0} changes written`);
  for (const w of [all[0], all[1], resumed]) await w.until((x) => x.events.some((e) => rvOf(e) >= final), 15_000, `rv ${final}`);
  await sleep(300);

  const want = Array.from({ length: final - w0 }, (_, k) => w0 + 1 + k);
  t.same(all[0].events.map(rvOf), want, 'replica 1: every change exactly once, in rv order');
  t.same(all[1].events.map(key), all[0].events.map(key), 'a second watcher on replica 1: the same');
  const upToDeath = all[2].events.map(key);
  t.ok(upToDeath.length >= 60, `replica 2 served ${upToDeath.length} before it died`);
  t.same(upToDeath, all[0].events.slice(0, upToDeath.length).map(key), 'replica 2: the identical sequence (while it lived)');
  t.same(filtered[1].events.map(key), filtered[0].events.slice(0, filtered[1].events.length).map(key), 'filtered watches too');
  t.ok(filtered[0].events.some((e) => e.type === 'DELETED') && filtered[0].events.some((e) => e.type === 'ADDED'), 'with selector transitions');
  t.same([...dying.events, ...resumed.events].map(key), all[0].events.map(key), 'the client of the dead replica missed nothing and got nothing twice');

  // Poll queries are per replica process, on its /metrics.
  const text = (await get(`${replicas[0].base}/metrics`)).text;
  t.match(text, /^panoptes_watch_poll_queries_total \d+/m);
  t.match(text, /^panoptes_watch_watchers [1-9]/m);
});
