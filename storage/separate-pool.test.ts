// Store.separatePool: on PostgreSQL, statements on the separate pool run while every
// connection of the Store's own pool is taken (synchro's heartbeats and lease renewals while
// its writes fill the pool); on SQLite it is the Store itself.
import t from 'tap';
import { Store } from './store.ts';
import { emptyStorageUrl, openTestStore, stopTestPostgres } from './testing.ts';

t.teardown(stopTestPostgres);

t.test('postgres: the separate pool answers while the main pool is exhausted', async (t) => {
  const { url } = await emptyStorageUrl('postgres');
  const store = await Store.open(url, { poolMax: 1 });
  const sep = store.separatePool(2);
  t.teardown(async () => {
    await sep.close();
    await store.close();
  });
  t.not(sep.store, store, 'another Store');
  // The main pool's only connection is held by an open transaction.
  const held = await store.conn.knex.transaction();
  let mainDone = false;
  const main = store.members().then(() => (mainDone = true));
  const { members } = await sep.store.members();
  t.same(members, [], 'the separate pool answered');
  t.notOk(mainDone, 'while a statement on the main pool still waits for its connection');
  await held.commit();
  await main;
  t.ok(mainDone, 'which runs once the connection is free');
});

t.test('sqlite: the Store itself (one connection serializes everything anyway)', async (t) => {
  const { store, close } = await openTestStore('sqlite');
  t.teardown(close);
  const sep = store.separatePool(2);
  t.equal(sep.store, store);
  await sep.close();
  t.ok(await store.ping().then(() => true), 'closing it leaves the Store open');
});
