// --mcs-resync-interval of synchro and all-in-one: the dispatcher's full pass, parsed into
// startSynchro's options (60 s by default), a bad or too short value a usage error.
import t from 'tap';
import { UsageError } from '../command.ts';
import { parseSynchroFlags } from './synchro-flags.ts';

t.test('--mcs-resync-interval: the period of the dispatcher\'s full pass', async (t) => {
  t.same(parseSynchroFlags({}).mcs, { resyncIntervalMs: 60_000 }, 'a minute by default');
  t.same(parseSynchroFlags({ 'mcs-resync-interval': '2s' }).mcs, { resyncIntervalMs: 2000 });
  t.same(parseSynchroFlags({ 'mcs-resync-interval': '10m' }).mcs, { resyncIntervalMs: 600_000 });
  t.throws(() => parseSynchroFlags({ 'mcs-resync-interval': '500ms' }), new UsageError('--mcs-resync-interval must be at least 1s'));
  t.throws(() => parseSynchroFlags({ 'mcs-resync-interval': 'often' }), /--mcs-resync-interval must be a duration like 500ms/);
});
