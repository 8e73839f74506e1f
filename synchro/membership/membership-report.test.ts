// A synchro process kept out by its configuration reports itself: its member row, written
// expired, carries the error; the members see it in their metrics without counting it.
import t from 'tap';
import type { Logger } from '../../lib/log.ts';
import { openTestStore } from '../../storage/testing.ts';
import { defaultShardSettings, Membership } from './membership.ts';
import { SynchroMetrics } from '../metrics/metrics.ts';
import { waitUntil } from '../testutil.ts';

const quiet: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined, child: () => quiet };

t.test('a member sees another that cannot work, and why', async (t) => {
  const { store, close } = await openTestStore('sqlite');
  const metrics = new SynchroMetrics();
  const good = new Membership(store, defaultShardSettings({ identity: 'good', leaseTtlMs: 1500 }), metrics, quiet, () => undefined);
  const broken = new Membership(store, defaultShardSettings({ identity: 'broken', leaseTtlMs: 1500 }), new SynchroMetrics(), quiet, () => undefined);
  broken.configError = () => 'clusters.yaml: line 1: unexpected end of the stream';
  t.teardown(async () => {
    await good.stop();
    await broken.stop();
    await close();
  });
  good.start();
  broken.start(); // never joins: its configuration did not load
  await good.join(true);
  const gauge = async (name: string) => (await metrics.registry.getSingleMetric(name)?.get())?.values[0]?.value;
  await waitUntil('the broken one reported', async () => {
    await good.share(['a', 'b'], async () => undefined);
    return (await gauge('panoptes_synchro_members_out')) === 1;
  }, 10_000, 100);
  t.equal(await gauge('panoptes_synchro_members_config_errors'), 1);
  t.equal(await gauge('panoptes_synchro_members'), 1, 'not counted live');
  const { mine } = await good.share(['a', 'b'], async () => undefined);
  t.same(mine, ['a', 'b'], 'and given nothing');
  const row = (await store.members()).members.find((m) => m.id === 'broken');
  t.match(row, { configError: /unexpected end/ });
});
