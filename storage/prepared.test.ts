// The hot statements (storage/prepared.ts): prepared once per connection on PostgreSQL, run on
// better-sqlite3's connection on SQLite; every binding still passes the one check of
// bound-values.ts and is announced as knex's own statements are; a statement prepared before
// another process's migration changed its table is prepared again.
import t from 'tap';
import { UnboundValueError } from './bound-values.ts';
import { hotQuery, hotRead } from './prepared.ts';
import { backends, openTestStore, podEvent, stopTestPostgres } from './testing.ts';
import { writeErrorKind } from './write-errors.ts';

t.teardown(stopTestPostgres);

for (const backend of backends) {
  t.test(`${backend}: in a transaction and on the pool, the rows; NUL refused before the driver; announced`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    await store.applyBatch('east', [podEvent('ADDED', 'web', 'a', '1'), podEvent('ADDED', 'web', 'b', '2')]);
    const seen: string[] = [];
    const listener = (q: { sql: string }) => seen.push(q.sql);
    store.conn.knex.on('query', listener);
    t.teardown(() => void store.conn.knex.off('query', listener));

    const sql = 'SELECT name FROM objects WHERE cluster = ? AND namespace = ? ORDER BY name';
    const inTrx = await store.conn.knex.transaction((trx) => hotQuery<{ name: string }>(trx, sql, ['east', 'web']));
    t.same(inTrx.map((r) => r.name), ['a', 'b'], 'in a transaction');
    for (let i = 0; i < 3; i++) t.same((await hotRead<{ name: string }>(store.conn.knex, sql, ['east', 'web'])).map((r) => r.name), ['a', 'b'], `on the pool, ${i + 1}`);
    t.ok(seen.filter((s) => s === sql).length >= 4, 'each announced as a query');

    await t.rejects(hotRead(store.conn.knex, sql, ['east\u0000', 'web']), UnboundValueError, 'a NUL: 400 on the pool');
    await t.rejects(
      store.conn.knex.transaction((trx) => hotQuery(trx, sql, ['east', 'web\ud800'])),
      UnboundValueError,
      'a lone surrogate: 400 in a transaction',
    );

    if (backend === 'postgres') {
      const names = await store.conn.knex.transaction(async (trx) => {
        await hotQuery(trx, sql, ['east', 'web']);
        return hotQuery<{ name: string; statement: string }>(trx, 'SELECT name, statement FROM pg_prepared_statements', []);
      });
      t.ok(
        names.some((n) => n.name.startsWith('panoptes_') && n.statement.includes('FROM objects WHERE cluster = $1 AND namespace = $2')),
        'prepared by name on the connection',
      );
    }
  });

  t.test(`${backend}: a table changed by another process's migration: the statement is prepared again`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    await store.applyBatch('east', [podEvent('ADDED', 'web', 'a', '1')]);
    const before = await store.changesAfter(0, 10);
    t.equal(before.length, 1);
    await store.conn.knex.raw('ALTER TABLE changes ADD COLUMN added_later integer');
    const after = await store.changesAfter(0, 10);
    t.same(after.map((c) => c.name), ['a'], 'read after the change');
    t.same((await store.changesAfter(0, 10)).map((c) => c.name), ['a'], 'and again');
    await store.applyBatch('east', [podEvent('ADDED', 'web', 'b', '2')]);
    t.same((await store.changesAfter(0, 10)).map((c) => c.name), ['a', 'b'], 'writes go on');
  });
}

t.test("PostgreSQL's refusal of a plan cached before a migration is retried as an outage", async (t) => {
  const err = Object.assign(new Error('cached plan must not change result type'), { code: '0A000' });
  t.equal(writeErrorKind(err), 'outage');
  t.equal(writeErrorKind(Object.assign(new Error('something else not supported'), { code: '0A000' })), 'data', 'another 0A000 is not');
});
