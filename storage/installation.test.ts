// The installation id, on both backends: made once per database, at the first ask of any
// process, the same for every process sharing the database (also when several ask at once),
// kept across restarts, another for another database; stored in `meta` beside the rvs,
// which it leaves alone.
import t from 'tap';
import { readMeta } from './meta.ts';
import { Store } from './store.ts';
import { backends, openTestStore, stopTestPostgres } from './testing.ts';

t.teardown(stopTestPostgres);

for (const backend of backends) {
  t.test(`${backend}: one installation id per database`, async (t) => {
    const a = await openTestStore(backend);
    t.teardown(a.close);
    const before = await readMeta(a.store.conn.knex);
    const others = [await Store.open(a.url), await Store.open(a.url)];
    t.teardown(() => Promise.all(others.map((s) => s.close())));
    // Every process asks at once: one id is made, every one reads it.
    const ids = await Promise.all([a.store.installationId(), ...others.map((s) => s.installationId())]);
    t.match(ids[0], /^[0-9a-f]{12}$/, '12 hex digits: a label value');
    t.same(new Set(ids).size, 1, `every process of the database has the same id (${ids.join(', ')})`);
    t.equal(await a.store.installationId(), ids[0], 'asked again: the same');
    const rows = await a.store.conn.knex('meta').where({ key: 'installation_id' }).select('value');
    t.equal(rows.length, 1, 'one row');
    t.same(await readMeta(a.store.conn.knex), before, 'the rvs are untouched');

    const restarted = await Store.open(a.url);
    t.equal(await restarted.installationId(), ids[0], 'kept across a restart');
    await restarted.close();

    const b = await openTestStore(backend);
    t.teardown(b.close);
    t.not(await b.store.installationId(), ids[0], 'another database is another installation');
  });
}
