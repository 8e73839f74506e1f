// The cache-size flags of the apiserver: parsing, and the watch window they bound in a
// running server (read from /metrics).
import t from 'tap';
import { logger, setLogLevel } from '../../lib/log.ts';
import { openTestStore, podEvent } from '../../storage/testing.ts';
import { sizeFlag, UsageError } from '../command.ts';
import { freePort } from '../../storage/testing/postgres.ts';
import { startServing } from './apiserver.ts';
import { memoryFlags } from './memory-flags.ts';
import { defaultWindowBytes } from '../../apiserver/watch/index.ts';

setLogLevel('error');

t.test('sizes: bytes or binary suffixes; anything else is a usage error', async (t) => {
  t.equal(sizeFlag('x', undefined, 7), 7);
  t.equal(sizeFlag('x', '1048576', 0), 1048576);
  t.equal(sizeFlag('x', '512Ki', 0), 512 * 1024);
  t.equal(sizeFlag('x', '64Mi', 0), 64 * 1024 * 1024);
  t.equal(sizeFlag('x', '2Gi', 0), 2 * 1024 ** 3);
  for (const bad of ['64MB', '1.5Mi', '-1', 'Mi', '64 Mi', '']) t.throws(() => sizeFlag('x', bad, 0), UsageError, bad);
});

t.test('defaults, values and bad values', async (t) => {
  t.same(memoryFlags({}), {
    watch: { window: { maxEvents: 10_000, maxBytes: defaultWindowBytes() }, prefill: 1000 },
    openapi: { cacheBytes: 24 * 1024 * 1024, servedCacheBytes: 64 * 1024 * 1024 },
  });
  t.same(
    memoryFlags({ 'watch-window-events': '500', 'watch-window-bytes': '8Mi', 'watch-prefill': '0', 'openapi-cache-bytes': '4Mi', 'openapi-served-cache-bytes': '16Mi' }),
    { watch: { window: { maxEvents: 500, maxBytes: 8 * 1024 * 1024 }, prefill: 0 }, openapi: { cacheBytes: 4 * 1024 * 1024, servedCacheBytes: 16 * 1024 * 1024 } },
  );
  t.throws(() => memoryFlags({ 'watch-window-events': '0' }), /--watch-window-events must be at least 1/);
  t.throws(() => memoryFlags({ 'watch-window-bytes': '0' }), /--watch-window-bytes must be at least 1/);
  t.throws(() => memoryFlags({ 'watch-prefill': 'many' }), /--watch-prefill must be a non-negative integer/);
  t.throws(() => memoryFlags({ 'openapi-served-cache-bytes': '1MB' }), /--openapi-served-cache-bytes must be a size/);
});

t.test('the window of a running apiserver holds --watch-prefill changes at start, --watch-window-events at most', async (t) => {
  const { store, close } = await openTestStore('sqlite');
  t.teardown(close);
  await store.applyBatch('c', Array.from({ length: 30 }, (_, i) => podEvent('ADDED', 'ns', `p${i}`, String(i + 1))));
  const port = await freePort();
  const server = await startServing(store, { 'insecure-listen': `127.0.0.1:${port}`, 'watch-window-events': '10', 'watch-prefill': '4' }, logger('test'));
  t.teardown(() => server.close());
  const windowEvents = async () => {
    const text = await (await fetch(`${server.url}/metrics`)).text();
    return Number(/^panoptes_watch_window_events (\S+)$/m.exec(text)?.[1]);
  };
  t.equal(await windowEvents(), 4, 'prefilled with 4');
  await store.applyBatch('c', Array.from({ length: 20 }, (_, i) => podEvent('ADDED', 'ns', `q${i}`, String(i + 100))));
  let n = 0;
  for (let i = 0; i < 100 && n < 10; i++) {
    await new Promise((r) => setTimeout(r, 50));
    n = await windowEvents();
  }
  t.equal(n, 10, 'bounded at 10 after 20 more changes');
});
