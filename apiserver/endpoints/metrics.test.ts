// The in-flight gauge's kind of a request, from its method and URL alone (before routing): a
// watch (by its parameter as strconv.ParseBool reads it, or by the legacy /watch/ path) is
// long-running and not counted.
import t from 'tap';
import { inflightKind } from './metrics.ts';

t.test('a request is readOnly or mutating; a watch is not counted', async (t) => {
  t.equal(inflightKind('GET', '/api/v1/pods', ''), 'readOnly');
  t.equal(inflightKind('HEAD', '/api/v1/pods', ''), 'readOnly');
  for (const v of ['1', 't', 'T', 'TRUE', 'true', 'True']) t.equal(inflightKind('GET', '/api/v1/pods', `watch=${v}`), undefined, `watch=${v}`);
  for (const v of ['0', 'false', 'yes', '']) t.equal(inflightKind('GET', '/api/v1/pods', `watch=${v}`), 'readOnly', `watch=${v}: not a watch`);
  t.equal(inflightKind('GET', '/api/v1/watch/namespaces/default/pods', ''), undefined, 'legacy watch path');
  t.equal(inflightKind('GET', '/apis/apps/v1beta2/watch/deployments', ''), undefined, 'legacy watch path of a group');
  t.equal(inflightKind('GET', '/api/v1/namespaces/watch/pods', ''), 'readOnly', 'a namespace named watch');
  for (const m of ['POST', 'PUT', 'PATCH', 'DELETE']) t.equal(inflightKind(m, '/api/v1/pods', 'watch=1'), 'mutating', m);
});
