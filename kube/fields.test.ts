import t from 'tap';
import { checkFieldSelector, FieldSelectorError, kindFieldValues, matchesFields, parseFieldSelector } from './fields.ts';

t.test('parses =, == and != with escapes', async (t) => {
  t.same(parseFieldSelector(''), []);
  t.same(parseFieldSelector('metadata.name=web'), [{ field: 'metadata.name', operator: '=', value: 'web' }]);
  t.same(parseFieldSelector('metadata.name==web,status.phase!=Running'), [
    { field: 'metadata.name', operator: '=', value: 'web' },
    { field: 'status.phase', operator: '!=', value: 'Running' },
  ]);
  t.same(parseFieldSelector('a=x\\,y\\=z\\\\'), [{ field: 'a', operator: '=', value: 'x,y=z\\' }]);
  t.same(parseFieldSelector('spec.nodeName='), [{ field: 'spec.nodeName', operator: '=', value: '' }]);
});

t.test('rejects malformed selectors', async (t) => {
  for (const bad of ['name', '=x', 'a=b=c', 'a=\\q']) t.throws(() => parseFieldSelector(bad), FieldSelectorError, bad);
});

t.test('knows each kind’s selectable fields', async (t) => {
  t.doesNotThrow(() => checkFieldSelector('', 'pods', parseFieldSelector('spec.nodeName=n1,status.phase=Running,metadata.namespace=a')));
  t.throws(() => checkFieldSelector('', 'configmaps', parseFieldSelector('spec.nodeName=n1')), { code: 400, message: 'field label not supported: spec.nodeName' });
  t.doesNotThrow(() => checkFieldSelector('', 'secrets', parseFieldSelector('type=Opaque')));
  t.doesNotThrow(() => checkFieldSelector('', 'events', parseFieldSelector('involvedObject.name=web')));
  t.same(kindFieldValues('', 'nodes', { spec: {} }), { 'spec.unschedulable': 'false' });
});

t.test('matches objects', async (t) => {
  const pod = { metadata: { name: 'web', namespace: 'a' }, spec: { nodeName: 'n1' }, status: { phase: 'Running' } };
  const m = (s: string) => matchesFields(parseFieldSelector(s), '', 'pods', pod);
  t.ok(m('metadata.name=web'));
  t.notOk(m('metadata.name=db'));
  t.ok(m('metadata.name!=db,spec.nodeName=n1'));
  t.notOk(m('status.phase!=Running'));
  t.ok(m('spec.schedulerName='), 'an unset field is the empty string');
});
