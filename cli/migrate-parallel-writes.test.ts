// `panoptes migrate --parallel-writes`: switches a PostgreSQL database created before parallel
// writes (storage/ordered-commits.ts); refused on SQLite, which has one writer.
import { join } from 'node:path';
import t from 'tap';
import { main } from './main.ts';
import { Store } from '../storage/store.ts';
import { emptyStorageUrl, stopTestPostgres } from '../storage/testing.ts';
import { tempDir } from '../synchro/testutil.ts';

t.teardown(stopTestPostgres);

t.test('postgres: a serial database is switched once; again, it stays as it is', async (t) => {
  const { url, cleanup } = await emptyStorageUrl('postgres');
  t.teardown(cleanup);
  const store = await Store.open(url);
  t.teardown(() => store.close());
  await store.conn.knex('meta').where({ key: 'write_protocol' }).update({ value: 0 });
  t.equal(await store.writeProtocol(), 'serial', 'a database created before writes with the lock taken first');
  t.equal(await main(['migrate', '--storage', url, '--log-level', 'warn', '--parallel-writes']), 0);
  t.equal(await store.writeProtocol(), 'parallel', 'switched');
  t.equal(await main(['migrate', '--storage', url, '--log-level', 'warn', '--parallel-writes']), 0, 'a second run changes nothing and succeeds');
});

t.test('sqlite: --parallel-writes is a usage error', async (t) => {
  const { dir, cleanup } = tempDir();
  t.teardown(cleanup);
  const errors: string[] = [];
  const error = console.error;
  console.error = (...args: unknown[]) => void errors.push(args.join(' '));
  t.teardown(() => void (console.error = error));
  t.equal(await main(['migrate', '--storage', `sqlite:${join(dir, 'p.db')}`, '--log-level', 'warn', '--parallel-writes']), 2);
  t.match(errors.join('\n'), /--parallel-writes is for PostgreSQL: SQLite has one writer/);
});
