// --member-http2 (env PANOPTES_MEMBER_HTTP2; DISABLE_HTTP2 as client-go reads it) of synchro,
// apiserver and all-in-one: on by default, off by the flag or either variable, a value other
// than true or false a usage error, and synchro's options carry it.
import t from 'tap';
import { UsageError } from '../command.ts';
import { memberHttp2Flag } from './member-http2-flag.ts';
import { parseSynchroFlags } from './synchro-flags.ts';

t.test('the flag, else the environment; on by default; DISABLE_HTTP2 turns it off', async (t) => {
  t.equal(memberHttp2Flag({}, {}), true, 'on by default');
  t.equal(memberHttp2Flag({ 'member-http2': 'false' }, {}), false);
  t.equal(memberHttp2Flag({}, { PANOPTES_MEMBER_HTTP2: 'false' }), false);
  t.equal(memberHttp2Flag({ 'member-http2': 'true' }, { PANOPTES_MEMBER_HTTP2: 'false' }), true, 'the flag wins');
  t.equal(memberHttp2Flag({ 'member-http2': 'true' }, { DISABLE_HTTP2: '1' }), false, 'DISABLE_HTTP2 as client-go');
  t.equal(memberHttp2Flag({}, { DISABLE_HTTP2: '' }), true, 'an empty DISABLE_HTTP2 does not count');
  t.throws(() => memberHttp2Flag({ 'member-http2': 'yes' }, {}), UsageError);
  t.equal(parseSynchroFlags({ 'member-http2': 'false' }).memberHttp2, false, 'synchro gets it');
});
