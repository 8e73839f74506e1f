// /openapi/v2 and /openapi/v3 describing what a view serves: list/get (and watch) paths of
// every synced resource, and one schema per kind with x-kubernetes-group-version-kind
// (objects are served as member clusters return them, so schemas are open). ETags let
// clients cache.
import { createHash } from 'node:crypto';
import type { OpenAPIV2, OpenAPIV3 } from 'openapi-types';
import type { GroupEntry, ResourceInfo } from './catalog.ts';
import { panoptesVersion } from './discovery.ts';

const gvPath = (group: string, version: string) => (group ? `apis/${group}/${version}` : `api/${version}`);
const defName = (r: ResourceInfo, suffix = '') => `${r.group || 'core'}.${r.version}.${r.kind}${suffix}`;
const gvk = (r: ResourceInfo, kind = r.kind) => [{ group: r.group, version: r.version, kind }];

const listParams = ['labelSelector', 'fieldSelector', 'limit', 'continue', 'resourceVersion', 'resourceVersionMatch', 'watch', 'allowWatchBookmarks', 'timeoutSeconds', 'sendInitialEvents', 'clusters', 'namespaces', 'names', 'ownerUID'];

function paths(r: ResourceInfo): Array<{ path: string; verb: 'list' | 'get'; namespaced: boolean }> {
  const base = `/${gvPath(r.group, r.version)}`;
  const out: Array<{ path: string; verb: 'list' | 'get'; namespaced: boolean }> = [{ path: `${base}/${r.resource}`, verb: 'list', namespaced: false }];
  if (r.namespaced) {
    out.push({ path: `${base}/namespaces/{namespace}/${r.resource}`, verb: 'list', namespaced: true });
    out.push({ path: `${base}/namespaces/{namespace}/${r.resource}/{name}`, verb: 'get', namespaced: true });
  } else out.push({ path: `${base}/${r.resource}/{name}`, verb: 'get', namespaced: false });
  return out;
}

const camel = (s: string) => s.split(/[.-]/).filter(Boolean).map((w) => w[0].toUpperCase() + w.slice(1)).join('');
/** kube-apiserver's operation ids: listCoreV1NamespacedPod, readAppsV1NamespacedDeployment, listCoreV1PodForAllNamespaces. */
function opId(r: ResourceInfo, verb: 'list' | 'get', ns: boolean): string {
  const gv = `${camel(r.group || 'core')}${camel(r.version)}`;
  const op = verb === 'list' ? 'list' : 'read';
  if (ns) return `${op}${gv}Namespaced${r.kind}`;
  return verb === 'list' && r.namespaced ? `${op}${gv}${r.kind}ForAllNamespaces` : `${op}${gv}${r.kind}`;
}

/** The Swagger 2.0 document of a set of groups. */
export function openapiV2(groups: GroupEntry[]): OpenAPIV2.Document {
  const doc: OpenAPIV2.Document = {
    swagger: '2.0',
    info: { title: 'Panoptes', version: `v${panoptesVersion}` },
    paths: {},
    definitions: {},
  };
  for (const g of groups) {
    for (const v of g.versions) {
      for (const r of v.resources) {
        doc.definitions![defName(r)] = { type: 'object', description: `${r.kind} as served by the member clusters`, 'x-kubernetes-group-version-kind': gvk(r) } as OpenAPIV2.SchemaObject;
        doc.definitions![defName(r, 'List')] = {
          type: 'object',
          properties: { items: { type: 'array', items: { $ref: `#/definitions/${defName(r)}` } } },
          'x-kubernetes-group-version-kind': gvk(r, `${r.kind}List`),
        } as OpenAPIV2.SchemaObject;
        for (const p of paths(r)) {
          const parameters: OpenAPIV2.Parameters = [];
          if (p.namespaced) parameters.push({ name: 'namespace', in: 'path', required: true, type: 'string' });
          if (p.verb === 'get') parameters.push({ name: 'name', in: 'path', required: true, type: 'string' });
          if (p.verb === 'list') for (const q of listParams) parameters.push({ name: q, in: 'query', type: 'string' });
          doc.paths[p.path] = {
            get: {
              operationId: opId(r, p.verb, p.namespaced),
              produces: ['application/json', 'application/json;stream=watch'],
              parameters,
              responses: { 200: { description: 'OK', schema: { $ref: `#/definitions/${defName(r, p.verb === 'list' ? 'List' : '')}` } } },
              'x-kubernetes-action': p.verb,
              'x-kubernetes-group-version-kind': { group: r.group, version: r.version, kind: r.kind },
            } as OpenAPIV2.OperationObject,
          };
        }
      }
    }
  }
  return doc;
}

/** The OpenAPI 3 document of one group version. */
export function openapiV3(group: string, version: string, resources: ResourceInfo[]): OpenAPIV3.Document {
  const doc: OpenAPIV3.Document = { openapi: '3.0.0', info: { title: 'Panoptes', version: `v${panoptesVersion}` }, paths: {}, components: { schemas: {} } };
  for (const r of resources) {
    doc.components!.schemas![defName(r)] = { type: 'object', description: `${r.kind} as served by the member clusters`, 'x-kubernetes-group-version-kind': gvk(r) } as OpenAPIV3.SchemaObject;
    doc.components!.schemas![defName(r, 'List')] = {
      type: 'object',
      properties: { items: { type: 'array', items: { $ref: `#/components/schemas/${defName(r)}` } } },
      'x-kubernetes-group-version-kind': gvk(r, `${r.kind}List`),
    } as OpenAPIV3.SchemaObject;
    for (const p of paths(r)) {
      const parameters: OpenAPIV3.ParameterObject[] = [];
      if (p.namespaced) parameters.push({ name: 'namespace', in: 'path', required: true, schema: { type: 'string' } });
      if (p.verb === 'get') parameters.push({ name: 'name', in: 'path', required: true, schema: { type: 'string' } });
      if (p.verb === 'list') for (const q of listParams) parameters.push({ name: q, in: 'query', schema: { type: 'string' } });
      doc.paths[p.path] = {
        get: {
          operationId: opId(r, p.verb, p.namespaced),
          parameters,
          responses: { 200: { description: 'OK', content: { 'application/json': { schema: { $ref: `#/components/schemas/${defName(r, p.verb === 'list' ? 'List' : '')}` } } } } },
        },
      };
    }
  }
  void group;
  void version;
  return doc;
}

/** Serialized document and its ETag. */
export function withEtag(doc: unknown): { body: string; etag: string } {
  const body = JSON.stringify(doc);
  return { body, etag: `"${createHash('sha256').update(body).digest('hex').slice(0, 32).toUpperCase()}"` };
}

/** /openapi/v3 root: one entry per group version, URLs under `prefix`. */
export function openapiV3Root(groups: GroupEntry[], prefix: string): { paths: Record<string, { serverRelativeURL: string }> } {
  const out: Record<string, { serverRelativeURL: string }> = {};
  for (const g of groups) {
    for (const v of g.versions) {
      const key = gvPath(g.name, v.version);
      const { etag } = withEtag(openapiV3(g.name, v.version, v.resources));
      out[key] = { serverRelativeURL: `${prefix}/openapi/v3/${key}?hash=${etag.replace(/"/g, '')}` };
    }
  }
  return { paths: out };
}
