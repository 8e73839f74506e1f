// fuzzyName, createdSince/createdBefore and orderBy as query parameters and as
// search.panoptes.io/ label keys: parsed into the ListQuery, malformed ones a 400 naming them.
import t from 'tap';
import type { Test } from 'tap';
import type { ResourceInfo } from '../discovery/catalog.ts';
import { parseCreatedBound } from './created-range.ts';
import { negotiateOutput } from '../endpoints/negotiate.ts';
import { parseListParams } from './params.ts';
import { toListQuery } from './list-query.ts';

const pods: ResourceInfo = { group: '', version: 'v1', resource: 'pods', kind: 'Pod', singularName: 'pod', namespaced: true, clusters: ['a', 'b'] };
const parse = (qs: string, verb: 'list' | 'get' | 'watch' = 'list') => parseListParams(new URLSearchParams(qs), verb, pods, { maxLimit: 1000 });
const query = (qs: string) => toListQuery({ verb: 'list', view: {}, info: pods, params: parse(qs), output: negotiateOutput(undefined, 'list') });
const fails = (t: Test, qs: string, re: RegExp, verb: 'list' | 'get' | 'watch' = 'list') => t.throws(() => parse(qs, verb), { code: 400, reason: 'BadRequest', message: re }, qs);
const label = (s: string) => `labelSelector=${encodeURIComponent(s)}`;

t.test('fuzzyName', async (t) => {
  t.same(query('fuzzyName=Web').nameContains, ['Web']);
  t.same(query(`fuzzyName=web&${label('search.panoptes.io/fuzzyName=srv,app=x')}`).nameContains, ['srv', 'web'], 'both ways: both hold');
  fails(t, 'fuzzyName=we', /fuzzyName: "we" is too short: a fuzzy name needs 3 letters or digits in a row/);
  fails(t, 'fuzzyName=a-b-c', /fuzzyName: "a-b-c" is too short/);
  fails(t, 'fuzzyName=', /fuzzyName: "" is too short/);
  fails(t, 'fuzzyName=web%25', /fuzzyName: "web%" is not a name substring/);
  fails(t, 'fuzzyName=' + 'a'.repeat(254), /is not a name substring/);
  fails(t, label('search.panoptes.io/fuzzyName in (web,api)'), /search.panoptes.io\/fuzzyName takes one value/);
  fails(t, label('search.panoptes.io/fuzzyName!=web'), /takes one value/);
  t.doesNotThrow(() => parse('fuzzyName=web', 'watch'), 'a watch filters by it too');
});

t.test('createdSince, createdBefore', async (t) => {
  const now = Date.parse('2026-12-01T12:00:00.400Z');
  t.equal(parseCreatedBound('2026-05-01T10:00:00Z', 'x', now), '2026-05-01T10:00:00Z');
  t.equal(parseCreatedBound('2026-05-01T12:00:00+02:00', 'x', now), '2026-05-01T10:00:00Z', 'an offset');
  t.equal(parseCreatedBound('2026-05-01T10:00:00.2Z', 'x', now), '2026-05-01T10:00:01Z', 'a fraction: the next whole second');
  t.equal(parseCreatedBound('2026-05-01', 'x', now), '2026-05-01T00:00:00Z', 'a date');
  t.equal(parseCreatedBound('2026-05-01T100000Z', 'x', now), '2026-05-01T10:00:00Z', 'the label form, without colons');
  t.equal(parseCreatedBound('2h', 'x', now), '2026-12-01T10:00:01Z', 'a duration before now');
  t.equal(parseCreatedBound('1h30m', 'x', now), '2026-12-01T10:30:01Z');
  t.equal(parseCreatedBound('0050-01-01', 'x', now), '0050-01-01T00:00:00Z', 'two-digit years are not 19xx');
  const q = query(`createdSince=2026-01-01T00:00:00Z&createdBefore=2026-06-01&${label('search.panoptes.io/createdSince=2026-02-01,search.panoptes.io/createdBefore=2026-07-01')}`);
  t.same([q.createdSince, q.createdBefore], ['2026-02-01T00:00:00Z', '2026-06-01T00:00:00Z'], 'both ways: the narrower bounds');
  fails(t, 'createdSince=yesterday', /createdSince: "yesterday" is neither a time/);
  fails(t, 'createdSince=1700000000', /neither a time/); // bare numbers: seconds or a year?
  fails(t, 'createdBefore=2026-02-30', /createdBefore: "2026-02-30" is not a valid time/);
  fails(t, 'createdBefore=2026-13-01T00:00:00Z', /not a valid time/);
  fails(t, 'createdSince=2h5x', /createdSince/);
  fails(t, 'createdSince=99999999h', /out of range/);
});

t.test('orderBy', async (t) => {
  t.same(query('orderBy=creationTimestamp%20desc,name').orderBy, [
    { key: 'creationTimestamp', desc: true },
    { key: 'name', desc: false },
  ]);
  t.same(query('orderBy=metadata.name%20DESC&orderBy=cluster').orderBy, [
    { key: 'name', desc: true },
    { key: 'cluster', desc: false },
  ], 'repeated parameters in turn');
  t.same(query("orderBy=status.phase,metadata.labels['app.kubernetes.io/name']%20desc").orderBy, [
    { key: 'path', path: ['status', 'phase'], desc: false },
    { key: 'path', path: ['metadata', 'labels', 'app.kubernetes.io/name'], desc: true },
  ], 'JSON paths');
  t.same(query(label('search.panoptes.io/orderBy=creationTimestamp_desc')).orderBy, [{ key: 'creationTimestamp', desc: true }], 'the label form');
  t.same(query(label('search.panoptes.io/orderBy=status.phase')).orderBy, [{ key: 'path', path: ['status', 'phase'], desc: false }]);
  t.equal(query('orderBy=namespace').orderBy, undefined, 'namespace ascending is the list order');
  fails(t, 'orderBy=', /orderBy: "" is not a sort key/);
  fails(t, 'orderBy=name%20sideways', /orderBy: "name sideways" is not a sort key/);
  fails(t, 'orderBy=a..b', /orderBy: "a..b" is not a sort key/);
  fails(t, 'orderBy=a,b,c,d,e,f', /between 1 and 5 sort keys/);
  fails(t, `orderBy=name&${label('search.panoptes.io/orderBy=cluster')}`, /orderBy is given twice, differently/);
  fails(t, label('search.panoptes.io/orderBy in (name,cluster)'), /takes one value/);
  fails(t, 'orderBy=name', /orderBy applies to lists only: a watch sends events in resourceVersion order/, 'watch');
  fails(t, 'orderBy=name', /orderBy applies to lists only/, 'get');
  fails(t, label('search.panoptes.io/sortBy=name'), /unknown search key.*search.panoptes.io\/orderBy/);
});
