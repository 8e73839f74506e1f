// SQLite connections get their pragmas: WAL, and reads of a bounded part of the file through a
// memory map (so that the resident set follows what the process uses, not the file's size).
import t from 'tap';
import { defaultSqliteCacheBytes, defaultSqliteMmapBytes, StorageClosedError } from './connect.ts';
import { Store } from './store.ts';
import { emptyStorageUrl, openTestStore, stopTestPostgres } from './testing.ts';
import { writeErrorKind } from './write-errors.ts';

t.teardown(stopTestPostgres);

const mmapSize = async (store: Store) => ((await store.conn.knex.raw('PRAGMA mmap_size')) as Array<{ mmap_size: number }>)[0].mmap_size;

t.test('SQLite maps the first 16 MiB of the file and writes a WAL', async (t) => {
  const { store, close } = await openTestStore('sqlite');
  t.teardown(close);
  t.equal(defaultSqliteMmapBytes, 16 * 1024 * 1024);
  t.equal(await mmapSize(store), defaultSqliteMmapBytes);
  const wal = (await store.conn.knex.raw('PRAGMA journal_mode')) as Array<{ journal_mode: string }>;
  t.equal(wal[0].journal_mode, 'wal');
});

t.test("SQLite's own page cache is bounded at 16 MiB", async (t) => {
  const { store, close } = await openTestStore('sqlite');
  t.teardown(close);
  t.equal(defaultSqliteCacheBytes, 16 * 1024 * 1024);
  // Negative: KiB; positive would be pages (16 KiB each).
  const [{ cache_size: cacheSize }] = (await store.conn.knex.raw('PRAGMA cache_size')) as Array<{ cache_size: number }>;
  t.equal(cacheSize, -16384);
});

t.test('the size of the map is an option; 0 reads without one', async (t) => {
  for (const bytes of [0, 256 * 1024 * 1024]) {
    const { url, cleanup } = await emptyStorageUrl('sqlite');
    const store = await Store.open(url, { sqliteMmapBytes: bytes });
    try {
      t.equal(await mmapSize(store), bytes);
    } finally {
      await store.close();
      await cleanup();
    }
  }
});

for (const backend of ['sqlite', 'postgres'] as const) {
  t.test(`${backend}: once close() began, a new statement fails at once; an open transaction runs to its end`, async (t) => {
    const { store } = await openTestStore(backend);
    const { knex } = store.conn;
    let finish!: () => void;
    const held = new Promise<void>((r) => (finish = r));
    let opened!: () => void;
    const open = new Promise<void>((r) => (opened = r));
    const trx = knex.transaction(async (trx) => {
      await trx.raw('select 1');
      opened();
      await held;
      return (await trx.raw('select 2 as n')) as unknown;
    });
    await open;
    const closing = store.close();
    await new Promise((r) => setImmediate(r)); // Store.close() closes the connection after its own work
    // The pool would give up after knex's acquireConnectionTimeout (60 s): the refusal is waited
    // for half of that, so it is not the pool's, whatever the machine's load.
    let timer: NodeJS.Timeout | undefined;
    const late = await Promise.race([
      knex.raw('select 3').then(
        () => undefined,
        (err: unknown) => err,
      ),
      new Promise<string>((r) => (timer = setTimeout(() => r('no answer within 30 s'), 30_000))),
    ]);
    clearTimeout(timer);
    t.ok(late instanceof StorageClosedError, `a statement after close() began is refused at once, not after the pool gives up (${String(late)})`);
    t.equal(writeErrorKind(late), 'outage', 'a writer takes it as an outage, not as bad rows');
    const lateTrx = await knex.transaction(async () => undefined).then(
      () => undefined,
      (err: unknown) => err,
    );
    t.ok(lateTrx instanceof StorageClosedError, 'so is a new transaction');
    finish();
    t.ok(await trx, 'the transaction that was open ends as it would have');
    await closing;
  });
}
