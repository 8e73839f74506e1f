// `collectionresources.panoptes.io`: one list of several kinds, served as Clusterpedia serves
// clusterpedia.io/v1beta1 CollectionResource (pkg/apiserver/registry/clusterpedia/
// collectionresources/rest.go): a list of the collections and their kinds, and a get of one
// collection whose `items` are a page of its objects. Here that page is one storage snapshot
// over every kind (storage/collection.ts): one resourceVersion, `limit` and `continue` resume
// exactly across kinds, and selectors and the search parameters apply to every kind; a get
// without `limit` answers a page of --max-limit. `?watch=true` on a collection streams the
// changes of every kind in rv order. kubectl -l names no object, so the list of collections with
// `search.panoptes.io/collection=<name>` answers that collection's objects as a List (and
// watches them: kubectl get -w). Served at /apis/panoptes.io/v1alpha1/collectionresources and
// in each view (a one-cluster view reads that cluster only).
//
// Authorization: the request is authorized as a get (list) of collectionresources like any
// other; reading the objects is authorized again, kind by kind, as a list (watch) of that
// resource through the view (and per namespace when the request names namespaces), so a
// collection never shows what the user could not list kind by kind.
import type { Context } from 'koa';
import { parseFieldSelector } from '../../kube/fields.ts';
import { matchesLabels } from '../../kube/labels.ts';
import { queryBool } from '../../kube/query.ts';
import { StatusError, badRequest, notFound } from '../../kube/status.ts';
import { partialObjectMetadataListDocument, partialObjectMetadataListJson, tableJson, tableRowJson } from '../../kube/table.ts';
import { jsonArrayBytes } from '../../kube/json-array.ts';
import type { CollectionKind, KubeObject, ListQuery } from '../../storage/types.ts';
import type { ResourceAttributes } from '../auth/attributes.ts';
import type { AuthState } from '../auth/middleware.ts';
import type { Authorizer } from '../auth/authz.ts';
import type { ResourceInfo, ViewCatalog } from '../discovery/catalog.ts';
import type { Deps, Reply } from '../endpoints/deps.ts';
import { readOnly } from '../endpoints/errors.ts';
import { findResource } from '../external/resolve.ts';
import { readList } from '../read/list.ts';
import { negotiateOutput } from '../endpoints/negotiate.ts';
import { tableDocument as collectionTableDocument, tableRowJson as collectionRowJson } from '../read/table.ts';
import { collectionListColumns, collectionObjectsTable } from './table.ts';
import { panoptesApiVersion, panoptesGroupName } from '../discovery/panoptes-group.ts';
import { collectionResourcesInfo } from './resource-info.ts';
import { parseListParams } from '../read/params.ts';
import { clustersRead, toListQuery } from '../read/list-query.ts';
import type { ResourceRequest, View } from '../endpoints/request.ts';
import { staleWarnings } from '../endpoints/warnings.ts';
import type { MetricLabels, Routed } from '../endpoints/routed.ts';
import { checkSearchClusters } from '../read/search-clusters.ts';
import { serveWatch } from '../read/watch.ts';
import { anyCollection, kindName, type CollectionDefinition, type CollectionsDeps } from './definitions.ts';
import { resolveKindTerms, takeKindTerms } from './params.ts';


/** A collections path below /apis/panoptes.io/v1alpha1/: [watch/]collectionresources[/<name>]. */
export function collectionPath(segs: string[]): { name?: string; legacyWatch: boolean } | undefined {
  const legacyWatch = segs[0] === 'watch';
  const s = legacyWatch ? segs.slice(1) : segs;
  if (s[0] !== collectionResourcesInfo.resource || s.length > 2) return undefined;
  return { name: s[1], legacyWatch };
}

/** The kinds of a collection that a view serves, as its resourceTypes say them. */
function servedKinds(view: ViewCatalog | undefined, kinds: CollectionKind[]): Array<{ kind: CollectionKind; info: ResourceInfo }> {
  return kinds.flatMap((kind) => {
    const info = findResource(view, kind.group, kind.resource);
    return info ? [{ kind, info }] : [];
  });
}

const resourceType = ({ kind, info }: { kind: CollectionKind; info: ResourceInfo }) => ({
  group: info.group,
  version: info.version,
  kind: info.kind,
  resource: info.resource,
  ...(kind.bare ? { bare: true } : {}),
});

/** The kinds named in a Table row: `deployments.apps`, `pods (bare)`, `*` for any. */
function resourcesCell(def: CollectionDefinition): string {
  return def.name === anyCollection ? '* (groups=, resources=)' : def.kinds.map((k) => kindName(k) + (k.bare ? ' (bare)' : '')).join(',');
}

async function authorizeKinds(ctx: Context, deps: CollectionsDeps, verb: 'list' | 'watch', view: View, kinds: ResourceInfo[], namespaces: string[] | undefined): Promise<void> {
  const user = (ctx.state as AuthState).user;
  if (!deps.authorizer || !user) return;
  const scopes: Array<string | undefined> = namespaces && namespaces.length * kinds.length <= 64 ? namespaces : [undefined];
  const checks: ResourceAttributes[] = kinds.flatMap((info) => scopes.map((namespace) => ({ verb, group: info.group, version: info.version, resource: info.resource, ...(namespace !== undefined && info.namespaced ? { namespace } : {}) })));
  await Promise.all(checks.map((attrs) => deps.authorizer!.authorize(user, { kind: 'resource', attrs, view: { cluster: view.cluster ?? '' } })));
}

function listOfCollections(deps: Deps, defs: CollectionDefinition[], view: View, qs: URLSearchParams, accept: string): Reply {
  const params = parseListParams(qs, 'list', collectionResourcesInfo, deps.limits);
  const catalog = deps.catalog.view(view.cluster);
  const names = params.search.names;
  const chosen = defs.filter(
    (d) =>
      (names === undefined || names.includes(d.name)) &&
      matchesLabels(params.labelSelector, {}) &&
      params.fieldSelector.every((f) => (f.field === 'metadata.name' ? (d.name === f.value) === (f.operator === '=') : (f.operator === '=') === (f.value === ''))),
  );
  const out = negotiateOutput(accept, 'list');
  const object = (d: CollectionDefinition) => ({ kind: 'CollectionResource', apiVersion: panoptesApiVersion, metadata: { name: d.name }, resourceTypes: servedKinds(catalog, d.kinds).map(resourceType) });
  const listMeta = { resourceVersion: '' };
  if (out.kind === 'table') {
    const rows = chosen.map((d) => tableRowJson([d.name, resourcesCell(d)], collectionResourcesInfo, object(d), JSON.stringify(object(d)), out));
    return { type: out.contentType, body: tableJson(collectionListColumns, out.metaVersion, listMeta, rows) };
  }
  if (out.kind === 'partial') return { type: out.contentType, body: partialObjectMetadataListJson(chosen.map(object), out.metaVersion, listMeta) };
  return { type: out.contentType, body: JSON.stringify({ kind: 'CollectionResourceList', apiVersion: panoptesApiVersion, metadata: listMeta, items: chosen.map(object) }) };
}

/** Serves a collections path (see the header comment). */
export async function serveCollections(ctx: Context, deps: Deps, path: { name?: string; legacyWatch: boolean }, view: View): Promise<Routed> {
  if (ctx.method !== 'GET' && ctx.method !== 'HEAD') throw readOnly(ctx.method);
  const qs = new URLSearchParams(ctx.querystring);
  const w = qs.get('watch');
  const watch = path.legacyWatch || (w !== null && queryBool(w));
  const taken = takeKindTerms(qs);
  const named = [...new Set(taken.terms.collection)];
  if (path.name !== undefined) {
    if (named.length) throw badRequest(`the path names the collection (${path.name}): search.panoptes.io/collection applies to the list of collections`);
    return serveCollection(ctx, deps, path.name, taken, view, watch ? 'watch' : 'get');
  }
  if (named.length > 1) throw badRequest(`search.panoptes.io/collection: name one collection, not ${named.join(', ')}`);
  if (named.length === 1) return serveCollection(ctx, deps, named[0], taken, view, watch ? 'watch' : 'list');
  if (watch) throw new StatusError('MethodNotAllowed', 'the collections do not change while the server runs: watch a collection (collectionresources/<name>?watch=true, or search.panoptes.io/collection=<name>)', {});
  if (taken.given) throw badRequest(`groups and resources choose the kinds of the ${anyCollection} collection: name it (collectionresources/${anyCollection}, or search.panoptes.io/collection=${anyCollection})`);
  metric(ctx, 'list');
  return { reply: listOfCollections(deps, deps.collections.definitions, view, qs, ctx.get('Accept')) };
}

function metric(ctx: Context, verb: MetricLabels['verb']): void {
  (ctx.state as { metric?: MetricLabels }).metric = { verb, group: panoptesGroupName, resource: collectionResourcesInfo.resource };
}

/**
 * One collection's objects: a get of collectionresources/<name> answers a CollectionResource
 * (Table: one row per object); the list with search.panoptes.io/collection=<name> a List of
 * the objects (Table: the same rows; PartialObjectMetadataList: the objects'), paged by its
 * ListMeta as kubectl pages lists; watch: the objects' events.
 */
async function serveCollection(ctx: Context, deps: Deps, name: string, taken: ReturnType<typeof takeKindTerms>, view: View, verb: 'get' | 'list' | 'watch'): Promise<Routed> {
  metric(ctx, verb);
  const def = deps.collections.definitions.find((d) => d.name === name);
  if (!def) throw notFound(`collectionresources.${panoptesGroupName} "${name}" not found`, { name, group: panoptesGroupName, kind: collectionResourcesInfo.resource });
  if (taken.given && def.name !== anyCollection) throw badRequest(`groups and resources choose the kinds of the ${anyCollection} collection; ${def.name} reads its own (${resourcesCell(def)})`);
  let catalog = deps.catalog.view(view.cluster);
  let declared: CollectionKind[];
  try {
    declared = def.name === anyCollection ? resolveKindTerms(catalog, taken.terms) : def.kinds;
  } catch {
    // A resource just synced may not be in the catalog yet: one refresh before the 400.
    await deps.catalog.refreshOnMiss();
    catalog = deps.catalog.view(view.cluster);
    declared = resolveKindTerms(catalog, taken.terms);
  }
  const served = servedKinds(catalog, declared);

  // Fields of one kind mean nothing to another: kube's field selectors of every kind are metadata.name and metadata.namespace.
  const kindField = parseFieldSelector(taken.qs.get('fieldSelector') ?? '').find((f) => f.field !== 'metadata.name' && f.field !== 'metadata.namespace');
  if (kindField) throw badRequest(`fieldSelector ${kindField.field}: the kinds of a collection share only the fields metadata.name and metadata.namespace; select ${kindField.field} in a list of one kind`);
  // Paging and resourceVersion as a list's; the collection's name is not a filter of its objects.
  const params = parseListParams(taken.qs, verb === 'watch' ? 'watch' : 'list', collectionResourcesInfo, deps.limits);
  await checkSearchClusters(deps, params.search.clusters);
  const output = negotiateOutput(ctx.get('Accept'), verb, taken.qs.get('includeObject') ?? undefined);
  await authorizeKinds(ctx, deps.collections, verb === 'watch' ? 'watch' : 'list', view, served.map((s) => s.info), params.search.namespaces);

  // The clusters that serve its kinds: whose staleness a Warning tells (as a list's, and a watch's through serveWatch).
  const info: ResourceInfo = { ...collectionResourcesInfo, clusters: [...new Set(served.flatMap((s) => s.info.clusters))].sort() };
  const req: ResourceRequest = { verb: verb === 'watch' ? 'watch' : 'list', view, info, params, output };
  const q: ListQuery = { ...toListQuery(req), kinds: served.map((s) => s.kind) };
  if (verb === 'watch') return { watch: () => serveWatch(ctx, req, deps, q) };
  // Without a limit, a page of --max-limit; resourceVersion=N then keeps its meaning without a limit (not older than N).
  const paged = params.limit !== undefined ? params : { ...params, limit: deps.limits.maxLimit, resourceVersionMatch: params.resourceVersionMatch ?? (params.resourceVersion !== '' && params.resourceVersion !== '0' ? ('NotOlderThan' as const) : undefined) };
  const { result, listMeta, warnings: readWarnings } = await readList(deps, paged, q);
  const metadata = { name: def.name, resourceVersion: listMeta.resourceVersion };
  const warnings = [...readWarnings, ...staleWarnings(deps.catalog, clustersRead(req, info.clusters))];
  const reply = (body: string | Buffer): Routed => ({ reply: { type: output.contentType, body, headers: warnings.length ? { Warning: warnings } : undefined } });
  if (output.kind === 'table') {
    const now = Date.now();
    const rows = result.items.map((i) => collectionRowJson(collectionObjectsTable, info, JSON.parse(i.object) as KubeObject, i.object, i.cluster, output, now));
    return reply(jsonArrayBytes(collectionTableDocument(collectionObjectsTable, output.metaVersion, listMeta, rows)));
  }
  if (output.kind === 'partial') {
    if (verb === 'list') return reply(jsonArrayBytes(partialObjectMetadataListDocument(result.items.map((i) => JSON.parse(i.object) as KubeObject), output.metaVersion, listMeta)));
    return reply(JSON.stringify({ kind: 'PartialObjectMetadata', apiVersion: `meta.k8s.io/${output.metaVersion}`, metadata }));
  }
  const items = result.items.map((i) => i.object);
  // The list form: the objects as kube's generic List (what kubectl -o yaml prints of any list), paged by its ListMeta.
  if (verb === 'list') return reply(jsonArrayBytes({ head: `{"kind":"List","apiVersion":"v1","metadata":${JSON.stringify(listMeta)},"items":[`, items, tail: ']}' }));
  const head = { kind: 'CollectionResource', apiVersion: panoptesApiVersion, metadata, resourceTypes: served.map(resourceType) };
  const tail = (result.continue ? `,"continue":${JSON.stringify(result.continue)}` : '') + (listMeta.remainingItemCount !== undefined ? `,"remainingItemCount":${JSON.stringify(listMeta.remainingItemCount)}` : '');
  return reply(jsonArrayBytes({ head: `${JSON.stringify(head).slice(0, -1)},"items":[`, items, tail: `]${tail}}` }));
}
