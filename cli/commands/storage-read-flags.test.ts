// --storage-read and --storage-read-max-lag: PostgreSQL URLs only, beside PostgreSQL storage;
// the environment variable; a clear usage error otherwise (the password never echoed).
import t from 'tap';
import { UsageError } from '../command.ts';
import { storageReadFlags } from './storage-read-flags.ts';

const pg = 'postgres://u@primary:5432/db';

t.test('standby URLs', async (t) => {
  t.same(storageReadFlags({}, 'sqlite:./x.db'), { urls: [], maxLagMs: 10_000 }, 'none: read the primary');
  t.same(storageReadFlags({ 'storage-read': 'postgres://u@a/db, postgres://u@b/db', 'storage-read-max-lag': '3s' }, pg), { urls: ['postgres://u@a/db', 'postgres://u@b/db'], maxLagMs: 3000 });
  process.env.PANOPTES_STORAGE_READ = 'postgresql://u@c/db';
  t.teardown(() => delete process.env.PANOPTES_STORAGE_READ);
  t.same(storageReadFlags({}, pg).urls, ['postgresql://u@c/db'], 'from PANOPTES_STORAGE_READ');
  t.same(storageReadFlags({ 'storage-read': 'postgres://u@d/db' }, pg).urls, ['postgres://u@d/db'], 'the flag wins');
});

t.test('refused', async (t) => {
  t.throws(() => storageReadFlags({ 'storage-read': 'postgres://u@a/db' }, 'sqlite:./x.db'), new UsageError('--storage-read needs PostgreSQL --storage: SQLite has no standbys'));
  t.throws(() => storageReadFlags({ 'storage-read': 'sqlite:./y.db' }, pg), UsageError);
  const err = t.throws(() => storageReadFlags({ 'storage-read': 'mysql://u:secret@a/db' }, pg)) as Error;
  t.type(err, UsageError);
  t.notMatch(err.message, /secret/, 'the password is not echoed');
  t.throws(() => storageReadFlags({ 'storage-read': pg, 'storage-read-max-lag': 'soon' }, pg), UsageError);
});
