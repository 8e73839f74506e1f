// SQLite connections get their pragmas: WAL, and reads of a bounded part of the file through a
// memory map (so that the resident set follows what the process uses, not the file's size).
import t from 'tap';
import { defaultSqliteCacheBytes, defaultSqliteMmapBytes } from './connect.ts';
import { Store } from './store.ts';
import { emptyStorageUrl, openTestStore } from './testing.ts';

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
