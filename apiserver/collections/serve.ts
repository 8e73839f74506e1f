// `collectionresources.panoptes.io`: one list of several kinds, served as Clusterpedia serves
// clusterpedia.io/v1beta1 CollectionResource (pkg/apiserver/registry/clusterpedia/
// collectionresources/rest.go): a list of the collections and their kinds, and a get of one
// collection whose `items` are a page of its objects. Here that page is one storage snapshot
// over every kind (storage/collection.ts): one resourceVersion, `limit` and `continue` resume
// exactly across kinds, and selectors and the search parameters apply to every kind; a get
// without `limit` answers a page of --max-limit. `?watch=true` on a collection streams the
// changes of every kind in rv order. Served at /apis/panoptes.io/v1alpha1/collectionresources
// and in each view (a one-cluster view reads that cluster only).
//
// Authorization: the request is authorized as a get (list) of collectionresources like any
// other; reading the objects is authorized again, kind by kind, as a list (watch) of that
// resource through the view (and per namespace when the request names namespaces), so a
// collection never shows what the user could not list kind by kind.
import type { Context } from 'koa';
import { matchesLabels } from '../../kube/labels.ts';
import { queryBool } from '../../kube/query.ts';
import { StatusError, badRequest, notFound } from '../../kube/status.ts';
import { partialObjectMetadataListJson, tableJson, tableRowJson, type TableColumnDefinition } from '../../kube/table.ts';
import { since } from '../../kube/printers.ts';
import type { CollectionKind, KubeObject, ListQuery } from '../../storage/types.ts';
import type { ResourceAttributes } from '../auth/attributes.ts';
import type { AuthState } from '../auth/middleware.ts';
import type { Authorizer } from '../auth/authz.ts';
import type { ResourceInfo, ViewCatalog } from '../catalog.ts';
import type { Deps, Reply } from '../deps.ts';
import { readOnly } from '../errors.ts';
import { findResource } from '../external/resolve.ts';
import { readList } from '../list.ts';
import { negotiateOutput, notAcceptable } from '../negotiate.ts';
import { collectionResourcesInfo, panoptesApiVersion, panoptesGroupName } from '../panoptes-group.ts';
import { parseListParams } from '../params.ts';
import { toListQuery, type ResourceRequest, type View } from '../request.ts';
import type { MetricLabels, Routed } from '../routes.ts';
import { checkSearchClusters } from '../routes.ts';
import { serveWatch } from '../watch-route.ts';
import { anyCollection, kindName, type CollectionDefinition } from './definitions.ts';
import { resolveKindTerms, takeKindTerms } from './params.ts';

export interface CollectionsDeps {
  /** The built-in collections and the operator's (definitions.ts). */
  definitions: CollectionDefinition[];
  /** Secure serving: authorizes each kind a collection reads. */
  authorizer?: Authorizer;
}

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

const column = (name: string, description: string, format = ''): TableColumnDefinition => ({ name, type: 'string', format, description, priority: 0 });
const objectColumns = [
  column('Kind', 'The kind of the object (its group after a dot, but for the core group).'),
  column('Cluster', 'The member cluster the object is synced from (annotation panoptes.io/cluster).'),
  column('Namespace', 'The namespace of the object.'),
  column('Name', 'The name of the object.', 'name'),
  column('Age', 'Since its creationTimestamp.'),
];
const collectionColumns = [column('Name', 'The collection.', 'name'), column('Resources', 'The kinds it reads (<resource>[.<group>]; bare: only objects without an owner).')];

/** The kinds named in a Table row: `deployments.apps`, `pods (bare)`, `*` for any. */
function resourcesCell(def: CollectionDefinition): string {
  return def.name === anyCollection ? '* (groups=, resources=)' : def.kinds.map((k) => kindName(k) + (k.bare ? ' (bare)' : '')).join(',');
}

async function authorizeKinds(ctx: Context, deps: CollectionsDeps, verb: 'list' | 'watch', view: View, kinds: ResourceInfo[], namespaces: string[] | undefined): Promise<void> {
  const user = (ctx.state as AuthState).user;
  if (!deps.authorizer || !user) return;
  const scopes: Array<string | undefined> = namespaces && namespaces.length * kinds.length <= 64 ? namespaces : [undefined];
  const checks: ResourceAttributes[] = kinds.flatMap((info) => scopes.map((namespace) => ({ verb, group: info.group, version: info.version, resource: info.resource, ...(namespace !== undefined && info.namespaced ? { namespace } : {}) })));
  for (const attrs of checks) await deps.authorizer.authorize(user, { kind: 'resource', attrs, view: { cluster: view.cluster ?? '' } });
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
    return { type: out.contentType, body: tableJson(collectionColumns, out.metaVersion, listMeta, rows) };
  }
  if (out.kind === 'partial') return { type: out.contentType, body: partialObjectMetadataListJson(chosen.map(object), out.metaVersion, listMeta) };
  return { type: out.contentType, body: JSON.stringify({ kind: 'CollectionResourceList', apiVersion: panoptesApiVersion, metadata: listMeta, items: chosen.map(object) }) };
}

/** Serves a collections path (see the header comment). */
export async function serveCollections(ctx: Context, deps: Deps, path: { name?: string; legacyWatch: boolean }, view: View): Promise<Routed> {
  if (ctx.method !== 'GET' && ctx.method !== 'HEAD') throw readOnly(ctx.method);
  const cdeps = deps.collections;
  const qs = new URLSearchParams(ctx.querystring);
  const w = qs.get('watch');
  const watch = path.legacyWatch || (w !== null && queryBool(w));
  const metric = (verb: MetricLabels['verb']) => ((ctx.state as { metric?: MetricLabels }).metric = { verb, group: panoptesGroupName, resource: collectionResourcesInfo.resource });
  if (path.name === undefined) {
    if (watch) throw new StatusError('MethodNotAllowed', 'the collections do not change while the server runs: watch a collection by name (collectionresources/<name>?watch=true)', {});
    metric('list');
    return { reply: listOfCollections(deps, cdeps.definitions, view, qs, ctx.get('Accept')) };
  }
  const verb = watch ? 'watch' : 'get';
  metric(verb);
  const def = cdeps.definitions.find((d) => d.name === path.name);
  if (!def) throw notFound(`collectionresources.${panoptesGroupName} "${path.name}" not found`, { name: path.name, group: panoptesGroupName, kind: collectionResourcesInfo.resource });

  const taken = takeKindTerms(qs);
  if (taken.given && def.name !== anyCollection) throw badRequest(`groups and resources choose the kinds of the ${anyCollection} collection; ${def.name} reads its own (${resourcesCell(def)})`);
  const catalog = deps.catalog.view(view.cluster);
  const declared = def.name === anyCollection ? resolveKindTerms(catalog, taken.terms) : def.kinds;
  const served = servedKinds(catalog, declared);

  // Paging and resourceVersion as a list's; the collection's name is not a filter of its objects.
  const params = parseListParams(taken.qs, verb === 'watch' ? 'watch' : 'list', collectionResourcesInfo, deps.limits);
  await checkSearchClusters(deps, params.search.clusters);
  const output = negotiateOutput(ctx.get('Accept'), verb, qs.get('includeObject') ?? undefined);
  if (verb === 'watch' && output.kind === 'table') throw notAcceptable('application/json, application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io (a collection is watched as its objects)');
  await authorizeKinds(ctx, cdeps, verb === 'watch' ? 'watch' : 'list', view, served.map((s) => s.info), params.search.namespaces);

  const req: ResourceRequest = { verb: verb === 'watch' ? 'watch' : 'list', view, info: collectionResourcesInfo, params, output };
  const q: ListQuery = { ...toListQuery(req), kinds: served.map((s) => s.kind) };
  if (verb === 'watch') return { watch: () => serveWatch(ctx, req, deps, q) };
  params.limit ??= deps.limits.maxLimit;
  const { result, listMeta } = await readList(deps, params, q);
  const metadata = { name: def.name, resourceVersion: listMeta.resourceVersion };
  if (output.kind === 'table') {
    const now = Date.now();
    const rows = result.items.map((i) => {
      const obj = JSON.parse(i.object) as KubeObject;
      const kind = `${obj.kind ?? ''}${i.group ? `.${i.group}` : ''}`;
      return tableRowJson([kind, i.cluster, i.namespace, i.name, since(obj.metadata?.creationTimestamp, now)], { group: i.group, resource: i.resource }, obj, i.object, output);
    });
    return { reply: { type: output.contentType, body: tableJson(objectColumns, output.metaVersion, listMeta, rows) } };
  }
  if (output.kind === 'partial') return { reply: { type: output.contentType, body: JSON.stringify({ kind: 'PartialObjectMetadata', apiVersion: `meta.k8s.io/${output.metaVersion}`, metadata }) } };
  const head = { kind: 'CollectionResource', apiVersion: panoptesApiVersion, metadata, resourceTypes: served.map(resourceType) };
  const tail = (result.continue ? `,"continue":${JSON.stringify(result.continue)}` : '') + (listMeta.remainingItemCount !== undefined ? `,"remainingItemCount":${JSON.stringify(listMeta.remainingItemCount)}` : '');
  const body = `${JSON.stringify(head).slice(0, -1)},"items":[${result.items.map((i) => i.object).join(',')}]${tail}}`;
  return { reply: { type: output.contentType, body } };
}

