// What a request asks for, as authorization sees it (kube's RequestInfo, applied to the
// Kubernetes path inside a Panoptes URL). Parsed from the path alone, before routing, as
// kube-apiserver does: an unknown resource is authorized as named, then 404s.
//
// Resource requests below .../resources/[clusters/<c>/]{api/v1|apis/G/V}/... give the real
// group, version, resource, namespace and name, plus the cluster (one-cluster view) or
// none (all-clusters view). /apis/panoptes.io/v1alpha1/clusters[/<name>] is the resource
// `clusters` of panoptes.io, /apis/panoptes.io/v1alpha1/namespaces/<ns>/multiclusterservices[/<name>]
// the resource `multiclusterservices` in namespace <ns> (Panoptes' own objects: no per-cluster
// data check in a view either). Everything else (discovery, /version, /openapi, /metrics) is a
// non-resource path. The path's segments are read by the one rule of every route
// (kube/path-segments.ts), so what is authorized is what is routed and forwarded.
import { pathSegments } from '../../kube/path-segments.ts';
import { queryBool } from '../../kube/query.ts';
import { fleetInfos, panoptesGroupName, panoptesVersion } from '../discovery/panoptes-group.ts';

export const resourcesPrefix = `/apis/${panoptesGroupName}/${panoptesVersion}/resources`;

export interface ResourceAttributes {
  verb: string;
  group: string;
  version: string;
  resource: string;
  subresource?: string;
  namespace?: string;
  name?: string;
}

export type RequestAttributes =
  | {
      kind: 'resource';
      attrs: ResourceAttributes;
      /** Resource reads through a view: the cluster ('' = all clusters). */
      view?: { cluster: string };
      /** Forwarded to this member as the user (a write or a subresource in a one-cluster view): authorized on clusters/proxy (apiserver/proxy/). */
      proxy?: { cluster: string };
    }
  | { kind: 'nonResource'; path: string; verb: string };

const methodVerbs: Record<string, string> = { GET: 'get', HEAD: 'get', POST: 'create', PUT: 'update', PATCH: 'patch', DELETE: 'delete' };

/** A boolean query parameter as kube decodes it (RequestInfoFactory decodes ListOptions). */
function isTrue(v: string | null): boolean {
  return v !== null && queryBool(v);
}

/** kube's RequestInfoFactory on `parts` = the path after {api/v1 | apis/G/V}. */
export function resourceAttrs(method: string, query: URLSearchParams, group: string, version: string, partsIn: string[]): ResourceAttributes | undefined {
  let parts = partsIn;
  let verb = methodVerbs[method] ?? method.toLowerCase();
  if (parts[0] === 'watch' && (method === 'GET' || method === 'HEAD')) {
    verb = 'watch';
    parts = parts.slice(1);
  }
  if (parts.length === 0) return undefined;
  let namespace: string | undefined;
  if (parts[0] === 'namespaces' && parts.length > 1) {
    namespace = parts[1];
    if (parts.length > 2 && parts[2] !== 'status' && parts[2] !== 'finalize') parts = parts.slice(2);
  }
  const a: ResourceAttributes = { verb, group, version, resource: parts[0] };
  if (parts.length >= 2) a.name = parts[1];
  if (parts.length >= 3) a.subresource = parts[2];
  if (namespace !== undefined) a.namespace = namespace;
  if (a.name === undefined && verb === 'get') a.verb = 'list';
  if (a.name === undefined && verb === 'delete') a.verb = 'deletecollection';
  if ((a.verb === 'list' || a.verb === 'get') && isTrue(query.get('watch'))) a.verb = 'watch';
  return a;
}

const readVerbs = new Set(['get', 'list', 'watch']);

/**
 * A one-cluster request the proxy forwards whatever is synced: a write, or a subresource
 * (pods/log, deployments/scale...). A read of a resource that is not synced is forwarded too,
 * but only the catalog knows which those are: it is authorized as a read of the view here,
 * and on clusters/proxy by the proxy.
 */
export const proxiedByPath = (a: ResourceAttributes): boolean => !readVerbs.has(a.verb) || a.subresource !== undefined;

/** The kube path's group/version and the rest: [api, v1, ...] or [apis, G, V, ...]. */
function splitKubePath(segs: string[]): { group: string; version: string; rest: string[] } | undefined {
  if (segs[0] === 'api' && segs.length >= 3) return { group: '', version: segs[1], rest: segs.slice(2) };
  if (segs[0] === 'apis' && segs.length >= 4) return { group: segs[1], version: segs[2], rest: segs.slice(3) };
  return undefined;
}

export function requestAttributes(method: string, path: string, querystring: string): RequestAttributes {
  const q = new URLSearchParams(querystring);
  const nonResource = (): RequestAttributes => ({ kind: 'nonResource', path, verb: (methodVerbs[method] ?? method.toLowerCase()) === 'get' ? 'get' : (methodVerbs[method] ?? method.toLowerCase()) });
  const segs = pathSegments(path); // the one segment rule of every route (kube/path-segments.ts): 400 before any review
  const own = splitKubePath(segs);
  if (!own) return nonResource();
  if (own.group === panoptesGroupName && own.version === panoptesVersion && own.rest[0] === 'resources') {
    let inner = own.rest.slice(1);
    let cluster = '';
    if (inner[0] === 'clusters' && inner.length >= 2) {
      cluster = inner[1];
      inner = inner.slice(2);
    }
    const k = splitKubePath(inner);
    if (!k) return nonResource(); // a view's discovery, /version, /openapi
    const attrs = resourceAttrs(method, q, k.group, k.version, k.rest);
    if (!attrs) return nonResource();
    // Panoptes' own objects in a view (Clusters, MultiClusterServices, SynchroMembers) need no per-cluster data check beyond themselves.
    if (k.group === panoptesGroupName && k.version === panoptesVersion && fleetInfos().some((i) => i.resource === attrs.resource)) return { kind: 'resource', attrs };
    if (cluster && proxiedByPath(attrs)) return { kind: 'resource', attrs, proxy: { cluster } };
    return { kind: 'resource', attrs, view: { cluster } };
  }
  const attrs = resourceAttrs(method, q, own.group, own.version, own.rest);
  return attrs ? { kind: 'resource', attrs } : nonResource();
}
