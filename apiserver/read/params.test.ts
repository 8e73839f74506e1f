import t from 'tap';
import type { Test } from 'tap';
import type { ResourceInfo } from '../discovery/catalog.ts';
import { negotiateDiscovery, negotiateOutput } from '../endpoints/negotiate.ts';
import { parseGoDuration } from './duration.ts';
import { toListQuery } from './list-query.ts';
import { parseListParams } from './params.ts';
import type { ResourceRequest } from '../endpoints/request.ts';

const pods: ResourceInfo = { group: '', version: 'v1', resource: 'pods', kind: 'Pod', singularName: 'pod', namespaced: true, clusters: ['a', 'b'] };
const parse = (qs: string, verb: 'list' | 'get' | 'watch' = 'list') => parseListParams(new URLSearchParams(qs), verb, pods, { maxLimit: 1000 });
const fails = (t: Test, qs: string, code: number, re: RegExp, verb: 'list' | 'watch' = 'list') => t.throws(() => parse(qs, verb), { code, message: re }, qs);

t.test('list options as kube-apiserver validates them', async (t) => {
  fails(t, 'resourceVersionMatch=Exact', 422, /resourceVersionMatch is forbidden unless resourceVersion is provided/);
  fails(t, 'resourceVersionMatch=NotOlderThan', 422, /forbidden unless resourceVersion/);
  fails(t, 'resourceVersion=0&resourceVersionMatch=Exact', 422, /"exact" is forbidden for resourceVersion "0"/);
  fails(t, 'resourceVersion=5&resourceVersionMatch=Newest', 422, /Unsupported value/);
  fails(t, 'resourceVersion=5&resourceVersionMatch=Exact&continue=abc', 422, /forbidden when continue is provided/);
  fails(t, 'sendInitialEvents=true', 422, /sendInitialEvents is forbidden for list/);
  fails(t, 'continue=abc&resourceVersion=5', 400, /specifying resource version is not allowed when using continue/);
  t.doesNotThrow(() => parse('continue=abc&resourceVersion=0'), 'continue with rv 0 is fine');
  t.doesNotThrow(() => parse('resourceVersion=5&resourceVersionMatch=NotOlderThan&sendInitialEvents=true', 'watch'), 'watch-list options pass to the watch');
  fails(t, 'resourceVersion=abc', 400, /invalid resource version/);
  fails(t, 'resourceVersion=-1', 400, /invalid resource version/);
  fails(t, 'limit=abc', 400, /invalid limit/);
  fails(t, 'limit=-5', 400, /invalid limit/);
  fails(t, 'limit=99999999999999999999999', 400, /invalid limit/);
  t.equal(parse('limit=5000000').limit, 1000, 'a huge limit is capped at the maximum');
  t.equal(parse('limit=0').limit, undefined, 'limit 0 is no limit');
  fails(t, 'frobnicate=1', 400, /unknown query parameter "frobnicate"/);
  // Booleans as kube decodes them: 0 and false (any case) are false, anything else true.
  for (const [v, want] of [['true', true], ['1', true], ['yes', true], ['', true], ['0', false], ['false', false], ['FaLsE', false]] as const) {
    t.equal(parse(`allowWatchBookmarks=${v}`).allowWatchBookmarks, want, `allowWatchBookmarks=${v}`);
  }
  t.doesNotThrow(() => parse('watch=maybe'), 'never a 400 for a boolean');
  fails(t, 'timeoutSeconds=x', 400, /timeoutSeconds/);
  t.equal(parse('timeout=32s').timeoutMs, 32_000);
  t.equal(parseGoDuration('t', '1m30s'), 90_000);
});

t.test('selectors and search parameters', async (t) => {
  fails(t, 'labelSelector=a%20b', 400, /unable to parse requirement/);
  fails(t, 'fieldSelector=spec.bogus%3Dx', 400, /field label not supported: spec.bogus/);
  fails(t, 'fieldSelector=nooperator', 400, /invalid field selector/);
  const p = parse('labelSelector=app%3Dweb,search.panoptes.io/clusters%20in%20(a,b),search.panoptes.io/namespaces%3Dshop&clusters=b,c&ownerUID=u-1&fieldSelector=spec.nodeName%3Dn1');
  t.same(p.labelSelector, [{ key: 'app', operator: 'in', values: ['web'] }], 'search keys are taken out of the label selector');
  t.same(p.search, { clusters: ['b'], namespaces: ['shop'], ownerUIDs: ['u-1'] }, 'label keys and parameters intersect');
  fails(t, 'labelSelector=search.panoptes.io/clusters!%3Da', 400, /supports only =, == and in/);
  fails(t, 'labelSelector=search.panoptes.io/color%3Da', 400, /unknown search key/);
  fails(t, 'clusters=Bad_Name', 400, /not a valid cluster name/);
  fails(t, 'namespaces=a,,b', 400, /empty value/);
  const req: ResourceRequest = { verb: 'list', view: { cluster: 'a' }, info: pods, namespace: 'shop', params: parse('clusters=a,b&names=x'), output: negotiateOutput(undefined, 'list') };
  t.same(toListQuery(req), { group: '', resource: 'pods', clusters: ['a'], namespaces: ['shop'], names: ['x'] }, 'the view and the path narrow the search');
});

t.test('content negotiation', async (t) => {
  const kubectlTable = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';
  t.match(negotiateOutput(kubectlTable, 'list'), { kind: 'table', metaVersion: 'v1', includeObject: 'Metadata' });
  t.match(negotiateOutput('application/vnd.kubernetes.protobuf,application/json', 'list'), { kind: 'json' }, 'protobuf first, JSON fallback');
  t.match(negotiateOutput('application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json', 'list'), {
    kind: 'partial',
    contentType: 'application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io',
  });
  t.match(negotiateOutput('application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1', 'get'), { kind: 'partial' });
  t.match(negotiateOutput('*/*', 'get'), { kind: 'json' });
  t.match(negotiateOutput(kubectlTable, 'list', 'Object'), { includeObject: 'Object' });
  t.throws(() => negotiateOutput('application/vnd.kubernetes.protobuf', 'list'), { code: 406, reason: 'NotAcceptable' });
  t.throws(() => negotiateOutput('application/yaml', 'list'), { code: 406 });
  t.throws(() => negotiateOutput('application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1', 'list'), { code: 406 }, 'a list is not one object');
  t.throws(() => negotiateOutput(undefined, 'list', 'Everything'), { code: 400 });
  t.match(negotiateDiscovery('application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json', true), { aggregated: true, version: 'v2beta1' });
  t.match(negotiateDiscovery('application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList', true), { aggregated: true, version: 'v2' });
  t.match(negotiateDiscovery('application/json', true), { aggregated: false });
  t.throws(() => negotiateDiscovery('application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList', false), { code: 406 });
});
