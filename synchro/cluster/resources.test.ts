import t from 'tap';
import { parsePattern } from '../../api/resource-patterns.ts';
import { selectResources, type ApiResource } from './resources.ts';
import { transform } from './transform.ts';

const api = (group: string, resource: string): ApiResource => ({ group, version: 'v1', resource, kind: resource, namespaced: true });
const discovered = [api('', 'pods'), api('', 'secrets'), api('', 'configmaps'), api('apps', 'deployments'), api('apps', 'replicasets'), api('demo.panoptes.io', 'widgets')];
const ids = (patterns: string[]) => selectResources(patterns.map(parsePattern), discovered).map((r) => `${r.group}/${r.resource}`);

t.test('patterns', async (t) => {
  t.same(parsePattern('pods'), { group: '', resource: 'pods', text: 'pods' });
  t.same(parsePattern('core/pods'), { group: '', resource: 'pods', text: 'core/pods' });
  t.same(parsePattern('/pods'), { group: '', resource: 'pods', text: '/pods' });
  t.same(parsePattern('deployments.apps'), { group: 'apps', resource: 'deployments', text: 'deployments.apps' });
  t.same(parsePattern('apps/*'), { group: 'apps', resource: '*', text: 'apps/*' });
  t.same(parsePattern('*'), { group: '*', resource: '*', text: '*' });
  t.throws(() => parsePattern('a/b/c'), /GROUP\/RESOURCE/);
  t.throws(() => parsePattern('*/pods'), /wildcard group/);
  t.throws(() => parsePattern('Apps/Deployments'), /not a valid API group/);
  t.throws(() => parsePattern('apps/'), /empty/);
});

t.test('selection', async (t) => {
  t.same(ids(['*']), ['/pods', '/configmaps', 'apps/deployments', 'apps/replicasets', 'demo.panoptes.io/widgets'], '* never includes secrets');
  t.same(ids(['core/*']), ['/pods', '/configmaps']);
  t.same(ids(['*', 'secrets']), ['/pods', '/secrets', '/configmaps', 'apps/deployments', 'apps/replicasets', 'demo.panoptes.io/widgets'], 'secrets when named');
  t.same(ids(['apps/deployments', 'demo.panoptes.io/*', 'missing.example.com/things']), ['apps/deployments', 'demo.panoptes.io/widgets']);
});

t.test('"*" leaves out aggregated APIs and Panoptes\' own groups, unless named', async (t) => {
  const host = [api('', 'pods'), api('panoptes.io', 'clusters'), api('external.metrics.k8s.io', 'pods'), api('clusterpedia.io', 'resources'), api('demo.panoptes.io', 'widgets')];
  const aggregated = new Set(['panoptes.io/v1', 'clusterpedia.io/v1']);
  const pick = (patterns: string[], agg: Set<string>) => selectResources(patterns.map(parsePattern), host, agg).map((r) => `${r.group}/${r.resource}`);
  t.same(pick(['*'], aggregated), ['/pods', 'demo.panoptes.io/widgets']);
  t.same(pick(['*'], new Set()), ['/pods', 'clusterpedia.io/resources', 'demo.panoptes.io/widgets'], 'own groups by name, whatever the APIServices say');
  t.same(pick(['*', 'panoptes.io/clusters', 'clusterpedia.io/*'], aggregated), ['/pods', 'panoptes.io/clusters', 'clusterpedia.io/resources', 'demo.panoptes.io/widgets'], 'named, they are synced');
});

t.test('transform', async (t) => {
  const o = transform(
    {
      metadata: {
        name: 'x',
        managedFields: [{ manager: 'kubectl' }],
        annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{}', 'panoptes.io/cluster': 'spoofed' },
      },
      data: { a: '1' },
    },
    'v1',
    'ConfigMap',
  );
  t.same(o, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, data: { a: '1' } });
  const keep = transform({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'y', annotations: { a: 'b', 'kubectl.kubernetes.io/last-applied-configuration': '{}' } } }, 'v1', 'Pod');
  t.same(keep.metadata?.annotations, { a: 'b' });
});
