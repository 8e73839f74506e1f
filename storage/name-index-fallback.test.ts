// PostgreSQL without the right to install pg_trgm: the migration goes on without the trigram
// index (a savepoint keeps the failed CREATE EXTENSION from aborting it) and fuzzy names are
// served unindexed, with the same answers.
import t from 'tap';
import knexFactory from 'knex';
import { Store } from './store.ts';
import { emptyStorageUrl, podEvent, stopTestPostgres } from './testing.ts';

t.teardown(stopTestPostgres);

t.test('postgres: a role that may not CREATE in the database', async (t) => {
  const { url } = await emptyStorageUrl('postgres');
  const u = new URL(url);
  const db = u.pathname.slice(1);
  const role = `${db}_nocreate`.slice(0, 63);
  const admin = knexFactory({ client: 'pg', connection: url });
  t.teardown(() => admin.destroy());
  // The database stays the administrator's: CREATE on it (what a trusted extension needs) is not granted.
  await admin.raw(`CREATE ROLE "${role}" LOGIN`);
  await admin.raw(`REVOKE CREATE ON DATABASE "${db}" FROM PUBLIC`);
  await admin.raw(`GRANT ALL ON SCHEMA public TO "${role}"`);
  t.teardown(async () => {
    await admin.raw(`DROP OWNED BY "${role}"`);
    await admin.raw(`DROP ROLE "${role}"`);
  });
  u.username = role;
  const store = await Store.open(u.toString());
  t.teardown(() => store.close());
  const ext = await admin.raw(`SELECT count(*)::int AS n FROM pg_extension WHERE extname = 'pg_trgm'`);
  t.equal(ext.rows[0].n, 0, 'pg_trgm was not installed');
  const idx = await admin.raw(`SELECT count(*)::int AS n FROM pg_indexes WHERE indexname = 'objects_name_trgm'`);
  t.equal(idx.rows[0].n, 0, 'no trigram index');
  const created = await admin.raw(`SELECT count(*)::int AS n FROM pg_indexes WHERE indexname IN ('objects_by_created', 'objects_by_name')`);
  t.equal(created.rows[0].n, 2, 'the rest of the migration ran');
  await store.applyBatch('c', ['web-1', 'Web-2', 'api'].map((n) => podEvent('ADDED', 'shop', n, '1')));
  const r = await store.list({ group: '', resource: 'pods', nameContains: ['WEB'], limit: 10 });
  t.same(r.items.map((i) => i.name), ['Web-2', 'web-1'], 'fuzzy names are served, unindexed');
});
