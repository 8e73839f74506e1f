// Every combination of event type × stored state × uid × upstream rv × API version, each
// with the changes it must write: the whole idempotence contract of applyBatch in one table.
import t from 'tap';
import { alreadyApplied, decide, isNewer, type IncomingEvent, type StoredState } from './decide.ts';

type Kind = 'ADDED' | 'MODIFIED' | 'DELETED' | 'RECONCILE';
type Stored = 'none' | 'same uid' | 'other uid';
type Rel = 'older' | 'equal' | 'newer';
type Ver = 'same version' | 'other version';
/** Expected changes: type and whose object is served (`event` or `stored`). */
type Out = Array<`${'ADDED' | 'MODIFIED' | 'DELETED'} ${'event' | 'stored'}`>;

const storedState = (uid: string): StoredState => ({ uid, upstreamRv: '100', version: 'v1', object: { metadata: { name: 'p', uid, resourceVersion: '7' } } });

function incoming(kind: Kind, uid: string, rel: Rel, ver: Ver): IncomingEvent {
  const upstreamRv = kind === 'RECONCILE' ? '' : rel === 'older' ? '99' : rel === 'equal' ? '100' : '101';
  return {
    type: kind === 'RECONCILE' ? 'DELETED' : kind,
    version: ver === 'same version' ? 'v1' : 'v2',
    uid,
    upstreamRv,
    object: kind === 'RECONCILE' ? { metadata: { name: 'p', uid } } : { metadata: { name: 'p', uid, resourceVersion: upstreamRv } },
  };
}

/** [stored, event type, rv relative to stored, version, expected]; `*` rows hold for every rel and version. */
const table: Array<[Stored, Kind, Rel | '*', Ver | '*', Out]> = [
  // Nothing stored: any object event adds it; a delete has nothing to delete.
  ['none', 'ADDED', '*', '*', ['ADDED event']],
  ['none', 'MODIFIED', '*', '*', ['ADDED event']],
  ['none', 'DELETED', '*', '*', []],
  ['none', 'RECONCILE', '*', '*', []],
  // The same object stored: only newer events write; the same rv at another version is re-served.
  ['same uid', 'ADDED', 'older', '*', []],
  ['same uid', 'ADDED', 'equal', 'same version', []],
  ['same uid', 'ADDED', 'equal', 'other version', ['MODIFIED event']],
  ['same uid', 'ADDED', 'newer', '*', ['MODIFIED event']],
  ['same uid', 'MODIFIED', 'older', '*', []],
  ['same uid', 'MODIFIED', 'equal', 'same version', []],
  ['same uid', 'MODIFIED', 'equal', 'other version', ['MODIFIED event']],
  ['same uid', 'MODIFIED', 'newer', '*', ['MODIFIED event']],
  ['same uid', 'DELETED', 'older', '*', []],
  ['same uid', 'DELETED', 'equal', '*', []],
  ['same uid', 'DELETED', 'newer', '*', ['DELETED event']],
  ['same uid', 'RECONCILE', '*', '*', ['DELETED stored']],
  // Another object stored under the name: older events of any uid are replays (write nothing);
  // a newer one is a re-creation (or a delete) we did not see happen.
  ['other uid', 'ADDED', 'older', '*', []],
  ['other uid', 'ADDED', 'equal', '*', []],
  ['other uid', 'ADDED', 'newer', '*', ['DELETED stored', 'ADDED event']],
  ['other uid', 'MODIFIED', 'older', '*', []],
  ['other uid', 'MODIFIED', 'equal', '*', []],
  ['other uid', 'MODIFIED', 'newer', '*', ['DELETED stored', 'ADDED event']],
  ['other uid', 'DELETED', 'older', '*', []],
  ['other uid', 'DELETED', 'equal', '*', []],
  ['other uid', 'DELETED', 'newer', '*', ['DELETED stored']],
  ['other uid', 'RECONCILE', '*', '*', []],
];

const rels: Rel[] = ['older', 'equal', 'newer'];
const vers: Ver[] = ['same version', 'other version'];

t.test('decide: every combination', async (t) => {
  let cases = 0;
  for (const stored of ['none', 'same uid', 'other uid'] as Stored[]) {
    for (const kind of ['ADDED', 'MODIFIED', 'DELETED', 'RECONCILE'] as Kind[]) {
      for (const rel of rels) {
        for (const ver of vers) {
          const row = table.find(([s, k, r, v]) => s === stored && k === kind && (r === '*' || r === rel) && (v === '*' || v === ver));
          if (!row) {
            t.fail(`no table row for ${stored} ${kind} ${rel} ${ver}`);
            continue;
          }
          const s = stored === 'none' ? null : storedState('A');
          const e = incoming(kind, stored === 'other uid' ? 'B' : 'A', rel, ver);
          const got = decide(s, e).map((d) => {
            const whose = d.object === e.object ? 'event' : d.object === s?.object ? 'stored' : 'neither';
            return `${d.type} ${whose}`;
          });
          t.same(got, row[4], `${stored}, ${kind}, ${rel}, ${ver}`);
          cases++;
        }
      }
    }
  }
  t.equal(cases, 3 * 4 * 3 * 2);
});

t.test('decide: a change carries the identity of the object it serves', async (t) => {
  const s = storedState('A');
  const [del, add] = decide(s, incoming('ADDED', 'B', 'newer', 'other version'));
  t.match(del, { type: 'DELETED', uid: 'A', upstreamRv: '100', version: 'v1' });
  t.match(add, { type: 'ADDED', uid: 'B', upstreamRv: '101', version: 'v2' });
  t.same(decide(s, { ...incoming('RECONCILE', '', 'equal', 'same version') }).map((d) => [d.type, d.uid]), [['DELETED', 'A']], 'a reconcile delete without uid deletes what is stored');
});

t.test('isNewer', async (t) => {
  t.ok(isNewer('10', '9'), 'numbers compare as integers, not text');
  t.notOk(isNewer('9', '10'));
  t.notOk(isNewer('10', '10'));
  t.ok(isNewer('18446744073709551616', '18446744073709551615'), 'beyond 2^64');
  t.ok(isNewer('', '10'), 'an event without rv is newer');
  t.ok(isNewer('b', 'a'), 'opaque rvs: any other value is newer');
  t.notOk(isNewer('a', 'a'));
});

t.test('alreadyApplied: the events of a batch up to the one storage holds (opaque rvs replayed after a lost commit answer)', async (t) => {
  const ev = (rv: string, opts: Partial<IncomingEvent> = {}): IncomingEvent => ({ type: 'MODIFIED', version: 'v1', uid: 'u', upstreamRv: rv, object: { metadata: { name: 'p', uid: 'u', resourceVersion: rv } }, ...opts });
  const stored = (rv: string, version = 'v1'): StoredState => ({ uid: 'u', upstreamRv: rv, version, object: { metadata: { name: 'p' } } });
  const run = (held: StoredState | null, events: IncomingEvent[], key = 'k') => [...alreadyApplied(events.map((incoming) => ({ key, incoming })), () => held)].sort();
  t.same(run(stored('c'), [ev('a'), ev('b'), ev('c')]), [0, 1, 2], 'storage holds the last: all three were applied');
  t.same(run(stored('b'), [ev('a'), ev('b'), ev('c')]), [0, 1], 'the events after the stored one are new');
  t.same(run(stored('x'), [ev('a'), ev('b')]), [], 'an rv storage never held: nothing skipped');
  t.same(run(null, [ev('a')]), [], 'nothing stored');
  t.same(run(stored(''), [ev(''), ev('')]), [], 'no rv: never taken for a replay');
  t.same(run(stored('c', 'v1'), [ev('c', { version: 'v2' })]), [], 'the same object at another version is served again, not skipped');
  t.same(run(stored('c'), [ev('c', { uid: 'other' })]), [], 'another uid is not the stored object');
  t.same(run(stored('c'), [ev('c', { type: 'DELETED' })]), [], 'a delete is never what storage holds');
  const two = [...alreadyApplied([{ key: 'a', incoming: ev('c') }, { key: 'b', incoming: ev('a') }, { key: 'a', incoming: ev('d') }], (k) => (k === 'a' ? stored('c') : stored('z')))];
  t.same(two, [0], 'per key');
});
