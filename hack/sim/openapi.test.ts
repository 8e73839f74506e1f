// The simulator's OpenAPI: v3 root and group-version documents with hashes, v2 in JSON and
// protobuf, CRD schemas from openAPIV3Schema, a v2-only cluster, and kubectl explain on both.
import t from 'tap';
import { refsOf } from '../../kube/openapi-convert.ts';
import { widgetCRD } from './workload.ts';
import { get, http, kubectl, simCluster, tempDir } from './testutil.ts';

type Doc = Record<string, Record<string, unknown>>;

function unresolved(doc: Doc, prefix: string, holder: Record<string, unknown>): string[] {
  return [...refsOf(doc)].filter((r) => r.startsWith(prefix) && !(r.slice(prefix.length) in holder));
}

t.test('v3 root, group versions, hashes and CRD schemas', async (t) => {
  const c = await simCluster(t, { workload: true });
  const root = await get(`${c.url}/openapi/v3`);
  t.equal(root.status, 200);
  t.match(root.headers.etag, /^"[0-9A-F]{128}"$/);
  const paths = root.json.paths as Record<string, { serverRelativeURL: string }>;
  t.match(paths['api/v1'].serverRelativeURL, /^\/openapi\/v3\/api\/v1\?hash=[0-9A-F]{128}$/);
  t.ok(paths['apis/apps/v1'] && paths['apis/demo.panoptes.io/v1'], 'built-in and CRD group versions');

  const core = await get(c.url + paths['api/v1'].serverRelativeURL);
  t.equal(core.status, 200);
  t.equal(core.headers['cache-control'], 'public, immutable', 'a hashed URL is immutable');
  t.equal(core.headers.etag, `"${paths['api/v1'].serverRelativeURL.split('hash=')[1]}"`);
  const doc = core.json as Doc;
  t.equal(doc.openapi, '3.0.0' as unknown);
  const list = (doc.paths['/api/v1/namespaces/{namespace}/pods'] as Doc).get;
  t.same(list['x-kubernetes-group-version-kind'], { group: '', kind: 'Pod', version: 'v1' });
  t.ok((doc.paths['/api/v1/namespaces/{namespace}/configmaps/{name}'] as Doc).patch, 'writable kinds have a PATCH operation');
  const schemas = doc.components.schemas as Record<string, unknown>;
  t.ok(schemas['io.k8s.api.core.v1.Pod'] && schemas['io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta']);
  t.same(unresolved(doc, '#/components/schemas/', schemas), [], 'every $ref resolves');

  const again = await get(c.url + paths['api/v1'].serverRelativeURL, { 'If-None-Match': core.headers.etag as string });
  t.equal(again.status, 304);
  const moved = await http('GET', `${c.url}/openapi/v3/api/v1?hash=0123`);
  t.equal(moved.status, 301);
  t.equal(moved.headers.location, paths['api/v1'].serverRelativeURL, 'an old hash redirects to the current document');
  t.equal((await get(`${c.url}/openapi/v3/apis/nope/v1`)).status, 404);
  t.equal((await get(c.url + paths['api/v1'].serverRelativeURL, { Accept: 'application/com.github.proto-openapi.spec.v3@v1.0+protobuf' })).status, 406);

  const demo = (await get(c.url + paths['apis/demo.panoptes.io/v1'].serverRelativeURL)).json as Doc;
  const widget = (demo.components.schemas as Doc)['io.panoptes.demo.v1.Widget'];
  t.same(widget['x-kubernetes-group-version-kind'], [{ group: 'demo.panoptes.io', kind: 'Widget', version: 'v1' }]);
  t.match(widget.properties, { spec: { properties: { color: { type: 'string' } } }, metadata: { allOf: [{ $ref: '#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta' }] } });
  const patch = (demo.paths['/apis/demo.panoptes.io/v1/namespaces/{namespace}/widgets/{name}'] as Doc).patch as { parameters: Array<{ name: string }> };
  t.ok(patch.parameters.some((p) => p.name === 'fieldValidation'), 'PATCH takes fieldValidation (kubectl then validates on the server)');
  t.same(unresolved(demo, '#/components/schemas/', demo.components.schemas as Record<string, unknown>), []);

  // A new CRD changes its group version's hash only.
  const gizmo = structuredClone(widgetCRD);
  gizmo.metadata = { name: 'gizmos.demo.panoptes.io' };
  Object.assign(gizmo.spec as object, { names: { plural: 'gizmos', singular: 'gizmo', kind: 'Gizmo' } });
  t.equal((await http('POST', `${c.url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions`, gizmo)).status, 201);
  const after = (await get(`${c.url}/openapi/v3`)).json.paths as Record<string, { serverRelativeURL: string }>;
  t.equal(after['api/v1'].serverRelativeURL, paths['api/v1'].serverRelativeURL, 'api/v1 unchanged');
  t.not(after['apis/demo.panoptes.io/v1'].serverRelativeURL, paths['apis/demo.panoptes.io/v1'].serverRelativeURL, 'the CRD group changed');

  const other = await simCluster(t, { name: 'other', workload: true });
  const otherRoot = (await get(`${other.url}/openapi/v3`)).json.paths as Record<string, { serverRelativeURL: string }>;
  t.equal(otherRoot['api/v1'].serverRelativeURL, paths['api/v1'].serverRelativeURL, 'clusters share the built-in documents');
  t.equal(otherRoot['apis/demo.panoptes.io/v1'].serverRelativeURL, paths['apis/demo.panoptes.io/v1'].serverRelativeURL, 'and identical CRD documents hash alike');
});

t.test('v2 in JSON and protobuf, with CRDs; a cluster without v3', async (t) => {
  const c = await simCluster(t, { workload: true, openapiV3: false });
  t.equal((await get(`${c.url}/openapi/v3`)).status, 404, 'no v3');
  const v2 = await get(`${c.url}/openapi/v2`);
  t.equal(v2.status, 200);
  t.equal(v2.headers['content-type'], 'application/json');
  const doc = v2.json as Doc;
  t.equal(doc.swagger, '2.0' as unknown);
  const widget = doc.definitions['io.panoptes.demo.v1.Widget'] as Doc;
  t.match(widget, { properties: { spec: { properties: { size: { enum: ['S', 'M', 'L'] } } }, metadata: { $ref: '#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta' } } });
  t.ok((doc.paths['/apis/demo.panoptes.io/v1/namespaces/{namespace}/widgets'] as Doc).get, 'CRD paths');
  t.same(unresolved(doc, '#/definitions/', doc.definitions), []);
  t.equal((await get(`${c.url}/openapi/v2`, { 'If-None-Match': v2.headers.etag as string })).status, 304);

  const pb = await get(`${c.url}/openapi/v2`, { Accept: 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf' });
  t.equal(pb.status, 200);
  t.equal(pb.headers['content-type'], 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf');
  t.equal(pb.headers.etag, v2.headers.etag, 'one ETag for both encodings');
  const bad = await get(`${c.url}/openapi/v2`, { Accept: 'text/html' });
  t.equal(bad.status, 406);

  // kubectl explain falls back to v2 (protobuf) when v3 is missing.
  const dir = tempDir(t);
  const ex = await kubectl(c, dir, ['explain', 'widgets.spec'], 60_000);
  t.equal(ex.code, 0, ex.stderr);
  t.match(ex.stdout, /RESOURCE: spec <Object>/);
  t.match(ex.stdout, /color\s+<string>/);
});

t.test('kubectl explain over v3', async (t) => {
  const c = await simCluster(t, { workload: true });
  const dir = tempDir(t);
  const pods = await kubectl(c, dir, ['explain', 'pods.spec.containers'], 60_000);
  t.equal(pods.code, 0, pods.stderr);
  t.match(pods.stdout, /FIELD: containers <\[\]Container>/);
  const widgets = await kubectl(c, dir, ['explain', 'widgets.spec'], 60_000);
  t.equal(widgets.code, 0, widgets.stderr);
  t.match(widgets.stdout, /GROUP:\s+demo\.panoptes\.io/);
  t.match(widgets.stdout, /replicas\s+<integer>/);
});
