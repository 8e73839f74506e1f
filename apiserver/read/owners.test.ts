import t from 'tap';
import type { Test } from 'tap';
import type { ResourceInfo } from '../discovery/catalog.ts';
import { negotiateOutput } from '../endpoints/negotiate.ts';
import { parseListParams } from './params.ts';
import { toListQuery } from './list-query.ts';

const pods: ResourceInfo = { group: '', version: 'v1', resource: 'pods', kind: 'Pod', singularName: 'pod', namespaced: true, clusters: ['a', 'b'] };
const parse = (qs: string, verb: 'list' | 'watch' = 'list') => parseListParams(new URLSearchParams(qs), verb, pods, { maxLimit: 1000 });
const query = (qs: string) => toListQuery({ verb: 'list', view: {}, info: pods, params: parse(qs), output: negotiateOutput(undefined, 'list') });
const fails = (t: Test, qs: string, re: RegExp, verb: 'list' | 'watch' = 'list') => t.throws(() => parse(qs, verb), { code: 400, reason: 'BadRequest', message: re }, qs);
const label = (s: string) => `labelSelector=${encodeURIComponent(s)}`;

t.test('owner name, group-resource and seniority: parameters and label keys', async (t) => {
  t.same(query('ownerName=web&ownerGR=deployments.apps&ownerSeniority=1').owners, { names: ['web'], group: 'apps', resource: 'deployments', seniority: 1 });
  t.same(query(label('search.panoptes.io/ownerName=web,search.panoptes.io/ownerGR=deployments.apps,search.panoptes.io/ownerSeniority=any')).owners, { names: ['web'], group: 'apps', resource: 'deployments', seniority: 'any' });
  t.same(query('ownerName=web,api&ownerGR=replicasets.apps').owners, { names: ['web', 'api'], group: 'apps', resource: 'replicasets', seniority: 0 }, 'seniority 0 by default, as Clusterpedia');
  t.same(query('ownerName=n1&ownerGR=nodes').owners, { names: ['n1'], group: '', resource: 'nodes', seniority: 0 }, 'a core resource has no group');
  t.same(query(`ownerGR=deployments.apps&${label('search.panoptes.io/ownerName in (web,api)')}&ownerName=web`).owners?.names, ['web'], 'parameter and label key intersect');
  const byUid = query('ownerUID=u-1&ownerSeniority=1');
  t.same([byUid.ownerUIDs, byUid.owners], [undefined, { uids: ['u-1'], seniority: 1 }]);
  const direct = query('ownerUID=u-1&ownerSeniority=0');
  t.same([direct.ownerUIDs, direct.owners], [['u-1'], undefined], 'ownerUID at seniority 0 is the owner uid column alone');
  t.doesNotThrow(() => parse('ownerUID=u-1&ownerSeniority=0', 'watch'), 'and may be watched');
});

t.test('malformed or uncombinable owner terms are 400s that say why', async (t) => {
  fails(t, 'ownerName=web', /ownerName needs ownerGR/);
  fails(t, 'ownerGR=deployments.apps', /ownerGR applies to ownerName only/);
  fails(t, 'ownerSeniority=1', /ownerSeniority needs ownerName/);
  fails(t, 'ownerName=web&ownerGR=deployments.apps&ownerUID=u', /ownerName and ownerUID cannot be combined/);
  fails(t, 'ownerName=web&ownerGR=Deployments', /ownerGR: "Deployments" is not a group-resource/);
  fails(t, 'ownerName=web&ownerGR=deployments.apps,replicasets.apps', /ownerGR: give one value/);
  fails(t, `ownerName=web&ownerGR=deployments.apps&${label('search.panoptes.io/ownerGR=replicasets.apps')}`, /ownerGR: give one value/);
  fails(t, 'ownerName=web&ownerGR=deployments.apps&ownerSeniority=5', /ownerSeniority: "5" is not a seniority: 0 to 4, or any/);
  fails(t, 'ownerName=web&ownerGR=deployments.apps&ownerSeniority=-1', /is not a seniority/);
  fails(t, 'ownerName=a/b&ownerGR=deployments.apps', /is not a valid owner name/);
  fails(t, label('search.panoptes.io/ownerSeniority!=1'), /supports only =, == and in/);
  fails(t, 'ownerName=web&ownerGR=deployments.apps&ownerSeniority=1', /cannot be combined with watch/, 'watch');
  fails(t, 'ownerUID=u&ownerSeniority=any', /cannot be combined with watch/, 'watch');
});
