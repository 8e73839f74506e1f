// Commit notification payloads: a change round-trips whole; an rv alone, an earlier release's
// payload and anything malformed are understood as "read the log" (never a wrong change).
import t from 'tap';
import { changePayload, parsePayload } from './notify-payload.ts';

const row = { rv: 42, type: 'MODIFIED', cluster: 'c', grp: 'apps', version: 'v1', resource: 'deployments', namespace: 'n', name: 'd', uid: 'u', object: '{"a":"\\u00e9\\n"}', prev_object: '{}', ts: 1700000000000, epoch: 3 };

t.test('a change round-trips', async (t) => {
  t.same(parsePayload(changePayload(row)), {
    rv: 42,
    change: { rv: 42, type: 'MODIFIED', cluster: 'c', group: 'apps', version: 'v1', resource: 'deployments', namespace: 'n', name: 'd', uid: 'u', object: row.object, prevObject: '{}', ts: 1700000000000, epoch: 3 },
  });
  t.same(parsePayload(changePayload({ ...row, type: 'ADDED', prev_object: null, epoch: null })).change, { ...parsePayload(changePayload(row)).change, type: 'ADDED', prevObject: null, epoch: null });
});

t.test('an rv alone, or anything not understood, carries no change', async (t) => {
  t.same(parsePayload('17'), { rv: 17 });
  t.ok(Number.isNaN(parsePayload(undefined).rv));
  t.ok(Number.isNaN(parsePayload('{not json').rv));
  const broken = JSON.parse(changePayload(row)) as Record<string, unknown>;
  for (const [field, value] of [['type', 'BOOKMARK'], ['object', null], ['rv', '42'], ['ts', 1.5], ['prevObject', 7]] as const) {
    const p = parsePayload(JSON.stringify({ ...broken, [field]: value }));
    t.equal(p.change, undefined, `${field}: ${JSON.stringify(value)}`);
  }
  t.same(parsePayload(JSON.stringify({ ...broken, type: 'BOOKMARK' })), { rv: 42 }, 'its rv still wakes the poller');
});
