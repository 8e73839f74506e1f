// The standby harness itself: a write on the primary reaches the standby, a paused standby
// does not see it until resumed, a stopped standby catches up when started, and a promoted
// standby takes writes.
import t from 'tap';
import { startStandbyPair } from './postgres-standby.ts';

t.test('primary and streaming standby', async (t) => {
  const pair = await startStandbyPair();
  t.teardown(() => pair.close());
  const db = await pair.createDatabase('harness');
  await pair.primary.query('create table t (n int)', [], 'harness');
  await pair.primary.query('insert into t values (1)', [], 'harness');
  await pair.caughtUp();
  const count = async () => Number((await pair.standby.query<{ n: string }>('select count(*) as n from t', [], 'harness'))[0].n);
  t.equal(await count(), 1, 'the standby replays a commit');
  t.match(db.standby, /\/harness$/);

  await pair.pauseReplay();
  await pair.primary.query('insert into t values (2)', [], 'harness');
  await new Promise((r) => setTimeout(r, 300));
  t.equal(await count(), 1, 'a paused standby does not apply the commit');
  await pair.resumeReplay();
  await pair.caughtUp();
  t.equal(await count(), 2, 'resumed, it does');

  await pair.standby.stop();
  await pair.primary.query('insert into t values (3)', [], 'harness');
  await pair.standby.start();
  await pair.caughtUp();
  t.equal(await count(), 3, 'a restarted standby catches up');

  await pair.promote();
  await pair.standby.query('insert into t values (4)', [], 'harness');
  t.equal(await count(), 4, 'a promoted standby takes writes');
});
