// The Cluster resource over HTTP (in process, SQLite): every verb as kube-apiserver answers it
// for a custom resource with a status subresource — create, get, list, watch, update with
// optimistic concurrency, merge and JSON patch (415 for the others), dry-run, delete with
// the finalizer, 422 with one cause per field, strict and warned unknown fields, clusters.yaml
// objects refused, status writes refused — and inline credentials in no answer of any verb or
// format, nor in the change log.
import t from 'tap';
import { http, get } from '../../../hack/sim/testutil.ts';
import { httpWatch } from '../../../hack/testing/watch-http.ts';
import { setLogLevel } from '../../../lib/log.ts';
import { openTestStore, seedCluster } from '../../../storage/testing.ts';
import { createCA, createCert } from '../../auth/certs.ts';
import { createApiserver } from '../../server.ts';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');

const C = '/apis/panoptes.io/v1alpha1/clusters';
const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';
const PARTIAL = 'application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io,application/json';
const PARTIAL_LIST = 'application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json';
const TOKEN = 'inline-token-VERY-SECRET-0001';
const b64 = (s: string) => Buffer.from(s).toString('base64');

t.test('clusters.panoptes.io is writable', async (t) => {
  const { store, close } = await openTestStore('sqlite');
  const api = await createApiserver({ store, catalogOptions: { refreshMs: 100 } });
  const base = await api.listen('127.0.0.1', 0);
  t.teardown(async () => {
    await api.close();
    await close();
  });
  const ca = createCA('member-ca');
  const client = createCert(ca, { commonName: 'panoptes', usage: 'client' });
  const CLIENT_KEY = b64(client.key);
  const answers: string[] = [];
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const r = await http(method, base + path, body, headers);
    answers.push(JSON.stringify(r.headers) + r.text);
    return r;
  };
  const JSONCT = { 'Content-Type': 'application/json' };
  const MERGE = { 'Content-Type': 'application/merge-patch+json' };
  const JSONPATCH = { 'Content-Type': 'application/json-patch+json' };

  const watch = await httpWatch(`${base}${C}?watch=1&resourceVersion=${await store.watermark()}`);
  t.equal(watch.status, 200, 'watch is served (it was 405)');

  t.test('create', async (t) => {
    const east = {
      apiVersion: 'panoptes.io/v1alpha1',
      kind: 'Cluster',
      metadata: { name: 'east', labels: { team: 'a' }, resourceVersion: '' },
      spec: { server: 'https://east.example:6443', caData: b64(ca.cert), resources: ['pods', 'apps/*'], namespaces: { exclude: ['kube-system'] }, credentials: { token: TOKEN } },
      status: { phase: 'Ready', ready: true },
    };
    const r = await call('POST', `${C}?fieldManager=kubectl-client-side-apply&fieldValidation=Strict`, east);
    t.equal(r.status, 201, r.text);
    t.match(r.json, { kind: 'Cluster', metadata: { name: 'east', generation: 1, labels: { team: 'a' }, finalizers: ['panoptes.io/synchro'] }, spec: { source: 'api', server: 'https://east.example:6443' } });
    t.match(r.json.metadata.uid, /^[0-9a-f-]{36}$/);
    t.match(r.json.metadata.creationTimestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    t.equal(r.json.metadata.resourceVersion, String(await store.watermark()), 'resourceVersion is an rv of the change log');
    t.equal(r.json.status, undefined, 'status is synchro\'s: not taken from a create');
    t.equal(r.json.spec.credentials, undefined, 'inline credentials are not served');
    const [reg] = await store.listClusterRegistrations();
    t.same(reg.credentials, { token: TOKEN, endpoint: { server: 'https://east.example:6443', caData: b64(ca.cert) } }, 'stored apart for synchro, with the endpoint they were given for');

    const again = await call('POST', C, east);
    t.match(again, { status: 409, json: { reason: 'AlreadyExists', message: 'clusters.panoptes.io "east" already exists', details: { name: 'east', group: 'panoptes.io', kind: 'clusters' } } });
    const rv = await call('POST', C, { ...east, metadata: { name: 'x1', resourceVersion: '5' } });
    t.match(rv, { status: 400, json: { reason: 'BadRequest', message: 'resourceVersion should not be set on objects to be created' } });
    const gen = await call('POST', C, { spec: { server: 'https://gen.example' }, metadata: { generateName: 'gen-' } });
    t.equal(gen.status, 201);
    t.match(gen.json.metadata.name, /^gen-[a-z0-9]{5}$/, 'generateName');
    const yaml = await call('POST', C, 'apiVersion: panoptes.io/v1alpha1\nkind: Cluster\nmetadata: {name: yamled}\nspec: {server: "http://10.0.0.1:1"}\n', { 'Content-Type': 'application/yaml' });
    t.equal(yaml.status, 201, 'a YAML body');
    t.match(await call('POST', C, 'x', { 'Content-Type': 'application/vnd.kubernetes.protobuf' }), { status: 415, json: { reason: 'UnsupportedMediaType' } });
    t.match(await call('POST', C, '{nope', JSONCT), { status: 400, json: { reason: 'BadRequest', message: /must be of type Cluster/ } });
    t.match(await call('POST', C, { apiVersion: 'v1', kind: 'Cluster', metadata: { name: 'v' }, spec: { server: 'https://v' } }), { status: 400, json: { message: 'the API version in the data (v1) does not match the expected API version (panoptes.io/v1alpha1)' } });
  });

  t.test('validation: 422 with one cause per field', async (t) => {
    const r = await call('POST', C, {
      metadata: { name: 'Bad_Name' },
      spec: { server: 'ftp://x', resources: ['pods', '', 'pods', 'a/b/c'], namespaces: { include: ['Not Valid'] }, kubeconfig: '/etc/passwd', source: 'file', credentials: { clientCertData: 'bm9wZQ==' } },
    });
    t.equal(r.status, 422);
    t.equal(r.json.reason, 'Invalid');
    t.match(r.json.message, /^Cluster\.panoptes\.io "Bad_Name" is invalid: \[/);
    const causes = r.json.details.causes as Array<{ reason: string; field: string; message: string }>;
    const by = (field: string) => causes.filter((c) => c.field === field);
    t.match(by('spec.source'), [{ reason: 'FieldValueNotSupported', message: 'Unsupported value: "file": supported values: "api"' }]);
    t.match(by('spec.kubeconfig'), [{ reason: 'FieldValueForbidden', message: /file references are not accepted through the API/ }]);
    t.match(by('spec.server'), [{ reason: 'FieldValueInvalid', message: /^Invalid value: "ftp:\/\/x": must be an https:\/\// }]);
    t.match(by('spec.resources[1]'), [{ reason: 'FieldValueInvalid' }]);
    t.match(by('spec.resources[2]'), [{ reason: 'FieldValueDuplicate', message: 'Duplicate value: "pods"' }]);
    t.match(by('spec.resources[3]'), [{ reason: 'FieldValueInvalid' }]);
    t.match(by('spec.namespaces.include[0]'), [{ reason: 'FieldValueInvalid', message: /RFC 1123 label/ }]);
    t.match(by('spec.credentials.clientCertData'), [{ reason: 'FieldValueInvalid' }]);
    t.match(by('spec.credentials.clientKeyData'), [{ reason: 'FieldValueRequired' }]);
    t.match(by('metadata.name'), [{ reason: 'FieldValueInvalid' }]);
    const noServer = await call('POST', C, { metadata: { name: 'nos' }, spec: {} });
    t.match(noServer.json, { code: 422, message: 'Cluster.panoptes.io "nos" is invalid: spec.server: Required value: the URL of the member API server, e.g. https://10.0.0.1:6443', details: { causes: [{ reason: 'FieldValueRequired', field: 'spec.server' }] } });
    const noName = await call('POST', C, { spec: { server: 'https://x' } });
    t.match(noName.json, { code: 422, message: 'Cluster.panoptes.io "" is invalid: metadata.name: Required value: name or generateName is required' });
    const both = await call('POST', C, { metadata: { name: 'both' }, spec: { server: 'https://x', credentials: { secretRef: { name: 's' }, token: TOKEN } } });
    t.match(both.json, { code: 422, details: { causes: [{ field: 'spec.credentials.token', reason: 'FieldValueForbidden' }] } });
    t.notOk(both.text.includes(TOKEN), 'an error never echoes a credential');
    // The names of the fleet URLs (the view role grants them by name) are no member cluster's.
    for (const name of ['clusters', 'api', 'apis']) {
      const reserved = await call('POST', C, { metadata: { name }, spec: { server: 'https://r.example' } });
      t.match(reserved, { status: 422, json: { reason: 'Invalid', details: { causes: [{ field: 'metadata.name', message: /is reserved/ }] } } }, `${name}: refused`);
    }
  });

  t.test('unknown fields: Strict 400, Warn (the default) a Warning, Ignore silent', async (t) => {
    const obj = { metadata: { name: 'typo' }, spec: { server: 'https://typo', resorces: ['pods'], credentials: { secretRef: { name: 's', namespace: 'x' } } } };
    const strict = await call('POST', `${C}?fieldValidation=Strict`, obj);
    t.match(strict, { status: 400, json: { reason: 'BadRequest', message: 'Cluster in version "v1alpha1" cannot be handled as a Cluster: strict decoding error: unknown field "spec.resorces", unknown field "spec.credentials.secretRef.namespace"' } });
    const warn = await call('POST', C, obj);
    t.equal(warn.status, 201);
    t.same(warn.headers.warning, '299 - "unknown field \\"spec.resorces\\"", 299 - "unknown field \\"spec.credentials.secretRef.namespace\\""');
    t.equal(warn.json.spec.resorces, undefined, 'dropped');
    const ignore = await call('POST', `${C}?fieldValidation=Ignore`, { ...obj, metadata: { name: 'typo2' } });
    t.equal(ignore.status, 201);
    t.equal(ignore.headers.warning, undefined);
    const bad = await call('POST', `${C}?fieldValidation=Loose&dryRun=Some`, obj);
    t.match(bad.json, { code: 422, message: 'CreateOptions.meta.k8s.io "" is invalid: [dryRun: Unsupported value: []string{"Some"}: supported values: "All", fieldValidation: Unsupported value: "Loose": supported values: "", "Ignore", "Strict", "Warn"]' });
    t.match(await call('POST', `${C}?nope=1`, obj), { status: 400, json: { reason: 'BadRequest' } });
  });

  t.test('get, list, watch in every format', async (t) => {
    const one = await call('GET', `${C}/east`);
    t.match(one.json, { kind: 'Cluster', metadata: { name: 'east' }, spec: { server: 'https://east.example:6443' } });
    const status = await call('GET', `${C}/east/status`);
    t.same(status.json, one.json, '.../status answers the object');
    const list = await call('GET', C);
    t.match(list.json, { kind: 'ClusterList', apiVersion: 'panoptes.io/v1alpha1' });
    t.equal(list.json.metadata.resourceVersion, String(await store.watermark()));
    t.ok(list.json.items.some((i: { metadata: { name: string } }) => i.metadata.name === 'east'));
    t.same((await call('GET', `${C}?labelSelector=team%3Da`)).json.items.map((i: { metadata: { name: string } }) => i.metadata.name), ['east'], 'label selectors');
    t.same((await call('GET', `${C}?fieldSelector=metadata.name%3Deast`)).json.items.length, 1, 'field selectors');
    const page = await call('GET', `${C}?limit=1`);
    t.equal(page.json.items.length, 1);
    t.ok(page.json.metadata.continue, 'paging');
    const table = await call('GET', C, undefined, { Accept: TABLE });
    t.same(table.json.columnDefinitions.map((c: { name: string }) => c.name), ['Name', 'Phase', 'Ready', 'Synced', 'Objects', 'Age', 'Server', 'Owner', 'Epoch', 'MCS', 'Installation', 'Message']);
    t.match(table.json.rows.find((r: { cells: unknown[] }) => r.cells[0] === 'east').cells, ['east', 'Pending', 'False', '0/0', 0, /s$/, 'https://east.example:6443', '<none>', 0, 'none', '<none>', '']);
    const wide = await call('GET', `${C}?includeObject=Object`, undefined, { Accept: TABLE });
    t.ok(wide.json.rows[0].object.spec, 'includeObject=Object');
    t.match((await call('GET', C, undefined, { Accept: PARTIAL_LIST })).json, { kind: 'PartialObjectMetadataList' });
    t.match((await call('GET', `${C}/east`, undefined, { Accept: PARTIAL })).json, { kind: 'PartialObjectMetadata', metadata: { name: 'east' } });
    t.match((await call('GET', `${C}/east`, undefined, { Accept: TABLE })).json, { kind: 'Table', rows: [{ cells: ['east'] }] });
    t.match(await call('GET', `${C}/nope`), { status: 404, json: { reason: 'NotFound', message: 'clusters.panoptes.io "nope" not found' } });
    const initial = await get(`${base}${C}?watch=1&resourceVersion=0&timeoutSeconds=1`);
    answers.push(initial.text);
    t.ok(initial.text.split('\n').some((l) => l.includes('"ADDED"') && l.includes('"east"')), 'a watch from 0 lists with ADDED');
    const tableWatch = await get(`${base}${C}?watch=1&resourceVersion=0&timeoutSeconds=1`, { Accept: TABLE });
    answers.push(tableWatch.text);
    t.match(JSON.parse(tableWatch.text.split('\n')[0]), { type: 'ADDED', object: { kind: 'Table', columnDefinitions: [{ name: 'Name' }] } });
    const partialWatch = await get(`${base}${C}?watch=1&resourceVersion=0&timeoutSeconds=1`, { Accept: PARTIAL });
    answers.push(partialWatch.text);
    t.match(JSON.parse(partialWatch.text.split('\n')[0]), { object: { kind: 'PartialObjectMetadata' } });
    const legacy = await get(`${base}/apis/panoptes.io/v1alpha1/watch/clusters/east?resourceVersion=0&timeoutSeconds=1`);
    t.match(JSON.parse(legacy.text.split('\n')[0]), { type: 'ADDED', object: { metadata: { name: 'east' } } });
  });

  t.test('update: optimistic concurrency, generation, status ignored, no-op', async (t) => {
    const cur = (await call('GET', `${C}/east`)).json;
    const next = { ...cur, spec: { ...cur.spec, resources: ['pods'] }, status: { phase: 'Hacked' } };
    const r = await call('PUT', `${C}/east`, next);
    t.equal(r.status, 200, r.text);
    t.equal(r.json.metadata.generation, 2, 'the spec changed: generation grows');
    t.equal(r.json.status, undefined, 'status is not written through the main resource');
    t.ok(Number(r.json.metadata.resourceVersion) > Number(cur.metadata.resourceVersion));
    const stale = await call('PUT', `${C}/east`, next);
    t.match(stale, { status: 409, json: { reason: 'Conflict', message: 'Operation cannot be fulfilled on clusters.panoptes.io "east": the object has been modified; please apply your changes to the latest version and try again' } });
    const noRv = await call('PUT', `${C}/east`, { ...next, metadata: { ...next.metadata, resourceVersion: undefined } });
    t.match(noRv.json, { code: 422, message: 'Cluster.panoptes.io "east" is invalid: metadata.resourceVersion: Invalid value: "": must be specified for an update' });
    const wrongName = await call('PUT', `${C}/west`, r.json);
    t.match(wrongName.json, { code: 400, message: 'the name of the object (east) does not match the name on the URL (west)' });
    t.match(await call('PUT', `${C}/ghost`, { ...r.json, metadata: { name: 'ghost', resourceVersion: '1' } }), { status: 404 });
    const same = await call('PUT', `${C}/east`, r.json);
    t.equal(same.json.metadata.resourceVersion, r.json.metadata.resourceVersion, 'an update that changes nothing writes nothing');
    const labelled = await call('PUT', `${C}/east`, { ...r.json, metadata: { ...r.json.metadata, labels: { team: 'b' } } });
    t.equal(labelled.json.metadata.generation, 2, 'metadata alone does not change the generation');
    const [reg] = (await store.listClusterRegistrations()).filter((x) => x.name === 'east');
    t.same(reg.credentials, { token: TOKEN, endpoint: { server: 'https://east.example:6443', caData: b64(ca.cert) } }, 'credentials not given in an update are kept');
    const rotated = await call('PUT', `${C}/east`, { ...labelled.json, spec: { ...labelled.json.spec, credentials: { token: `${TOKEN}-2` } } });
    t.equal(rotated.json.metadata.generation, 3, 'new credentials: generation grows');
    t.match((await store.listClusterRegistrations()).find((x) => x.name === 'east')?.credentials, { token: `${TOKEN}-2`, endpoint: { server: 'https://east.example:6443' } });
  });

  t.test('patch: merge and JSON patch; 415 for strategic merge and apply', async (t) => {
    const merged = await call('PATCH', `${C}/east`, { spec: { resources: ['pods', 'services'] }, metadata: { labels: { team: null, tier: 'gold' } } }, MERGE);
    t.equal(merged.status, 200, merged.text);
    t.same(merged.json.spec.resources, ['pods', 'services']);
    t.same(merged.json.metadata.labels, { tier: 'gold' });
    const jp = await call('PATCH', `${C}/east`, [{ op: 'add', path: '/spec/resources/-', value: 'configmaps' }, { op: 'test', path: '/metadata/labels/tier', value: 'gold' }], JSONPATCH);
    t.same(jp.json.spec.resources, ['pods', 'services', 'configmaps']);
    t.match(await call('PATCH', `${C}/east`, [{ op: 'remove', path: '/spec/nope' }], JSONPATCH), { status: 422, json: { reason: 'Invalid', message: 'the server rejected our request due to an error in our request' } });
    const stale = await call('PATCH', `${C}/east`, { metadata: { resourceVersion: '2' }, spec: { resources: ['pods'] } }, MERGE);
    t.match(stale, { status: 409, json: { reason: 'Conflict' } }, 'a patch carrying a stale resourceVersion');
    const badResult = await call('PATCH', `${C}/east`, { spec: { server: 'nope' } }, MERGE);
    t.match(badResult.json, { code: 422, details: { causes: [{ field: 'spec.server' }] } });
    const strict = await call('PATCH', `${C}/east?fieldValidation=Strict`, { spec: { resorces: ['x'], credentials: { token: TOKEN } } }, MERGE);
    t.match(strict.json, { code: 422, reason: 'Invalid', message: /^ "" is invalid: patch: Invalid value: ".*": strict decoding error: unknown field "spec.resorces"$/ });
    t.notOk(strict.text.includes(TOKEN), 'the error shows the patched object without its credentials');
    for (const ct of ['application/strategic-merge-patch+json', 'application/apply-patch+yaml']) {
      const r = await call('PATCH', `${C}/east`, {}, { 'Content-Type': ct });
      t.match(r, { status: 415, json: { reason: 'UnsupportedMediaType', message: 'the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json' } }, ct);
    }
    t.match(await call('PATCH', `${C}/east?force=true`, {}, MERGE), { status: 422, json: { message: /PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch/ } });
    t.match(await call('PATCH', `${C}/ghost`, {}, MERGE), { status: 404 });
    // kubectl apply (client-side): a merge patch carrying the last-applied annotation, inline credentials and all.
    const applied = JSON.stringify({ apiVersion: 'panoptes.io/v1alpha1', kind: 'Cluster', metadata: { name: 'east' }, spec: { server: 'https://east.example:6443', credentials: { token: TOKEN } } });
    const apply = await call('PATCH', `${C}/east`, { metadata: { annotations: { 'kubectl.kubernetes.io/last-applied-configuration': applied + '\n' } }, spec: { credentials: { token: TOKEN } } }, MERGE);
    t.equal(apply.status, 200);
    const recorded = JSON.parse(apply.json.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration']);
    t.same(recorded, { apiVersion: 'panoptes.io/v1alpha1', kind: 'Cluster', metadata: { name: 'east' }, spec: { server: 'https://east.example:6443' } }, 'last-applied without the credentials');
    const leak = await call('PATCH', `${C}/east`, { metadata: { labels: { t: TOKEN.slice(0, 20) }, annotations: { note: TOKEN } }, spec: { credentials: { token: TOKEN } } }, MERGE);
    t.match(leak.json, { code: 422, details: { causes: [{ field: 'metadata', reason: 'FieldValueForbidden' }] } }, 'credentials cannot be smuggled into metadata');
  });

  t.test('dry-run writes nothing', async (t) => {
    const before = await store.watermark();
    const c = await call('POST', `${C}?dryRun=All`, { metadata: { name: 'dry' }, spec: { server: 'https://dry' } });
    t.equal(c.status, 201);
    t.match(c.json, { metadata: { name: 'dry', uid: /./ } });
    t.equal(c.json.metadata.resourceVersion, undefined);
    t.match(await call('POST', `${C}?dryRun=All`, { metadata: { name: 'dry' }, spec: { server: 'ftp://dry' } }), { status: 422 }, 'validated');
    const p = await call('PATCH', `${C}/east?dryRun=All`, { spec: { resources: ['nodes'] } }, MERGE);
    t.same(p.json.spec.resources, ['nodes']);
    const d = await call('DELETE', `${C}/east?dryRun=All`);
    t.ok(d.json.metadata.deletionTimestamp);
    t.equal(await store.watermark(), before, 'no write');
    t.equal((await call('GET', `${C}/dry`)).status, 404);
    t.same((await call('GET', `${C}/east`)).json.spec.resources, ['pods', 'services', 'configmaps']);
  });

  t.test('status is synchro\'s; clusters.yaml objects are read-only', async (t) => {
    for (const method of ['PUT', 'PATCH']) {
      const r = await call(method, `${C}/east/status`, { status: { phase: 'Ready' } }, method === 'PATCH' ? MERGE : JSONCT);
      t.match(r, { status: 405, json: { reason: 'MethodNotAllowed', message: /written by synchro alone/ } }, method);
    }
    await store.writeClusterObjectWithoutLease('filed', () => ({
      action: 'put',
      object: { apiVersion: 'panoptes.io/v1alpha1', kind: 'Cluster', metadata: { name: 'filed', uid: 'u-filed', generation: 1, creationTimestamp: '2026-01-01T00:00:00Z' }, spec: { source: 'file', server: 'https://filed' } },
    }));
    const cur = (await call('GET', `${C}/filed`)).json;
    for (const [method, body, headers] of [['PUT', cur, JSONCT], ['PATCH', { spec: { resources: ['pods'] } }, MERGE], ['DELETE', undefined, {}]] as const) {
      const r = await call(method, `${C}/filed`, body, headers);
      t.match(r, { status: 403, json: { reason: 'Forbidden', message: /^clusters\.panoptes\.io "filed" is forbidden: it is defined in the clusters file of synchro \(spec\.source: file\)/ } }, method);
    }
    t.match(await call('POST', C, { metadata: { name: 'filed' }, spec: { server: 'https://x' } }), { status: 409, json: { reason: 'AlreadyExists' } });
    t.match(await call('DELETE', C), { status: 405 }, 'no deletecollection');
    t.match(await call('POST', `/apis/panoptes.io/v1alpha1/resources/clusters/east/apis/panoptes.io/v1alpha1/clusters`, {}), { status: 405 }, 'no writes through a one-cluster view');
    const viaView = await call('POST', `/apis/panoptes.io/v1alpha1/resources/apis/panoptes.io/v1alpha1/clusters`, { metadata: { name: 'via-view' }, spec: { server: 'https://v' } });
    t.equal(viaView.status, 201, 'the all-clusters view serves the same collection');
    t.equal((await call('DELETE', `/apis/panoptes.io/v1alpha1/resources/apis/panoptes.io/v1alpha1/clusters/via-view`)).status, 200);
    t.match(await call('POST', `/apis/panoptes.io/v1alpha1/resources/api/v1/namespaces/x/configmaps`, {}), { status: 405, json: { reason: 'MethodNotAllowed' } }, 'synced resources stay read-only');
  });

  t.test('delete: the finalizer holds the object until synchro releases it', async (t) => {
    const preconditioned = await call('DELETE', `${C}/east`, { preconditions: { uid: 'other' } });
    t.match(preconditioned, { status: 409, json: { message: /Precondition failed: UID in precondition: other/ } });
    const generation = (await call('GET', `${C}/east`)).json.metadata.generation as number;
    const d = await call('DELETE', `${C}/east`, { propagationPolicy: 'Background' });
    t.equal(d.status, 200);
    t.match(d.json, { kind: 'Cluster', metadata: { name: 'east', deletionGracePeriodSeconds: 0, finalizers: ['panoptes.io/synchro'] } });
    t.ok(d.json.metadata.deletionTimestamp);
    t.equal(d.json.metadata.generation, generation + 1, 'marking for deletion grows the generation');
    const again = await call('DELETE', `${C}/east`);
    t.equal(again.json.metadata.resourceVersion, d.json.metadata.resourceVersion, 'deleting again changes nothing');
    const added = await call('PATCH', `${C}/east`, { metadata: { finalizers: ['panoptes.io/synchro', 'x.io/more'] } }, MERGE);
    t.match(added.json, { code: 422, details: { causes: [{ field: 'metadata.finalizers', reason: 'FieldValueForbidden' }] } });
    // What synchro does once the objects are gone: the finalizer goes, and the object with it.
    const released = await call('PATCH', `${C}/east`, [{ op: 'remove', path: '/metadata/finalizers' }], JSONPATCH);
    t.equal(released.status, 200);
    t.equal((await call('GET', `${C}/east`)).status, 404, 'gone');
    const none = await call('DELETE', `${C}/typo`);
    t.equal(none.status, 200);
    t.match(await call('DELETE', `${C}/ghost`), { status: 404 });
  });

  t.test('the watch saw every change; discovery, OpenAPI and credentials', async (t) => {
    await watch.until((w) => w.events.some((e) => e.type === 'DELETED' && e.object.metadata.name === 'east'), 5000, 'DELETED east');
    const east = watch.events.filter((e) => e.object.metadata?.name === 'east').map((e) => e.type);
    t.equal(east[0], 'ADDED');
    t.equal(east[east.length - 1], 'DELETED');
    t.ok(east.filter((x) => x === 'MODIFIED').length >= 5, 'updates, patches and the deletion mark as MODIFIED');
    const rvs = watch.events.map((e) => Number(e.object.metadata.resourceVersion));
    t.same(rvs, [...rvs].sort((a, b) => a - b), 'in rv order');
    answers.push(watch.raw());
    watch.close();

    const disc = (await call('GET', '/apis/panoptes.io/v1alpha1')).json;
    t.match(disc.resources, [
      { name: 'clusters', kind: 'Cluster', namespaced: false, verbs: ['delete', 'get', 'list', 'patch', 'create', 'update', 'watch'] },
      { name: 'clusters/status', kind: 'Cluster', verbs: ['get'] },
    ]);
    const oa = (await call('GET', '/openapi/v2')).json;
    const item = oa.paths['/apis/panoptes.io/v1alpha1/clusters/{name}'];
    t.ok(item.put && item.patch && item.delete && oa.paths['/apis/panoptes.io/v1alpha1/clusters'].post, 'write operations in OpenAPI');
    t.same(item.patch.consumes, ['application/json-patch+json', 'application/merge-patch+json']);

    // No answer of any verb or format, and no served row, ever carried a credential.
    const k = store.conn.knex;
    const rows = JSON.stringify([await k('objects').select('object'), await k('changes').select('object', 'prev_object')]);
    for (const secret of [TOKEN, `${TOKEN}-2`, CLIENT_KEY.slice(0, 40)]) {
      t.notOk(answers.some((a) => a.includes(secret)), `no answer carries ${secret.slice(0, 12)}...`);
      t.notOk(rows.includes(secret), 'nor the change log');
    }
    const withKey = await call('POST', C, { metadata: { name: 'certs' }, spec: { server: 'https://certs', credentials: { clientCertData: b64(client.cert), clientKeyData: CLIENT_KEY } } });
    t.equal(withKey.status, 201, withKey.text);
    t.notOk(withKey.text.includes(CLIENT_KEY.slice(0, 40)));
  });
});

t.test('discovery follows a Cluster object change at once (not at the next periodic refresh)', async (t) => {
  const { store, close } = await openTestStore('sqlite');
  const api = await createApiserver({ store, catalogOptions: { refreshMs: 600_000 } });
  const base = await api.listen('127.0.0.1', 0);
  t.teardown(async () => {
    await api.close();
    await close();
  });
  const resources = async () => ((await get(`${base}/apis/panoptes.io/v1alpha1/resources/api/v1`)).json.resources as Array<{ name: string }>).map((r) => r.name);
  t.same(await resources(), [], 'nothing synced yet');
  // What synchro does when a cluster's initial sync completes: the status row, then the Cluster object.
  await seedCluster(store, 'z', { phase: 'Ready', ready: true, apiResources: [{ group: '', version: 'v1', resource: 'configmaps', kind: 'ConfigMap', namespaced: true, singularName: 'configmap' }] });
  await store.writeClusterObjectWithoutLease('z', () => ({ action: 'put', object: { apiVersion: 'panoptes.io/v1alpha1', kind: 'Cluster', metadata: { name: 'z', uid: 'u-z', generation: 1 }, spec: { source: 'file' }, status: { phase: 'Ready' } } }));
  const deadline = Date.now() + 5000;
  let names: string[] = [];
  while (Date.now() < deadline && !(names = await resources()).includes('configmaps')) await new Promise((r) => setTimeout(r, 50));
  t.same(names, ['configmaps'], 'served soon after the Cluster object changed');
});
