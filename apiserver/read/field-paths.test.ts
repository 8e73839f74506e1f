import t from 'tap';
import type { Test } from 'tap';
import type { ResourceInfo } from '../discovery/catalog.ts';
import { parseListParams } from './params.ts';

const deployments: ResourceInfo = { group: 'apps', version: 'v1', resource: 'deployments', kind: 'Deployment', singularName: 'deployment', namespaced: true, clusters: ['a'] };
const pods: ResourceInfo = { ...deployments, group: '', resource: 'pods', kind: 'Pod', singularName: 'pod' };
const parse = (qs: string, info = deployments) => parseListParams(new URLSearchParams(qs), 'list', info, { maxLimit: 1000 });
const fs = (s: string) => `fieldSelector=${encodeURIComponent(s)}`;
const fails = (t: Test, qs: string, re: RegExp) => t.throws(() => parse(qs), { code: 400, reason: 'BadRequest', message: re }, qs);

t.test('JSON path terms in fieldSelector', async (t) => {
  const p = parse(fs(".spec.template.spec.containers[*].image=nginx,.metadata.annotations['a/b'] in (x,y\\,z),!.status.paused,.spec.replicas,.status.phase!=Failed,.a notin (1),metadata.name=web"));
  t.same(p.jsonFields, [
    { path: ['spec', 'template', 'spec', 'containers', null, 'image'], operator: 'in', values: ['nginx'] },
    { path: ['metadata', 'annotations', 'a/b'], operator: 'in', values: ['x', 'y,z'] },
    { path: ['status', 'paused'], operator: '!', values: [] },
    { path: ['spec', 'replicas'], operator: 'exists', values: [] },
    { path: ['status', 'phase'], operator: 'notin', values: ['Failed'] },
    { path: ['a'], operator: 'notin', values: ['1'] },
  ]);
  t.same(p.fieldSelector, [{ field: 'metadata.name', operator: '=', value: 'web' }], 'kube’s terms stay kube’s');
  t.same(parse(fs(".metadata.annotations[\"x=y\"]==v")).jsonFields, [{ path: ['metadata', 'annotations', 'x=y'], operator: 'in', values: ['v'] }], '= inside brackets is part of the key');
});

t.test('label keys field.panoptes.io/<path>', async (t) => {
  const p = parse(`labelSelector=${encodeURIComponent('app=web,field.panoptes.io/status.phase in (Running,Pending),!field.panoptes.io/spec.paused,field.panoptes.io/spec.replicas!=3')}`);
  t.same(p.labelSelector, [{ key: 'app', operator: 'in', values: ['web'] }]);
  t.same(p.jsonFields, [
    { path: ['status', 'phase'], operator: 'in', values: ['Running', 'Pending'] },
    { path: ['spec', 'paused'], operator: '!', values: [] },
    { path: ['spec', 'replicas'], operator: 'notin', values: ['3'] },
  ]);
  fails(t, `labelSelector=${encodeURIComponent('field.panoptes.io/spec.replicas>3')}`, /takes =, ==, !=, in, notin, exists or !, not >/);
});

t.test('kube’s fields keep kube’s behaviour; malformed paths are 400s naming them', async (t) => {
  t.same(parse(fs('status.phase=Running'), pods).fieldSelector, [{ field: 'status.phase', operator: '=', value: 'Running' }]);
  t.same(parse(fs('status.phase=Running'), pods).jsonFields, []);
  fails(t, fs('status.phase=Running'), /field label not supported: status.phase/);
  fails(t, fs('.spec.replicas=1,spec.bogus=2'), /field label not supported: spec.bogus/);
  fails(t, fs('.spec..x=1'), /fieldSelector: invalid JSON path "\.spec\.\.x=1": expected a key after "\." at 5/);
  fails(t, fs('.spec.containers[0].image=x'), /expected \['key'\] or \[\*\] at 16 \(array indexes are not supported\)/);
  fails(t, fs('.spec.x>3'), /term "\.spec\.x>3": expected =, ==, !=, in \(...\) or notin \(...\) after the path/);
  fails(t, fs('.spec.x=a=b'), /unescaped "=", "\(" or "\)" in the value/);
  fails(t, fs('!.spec.x=1'), /"!" takes a path alone/);
  fails(t, fs('.a=\\q'), /invalid escape sequence \\q/);
  fails(t, fs(Array.from({ length: 21 }, (_, i) => `.a${i}`).join(',')), /more than 20 terms/);
  fails(t, fs(`.${Array.from({ length: 33 }, () => 'a').join('.')}`), /more than 32 steps/);
});
