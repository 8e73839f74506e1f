// The metrics file and the request selector: what they accept, what they mean, and the
// message each mistake gets.
import t from 'tap';
import { invalidLabelKey } from '../../kube/labels.ts';
import { FileError, parseJsonPath, parseResourceName, parseRules } from './rules.ts';
import { combine, parseSelection } from './selector.ts';

t.test('field.panoptes.io keys are valid label keys (they travel in an HPA metric.selector)', async (t) => {
  for (const f of ['status.phase', 'spec.nodeName', 'metadata.namespace', 'involvedObject.resourceVersion', 'status.successful', 'spec.unschedulable']) {
    t.equal(invalidLabelKey(`field.panoptes.io/${f}`), undefined, f);
  }
  t.equal(invalidLabelKey('search.panoptes.io/all-namespaces'), undefined);
});

t.test('request selectors split into labels, fields and search', async (t) => {
  const s = parseSelection('app=web,tier notin (x),field.panoptes.io/status.phase=Pending,field.panoptes.io/spec.nodeName notin (n1,n2),search.panoptes.io/clusters in (a,b),search.panoptes.io/clusters!=b,search.panoptes.io/namespaces=ns1,search.panoptes.io/names notin (x),search.panoptes.io/ownerUID=u1');
  t.same(s.labels.map((r) => r.key), ['app', 'tier']);
  t.same(s.fields, [
    { field: 'status.phase', operator: '=', value: 'Pending' },
    { field: 'spec.nodeName', operator: '!=', value: 'n1' },
    { field: 'spec.nodeName', operator: '!=', value: 'n2' },
  ]);
  t.same(s.clusters, { in: ['a', 'b'], notIn: ['b'] });
  t.same(s.namespaces, { in: ['ns1'], notIn: [] });
  t.same(s.names, { notIn: ['x'] });
  t.same(s.ownerUIDs, ['u1']);
  t.equal(parseSelection('search.panoptes.io/all-namespaces').allNamespaces, true);
  t.equal(parseSelection('search.panoptes.io/all-namespaces=true').allNamespaces, true);
  t.same(parseSelection('search.panoptes.io/clusters in (a,b),search.panoptes.io/clusters in (b,c)').clusters.in, ['b'], 'repeated includes intersect');

  const bad: Array<[string, RegExp]> = [
    ['search.panoptes.io/all-namespaces=false', /takes no value or "=true"/],
    ['search.panoptes.io/clusters', /supports =, ==, in, != and notin/],
    ['search.panoptes.io/ownerUID!=x', /supports =, == and in/],
    ['search.panoptes.io/zones=a', /unknown search key "search.panoptes.io\/zones"/],
    ['search.panoptes.io/clusters=Bad_Name', /not a valid cluster name/],
    ['field.panoptes.io/status.phase in (a,b)', /matches one/],
    ['field.panoptes.io/status.phase', /field selector term/],
    ['field.panoptes.io/status.phase>3', /field selector term/],
    ['search.panoptes.io/all-namespaces,search.panoptes.io/namespaces=a', /either/],
    ['app in (', /unable to parse/],
    ['a b', /unable to parse/],
  ];
  for (const [sel, msg] of bad) t.throws(() => parseSelection(sel), { code: 400, message: msg }, sel);
});

t.test('a rule and a request combine: AND, the request scope replaces the rule scope', async (t) => {
  const rule = parseSelection('team=data,search.panoptes.io/clusters in (a,b),search.panoptes.io/namespaces=batch');
  const req = parseSelection('app=w,search.panoptes.io/clusters!=b');
  const c = combine(rule, req);
  t.same(c.labels.map((r) => r.key), ['team', 'app']);
  t.same(c.clusters, { in: ['a', 'b'], notIn: ['b'] });
  t.same(c.namespaces.in, ['batch'], 'rule scope kept when the request names none');
  t.same(combine(rule, parseSelection('search.panoptes.io/namespaces=x')).namespaces.in, ['x']);
  const all = combine(rule, parseSelection('search.panoptes.io/all-namespaces'));
  t.equal(all.allNamespaces, true);
  t.equal(all.namespaces.in, undefined);
});

t.test('resource names and JSON paths', async (t) => {
  t.same(parseResourceName('pods'), { group: '', resource: 'pods' });
  t.same(parseResourceName('jobs.batch'), { group: 'batch', resource: 'jobs' });
  t.same(parseResourceName('widgets.demo.panoptes.io'), { group: 'demo.panoptes.io', resource: 'widgets' });
  t.equal(parseResourceName('Pods'), undefined);
  t.equal(parseResourceName('pods.'), undefined);
  t.same(parseJsonPath('.status.readyReplicas'), ['status', 'readyReplicas']);
  t.same(parseJsonPath('status.readyReplicas'), ['status', 'readyReplicas']);
  t.same(parseJsonPath(".metadata.annotations['example.com/tier']"), ['metadata', 'annotations', 'example.com/tier']);
  t.same(parseJsonPath('.metadata.labels["app"].x'), ['metadata', 'labels', 'app', 'x']);
  for (const bad of ['', '.', '.a..b', '.a[0]', '.a[\'x"]', '.a b', '{.a}']) t.throws(() => parseJsonPath(bad), /JSON path|empty/, JSON.stringify(bad));
});

t.test('the metrics file: rules, defaults, and a clear message for every mistake', async (t) => {
  const set = parseRules(`
apiVersion: panoptes.io/v1alpha1
kind: ExternalMetrics
defaults: { whenClusterNotReady: Fail }
metrics:
  - name: pending-jobs
    resource: jobs.batch
    namespaces: all
    match:
      - { path: .status.completionTime, operator: DoesNotExist }
      - { path: .status.active, operator: Gt, values: [0] }
  - name: ready
    resource: deployments.apps
    labelSelector: app=web,search.panoptes.io/clusters notin (hub)
    fieldSelector: metadata.name=web
    aggregate: avg
    path: .status.readyReplicas
    perCluster: true
    whenClusterNotReady: ServeLastKnown
  - name: in-two
    resource: pods
    namespaces: [a, b]
`);
  t.same([...set.rules.keys()], ['pending-jobs', 'ready', 'in-two']);
  t.same(set.problems, []);
  const pj = set.rules.get('pending-jobs')!;
  t.match(pj, { group: 'batch', resource: 'jobs', aggregate: 'count', perCluster: false, whenClusterNotReady: 'Fail' });
  t.equal(pj.selection.allNamespaces, true);
  t.same(pj.match, [
    { path: ['status', 'completionTime'], operator: 'DoesNotExist', values: [] },
    { path: ['status', 'active'], operator: 'Gt', values: ['0'] },
  ]);
  const ready = set.rules.get('ready')!;
  t.match(ready, { aggregate: 'avg', path: ['status', 'readyReplicas'], perCluster: true, whenClusterNotReady: 'ServeLastKnown' });
  t.same(ready.selection.clusters.notIn, ['hub']);
  t.same(ready.selection.fields, [{ field: 'metadata.name', operator: '=', value: 'web' }]);
  t.same(set.rules.get('in-two')!.selection.namespaces.in, ['a', 'b']);

  const bad = (rule: string) => parseRules(`metrics:\n  - ${rule}\n`);
  const cases: Array<[string, RegExp]> = [
    ['{ name: x, resource: pods, agregate: sum }', /unknown key "agregate"/],
    ['{ name: X!, resource: pods }', /must be a map|name/],
    ['{ name: x, resource: Pods }', /resource "Pods" must be <resource>/],
    ['{ name: x, resource: pods, aggregate: median }', /aggregate must be one of count, sum, min, max, avg/],
    ['{ name: x, resource: pods, aggregate: sum }', /path \(the number to sum\) must be a non-empty string/],
    ['{ name: x, resource: pods, path: .a }', /count takes no path/],
    ['{ name: x, resource: pods, aggregate: sum, path: ".a[0]" }', /array indexes are not supported/],
    ['{ name: x, resource: pods, labelSelector: "a b" }', /unable to parse requirement/],
    ['{ name: x, resource: pods, fieldSelector: "spec.nope=1" }', /field label not supported: spec.nope/],
    ['{ name: x, resource: jobs.batch, fieldSelector: "status.phase=1" }', /field label not supported: status.phase/],
    ['{ name: x, resource: pods, namespaces: everything }', /namespaces must be "all" or a list/],
    ['{ name: x, resource: pods, namespaces: all, labelSelector: "search.panoptes.io/namespaces=a" }', /either with namespaces or in labelSelector/],
    ['{ name: x, resource: pods, perCluster: yes please }', /perCluster must be true or false/],
    ['{ name: x, resource: pods, whenClusterNotReady: Hold }', /whenClusterNotReady must be ServeLastKnown or Fail/],
    ['{ name: x, resource: pods, match: [{ path: .a, operator: Equals, values: [1] }] }', /operator must be one of In, NotIn, Exists, DoesNotExist, Gt, Lt/],
    ['{ name: x, resource: pods, match: [{ path: .a, operator: In }] }', /In needs values/],
    ['{ name: x, resource: pods, match: [{ path: .a, operator: Exists, values: [1] }] }', /Exists takes no values/],
    ['{ name: x, resource: pods, match: [{ path: .a, operator: Gt, values: [abc] }] }', /Gt needs exactly one number/],
    ['{ name: x, resource: pods, match: [{ path: .a, op: In }] }', /unknown key "op"/],
  ];
  for (const [rule, msg] of cases) {
    const s = parseRules(`metrics:\n  - ${rule}\n`);
    t.equal(s.rules.size, 0, rule);
    t.match(s.problems[0], msg, rule);
  }
  const named = bad('{ name: x, resource: pods, aggregate: median }');
  t.match(named.invalid.get('x'), /^metrics\[0\] \(x\): aggregate/, 'an invalid rule is known by name');
  const dup = parseRules('metrics:\n  - { name: x, resource: pods }\n  - { name: x, resource: nodes }\n');
  t.equal(dup.rules.get('x')?.resource, 'pods');
  t.match(dup.problems[0], /duplicate name/);
  t.same([...parseRules('').rules], [], 'an empty file: no rules');
  for (const [text, msg] of [
    ['metrics: [', /not valid YAML/],
    ['- a', /expected a map/],
    ['rules: []', /unknown top-level key "rules"/],
    ['metrics: {}', /metrics must be a list/],
    ['defaults: { whenClusterNotReady: Maybe }', /must be ServeLastKnown or Fail/],
  ] as const) {
    t.throws(() => parseRules(text), FileError, text);
    t.throws(() => parseRules(text), { message: msg }, text);
  }
});
