// SQLite connections get their pragmas: WAL, and reads through a memory map of the file.
import t from 'tap';
import { openTestStore } from './testing.ts';

t.test('SQLite reads through a memory map and writes a WAL', async (t) => {
  const { store, close } = await openTestStore('sqlite');
  t.teardown(close);
  const mmap = (await store.conn.knex.raw('PRAGMA mmap_size')) as Array<{ mmap_size: number }>;
  t.ok(mmap[0].mmap_size >= 1 << 30, `mmap_size ${mmap[0].mmap_size}`);
  const wal = (await store.conn.knex.raw('PRAGMA journal_mode')) as Array<{ journal_mode: string }>;
  t.equal(wal[0].journal_mode, 'wal');
});
