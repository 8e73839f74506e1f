import t from 'tap';
import { GrowthAnalyzer } from './statistics.ts';
import { backends, openTestStore, podEvent, stopTestPostgres } from './testing.ts';

t.teardown(stopTestPostgres);

t.test('an analyze each time the rows written double, one at a time', async (t) => {
  let runs = 0;
  let finish = () => {};
  const g = new GrowthAnalyzer(() => {
    runs++;
    return new Promise<void>((r) => (finish = r));
  }, 100);
  g.wrote(99);
  t.equal(runs, 0, 'fewer rows than the first threshold: none');
  g.wrote(1);
  t.equal(runs, 1, 'at 100 rows: the first');
  g.wrote(150);
  t.equal(runs, 1, 'none starts while one runs');
  finish();
  await g.idle();
  g.wrote(0);
  t.equal(runs, 2, 'the rows written meanwhile (250) passed the next threshold (200): one more');
  finish();
  await g.idle();
  g.wrote(249);
  t.equal(runs, 2, 'not before the rows double again (500)');
  g.wrote(1);
  t.equal(runs, 3);
  finish();
  await g.idle();
});

for (const backend of backends) {
  t.test(`the Store's writes refresh the planner's statistics as they grow the tables (${backend})`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    for (let b = 0; b < 6; b++) {
      await store.applyBatch('east', Array.from({ length: 1000 }, (_, i) => podEvent('ADDED', 'web', `p-${b}-${i}`, String(100 + b * 1000 + i))));
    }
    const knex = store.conn.knex;
    if (backend === 'postgres') {
      // Not autovacuum's (last_autoanalyze): the Store's own, after 5000 rows. Statistics reach pg_stat_user_tables shortly after.
      let analyzed = false;
      for (let i = 0; i < 100 && !analyzed; i++) {
        const rows = (await knex.raw("SELECT last_analyze FROM pg_stat_user_tables WHERE relname = 'objects'")).rows as Array<{ last_analyze: Date | null }>;
        analyzed = rows[0]?.last_analyze != null;
        if (!analyzed) await new Promise((r) => setTimeout(r, 100));
      }
      t.ok(analyzed, 'objects analyzed');
    } else {
      const stat = await knex.raw("SELECT name FROM sqlite_master WHERE name = 'sqlite_stat1'");
      t.same(stat, [], 'SQLite: no ANALYZE of its own (its planner is left as it was)');
    }
  });
}
