// The apiserver's /metrics show the synchro members as storage has them: live, out (a
// process that cannot work, reporting itself with a row written expired) and which report a
// configuration error.
import t from 'tap';
import { Registry } from 'prom-client';
import { openTestStore } from '../storage/testing.ts';
import { ApiserverMetrics } from './endpoints/metrics.ts';

t.test('members by state and their configuration errors', async (t) => {
  const { store, close } = await openTestStore('sqlite');
  t.teardown(close);
  const registry = new Registry();
  new ApiserverMetrics(registry).followMembers(store);
  await store.heartbeat({ id: 'good', host: 'h', pid: 1, instance: 'g' }, 60_000);
  await store.heartbeat({ id: 'broken', host: 'h', pid: 2, instance: 'b', configError: 'clusters.yaml: not valid YAML' }, 0);
  await store.heartbeat({ id: 'later', host: 'h', pid: 3, instance: 'l', configError: 'clusters.yaml: entry 2: no server' }, 60_000);
  const text = await registry.metrics();
  t.match(text, /^panoptes_fleet_synchro_members\{state="live"\} 2$/m);
  t.match(text, /^panoptes_fleet_synchro_members\{state="out"\} 1$/m);
  t.match(text, /^panoptes_fleet_synchro_members\{state="expired"\} 0$/m);
  t.match(text, /^panoptes_fleet_synchro_member_config_error\{member="broken"\} 1$/m);
  t.match(text, /^panoptes_fleet_synchro_member_config_error\{member="later"\} 1$/m);
  t.notMatch(text, /member_config_error\{member="good"\}/);

  await close();
  t.doesNotThrow(async () => registry.metrics(), 'storage closed: /metrics still answers');
  t.notMatch(await registry.metrics(), /^panoptes_fleet_synchro_members\{state="live"\} [1-9]/m, 'no stale counts');
});
