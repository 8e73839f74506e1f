import { readFileSync } from 'node:fs';
import t from 'tap';
import { formatLabelSelector, humanDuration, printers } from './printers.ts';
import { crdPrinterColumns, evalJsonPath, partialObjectMetadataListJson, tableJson, tablePrinter, tableRowJson, toPartialObjectMetadata, type PrintedResource } from './table.ts';

const reference = JSON.parse(readFileSync(new URL('./reference/table-columns.json', import.meta.url), 'utf8')) as Record<string, unknown[]>;
const info = (group: string, resource: string, extra: Partial<PrintedResource> = {}): PrintedResource => ({ group, resource, ...extra });
const now = Date.parse('2026-01-01T01:00:00Z');
const created = '2026-01-01T00:00:00Z';

t.test('every printer yields one cell per reference column', async (t) => {
  for (const [key, printer] of Object.entries(printers)) {
    t.ok(reference[key], `${key} has reference columns`);
    t.equal(printer({ metadata: { name: 'x', creationTimestamp: created } }, now).length, reference[key].length, key);
  }
});

t.test('HumanDuration as apimachinery formats it', async (t) => {
  const s = 1000;
  const cases: Array<[number, string]> = [[-5 * s, '<invalid>'], [0, '0s'], [119 * s, '119s'], [150 * s, '2m30s'], [600 * s, '10m'], [3 * 3600 * s, '3h'], [3 * 3600 * s + 60 * s, '3h1m'], [30 * 3600 * s, '30h'], [50 * 3600 * s, '2d2h'], [10 * 86400 * s, '10d'], [800 * 86400 * s, '2y70d'], [9 * 365 * 86400 * s, '9y']];
  for (const [ms, want] of cases) t.equal(humanDuration(ms), want, want);
});

t.test('cells of the common kinds', async (t) => {
  const pod = {
    metadata: { name: 'web-1', namespace: 'shop', creationTimestamp: created },
    spec: { nodeName: 'n1', containers: [{ name: 'a' }, { name: 'b' }] },
    status: {
      phase: 'Running',
      podIPs: [{ ip: '10.0.0.1' }],
      containerStatuses: [
        { name: 'a', ready: true, restartCount: 2, state: { running: {} }, lastState: { terminated: { finishedAt: '2026-01-01T00:50:00Z' } } },
        { name: 'b', ready: false, restartCount: 0, state: { waiting: { reason: 'CrashLoopBackOff' } } },
      ],
    },
  };
  t.same(printers['/pods'](pod, now), ['web-1', '1/2', 'CrashLoopBackOff', '2 (10m ago)', '60m', '10.0.0.1', 'n1', '<none>', '<none>']);
  t.same(printers['/configmaps']({ metadata: { name: 'web', creationTimestamp: '2026-01-01T00:59:50Z' }, data: { a: '1' } }, now), ['web', 1, '10s'], 'configmaps as kube-apiserver prints them');
  t.same(printers['/secrets']({ metadata: { name: 's', creationTimestamp: created }, type: 'Opaque', data: { a: '', b: '' } }, now), ['s', 'Opaque', 2, '60m']);
  const dep = { metadata: { name: 'cpb-dep', creationTimestamp: created }, spec: { replicas: 0, selector: { matchLabels: { app: 'cpb-dep' } }, template: { spec: { containers: [{ name: 'pause', image: 'registry.invalid/pause:1' }] } } }, status: {} };
  t.same(printers['apps/deployments'](dep, now), ['cpb-dep', '0/0', 0, 0, '60m', 'pause', 'registry.invalid/pause:1', 'app=cpb-dep'], 'the reference sample row');
  const svc = { metadata: { name: 'kubernetes', creationTimestamp: created }, spec: { type: 'ClusterIP', clusterIPs: ['10.96.0.1'], ports: [{ port: 443, protocol: 'TCP' }] } };
  t.same(printers['/services'](svc, now), ['kubernetes', 'ClusterIP', '10.96.0.1', '<none>', '443/TCP', '60m', '<none>'], 'the reference sample row');
  const ev = { metadata: { name: 'e1' }, type: 'Normal', reason: 'SuccessfulCreate', involvedObject: { kind: 'ReplicaSet', name: 'cpb' }, source: { component: 'replicaset-controller' }, message: 'Created pod', firstTimestamp: created, lastTimestamp: created, count: 1 };
  const slice = { metadata: { name: 'web-x', creationTimestamp: created }, addressType: 'IPv4', ports: [{ name: 'http', port: 8080 }, { name: 'a' }, {}, { port: 1 }], endpoints: [{ addresses: ['10.0.0.1'] }, { addresses: ['10.0.0.2', '10.0.0.3'] }, { addresses: ['10.0.0.4'] }] };
  t.same(printers['discovery.k8s.io/endpointslices'](slice, now), ['web-x', 'IPv4', '8080,a,* + 1 more...', '10.0.0.1,10.0.0.2,10.0.0.3 + 1 more...', '60m']);
  t.same(printers['discovery.k8s.io/endpointslices']({ metadata: { name: 'p' }, addressType: 'IPv4', ports: null, endpoints: null }, now), ['p', 'IPv4', '<unset>', '<unset>', '<unknown>'], 'a placeholder slice');
  const local = { metadata: { name: 'v1.', creationTimestamp: created }, spec: { version: 'v1' }, status: { conditions: [{ type: 'Available', status: 'True', reason: 'Local' }] } };
  t.same(printers['apiregistration.k8s.io/apiservices'](local, now), ['v1.', 'Local', 'True', '60m'], 'the reference sample row');
  const down = { metadata: { name: 'v1beta1.metrics.k8s.io', creationTimestamp: created }, spec: { service: { namespace: 'kube-system', name: 'metrics-server' } }, status: { conditions: [{ type: 'Available', status: 'False', reason: 'MissingEndpoints' }] } };
  t.same(printers['apiregistration.k8s.io/apiservices'](down, now), ['v1beta1.metrics.k8s.io', 'kube-system/metrics-server', 'False (MissingEndpoints)', '60m'], 'an aggregated API, unavailable');
  t.same(printers['/events'](ev, now), ['60m', 'Normal', 'SuccessfulCreate', 'replicaset/cpb', '', 'replicaset-controller', 'Created pod', '60m', 1, 'e1']);
  t.equal(formatLabelSelector({ matchLabels: { b: '1' }, matchExpressions: [{ key: 'a', operator: 'In', values: ['y', 'x'] }, { key: 'c', operator: 'DoesNotExist' }] }), 'a in (x,y),b=1,!c');
});

t.test('columns per kind', async (t) => {
  const cm = tablePrinter(info('', 'configmaps'));
  t.same(cm.columns.map((c) => c.name), ['Name', 'Data', 'Age'], 'no Cluster column: that is a Panoptes view');
  t.same(cm.cells({ metadata: { name: 'x', creationTimestamp: created } }, now), ['x', 0, '60m']);
  const other = tablePrinter(info('example.com', 'things'));
  t.same(other.columns.map((c) => [c.name, c.type]), [['Name', 'string'], ['Created At', 'date']], 'default columns');
  t.same(other.cells({ metadata: { name: 't', creationTimestamp: '2026-01-01T00:00:00.000Z' } }, now), ['t', '2026-01-01T00:00:00Z'], 'Created At is the RFC 3339 time');
  const crd = tablePrinter(info('demo.io', 'widgets', { printerColumns: [{ name: 'Size', type: 'integer', jsonPath: '.spec.size' }, { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status', priority: 1 }] }));
  t.same(crd.columns.map((c) => [c.name, c.priority]), [['Name', 0], ['Size', 0], ['Ready', 1]], 'CRD printer columns');
  t.same(crd.cells({ metadata: { name: 'w' }, spec: { size: 3 }, status: { conditions: [{ type: 'Other', status: 'False' }, { type: 'Ready', status: 'True' }] } }, now), ['w', 3, 'True']);
  t.same(crd.cells({ metadata: { name: 'w' } }, now), ['w', null, null], 'missing values are null cells');
  const noCols = tablePrinter(info('demo.io', 'widgets', { printerColumns: [] }));
  t.same(noCols.columns.map((c) => [c.name, c.type]), [['Name', 'string'], ['Age', 'date']], 'a CRD without printer columns gets Age');
  t.same(noCols.cells({ metadata: { name: 'w', creationTimestamp: created } }, now), ['w', '60m'], 'a date cell is an age, as apiextensions-apiserver prints it');
  const typed = tablePrinter(info('demo.io', 'widgets', { printerColumns: crdPrinterColumns({ additionalPrinterColumns: [
    { name: 'Seen', type: 'date', jsonPath: '.status.seen' },
    { name: 'N', type: 'number', jsonPath: '.spec.n' },
    { name: 'On', type: 'boolean', jsonPath: '.spec.on' },
    { name: 'Spec', type: 'string', jsonPath: '.spec.sub' },
    { name: 'No path' },
  ] }) }));
  t.same(typed.columns.map((c) => c.name), ['Name', 'Seen', 'N', 'On', 'Spec'], 'entries without jsonPath dropped');
  t.same(typed.cells({ metadata: { name: 'w' }, status: { seen: 'yesterday' }, spec: { n: 1.5, on: 'yes', sub: { a: 1 } } }, now), ['w', '<invalid>', 1.5, null, '{"a":1}']);
  t.same(typed.cells({ metadata: { name: 'w' }, status: { seen: '' }, spec: { n: '1', on: true } }, now), ['w', '<unknown>', null, true, null]);
  t.equal(evalJsonPath(".metadata.labels['app.kubernetes.io/name']", { metadata: { labels: { 'app.kubernetes.io/name': 'x' } } }), 'x');
  t.equal(evalJsonPath('.spec.items[1]', { spec: { items: ['a', 'b'] } }), 'b');
});

t.test('rows, tables and metadata objects', async (t) => {
  const i = info('', 'pods');
  const p = tablePrinter(i);
  const obj = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'n', labels: { a: 'b' } }, status: { phase: 'Succeeded' } };
  const text = JSON.stringify(obj);
  const row = JSON.parse(tableRowJson(p.cells(obj, now), i, obj, text, { includeObject: 'Metadata', metaVersion: 'v1' }));
  t.equal(row.cells[0], 'p');
  t.same(row.object, { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: obj.metadata });
  t.match(row.conditions, [{ type: 'Completed', status: 'True' }], 'finished pods carry the Completed row condition');
  t.same(JSON.parse(tableRowJson(['p'], i, obj, text, { includeObject: 'Object', metaVersion: 'v1' })).object, obj);
  t.notOk('object' in JSON.parse(tableRowJson(['p'], i, obj, text, { includeObject: 'None', metaVersion: 'v1' })));
  t.same(toPartialObjectMetadata(obj, 'v1beta1').apiVersion, 'meta.k8s.io/v1beta1');
  const table = JSON.parse(tableJson(p.columns, 'v1beta1', { resourceVersion: '7' }, ['{"cells":["p"]}']));
  t.same([table.kind, table.apiVersion, table.metadata, table.columnDefinitions.length, table.rows], ['Table', 'meta.k8s.io/v1beta1', { resourceVersion: '7' }, 9, [{ cells: ['p'] }]]);
  t.equal(JSON.parse(tableJson(null, 'v1', {}, [])).columnDefinitions, null, 'watch events after the first: columnDefinitions null');
  t.same(JSON.parse(partialObjectMetadataListJson([obj], 'v1', { resourceVersion: '7' })), { kind: 'PartialObjectMetadataList', apiVersion: 'meta.k8s.io/v1', metadata: { resourceVersion: '7' }, items: [{ kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: obj.metadata }] });
});
