// synchro's /readyz: 503 naming each failing check while the process cannot do its work (its
// clusters file does not load, storage does not answer, it is out of the membership), 200
// once it can; /healthz stays 200 throughout (liveness); the metrics say the same.
import { writeFileSync } from 'node:fs';
import t from 'tap';
import type { Store } from '../../storage/store.ts';
import { openTestStore } from '../../storage/testing.ts';
import { startSynchro } from '../synchro.ts';
import { fastTimings, tempDir, waitUntil, writeClusters } from '../testutil.ts';

const get = async (url: string) => {
  const res = await fetch(url);
  return { status: res.status, body: await res.text() };
};

t.test('readyz follows what the process can do; healthz stays ok', async (t) => {
  const { store: real, close } = await openTestStore('sqlite');
  const { dir, cleanup } = tempDir();
  const down = { on: false };
  const store = new Proxy(real, {
    get(target, prop, receiver) {
      if (prop === 'ping' && down.on) return async () => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:5432'));
      const v: unknown = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  }) as Store;
  const file = `${dir}/clusters.yaml`;
  writeFileSync(file, 'clusters: [ {name: x\n');
  const h = await startSynchro({ store, clustersFile: file, metricsListen: '127.0.0.1:0', timings: fastTimings, reloadIntervalMs: 50, compaction: false, mcs: false, shards: { identity: 'one', leaseTtlMs: 2000, assignIntervalMs: 200 } });
  t.teardown(async () => {
    await h.stop();
    await close();
    cleanup();
  });
  const base = h.metricsUrl!.replace(/\/metrics$/, '');
  const metric = async (name: string) => {
    const text = (await get(`${base}/metrics`)).body;
    return Number(new RegExp(`^${name.replace(/[{}"]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1]);
  };

  const broken = await get(`${base}/readyz`);
  t.equal(broken.status, 503, 'not ready: its file does not parse');
  t.match(broken.body, /^\[-\]config failed: .*clusters\.yaml/m, 'names the config failure');
  t.match(broken.body, /^\[\+\]storage ok$/m);
  t.match(broken.body, /^\[-\]membership failed: not in the membership: not joined yet/m);
  t.match(broken.body, /readyz check failed\n$/);
  t.same(await get(`${base}/healthz`), { status: 200, body: 'ok' }, 'healthz: alive');
  t.equal(await metric('panoptes_synchro_ready'), 0);
  t.equal(await metric('panoptes_synchro_config_error'), 1);
  t.equal(await metric('panoptes_synchro_membership{phase="out"}'), 1);
  const reported = await waitUntil('the member row reports the error', async () => {
    const { now, members } = await real.members();
    const row = members.find((m) => m.id === 'one');
    return row?.configError && row.expiresAt <= now ? row : undefined;
  }, 10_000);
  t.match(reported?.configError, /clusters\.yaml/, 'storage has the config error of a member that is out, not counted live');

  writeClusters(file, []);
  await waitUntil('ready once the file parses', async () => (await get(`${base}/readyz`)).status === 200, 20_000, 100);
  t.equal((await get(`${base}/readyz`)).body, 'ok');
  const verbose = await get(`${base}/readyz?verbose`);
  t.match(verbose.body, /^\[\+\]config ok\n\[\+\]storage ok\n\[\+\]membership ok: one, one of 1 live members\nreadyz check passed\n$/);
  t.equal(await metric('panoptes_synchro_ready'), 1);
  t.equal(await metric('panoptes_synchro_membership{phase="member"}'), 1);
  t.match((await real.members()).members, [{ id: 'one', configError: null }], 'a member with a good file reports none');

  writeFileSync(file, 'clusters: [ {name: x\n');
  await waitUntil('the file broke again', () => h.configError() !== undefined, 10_000);
  const lastGood = await get(`${base}/readyz?verbose`);
  t.equal(lastGood.status, 200, 'a file broken later: the last good configuration works on');
  t.match(lastGood.body, /^\[\+\]config ok: the last good configuration is in effect; the file now fails: /m);
  await waitUntil('config_error set', async () => (await metric('panoptes_synchro_config_error')) === 1, 10_000);

  down.on = true;
  const noStorage = await get(`${base}/readyz`);
  t.equal(noStorage.status, 503);
  t.match(noStorage.body, /^\[-\]storage failed: connect ECONNREFUSED 127\.0\.0\.1:5432$/m);
  t.same(await get(`${base}/healthz`), { status: 200, body: 'ok' });
  down.on = false;
});
