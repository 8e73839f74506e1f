// list: one storage snapshot read, spliced into the response as JSON text (PodList, ...),
// a Table, or a PartialObjectMetadataList. resourceVersion semantics: unset or "0" the
// latest (apiserver/read/rv.ts: on a standby, what the primary had when the request arrived);
// N not older than N (waits, then 504); Exact N — or N with a limit and no
// resourceVersionMatch — the snapshot at N (410 when compacted); continue pins the first
// page's snapshot.
import type { KubeObject, ListQuery, ListResult } from '../../storage/types.ts';
import type { Deps, Reply } from '../endpoints/deps.ts';
import { clustersRead, toListQuery } from './list-query.ts';
import { apiVersionOf, type ResourceRequest } from '../endpoints/request.ts';
import { readFresh } from './rv.ts';
import { partialObjectMetadataListDocument } from '../../kube/table.ts';
import { jsonArrayBytes } from '../../kube/json-array.ts';
import { tableDocument, tableRenderer, tableRowJson } from './table.ts';
import { staleWarnings } from '../endpoints/warnings.ts';

/**
 * Whether a list with resourceVersion N > 0 reads exactly at N: `resourceVersionMatch=Exact`,
 * or — kube's legacy semantics, kept for clients older than resourceVersionMatch — a `limit`
 * with resourceVersionMatch unset. Otherwise N is a lower bound (NotOlderThan).
 */
function isExact(p: ResourceRequest['params']): boolean {
  return p.resourceVersionMatch === 'Exact' || (p.resourceVersionMatch === undefined && p.limit !== undefined);
}

/** Reads the list `q` of a request with its paging and resourceVersion semantics; the ListMeta of the answer. */
export async function readList(deps: Deps, p: ResourceRequest['params'], q: ListQuery): Promise<{ result: ListResult; listMeta: Record<string, unknown>; warnings: string[] }> {
  if (p.limit) q.limit = p.limit;
  if (q.jsonFields) q.budget = deps.limits.queryBudget;
  if (p.continue) q.continue = p.continue;
  if (!p.continue && p.resourceVersion !== '' && p.resourceVersion !== '0' && isExact(p)) q.exactRv = Number(p.resourceVersion);
  const { value: result, warnings } = await readFresh(deps, p, (store, minRv) => store.list(minRv === undefined ? q : { ...q, minRv }));
  const listMeta: Record<string, unknown> = { resourceVersion: String(result.resourceVersion) };
  if (result.continue) listMeta.continue = result.continue;
  if (result.remainingItemCount !== undefined && result.continue) listMeta.remainingItemCount = result.remainingItemCount;
  return { result, listMeta, warnings };
}

export async function serveList(deps: Deps, req: ResourceRequest): Promise<Reply> {
  const { result, listMeta, warnings: readWarnings } = await readList(deps, req.params, toListQuery(req));

  const out = req.output;
  // Each item's JSON text as stored, encoded into the answer one by one (kube/json-array.ts).
  let body: Buffer;
  if (out.kind === 'json') {
    const head = `{"kind":${JSON.stringify(`${req.info.kind}List`)},"apiVersion":${JSON.stringify(apiVersionOf(req.info))},"metadata":${JSON.stringify(listMeta)},"items":[`;
    body = jsonArrayBytes({ head, items: result.items.map((i) => i.object), tail: ']}' });
  } else if (out.kind === 'table') {
    const renderer = tableRenderer(req.info, req.view);
    const now = Date.now();
    const rows = result.items.map((i) => tableRowJson(renderer, req.info, JSON.parse(i.object) as KubeObject, i.object, i.cluster, out, now));
    body = jsonArrayBytes(tableDocument(renderer, out.metaVersion, listMeta, rows));
  } else {
    body = jsonArrayBytes(partialObjectMetadataListDocument(result.items.map((i) => JSON.parse(i.object) as KubeObject), out.metaVersion, listMeta));
  }
  const warnings = [...readWarnings, ...staleWarnings(deps.catalog, clustersRead(req, req.info.clusters))];
  return { type: out.contentType, body, headers: warnings.length ? { Warning: warnings } : undefined };
}
