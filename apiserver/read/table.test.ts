import t from 'tap';
import type { ResourceInfo } from '../discovery/catalog.ts';
import { tableJson, tableRenderer, tableRowJson } from './table.ts';

const info = (group: string, resource: string, kind: string, extra: Partial<ResourceInfo> = {}): ResourceInfo => ({ group, version: 'v1', resource, kind, singularName: kind.toLowerCase(), namespaced: true, clusters: ['a'], ...extra });
const now = Date.parse('2026-01-01T01:00:00Z');
const created = '2026-01-01T00:00:00Z';

t.test('the all-clusters view leads with a Cluster column, a one-cluster view has none', async (t) => {
  const all = tableRenderer(info('', 'configmaps', 'ConfigMap'), {});
  t.same(all.columns.map((c) => c.name), ['Cluster', 'Name', 'Data', 'Age'], 'all-clusters view: Cluster first');
  t.same(all.cells({ metadata: { name: 'x', creationTimestamp: created } }, 'east', now), ['east', 'x', 0, '60m']);
  const one = tableRenderer(info('', 'configmaps', 'ConfigMap'), { cluster: 'east' });
  t.same(one.columns.map((c) => c.name), ['Name', 'Data', 'Age']);
  t.same(one.cells({ metadata: { name: 'x', creationTimestamp: created } }, 'east', now), ['x', 0, '60m']);
  const crd = tableRenderer(info('demo.io', 'widgets', 'Widget', { printerColumns: [{ name: 'Size', type: 'integer', jsonPath: '.spec.size' }] }), {});
  t.same(crd.columns.map((c) => c.name), ['Cluster', 'Name', 'Size']);
});

t.test('rows carry the cluster cell; watch tables after the first have no columns', async (t) => {
  const i = info('', 'pods', 'Pod');
  const r = tableRenderer(i, {});
  const obj = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'n' }, status: { phase: 'Failed' } };
  const row = JSON.parse(tableRowJson(r, i, obj, JSON.stringify(obj), 'east', { includeObject: 'Metadata', metaVersion: 'v1' }, now));
  t.same(row.cells.slice(0, 2), ['east', 'p']);
  t.match(row.conditions, [{ type: 'Completed', reason: 'Failed' }]);
  t.equal(JSON.parse(tableJson(r, 'v1', {}, [], true)).columnDefinitions[0].name, 'Cluster');
  t.equal(JSON.parse(tableJson(r, 'v1', {}, [], false)).columnDefinitions, null);
});
