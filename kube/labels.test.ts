import t from 'tap';
import { formatLabelSelector, matchesLabels, parseLabelSelector, SelectorError } from './labels.ts';

t.test('parses every operator', async (t) => {
  t.same(parseLabelSelector(''), []);
  t.same(parseLabelSelector('app=web'), [{ key: 'app', operator: 'in', values: ['web'] }]);
  t.same(parseLabelSelector('app==web'), [{ key: 'app', operator: 'in', values: ['web'] }]);
  t.same(parseLabelSelector('app!=web'), [{ key: 'app', operator: 'notin', values: ['web'] }]);
  t.same(parseLabelSelector('tier in (a, b)'), [{ key: 'tier', operator: 'in', values: ['a', 'b'] }]);
  t.same(parseLabelSelector('tier notin (a,b)'), [{ key: 'tier', operator: 'notin', values: ['a', 'b'] }]);
  t.same(parseLabelSelector('app'), [{ key: 'app', operator: 'exists', values: [] }]);
  t.same(parseLabelSelector('!app'), [{ key: 'app', operator: '!', values: [] }]);
  t.same(parseLabelSelector('gen>3,gen<10'), [
    { key: 'gen', operator: 'gt', values: ['3'] },
    { key: 'gen', operator: 'lt', values: ['10'] },
  ]);
  t.same(parseLabelSelector(' app = web , example.com/team in (x) , !legacy '), [
    { key: 'app', operator: 'in', values: ['web'] },
    { key: 'example.com/team', operator: 'in', values: ['x'] },
    { key: 'legacy', operator: '!', values: [] },
  ]);
  t.same(parseLabelSelector('app='), [{ key: 'app', operator: 'in', values: [''] }], 'empty value is valid');
  t.same(parseLabelSelector('search.panoptes.io/clusters in (a,b)'), [{ key: 'search.panoptes.io/clusters', operator: 'in', values: ['a', 'b'] }]);
});

t.test('rejects malformed selectors with a 400 SelectorError', async (t) => {
  for (const bad of ['app=web,', ',app', 'app in (a', 'app in a', '=web', 'app=we b', '!', '!app=x', 'app>x', 'app notin', 'a b', 'a=(b)', 'Bad_Prefix!/x=y', 'a/b/c=d', 'x=' + 'v'.repeat(64), '-a=b']) {
    t.throws(() => parseLabelSelector(bad), SelectorError, bad);
    try {
      parseLabelSelector(bad);
    } catch (err) {
      t.equal((err as SelectorError).code, 400, `${bad} is a 400`);
      t.equal((err as SelectorError).reason, 'BadRequest');
    }
  }
});

t.test('matches as kube-apiserver does', async (t) => {
  const web = { app: 'web', tier: 'front', gen: '5' };
  const m = (s: string, labels?: Record<string, string>) => matchesLabels(parseLabelSelector(s), labels);
  t.ok(m('app=web', web));
  t.notOk(m('app=db', web));
  t.ok(m('app!=db', web));
  t.ok(m('app!=db', {}), '!= matches objects without the key');
  t.ok(m('app notin (db)', undefined), 'notin matches objects without labels');
  t.ok(m('tier in (front,back)', web));
  t.notOk(m('tier in (back)', web));
  t.ok(m('app', web));
  t.notOk(m('!app', web));
  t.ok(m('!missing', web));
  t.ok(m('gen>4,gen<6', web));
  t.notOk(m('gen>5', web));
  t.notOk(m('gen>1', { gen: 'x' }), 'gt needs an integer value');
  // strconv.ParseInt(v, 10, 64): the whole value, base 10, within int64.
  for (const v of ['5a', '7e1', '10x', '1.5', '0x10', '1_000', ' 5', '', '9223372036854775808', '-9223372036854775809']) {
    t.notOk(m('gen>3', { gen: v }) || m('gen<3', { gen: v }), `${JSON.stringify(v)} is not an int64: never matches`);
  }
  t.ok(m('gen>3', { gen: '007' }), 'leading zeros parse');
  t.ok(m('gen>3', { gen: '+7' }), 'a plus sign parses');
  t.ok(m('gen<0', { gen: '-7' }), 'a minus sign parses');
  t.ok(m('gen>9223372036854775806', { gen: '9223372036854775807' }), 'int64 max, compared exactly');
  t.notOk(m('gen>9007199254740993', { gen: '9007199254740992' }), 'exact above 2^53');
  t.ok(m('gen<-9223372036854775807', { gen: '-9223372036854775808' }), 'int64 min');
  t.ok(m('', web), 'empty selector selects everything');
  t.notOk(m('app=web,tier=back', web), 'requirements are ANDed');
});

t.test('an empty value set is the empty value', async (t) => {
  t.same(parseLabelSelector('a in ()'), [{ key: 'a', operator: 'in', values: [''] }]);
  t.same(parseLabelSelector('a notin (),b'), [{ key: 'a', operator: 'notin', values: [''] }, { key: 'b', operator: 'exists', values: [] }]);
});

t.test('Gt and Lt bounds must parse as int64', async (t) => {
  for (const bad of ['gen>x', 'gen>1.5', 'gen<9223372036854775808', 'gen>1e3', 'gen>']) t.throws(() => parseLabelSelector(bad), SelectorError, bad);
  t.same(parseLabelSelector('gen>+5,gen<-9223372036854775808')[1], { key: 'gen', operator: 'lt', values: ['-9223372036854775808'] });
});

t.test('formats back to a canonical string', async (t) => {
  const s = 'app=web,tier in (a,b),x!=y,k notin (1,2),e,!n,g>1,l<2';
  t.equal(formatLabelSelector(parseLabelSelector(s)), s);
});
