// --mcs-resync-interval, --mcs-away-consumer-grace and --mcs-allow-system-services of synchro
// and all-in-one: the dispatcher's full pass, how long a deletion waits for a consumer that is
// away, and the system Services allowed, parsed into startSynchro's options, a bad or too short
// value a usage error.
import t from 'tap';
import { UsageError } from '../command.ts';
import { parseSynchroFlags } from './synchro-flags.ts';

const mcs = (values: Parameters<typeof parseSynchroFlags>[0]) => {
  const o = parseSynchroFlags(values).mcs;
  if (!o) throw new Error('no mcs options');
  return o;
};

t.test('--mcs-resync-interval: the period of the dispatcher\'s full pass', async (t) => {
  t.same(mcs({}).resyncIntervalMs, 60_000, 'a minute by default');
  t.same(mcs({ 'mcs-resync-interval': '2s' }).resyncIntervalMs, 2000);
  t.same(mcs({ 'mcs-resync-interval': '10m' }).resyncIntervalMs, 600_000);
  t.throws(() => parseSynchroFlags({ 'mcs-resync-interval': '500ms' }), new UsageError('--mcs-resync-interval must be at least 1s'));
  t.throws(() => parseSynchroFlags({ 'mcs-resync-interval': 'often' }), /--mcs-resync-interval must be a duration like 500ms/);
});

t.test('--mcs-away-consumer-grace: how long a deleted MultiClusterService waits for a consumer that is not Ready', async (t) => {
  t.same(parseSynchroFlags({}).mcs, { resyncIntervalMs: 60_000, awayConsumerGraceMs: 300_000 }, 'five minutes by default');
  t.equal(mcs({ 'mcs-away-consumer-grace': '30s' }).awayConsumerGraceMs, 30_000);
  t.equal(mcs({ 'mcs-away-consumer-grace': '0s' }).awayConsumerGraceMs, 0, 'zero: never waits for one');
  t.throws(() => parseSynchroFlags({ 'mcs-away-consumer-grace': 'long' }), /--mcs-away-consumer-grace must be a duration like 500ms/);
});

t.test('--mcs-allow-system-services: the system Services the operator lets be dispatched', async (t) => {
  t.equal(mcs({}).allowedSystemServices, undefined, 'none by default');
  t.same(mcs({ 'mcs-allow-system-services': 'kube-public, default/kubernetes' }).allowedSystemServices, ['kube-public', 'default/kubernetes']);
  t.throws(() => parseSynchroFlags({ 'mcs-allow-system-services': 'Kube System' }), /--mcs-allow-system-services: "Kube System" is not a namespace or namespace\/name/);
});

t.test('--initial-sync-concurrency: 32 by default, at least 1', async (t) => {
  t.equal(parseSynchroFlags({}).initialSyncConcurrency, 32);
  t.equal(parseSynchroFlags({ 'initial-sync-concurrency': '4' }).initialSyncConcurrency, 4);
  t.throws(() => parseSynchroFlags({ 'initial-sync-concurrency': '0' }), new UsageError('--initial-sync-concurrency must be at least 1'));
});
