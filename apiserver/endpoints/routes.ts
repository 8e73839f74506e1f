// URL routing (apiserver/README.md "URLs"): the server's own paths (health, metrics, version, OpenAPI,
// discovery of panoptes.io/v1alpha1 and its own kinds, Cluster and MultiClusterService, and the
// read-only views of collections and synchro members), and
// the two resource prefixes `/apis/panoptes.io/v1alpha1/resources/<kubernetes path>` (every
// cluster) and `.../resources/clusters/<cluster>/<kubernetes path>` (one cluster), each with
// its own discovery, OpenAPI and /version.
import type { Context } from 'koa';
import { StatusError, badRequest, notFound } from '../../kube/status.ts';
import { resourceAttrs, type ResourceAttributes } from '../auth/attributes.ts';
import { fleetGroups, proxiedGroups } from '../proxy/discovery.ts';
import { fleetMetrics, isFleetMetrics } from '../proxy/fleet-metrics.ts';
import { forward } from '../proxy/forward.ts';
import type { GroupEntry, ResourceInfo, ViewCatalog } from '../discovery/catalog.ts';
import { ownObjectsCluster } from '../../storage/own-objects.ts';
import { clusterResource } from '../../storage/cluster-objects.ts';
import { collectionPath, serveCollections } from '../collections/serve.ts';
import { ownKind } from '../registry/generic/kinds.ts';
import { serveOwnWrite, writeVerbOf } from '../registry/generic/own-writes.ts';
import { ownPath, panoptesGroup, panoptesGroupName, panoptesVersion, type OwnPath } from '../discovery/panoptes-group.ts';
import type { Deps } from './deps.ts';
import { aggregatedDiscovery, apiGroupDoc, apiGroupList, apiResourceList, apiVersions, versionInfo, viewGroups } from '../discovery/documents.ts';
import { pathNotFound, readOnly } from './errors.ts';
import { externalMetricsGroup, externalMetricsGroupName, externalMetricsVersion } from '../external/group.ts';
import { serveExternalMetric } from '../external/serve.ts';
import { serveGet } from '../read/get.ts';
import { serveList } from '../read/list.ts';
import { label, type Routed } from './routed.ts';
import { checkSearchClusters } from '../read/search-clusters.ts';
import { negotiateDiscovery, negotiateOutput } from './negotiate.ts';
import { ownerSearchOf } from '../read/owners.ts';
import { parseListParams } from '../read/params.ts';
import { checkResourceNames, pathSegments } from '../../kube/path-segments.ts';
import { queryBool } from '../../kube/query.ts';
import type { ResourceRequest, View } from './request.ts';
import { serveWatch } from '../read/watch.ts';

export const resourcesPrefix = `/apis/${panoptesGroupName}/${panoptesVersion}/resources`;


/**
 * A read-only resource of panoptes.io served by a handler of its own, not from stored objects
 * (synchro members: apiserver/registry/synchromembers/serve.ts), registered by the composition root
 * (apiserver/kinds.ts): `path` recognises its path below /apis/panoptes.io/v1alpha1/.
 */
export interface GroupRoute<P> {
  path(segs: string[]): P | undefined;
  serve(ctx: Context, deps: Deps, path: P): Promise<Routed>;
}

const groupRoutes: Array<(segs: string[]) => ((ctx: Context, deps: Deps) => Promise<Routed>) | undefined> = [];

/** Registers a read-only resource of panoptes.io with a handler of its own. */
export function registerGroupRoute<P>(r: GroupRoute<P>): void {
  groupRoutes.push((segs) => {
    const p = r.path(segs);
    return p === undefined ? undefined : (ctx, deps) => r.serve(ctx, deps, p);
  });
}

function groupRoute(segs: string[]): ((ctx: Context, deps: Deps) => Promise<Routed>) | undefined {
  for (const r of groupRoutes) {
    const served = r(segs);
    if (served) return served;
  }
  return undefined;
}

/** Whether a path is below the resource prefix (the two views). */
export const isResourcesPath = (path: string): boolean => path === resourcesPrefix || path.startsWith(resourcesPrefix + '/');

const json = (doc: unknown, type = 'application/json'): Routed => ({ reply: { type, body: JSON.stringify(doc) } });

function rootPaths(groups: GroupEntry[], prefix: string): Routed {
  const paths = [`${prefix}/api`, `${prefix}/api/v1`, `${prefix}/apis`, `${prefix}/version`, `${prefix}/openapi/v2`, `${prefix}/openapi/v3`];
  for (const g of groups) {
    if (g.name === '') continue;
    paths.push(`${prefix}/apis/${g.name}`);
    for (const v of g.versions) paths.push(`${prefix}/apis/${g.name}/${v.version}`);
  }
  if (prefix === '') paths.push('/healthz', '/livez', '/readyz', '/metrics', resourcesPrefix);
  return json({ paths: paths.sort() });
}

async function openapi(ctx: Context, deps: Deps, groups: GroupEntry[], segs: string[], prefix: string): Promise<Routed> {
  label(ctx, { verb: 'openapi', group: '', resource: '' });
  const hash = new URLSearchParams(ctx.querystring).get('hash') ?? undefined;
  return { reply: await deps.openapi.serve(groups, { segs: segs.slice(1), accept: ctx.get('Accept'), ifNoneMatch: ctx.get('If-None-Match'), hash, prefix }) };
}

/** /version: the server's (also served at the root by the fixed routes, fixed-routes.ts) or a view's. */
export function serveVersion(ctx: Context): Routed {
  label(ctx, { verb: 'discovery', group: '', resource: '' });
  return json(versionInfo());
}

/** /openapi/v2 and /openapi/v3[/...] of the server root: panoptes.io's own kinds (the fixed routes, fixed-routes.ts). */
export function serveRootOpenAPI(ctx: Context, deps: Deps): Promise<Routed> {
  return openapi(ctx, deps, [panoptesGroup()], pathSegments(ctx.path), '');
}

/** Discovery, /version and OpenAPI of one set of groups (a view, or the server root); undefined when not such a path. */
function discovery(ctx: Context, deps: Deps, groups: GroupEntry[], segs: string[], prefix: string): Routed | Promise<Routed> | undefined {
  const accept = ctx.get('Accept');
  const d = () => label(ctx, { verb: 'discovery', group: '', resource: '' });
  if (segs.length === 0) return d(), rootPaths(groups, prefix);
  if (segs[0] === 'version' && segs.length === 1) return serveVersion(ctx);
  if (segs[0] === 'openapi') return openapi(ctx, deps, groups, segs, prefix);
  if (segs[0] === 'api' && segs.length <= 2) {
    d();
    if (segs.length === 1) {
      const f = negotiateDiscovery(accept, true);
      if (f.aggregated) return json(aggregatedDiscovery(groups, 'api', f.version), f.contentType);
      return json(apiVersions(ctx.host || '127.0.0.1'));
    }
    negotiateDiscovery(accept, false);
    const list = apiResourceList(groups, '', segs[1]);
    if (!list) throw pathNotFound();
    return json(list);
  }
  if (segs[0] === 'apis' && segs.length <= 3) {
    d();
    if (segs.length === 1) {
      const f = negotiateDiscovery(accept, true);
      if (f.aggregated) return json(aggregatedDiscovery(groups, 'apis', f.version), f.contentType);
      return json(apiGroupList(groups));
    }
    negotiateDiscovery(accept, false);
    const g = groups.find((x) => x.name === segs[1] && x.name !== '');
    if (!g) throw pathNotFound();
    if (segs.length === 2) return json(apiGroupDoc(g));
    const list = apiResourceList(groups, segs[1], segs[2]);
    if (!list) throw pathNotFound();
    return json(list);
  }
  return undefined;
}

/**
 * An own kind of panoptes.io: .../clusters[/NAME[/status]],
 * .../namespaces/NS/multiclusterservices[/NAME[/status]], .../multiclusterservices (every
 * namespace), and their legacy .../watch/... forms. Reads as every served resource's, from
 * the own objects (the reserved cluster of storage); writes at the server root and in the
 * all-clusters view only (apiserver/registry/generic/own-writes.ts). A Cluster's name is its member cluster's,
 * so the clusters search and a one-cluster view select Clusters by name; the other own
 * objects belong to the fleet, not to a cluster: a one-cluster view serves them all
 * (read-only), and the clusters search does not apply to them (400).
 */
async function ownRoute(ctx: Context, deps: Deps, p: OwnPath, viewCluster: string | undefined): Promise<Routed> {
  const { info, namespace, rest, legacyWatch } = p;
  if (rest.length > 2) throw pathNotFound();
  const [name, sub] = rest;
  if (sub !== undefined && (sub !== 'status' || legacyWatch)) throw pathNotFound();
  if (info.namespaced && namespace === undefined && name !== undefined) throw pathNotFound(); // every namespace: a collection only
  if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
    if (viewCluster !== undefined || legacyWatch) throw readOnly(ctx.method);
    label(ctx, { verb: writeVerbOf(ctx.method) ?? 'other', group: panoptesGroupName, resource: info.resource });
    return { reply: await serveOwnWrite(ctx, deps, ownKind(info.resource), namespace, name, sub) };
  }
  const qs = new URLSearchParams(ctx.querystring);
  const w = qs.get('watch');
  const watch = legacyWatch || (w !== null && queryBool(w));
  const verb = watch ? 'watch' : name === undefined ? 'list' : 'get';
  label(ctx, { verb, group: panoptesGroupName, resource: info.resource });
  const params = parseListParams(qs, verb, info, deps.limits);
  const s = params.search;
  const namedAfterClusters = info.resource === clusterResource;
  if (!namedAfterClusters && s.clusters) throw badRequest(`the clusters search does not apply to ${info.resource}.${panoptesGroupName}: its objects belong to the fleet, not to a member cluster`);
  const clusterNames = namedAfterClusters ? [s.clusters, viewCluster === undefined ? undefined : [viewCluster]] : [];
  const names = [s.names, ...clusterNames].reduce<string[] | undefined>((acc, x) => (x === undefined ? acc : acc === undefined ? [...x] : acc.filter((n) => x.includes(n))), undefined);
  params.search = { ...(names ? { names } : {}), ...(s.namespaces ? { namespaces: s.namespaces } : {}), ...(s.ownerUIDs ? { ownerUIDs: s.ownerUIDs } : {}), ...ownerSearchOf(s) };
  if (verb === 'get' && names && !names.includes(name!)) throw notFound(`${info.resource}.${panoptesGroupName} "${name}" not found`, { name, group: panoptesGroupName, kind: info.resource });
  const output = negotiateOutput(ctx.get('Accept'), verb, qs.get('includeObject') ?? undefined);
  const req: ResourceRequest = { verb, view: { cluster: ownObjectsCluster }, info, namespace, name, params, output };
  if (verb === 'watch') return { watch: () => serveWatch(ctx, req, deps) };
  return { reply: verb === 'list' ? await serveList(deps, req) : await serveGet(deps, req) };
}

/** Finds the resource of a kubernetes path below /api/v1 or /apis/G/V: [watch/] [namespaces/NS/] R [/NAME]. */
function resolve(view: ViewCatalog, group: string, version: string, segs: string[]): { info: ResourceInfo; namespace?: string; name?: string; legacyWatch: boolean } | undefined {
  let legacyWatch = false;
  if (segs[0] === 'watch') {
    legacyWatch = true;
    segs = segs.slice(1);
  }
  if (segs.length === 0) return undefined;
  if (segs[0] === 'namespaces' && segs.length >= 3) {
    const info = view.find(group, version, segs[2]);
    if (info?.namespaced) {
      if (segs.length > 4) throw pathNotFound(); // subresources are not served
      return { info, namespace: segs[1], name: segs[3], legacyWatch };
    }
  }
  const info = view.find(group, version, segs[0]);
  if (!info) return undefined;
  if (segs.length > 2) throw pathNotFound();
  if (segs.length === 2 && info.namespaced) throw pathNotFound(); // a namespaced object needs its namespace
  return { info, name: segs[1], legacyWatch };
}

/**
 * A request forwarded to the view's member as the user: a write or a subresource (whatever is
 * synced), or a read of what is not synced. In the all-clusters view, writes and subresources
 * are a 405 naming the one-cluster URL.
 */
function proxyRoute(ctx: Context, deps: Deps, view: View, segs: string[], attrs: ResourceAttributes | undefined): Routed {
  if (view.cluster === undefined || !attrs) {
    const one = `${resourcesPrefix}/clusters/<cluster>/${segs.map(encodeURIComponent).join('/')}`;
    throw new StatusError('MethodNotAllowed', `the server does not allow this method on the requested resource: ${ctx.method} ${attrs?.subresource ? `of the subresource ${attrs.subresource} ` : ''}is served for one cluster at a time, through the proxy to that member: ${one}`, {});
  }
  const cluster = view.cluster;
  checkResourceNames(attrs); // what leaves for a member names what kube could hold: a namespace is a DNS-1123 label
  label(ctx, { verb: 'proxy', group: attrs.group, resource: attrs.subresource ? `${attrs.resource}/${attrs.subresource}` : attrs.resource });
  // The member's path is built from the checked segments (member/client.ts memberRequestPath), never from the URL as received.
  return { proxy: () => forward(ctx, deps, { cluster, attrs, segments: segs, query: ctx.querystring }) };
}

async function resourceRoute(ctx: Context, deps: Deps, view: View, segs: string[]): Promise<Routed> {
  const group = segs[0] === 'api' ? '' : segs[1];
  const version = segs[0] === 'api' ? segs[1] : segs[2];
  const rest = segs.slice(segs[0] === 'api' ? 2 : 3);
  const own = group === panoptesGroupName && version === panoptesVersion ? ownPath(rest) : undefined;
  if (own) return ownRoute(ctx, deps, own, view.cluster);
  const collection = group === panoptesGroupName && version === panoptesVersion ? collectionPath(rest) : undefined;
  if (collection) return serveCollections(ctx, deps, collection, view);
  const served = group === panoptesGroupName && version === panoptesVersion ? groupRoute(rest) : undefined;
  if (served) return served(ctx, deps); // the fleet's (synchro members): the same in every view
  const attrs = resourceAttrs(ctx.method, new URLSearchParams(ctx.querystring), group, version, rest);
  if ((ctx.method !== 'GET' && ctx.method !== 'HEAD') || attrs?.subresource !== undefined) return proxyRoute(ctx, deps, view, segs, attrs);

  let found: ReturnType<typeof resolve>;
  const lookup = () => {
    const cat = deps.catalog.view(view.cluster);
    return cat ? resolve(cat, group, version, rest) : undefined;
  };
  found = lookup();
  if (!found) {
    await deps.catalog.refreshOnMiss();
    found = lookup();
  }
  if (!found && view.cluster !== undefined && attrs) return proxyRoute(ctx, deps, view, segs, attrs); // not synced: the member's
  if (!found && view.cluster === undefined && attrs && isFleetMetrics(attrs)) {
    // Not synced: every Ready member's, through the proxy (kubectl top pods -A).
    checkResourceNames(attrs);
    label(ctx, { verb: 'proxy', group: attrs.group, resource: attrs.resource });
    return { reply: await fleetMetrics(ctx, deps, attrs, segs, ctx.querystring) };
  }
  if (!found) throw pathNotFound();
  const { info, namespace, name, legacyWatch } = found;

  const qs = new URLSearchParams(ctx.querystring);
  const w = qs.get('watch');
  const watch = legacyWatch || (w !== null && queryBool(w));
  const verb = watch ? 'watch' : name === undefined ? 'list' : 'get';
  label(ctx, { verb, group: info.group, resource: info.resource });
  const params = parseListParams(qs, verb, info, deps.limits);
  await checkSearchClusters(deps, params.search.clusters);
  const output = negotiateOutput(ctx.get('Accept'), verb, qs.get('includeObject') ?? undefined);
  const req: ResourceRequest = { verb, view, info, namespace, name, params, output };
  if (verb === 'watch') return { watch: () => serveWatch(ctx, req, deps) };
  return { reply: verb === 'list' ? await serveList(deps, req) : await serveGet(deps, req) };
}

/** Routes one request: GET or HEAD anywhere, writes of the own kinds (anything else: 405). */
export async function route(ctx: Context, deps: Deps): Promise<Routed> {
  const path = ctx.path;
  if (isResourcesPath(path)) {
    let segs = pathSegments(path.slice(resourcesPrefix.length));
    let view: View = {};
    let prefix = resourcesPrefix;
    if (segs[0] === 'clusters') {
      const cluster = segs[1];
      if (cluster === undefined) throw pathNotFound();
      // Panoptes' own kinds are read-only in a one-cluster view, whatever the cluster (the proxy does not take them).
      const own = segs.slice(2);
      if (ctx.method !== 'GET' && ctx.method !== 'HEAD' && own[0] === 'apis' && own[1] === panoptesGroupName && own[2] === panoptesVersion && ownPath(own.slice(3))) throw readOnly(ctx.method);
      if (!deps.catalog.hasCluster(cluster)) await deps.catalog.refreshOnMiss();
      if (!deps.catalog.hasCluster(cluster)) throw notFound(`clusters.${panoptesGroupName} "${cluster}" not found`, { name: cluster, group: panoptesGroupName, kind: 'clusters' });
      view = { cluster };
      prefix = `${resourcesPrefix}/clusters/${encodeURIComponent(cluster)}`;
      segs = segs.slice(2);
    }
    if ((segs[0] === 'api' && segs.length >= 3) || (segs[0] === 'apis' && segs.length >= 4)) return resourceRoute(ctx, deps, view, segs);
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') throw readOnly(ctx.method);
    // Discovery shows what the Cluster objects already say: a change of theirs not yet in the catalog is waited for (bounded).
    await deps.catalog.caughtUp();
    const synced = viewGroups(deps.catalog.view(view.cluster), [panoptesGroup()]);
    // A one-cluster view also lists what its proxy serves (writes, subresources, metrics, access reviews).
    const groups = segs[0] === 'openapi' ? synced : view.cluster === undefined ? fleetGroups(synced) : proxiedGroups(synced);
    const d = discovery(ctx, deps, groups, segs, prefix);
    if (d) return d;
    throw pathNotFound();
  }

  const segs = pathSegments(path);
  const ownKindPath = segs[0] === 'apis' && segs[1] === panoptesGroupName && segs[2] === panoptesVersion ? ownPath(segs.slice(3)) : undefined;
  if (ownKindPath) return ownRoute(ctx, deps, ownKindPath, undefined);
  const collection = segs[0] === 'apis' && segs[1] === panoptesGroupName && segs[2] === panoptesVersion ? collectionPath(segs.slice(3)) : undefined;
  if (collection) return serveCollections(ctx, deps, collection, {});
  const served = segs[0] === 'apis' && segs[1] === panoptesGroupName && segs[2] === panoptesVersion ? groupRoute(segs.slice(3)) : undefined;
  if (served) return served(ctx, deps);
  if (ctx.method !== 'GET' && ctx.method !== 'HEAD') throw readOnly(ctx.method);
  if (segs[0] === 'apis' && segs[1] === externalMetricsGroupName && segs[2] === externalMetricsVersion && segs.length > 3) return { reply: await serveExternalMetric(ctx, deps, segs.slice(3)) };
  // The server's own groups: panoptes.io, and external.metrics.k8s.io in discovery (not in OpenAPI: its metrics are not objects).
  const own = segs[0] === 'openapi' ? [panoptesGroup()] : [panoptesGroup(), externalMetricsGroup(deps.externalMetrics.rules.current(), deps.catalog.view())];
  const d = discovery(ctx, deps, own, segs, '');
  if (d) return d;
  throw pathNotFound();
}
