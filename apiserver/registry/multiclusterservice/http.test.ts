// The MultiClusterService resource over HTTP (in process, SQLite and PostgreSQL): every verb as
// kube-apiserver answers it for a namespaced custom resource with a status subresource —
// create (the namespace from the path, the finalizer), get, list (one namespace and all),
// watch, update with optimistic concurrency, merge and JSON patch (415 for the others),
// dry-run, 422 with one cause per field, strict and warned unknown fields, status writes
// refused, delete held by the finalizer until synchro (as the holder of a consumer cluster's
// lease) releases it — and its discovery, OpenAPI and Table.
import t from 'tap';
import { mcsFinalizer, type MultiClusterServiceStatus } from '../../../api/multicluster-service.ts';
import { http, get } from '../../../hack/sim/testutil.ts';
import { httpWatch } from '../../../hack/testing/watch-http.ts';
import { setLogLevel } from '../../../lib/log.ts';
import { clusterLease } from '../../../storage/leases.ts';
import type { OwnObjectState, OwnObjectWrite } from '../../../storage/own-objects.ts';
import type { Store } from '../../../storage/store.ts';
import { backends, openTestStore, seedCluster, takeLease } from '../../../storage/testing.ts';
import type { KubeObject } from '../../../storage/types.ts';
import { createApiserver } from '../../server.ts';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');

const G = '/apis/panoptes.io/v1alpha1';
const NS = `${G}/namespaces/shop/multiclusterservices`;
const ALL = `${G}/multiclusterservices`;
const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';
const PARTIAL = 'application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io,application/json';
const PARTIAL_LIST = 'application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json';
const JSONCT = { 'Content-Type': 'application/json' };
const MERGE = { 'Content-Type': 'application/merge-patch+json' };
const JSONPATCH = { 'Content-Type': 'application/json-patch+json' };

/** What synchro's dispatcher does, as the holder of consumer `cluster`'s lease: a read-decide-write of the object. */
async function asSynchro(store: Store, cluster: string, namespace: string, name: string, decide: (cur: OwnObjectState | undefined) => OwnObjectWrite) {
  const fence = await takeLease(store, clusterLease(cluster), 'synchro-test');
  try {
    return await store.writeOwnObject({ resource: 'multiclusterservices', namespace, name }, cluster, decide, fence);
  } finally {
    await store.releaseLease(fence.lease, fence.holder, fence.epoch);
  }
}

const withStatus = (status: MultiClusterServiceStatus) => (cur: OwnObjectState | undefined): OwnObjectWrite => (cur ? { action: 'put', object: { ...cur.object, status } as KubeObject } : { action: 'none' });

/** synchro's release once every consumer is cleaned up: the finalizer goes, and a deleted object with it. */
const release = (cur: OwnObjectState | undefined): OwnObjectWrite => {
  if (!cur) return { action: 'none' };
  const md = cur.object.metadata ?? {};
  const finalizers = (Array.isArray(md.finalizers) ? (md.finalizers as string[]) : []).filter((f) => f !== mcsFinalizer);
  if (md.deletionTimestamp && finalizers.length === 0) return { action: 'delete' };
  return { action: 'put', object: { ...cur.object, metadata: { ...md, finalizers } } };
};

for (const backend of backends) {
  t.test(`multiclusterservices.panoptes.io is writable (${backend})`, async (t) => {
    const { store, close } = await openTestStore(backend);
    await seedCluster(store, 'east', { phase: 'Ready', ready: true, apiResources: [] });
    const api = await createApiserver({ store, catalogOptions: { refreshMs: 100 } });
    const base = await api.listen('127.0.0.1', 0);
    t.teardown(async () => {
      await api.close();
      await close();
    });
    const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => http(method, base + path, body, headers);
    const watch = await httpWatch(`${base}${ALL}?watch=1&resourceVersion=${await store.watermark()}`);
    t.equal(watch.status, 200, 'every namespace is watchable');

    const web = {
      apiVersion: 'panoptes.io/v1alpha1',
      kind: 'MultiClusterService',
      metadata: { name: 'web', labels: { team: 'a' } },
      spec: { providerClusters: ['east'], consumerClusters: ['west', 'lab'], ports: [{ name: 'http', port: 80 }], providerNotReady: { policy: 'KeepForGracePeriod', gracePeriodSeconds: 60 } },
      status: { conditions: [{ type: 'Ready', status: 'True' }] },
    };

    await t.test('create', async (t) => {
      const r = await call('POST', `${NS}?fieldManager=kubectl-client-side-apply&fieldValidation=Strict`, web);
      t.equal(r.status, 201, r.text);
      t.match(r.json, { kind: 'MultiClusterService', apiVersion: 'panoptes.io/v1alpha1', metadata: { name: 'web', namespace: 'shop', generation: 1, labels: { team: 'a' }, finalizers: [mcsFinalizer] }, spec: web.spec });
      t.match(r.json.metadata.uid, /^[0-9a-f-]{36}$/);
      t.match(r.json.metadata.creationTimestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      t.equal(r.json.metadata.resourceVersion, String(await store.watermark()), 'resourceVersion is an rv of the change log');
      t.equal(r.json.status, undefined, "status is synchro's: not taken from a create");
      t.same((await store.getOwnObject({ resource: 'multiclusterservices', namespace: 'shop', name: 'web' }))?.object.spec, web.spec, 'stored as an own object');

      t.match(await call('POST', NS, web), { status: 409, json: { reason: 'AlreadyExists', message: 'multiclusterservices.panoptes.io "web" already exists', details: { name: 'web', group: 'panoptes.io', kind: 'multiclusterservices' } } });
      const other = await call('POST', `${G}/namespaces/other/multiclusterservices`, web);
      t.equal(other.status, 201, 'the same name in another namespace');
      t.equal(other.json.metadata.namespace, 'other');
      t.match(await call('POST', NS, { ...web, metadata: { name: 'x1', namespace: 'elsewhere' } }), { status: 400, json: { reason: 'BadRequest', message: 'the namespace of the provided object does not match the namespace sent on the request' } });
      t.match(await call('POST', NS, { ...web, metadata: { name: 'x1', resourceVersion: '5' } }), { status: 400, json: { message: 'resourceVersion should not be set on objects to be created' } });
      const bare = await call('POST', NS, { metadata: { name: 'bare' } });
      t.equal(bare.status, 201, 'no spec: every cluster provides and consumes');
      t.same(bare.json.spec, {});
      const yaml = await call('POST', NS, 'apiVersion: panoptes.io/v1alpha1\nkind: MultiClusterService\nmetadata: {name: yamled}\nspec: {ports: [{port: 443}]}\n', { 'Content-Type': 'application/yaml' });
      t.equal(yaml.status, 201, 'a YAML body');
      t.match(await call('POST', NS, 'x', { 'Content-Type': 'application/vnd.kubernetes.protobuf' }), { status: 415, json: { reason: 'UnsupportedMediaType' } });
      t.match(await call('POST', NS, '{nope', JSONCT), { status: 400, json: { reason: 'BadRequest', message: /must be of type MultiClusterService/ } });
      t.match(await call('POST', NS, { ...web, apiVersion: 'v1' }), { status: 400, json: { message: 'the API version in the data (v1) does not match the expected API version (panoptes.io/v1alpha1)' } });
      t.match(await call('POST', NS, { ...web, kind: 'Service' }), { status: 400, json: { message: 'Service in version "v1alpha1" cannot be handled as a MultiClusterService: the kind in the data (Service) is not MultiClusterService' } });
      t.match(await call('POST', ALL, web), { status: 405, json: { reason: 'MethodNotAllowed', message: /multiclusterservices\.panoptes\.io of all namespaces: write a MultiClusterService in its namespace/ } });
      t.match(await call('POST', `${NS}/web`, web), { status: 405, json: { reason: 'MethodNotAllowed' } });
    });

    await t.test('validation: 422 with one cause per field', async (t) => {
      const r = await call('POST', NS, {
        metadata: { name: '1web' },
        spec: {
          providerClusters: ['East', 'east', 'east'],
          consumerClusters: 'west',
          ports: [{ port: 0 }, { name: 'Bad_Name' }, {}, { port: 80 }, { port: 80 }, 'http'],
          providerNotReady: { policy: 'Sometimes', gracePeriodSeconds: -1 },
        },
      });
      t.equal(r.status, 422, r.text);
      t.match(r.json, { reason: 'Invalid', details: { name: '1web', group: 'panoptes.io', kind: 'MultiClusterService' } });
      t.match(r.json.message, /^MultiClusterService\.panoptes\.io "1web" is invalid: \[/);
      const causes = r.json.details.causes as Array<{ reason: string; field: string; message: string }>;
      const by = (field: string) => causes.filter((c) => c.field === field);
      t.match(by('metadata.name'), [{ reason: 'FieldValueInvalid', message: /named after the Service it exports: a DNS-1035 label must consist of/ }]);
      t.match(by('spec.providerClusters[0]'), [{ reason: 'FieldValueInvalid', message: /RFC 1123 label/ }]);
      t.match(by('spec.providerClusters[2]'), [{ reason: 'FieldValueDuplicate', message: 'Duplicate value: "east"' }]);
      t.match(by('spec.consumerClusters'), [{ reason: 'FieldValueInvalid', message: /must be a list of strings/ }]);
      t.match(by('spec.ports[0].port'), [{ reason: 'FieldValueInvalid', message: 'Invalid value: 0: must be between 1 and 65535, inclusive' }]);
      t.match(by('spec.ports[1].name'), [{ reason: 'FieldValueInvalid', message: /RFC 1123 label/ }]);
      t.match(by('spec.ports[2]'), [{ reason: 'FieldValueRequired' }]);
      t.match(by('spec.ports[4]'), [{ reason: 'FieldValueDuplicate' }]);
      t.match(by('spec.ports[5]'), [{ reason: 'FieldValueInvalid' }]);
      t.match(by('spec.providerNotReady.policy'), [{ reason: 'FieldValueNotSupported', message: 'Unsupported value: "Sometimes": supported values: "KeepForGracePeriod", "RemoveImmediately", "Keep"' }]);
      t.match(by('spec.providerNotReady.gracePeriodSeconds'), [{ reason: 'FieldValueInvalid', message: 'Invalid value: -1: must be greater than or equal to 0' }]);
      t.equal(causes.length, 11, 'one cause per problem');
      const fraction = await call('POST', NS, { metadata: { name: 'frac' }, spec: { providerNotReady: { gracePeriodSeconds: 1.5 } } });
      t.match(fraction.json, { code: 422, message: 'MultiClusterService.panoptes.io "frac" is invalid: spec.providerNotReady.gracePeriodSeconds: Invalid value: 1.5: must be an integer number of seconds' });
      const keep = await call('POST', NS, { metadata: { name: 'keep' }, spec: { providerNotReady: { policy: 'Keep', gracePeriodSeconds: 5 } } });
      t.match(keep.json, { code: 422, details: { causes: [{ field: 'spec.providerNotReady.gracePeriodSeconds', reason: 'FieldValueForbidden' }] } });
      const badNs = await call('POST', `${G}/namespaces/Bad_NS/multiclusterservices`, { metadata: { name: 'web' } });
      t.match(badNs.json, { code: 422, details: { causes: [{ field: 'metadata.namespace', reason: 'FieldValueInvalid' }] } });
      t.match((await call('POST', NS, { spec: {} })).json, { code: 422, message: 'MultiClusterService.panoptes.io "" is invalid: metadata.name: Required value: name or generateName is required' });
      t.match((await call('POST', NS, { metadata: { name: 'labels', labels: { 'bad key!': 'v' } } })).json, { code: 422, details: { causes: [{ field: 'metadata.labels' }] } });
    });

    await t.test('unknown fields: Strict 400, Warn (the default) a Warning, Ignore silent', async (t) => {
      const obj = { metadata: { name: 'typo' }, spec: { provider: ['east'], ports: [{ nme: 'http', port: 8080 }] } };
      const strict = await call('POST', `${NS}?fieldValidation=Strict`, obj);
      t.match(strict, {
        status: 400,
        json: { reason: 'BadRequest', message: 'MultiClusterService in version "v1alpha1" cannot be handled as a MultiClusterService: strict decoding error: unknown field "spec.provider", unknown field "spec.ports[0].nme"' },
      });
      const warn = await call('POST', NS, obj);
      t.equal(warn.status, 201);
      t.same(warn.headers.warning, '299 - "unknown field \\"spec.provider\\"", 299 - "unknown field \\"spec.ports[0].nme\\""');
      t.same(warn.json.spec, { ports: [{ port: 8080 }] }, 'dropped');
      const ignore = await call('POST', `${NS}?fieldValidation=Ignore`, { ...obj, metadata: { name: 'typo2' } });
      t.equal(ignore.status, 201);
      t.equal(ignore.headers.warning, undefined);
      t.match((await call('POST', `${NS}?fieldValidation=Loose`, obj)).json, { code: 422, message: /CreateOptions\.meta\.k8s\.io "" is invalid: fieldValidation: Unsupported value: "Loose"/ });
    });

    await t.test('get, list, watch in every format; status written by synchro', async (t) => {
      // synchro's dispatcher reports, as the holder of the consumers' leases.
      await asSynchro(
        store,
        'west',
        'shop',
        'web',
        withStatus({
          observedGeneration: 1,
          providers: [{ cluster: 'east', endpoints: 3, ready: true }],
          consumers: [
            { cluster: 'west', serviceApplied: true, endpointSlices: 1, endpoints: 3, conditions: [{ type: 'ServiceApplied', status: 'True', reason: 'Created', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' }, { type: 'EndpointSlicesDispatched', status: 'True', reason: 'Dispatched', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' }] },
            { cluster: 'lab', serviceApplied: false, endpointSlices: 0, endpoints: 0, lastError: 'Forbidden: services is forbidden', conditions: [] },
          ],
        }),
      );
      const one = await call('GET', `${NS}/web`);
      t.match(one.json, { kind: 'MultiClusterService', metadata: { name: 'web', namespace: 'shop' }, status: { providers: [{ cluster: 'east' }] } });
      t.same((await call('GET', `${NS}/web/status`)).json, one.json, '.../status answers the object');
      t.match(await call('GET', `${NS}/nope`), { status: 404, json: { reason: 'NotFound', message: 'multiclusterservices.panoptes.io "nope" not found' } });
      t.match(await call('GET', `${ALL}/web`), { status: 404 }, 'no object path across namespaces');
      const list = await call('GET', NS);
      t.match(list.json, { kind: 'MultiClusterServiceList', apiVersion: 'panoptes.io/v1alpha1' });
      t.equal(list.json.metadata.resourceVersion, String(await store.watermark()));
      t.ok(list.json.items.every((i: KubeObject) => i.metadata?.namespace === 'shop'), 'one namespace');
      const all = await call('GET', ALL);
      t.same([...new Set(all.json.items.map((i: KubeObject) => i.metadata?.namespace))].sort(), ['other', 'shop'], 'every namespace');
      t.same((await call('GET', `${NS}?labelSelector=team%3Da`)).json.items.map((i: KubeObject) => i.metadata?.name), ['web'], 'label selectors');
      t.same((await call('GET', `${ALL}?fieldSelector=metadata.namespace%3Dother`)).json.items.map((i: KubeObject) => i.metadata?.name), ['web'], 'field selectors');
      const page = await call('GET', `${NS}?limit=1`);
      t.equal(page.json.items.length, 1);
      t.ok(page.json.metadata.continue, 'paging');
      t.match(await call('GET', `${NS}?clusters=east`), { status: 400, json: { message: /the clusters search does not apply to multiclusterservices\.panoptes\.io/ } });

      const table = await call('GET', NS, undefined, { Accept: TABLE });
      t.same(table.json.columnDefinitions.map((c: { name: string }) => c.name), ['Name', 'Providers', 'Consumers', 'Endpoints', 'Ready', 'Age', 'Ports', 'Policy', 'Message']);
      t.same(table.json.columnDefinitions.map((c: { priority: number }) => c.priority), [0, 0, 0, 0, 0, 0, 1, 1, 1], 'Ports, Policy and Message with -o wide');
      t.match(table.json.rows.find((r: { cells: unknown[] }) => r.cells[0] === 'web'), { cells: ['web', '1', '2', 3, '1/2', /s$/, 'http:80', 'KeepForGracePeriod(60s)', 'lab: Forbidden: services is forbidden'], object: { kind: 'PartialObjectMetadata', metadata: { namespace: 'shop' } } });
      t.match(table.json.rows.find((r: { cells: unknown[] }) => r.cells[0] === 'bare').cells, ['bare', 'all', 'all', 0, '0/0', /s$/, 'all', 'KeepForGracePeriod(300s)', '']);
      t.match((await call('GET', `${NS}/web`, undefined, { Accept: TABLE })).json, { kind: 'Table', rows: [{ cells: ['web'] }] });
      t.match((await call('GET', NS, undefined, { Accept: PARTIAL_LIST })).json, { kind: 'PartialObjectMetadataList' });
      t.match((await call('GET', `${NS}/web`, undefined, { Accept: PARTIAL })).json, { kind: 'PartialObjectMetadata', metadata: { name: 'web', namespace: 'shop' } });

      const initial = await get(`${base}${NS}?watch=1&resourceVersion=0&timeoutSeconds=1`);
      t.ok(initial.text.split('\n').some((l) => l.includes('"ADDED"') && l.includes('"web"')), 'a watch from 0 lists with ADDED');
      const tableWatch = await get(`${base}${ALL}?watch=1&resourceVersion=0&timeoutSeconds=1`, { Accept: TABLE });
      t.match(JSON.parse(tableWatch.text.split('\n')[0]), { type: 'ADDED', object: { kind: 'Table', columnDefinitions: [{ name: 'Name' }] } });
      const legacy = await get(`${base}${G}/watch/namespaces/shop/multiclusterservices/web?resourceVersion=0&timeoutSeconds=1`);
      t.match(JSON.parse(legacy.text.split('\n')[0]), { type: 'ADDED', object: { metadata: { name: 'web', namespace: 'shop' } } });

      // The views: the all-clusters view serves the same collection; a one-cluster view all of it, read-only.
      const P = `${G}/resources`;
      t.same((await call('GET', `${P}/apis/panoptes.io/v1alpha1/namespaces/shop/multiclusterservices`)).json.items.map((i: KubeObject) => i.metadata?.name), list.json.items.map((i: KubeObject) => i.metadata?.name));
      t.same((await call('GET', `${P}/clusters/east/apis/panoptes.io/v1alpha1/multiclusterservices`)).json.items.length, all.json.items.length);
    });

    await t.test('update: optimistic concurrency, generation, status kept, no-op', async (t) => {
      const cur = (await call('GET', `${NS}/web`)).json;
      const next = { ...cur, spec: { ...cur.spec, consumerClusters: ['west'] }, status: { conditions: [] } };
      const r = await call('PUT', `${NS}/web`, next);
      t.equal(r.status, 200, r.text);
      t.equal(r.json.metadata.generation, 2, 'the spec changed: generation grows');
      t.same(r.json.status, cur.status, "status is synchro's: kept, not written through the main resource");
      t.ok(Number(r.json.metadata.resourceVersion) > Number(cur.metadata.resourceVersion));
      t.match(await call('PUT', `${NS}/web`, next), { status: 409, json: { reason: 'Conflict', message: 'Operation cannot be fulfilled on multiclusterservices.panoptes.io "web": the object has been modified; please apply your changes to the latest version and try again' } });
      const noRv = await call('PUT', `${NS}/web`, { ...next, metadata: { ...next.metadata, resourceVersion: undefined } });
      t.match(noRv.json, { code: 422, message: 'MultiClusterService.panoptes.io "web" is invalid: metadata.resourceVersion: Invalid value: "": must be specified for an update' });
      t.match((await call('PUT', `${NS}/api`, r.json)).json, { code: 400, message: 'the name of the object (web) does not match the name on the URL (api)' });
      t.match((await call('PUT', `${G}/namespaces/other/multiclusterservices/web`, r.json)).json, { code: 400, message: 'the namespace of the object (shop) does not match the namespace on the request (other)' });
      t.match(await call('PUT', `${NS}/ghost`, { ...r.json, metadata: { name: 'ghost', resourceVersion: '1' } }), { status: 404 });
      const same = await call('PUT', `${NS}/web`, r.json);
      t.equal(same.json.metadata.resourceVersion, r.json.metadata.resourceVersion, 'an update that changes nothing writes nothing');
      const labelled = await call('PUT', `${NS}/web`, { ...r.json, metadata: { ...r.json.metadata, labels: { team: 'b' } } });
      t.equal(labelled.json.metadata.generation, 2, 'metadata alone does not change the generation');
      const bad = await call('PUT', `${NS}/web`, { ...labelled.json, spec: { ports: [{ port: 70000 }] } });
      t.match(bad.json, { code: 422, details: { causes: [{ field: 'spec.ports[0].port' }] } });
    });

    await t.test('patch: merge and JSON patch; 415 for strategic merge and apply', async (t) => {
      const merged = await call('PATCH', `${NS}/web`, { spec: { consumerClusters: null, providerNotReady: { policy: 'RemoveImmediately', gracePeriodSeconds: null } }, metadata: { labels: { team: null, tier: 'gold' } } }, MERGE);
      t.equal(merged.status, 200, merged.text);
      t.same(merged.json.spec, { providerClusters: ['east'], ports: [{ name: 'http', port: 80 }], providerNotReady: { policy: 'RemoveImmediately' } });
      t.same(merged.json.metadata.labels, { tier: 'gold' });
      t.equal(merged.json.metadata.generation, 3);
      const jp = await call('PATCH', `${NS}/web`, [{ op: 'add', path: '/spec/providerClusters/-', value: 'north' }, { op: 'test', path: '/metadata/labels/tier', value: 'gold' }], JSONPATCH);
      t.same(jp.json.spec.providerClusters, ['east', 'north']);
      t.match(await call('PATCH', `${NS}/web`, [{ op: 'remove', path: '/spec/nope' }], JSONPATCH), { status: 422, json: { reason: 'Invalid' } });
      t.match(await call('PATCH', `${NS}/web`, { metadata: { resourceVersion: '2' }, spec: { ports: null } }, MERGE), { status: 409, json: { reason: 'Conflict' } }, 'a patch carrying a stale resourceVersion');
      t.match((await call('PATCH', `${NS}/web`, { spec: { providerClusters: ['east', 'east'] } }, MERGE)).json, { code: 422, details: { causes: [{ field: 'spec.providerClusters[1]', reason: 'FieldValueDuplicate' }] } });
      t.match((await call('PATCH', `${NS}/web`, { metadata: { namespace: 'other' } }, MERGE)).json, { code: 400, message: 'the namespace of the object (other) does not match the namespace on the request (shop)' });
      const strict = await call('PATCH', `${NS}/web?fieldValidation=Strict`, { spec: { consumers: ['x'] } }, MERGE);
      t.match(strict.json, { code: 422, reason: 'Invalid', message: /^ "" is invalid: patch: Invalid value: ".*": strict decoding error: unknown field "spec.consumers"$/ });
      for (const ct of ['application/strategic-merge-patch+json', 'application/apply-patch+yaml']) {
        t.match(await call('PATCH', `${NS}/web`, {}, { 'Content-Type': ct }), { status: 415, json: { message: 'the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json' } }, ct);
      }
      t.match(await call('PATCH', `${NS}/web?force=true`, {}, MERGE), { status: 422, json: { message: /force: Forbidden: may not be specified for non-apply patch/ } });
      t.match(await call('PATCH', `${NS}/ghost`, {}, MERGE), { status: 404 });
      // kubectl apply's last-applied annotation keeps what is served of the spec.
      const applied = JSON.stringify({ apiVersion: 'panoptes.io/v1alpha1', kind: 'MultiClusterService', metadata: { name: 'web', namespace: 'shop' }, spec: { providerClusters: ['east', 'north'], typo: 1 } });
      const apply = await call('PATCH', `${NS}/web`, { metadata: { annotations: { 'kubectl.kubernetes.io/last-applied-configuration': applied + '\n' } } }, MERGE);
      t.equal(apply.status, 200);
      t.same(JSON.parse(apply.json.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration']).spec, { providerClusters: ['east', 'north'] });
    });

    await t.test('dry-run writes nothing', async (t) => {
      const before = await store.watermark();
      const c = await call('POST', `${NS}?dryRun=All`, { metadata: { name: 'dry' }, spec: {} });
      t.equal(c.status, 201);
      t.match(c.json, { metadata: { name: 'dry', namespace: 'shop', uid: /./, finalizers: [mcsFinalizer] } });
      t.equal(c.json.metadata.resourceVersion, undefined);
      t.match(await call('POST', `${NS}?dryRun=All`, { metadata: { name: 'dry' }, spec: { ports: [{}] } }), { status: 422 }, 'validated');
      t.same((await call('PATCH', `${NS}/web?dryRun=All`, { spec: { providerClusters: ['south'] } }, MERGE)).json.spec.providerClusters, ['south']);
      t.ok((await call('DELETE', `${NS}/web?dryRun=All`)).json.metadata.deletionTimestamp);
      t.equal(await store.watermark(), before, 'no write');
      t.equal((await call('GET', `${NS}/dry`)).status, 404);
      t.same((await call('GET', `${NS}/web`)).json.spec.providerClusters, ['east', 'north']);
      t.equal((await call('GET', `${NS}/web`)).json.metadata.deletionTimestamp, undefined);
    });

    await t.test("status is synchro's; views", async (t) => {
      for (const method of ['PUT', 'PATCH']) {
        const r = await call(method, `${NS}/web/status`, { status: {} }, method === 'PATCH' ? MERGE : JSONCT);
        t.match(r, { status: 405, json: { reason: 'MethodNotAllowed', message: /not supported on resources of kind "multiclusterservices\/status\.panoptes\.io": the status of a MultiClusterService is written by synchro alone/ } }, method);
      }
      t.match(await call('DELETE', NS), { status: 405 }, 'no deletecollection');
      t.match(await call('DELETE', ALL), { status: 405 });
      t.match(await call('POST', `${G}/resources/clusters/east/apis/panoptes.io/v1alpha1/namespaces/shop/multiclusterservices`, { metadata: { name: 'v' } }), { status: 405 }, 'no writes through a one-cluster view');
      t.match(await call('POST', `${G}/watch/namespaces/shop/multiclusterservices`, { metadata: { name: 'v' } }), { status: 405 }, 'nor the legacy watch path');
      const viaView = await call('POST', `${G}/resources/apis/panoptes.io/v1alpha1/namespaces/shop/multiclusterservices`, { metadata: { name: 'via-view' } });
      t.equal(viaView.status, 201, 'the all-clusters view serves the same collection');
      const gone = await call('DELETE', `${G}/resources/apis/panoptes.io/v1alpha1/namespaces/shop/multiclusterservices/via-view`);
      t.match(gone, { status: 200, json: { metadata: { deletionTimestamp: /./ } } }, 'marked: the finalizer holds it');
    });

    await t.test('delete: the finalizer holds the object until synchro releases it', async (t) => {
      t.match(await call('DELETE', `${NS}/web`, { preconditions: { uid: 'other' } }), { status: 409, json: { message: /Precondition failed: UID in precondition: other/ } });
      t.match(await call('DELETE', `${NS}/web`, { preconditions: { resourceVersion: '1' } }), { status: 409, json: { message: /Precondition failed: ResourceVersion in precondition: 1/ } });
      const generation = (await call('GET', `${NS}/web`)).json.metadata.generation as number;
      const d = await call('DELETE', `${NS}/web`, { propagationPolicy: 'Background' });
      t.equal(d.status, 200);
      t.match(d.json, { kind: 'MultiClusterService', metadata: { name: 'web', namespace: 'shop', deletionGracePeriodSeconds: 0, finalizers: [mcsFinalizer] } });
      t.ok(d.json.metadata.deletionTimestamp);
      t.equal(d.json.metadata.generation, generation + 1, 'marking for deletion grows the generation');
      t.equal((await call('DELETE', `${NS}/web`)).json.metadata.resourceVersion, d.json.metadata.resourceVersion, 'deleting again changes nothing');
      t.match((await call('PATCH', `${NS}/web`, { metadata: { finalizers: [mcsFinalizer, 'x.io/more'] } }, MERGE)).json, { code: 422, details: { causes: [{ field: 'metadata.finalizers', reason: 'FieldValueForbidden' }] } });
      const table = await call('GET', `${NS}/web`, undefined, { Accept: TABLE });
      t.match(table.json.rows[0].cells[8], /^Terminating: cleaning up 2 consumer clusters$/);
      // Every consumer cleaned up: synchro, holding a consumer's lease, removes the finalizer, and the object goes.
      const released = await asSynchro(store, 'west', 'shop', 'web', release);
      t.equal(released.change?.type, 'DELETED');
      t.equal((await call('GET', `${NS}/web`)).status, 404, 'gone');
      // An object whose finalizers a user removed goes at once.
      await call('PATCH', `${NS}/bare`, [{ op: 'remove', path: '/metadata/finalizers' }], JSONPATCH);
      t.equal((await call('DELETE', `${NS}/bare`)).status, 200);
      t.equal((await call('GET', `${NS}/bare`)).status, 404);
      t.match(await call('DELETE', `${NS}/ghost`), { status: 404 });
    });

    await t.test('the watch saw every change; discovery and OpenAPI', async (t) => {
      await watch.until((w) => w.events.some((e) => e.type === 'DELETED' && e.object.metadata.name === 'web' && e.object.metadata.namespace === 'shop'), 5000, 'DELETED web');
      const webEvents = watch.events.filter((e) => e.object.metadata?.name === 'web' && e.object.metadata?.namespace === 'shop').map((e) => e.type);
      t.equal(webEvents[0], 'ADDED');
      t.equal(webEvents[webEvents.length - 1], 'DELETED');
      t.ok(webEvents.filter((x) => x === 'MODIFIED').length >= 5, 'status, updates, patches and the deletion mark as MODIFIED');
      const rvs = watch.events.map((e) => Number(e.object.metadata.resourceVersion));
      t.same(rvs, [...rvs].sort((a, b) => a - b), 'in rv order');
      t.ok(watch.events.some((e) => e.object.metadata.namespace === 'other'), 'every namespace');
      watch.close();

      for (const prefix of ['', `${G}/resources`, `${G}/resources/clusters/east`]) {
        const disc = (await call('GET', `${prefix}${G}`)).json;
        t.match(
          disc.resources,
          [
            { name: 'clusters' },
            { name: 'clusters/status' },
            { name: 'multiclusterservices', singularName: 'multiclusterservice', kind: 'MultiClusterService', namespaced: true, shortNames: ['mcs'], verbs: ['delete', 'get', 'list', 'patch', 'create', 'update', 'watch'] },
            { name: 'multiclusterservices/status', kind: 'MultiClusterService', namespaced: true, verbs: ['get'] },
          ],
          `discovery at ${prefix || '/'}`,
        );
      }
      const agg = await call('GET', '/apis', undefined, { Accept: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json' });
      const own = agg.json.items.find((i: { metadata: { name: string } }) => i.metadata.name === 'panoptes.io');
      t.match(own.versions[0].resources.find((r: { resource: string }) => r.resource === 'multiclusterservices'), {
        scope: 'Namespaced',
        singularResource: 'multiclusterservice',
        shortNames: ['mcs'],
        verbs: ['delete', 'get', 'list', 'patch', 'create', 'update', 'watch'],
        subresources: [{ subresource: 'status', verbs: ['get'] }],
      });
      const oa = (await call('GET', '/openapi/v2')).json;
      const item = oa.paths['/apis/panoptes.io/v1alpha1/namespaces/{namespace}/multiclusterservices/{name}'];
      t.ok(item.get && item.put && item.patch && item.delete && oa.paths['/apis/panoptes.io/v1alpha1/namespaces/{namespace}/multiclusterservices'].post, 'namespaced write operations');
      t.match(item.get['x-kubernetes-group-version-kind'], { group: 'panoptes.io', kind: 'MultiClusterService', version: 'v1alpha1' });
      t.same(item.patch.consumes, ['application/json-patch+json', 'application/merge-patch+json']);
      t.ok(oa.paths['/apis/panoptes.io/v1alpha1/multiclusterservices'].get, 'the list of every namespace');
      t.match(oa.definitions['io.panoptes.v1alpha1.MultiClusterService'], { 'x-kubernetes-group-version-kind': [{ group: 'panoptes.io', kind: 'MultiClusterService', version: 'v1alpha1' }] });
      t.match(oa.definitions['io.panoptes.v1alpha1.MultiClusterServicePort'].properties.port, { type: 'integer', minimum: 1, maximum: 65535 });
      const v3 = (await call('GET', '/openapi/v3/apis/panoptes.io/v1alpha1')).json;
      t.match(v3.components.schemas['io.panoptes.v1alpha1.MultiClusterServiceSpec'].properties.providerNotReady, { allOf: [{ $ref: '#/components/schemas/io.panoptes.v1alpha1.MultiClusterServiceProviderNotReady' }] });
    });
  });
}
