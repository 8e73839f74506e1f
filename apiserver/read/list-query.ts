// The storage query of a resource request: the view's, the path's and the search's terms,
// intersected (apiserver/endpoints/request.ts says what a request is; this is how the read path asks storage).
import type { ListQuery } from '../../storage/types.ts';
import { ownerTerms } from './owners.ts';
import type { ResourceRequest } from '../endpoints/request.ts';

function intersect(a: string[] | undefined, b: string[] | undefined): string[] | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return a.filter((x) => b.includes(x));
}

/** The storage query of a list request (paging and rv choices are the caller's). */
export function toListQuery(req: ResourceRequest): ListQuery {
  const s = req.params.search;
  const q: ListQuery = { group: req.info.group, resource: req.info.resource };
  const clusters = intersect(s.clusters, req.view.cluster === undefined ? undefined : [req.view.cluster]);
  if (clusters) q.clusters = clusters;
  const namespaces = intersect(s.namespaces, req.namespace === undefined ? undefined : [req.namespace]);
  if (namespaces) q.namespaces = namespaces;
  const names = intersect(s.names, req.name === undefined ? undefined : [req.name]);
  if (names) q.names = names;
  Object.assign(q, ownerTerms(s));
  if (s.fuzzyNames) q.nameContains = s.fuzzyNames;
  if (s.createdSince !== undefined) q.createdSince = s.createdSince;
  if (s.createdBefore !== undefined) q.createdBefore = s.createdBefore;
  if (s.orderBy) q.orderBy = s.orderBy;
  if (req.params.labelSelector.length) q.labelSelector = req.params.labelSelector;
  if (req.params.fieldSelector.length) q.fieldSelector = req.params.fieldSelector;
  if (req.params.jsonFields.length) q.jsonFields = req.params.jsonFields;
  return q;
}

/** The clusters a request reads from: the search's, the view's, or every known one. */
export function clustersRead(req: ResourceRequest, known: string[]): string[] {
  return intersect(intersect(req.params.search.clusters, req.view.cluster === undefined ? undefined : [req.view.cluster]), known) ?? known;
}
