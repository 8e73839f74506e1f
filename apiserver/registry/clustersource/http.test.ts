// The ClusterSource resource over HTTP (in process, SQLite): create with its finalizer, 409 for
// a taken name and a stale update, dry-run, 422 with one cause per field, status writes
// refused, delete held by the finalizer, discovery, the OpenAPI schema kubectl explain reads,
// and the Table of kubectl get clustersources.
import t from 'tap';
import { http } from '../../../hack/sim/testutil.ts';
import { setLogLevel } from '../../../lib/log.ts';
import { openTestStore } from '../../../storage/testing.ts';
import { createApiserver } from '../../server.ts';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');

const G = '/apis/panoptes.io/v1alpha1';
const CS = `${G}/clustersources`;
const MERGE = { 'Content-Type': 'application/merge-patch+json' };
const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json';

t.test('ClusterSource over HTTP', async (t) => {
  const { store, close } = await openTestStore('sqlite');
  const api = await createApiserver({ store, catalogOptions: { refreshMs: 200 } });
  const base = await api.listen('127.0.0.1', 0);
  t.teardown(async () => {
    await api.close();
    await close();
  });
  const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => http(method, base + path, body, headers);
  const good = { apiVersion: 'panoptes.io/v1alpha1', kind: 'ClusterSource', metadata: { name: 'capi' }, spec: { type: 'clusterAPI', namespaces: ['capi'], naming: { prefix: 'capi-' } } };

  const dry = await call('POST', `${CS}?dryRun=All`, good);
  t.equal(dry.status, 201);
  t.equal((await call('GET', `${CS}/capi`)).status, 404, 'a dry run writes nothing');
  const c = await call('POST', CS, good);
  t.equal(c.status, 201);
  t.same(c.json.metadata.finalizers, ['panoptes.io/import']);
  t.equal((await call('POST', CS, good)).status, 409, 'the name is taken');
  const stale = await call('PUT', `${CS}/capi`, { ...good, metadata: { name: 'capi', resourceVersion: '1' } });
  t.equal(stale.status, 409);

  const bad = await call('POST', CS, {
    metadata: { name: 'Bad_Name' },
    spec: { type: 'rancher', namespaces: [], selector: { matchExpressions: [{ key: 'a', operator: 'In' }] }, naming: { template: '{cluster}', invalidNames: 'Maybe' }, defaults: { resources: ['a/b/c'] }, onSourceRemoval: 'Never', kubeconfigSecrets: { key: 'a b' } },
  });
  t.equal(bad.status, 422);
  t.same(
    bad.json.details.causes.map((x: { field: string; reason: string }) => `${x.field} ${x.reason}`),
    [
      'spec.type FieldValueNotSupported',
      'spec.namespaces FieldValueRequired',
      'spec.selector.matchExpressions[0].values FieldValueRequired',
      'spec.naming.template FieldValueInvalid',
      'spec.naming.template FieldValueInvalid',
      'spec.naming.invalidNames FieldValueNotSupported',
      'spec.defaults.resources[0] FieldValueInvalid',
      'spec.onSourceRemoval FieldValueNotSupported',
      'spec.kubeconfigSecrets FieldValueForbidden',
      'spec.kubeconfigSecrets.key FieldValueInvalid',
      'metadata.name FieldValueInvalid',
    ],
  );
  t.equal((await call('PATCH', `${CS}/capi/status`, { status: { imported: 5 } }, MERGE)).status, 405, 'the status is the importer\'s');
  const p = await call('PATCH', `${CS}/capi`, { spec: { onSourceRemoval: 'Keep' } }, MERGE);
  t.equal(p.status, 200);
  t.equal(p.json.metadata.generation, 2);

  const disc = await call('GET', G);
  t.match(disc.json.resources.find((r: { name: string }) => r.name === 'clustersources'), { kind: 'ClusterSource', namespaced: false, verbs: ['delete', 'get', 'list', 'patch', 'create', 'update', 'watch'] });
  const openapi = await call('GET', '/openapi/v2');
  const def = openapi.json.definitions['io.panoptes.v1alpha1.ClusterSourceSpec'];
  t.match(def.properties.type.enum, ['clusterAPI', 'argoCD', 'karmada', 'kubeconfigSecrets'], 'kubectl explain clustersource.spec reads this');
  const table = await call('GET', CS, undefined, { Accept: TABLE });
  t.same(table.json.columnDefinitions.map((c: { name: string }) => c.name), ['Name', 'Type', 'Clusters', 'Failed', 'Age', 'Namespaces', 'Message']);
  t.match(table.json.rows[0].cells, ['capi', 'clusterAPI', 0, 0, /s$/, 'capi', '']);

  const d = await call('DELETE', `${CS}/capi`);
  t.equal(d.status, 200);
  t.ok(d.json.metadata.deletionTimestamp, 'held by the finalizer until the importer releases it');
  t.equal((await call('GET', `${CS}/capi`)).status, 200);
});
