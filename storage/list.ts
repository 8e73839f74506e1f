// List over one consistent snapshot, paged by key with a continue token that pins the
// snapshot rv. Page N of a list started at rv R is read at R too: `objects` rows not changed
// since R are served as they are; objects changed after R are served as they were at R,
// which is the prev_object of their first change after R (the change log keeps it).
import type { Knex } from 'knex';
import type { Dialect } from './dialect.ts';
import { kindQuery, kindsOf } from './collection.ts';
import { decodeContinue, encodeContinue, invalidToken, type ContinueToken } from './continue.ts';
import { badRequest } from '../kube/status.ts';
import { CompactedError, RvTooLargeError } from './errors.ts';
import { objectMatches, whereMatches } from './filters.ts';
import { budgetTimeout, enforceBudget } from './json-fields.ts';
import { readMeta } from './meta.ts';
import { resolveOwners } from './owners.ts';
import { pageQuery, type Key } from './list-scan.ts';
import { checkSortBudget, comparePositions, maxSortedObjects, orderedPageQuery, orderSignature, sortValues, type SortPosition } from './order-by.ts';
import { compareKeys, toStored, type ChangeRow, type ObjectRow } from './rows.ts';
import { checkTermBudget } from './term-budget.ts';
import { planTerms } from './term-plan.ts';
import { upstreamRvAnnotation } from './write.ts';
import type { KubeObject, ListQuery, ListResult, StoredObject } from './types.ts';

/** Objects as they were at `rv`, for those that changed after it (in this snapshot). */
async function rebuiltAt(trx: Knex.Transaction, q: ListQuery, rv: number): Promise<StoredObject[]> {
  if (q.kinds) {
    const each: StoredObject[] = [];
    for (const kind of q.kinds) each.push(...(await rebuiltAt(trx, kindQuery(q, kind), rv))); // one query at a time on the transaction
    return each.sort(compareKeys);
  }
  const qb = trx('changes').where('rv', '>', rv).andWhere('grp', q.group).andWhere('resource', q.resource).orderBy('rv');
  if (q.clusters) qb.whereIn('cluster', q.clusters);
  if (q.namespaces) qb.whereIn('namespace', q.namespaces);
  if (q.names) qb.whereIn('name', q.names);
  const rows: ChangeRow[] = await qb.select('rv', 'type', 'cluster', 'grp', 'version', 'resource', 'namespace', 'name', 'uid', 'prev_object');
  const seen = new Set<string>();
  const out: StoredObject[] = [];
  const owners = q.owners && rows.length > 0 ? await resolveOwners(trx, q.owners, q.clusters) : undefined;
  for (const r of rows) {
    const k = `${r.cluster}\u0000${r.namespace}\u0000${r.name}`;
    if (seen.has(k)) continue;
    seen.add(k);
    if (r.type === 'ADDED' || r.prev_object === null) continue; // did not exist at rv
    const obj = JSON.parse(r.prev_object) as KubeObject;
    const key = { cluster: r.cluster, group: r.grp, resource: r.resource, namespace: r.namespace, name: r.name };
    if (!objectMatches(q, key, obj, owners)) continue;
    out.push({
      ...key,
      version: r.version,
      uid: r.uid,
      rv: Number(obj.metadata?.resourceVersion ?? 0),
      upstreamRv: obj.metadata?.annotations?.[upstreamRvAnnotation] ?? '',
      object: r.prev_object,
    });
  }
  return out.sort(compareKeys);
}

/**
 * How many objects the whole list has, for remainingItemCount; undefined when the list has
 * selectors (label, field, names, owner), as kube-apiserver leaves it unset then. Lists of
 * the latest state sum object_counts; one at an older rv counts its rows.
 */
async function countAll(trx: Knex.Transaction, q: ListQuery, historic: boolean, live: () => Knex.QueryBuilder, rebuilt: number): Promise<number | undefined> {
  if (q.labelSelector?.length || q.fieldSelector?.length || q.names || q.ownerUIDs || q.owners || q.jsonFields?.length || q.nameContains || q.createdSince !== undefined || q.createdBefore !== undefined) return undefined;
  // Bare objects are not counted apart: a selection, like the selectors above.
  if (kindsOf(q).some((k) => k.bare)) return undefined;
  if (historic) {
    const row = await live().count({ n: '*' }).first();
    return Number((row as { n: number | string }).n) + rebuilt;
  }
  const qb = trx('object_counts').where((any) => {
    for (const k of kindsOf(q)) any.orWhere({ grp: k.group, resource: k.resource });
  });
  if (q.clusters) qb.whereIn('cluster', q.clusters);
  if (q.namespaces) qb.whereIn('namespace', q.namespaces);
  const row = await qb.sum({ n: 'n' }).first();
  return Number((row as { n: number | string | null }).n ?? 0);
}

/**
 * The query a continue token goes on with: the order it was served in (else 400), and the
 * creationTimestamp range its first page resolved.
 */
function continuedQuery(q: ListQuery, token: ContinueToken): ListQuery {
  // A collection's key names a kind, a single kind's does not: a token resumes the list it came from.
  if ((token.group !== undefined) !== (q.kinds !== undefined)) throw invalidToken(q.kinds ? 'not a token of a collection' : 'a token of a collection');
  if ((q.orderBy ? orderSignature(q.orderBy) : undefined) !== token.order) throw invalidToken('it was issued for a list in another orderBy');
  const hasRange = q.createdSince !== undefined || q.createdBefore !== undefined;
  if (hasRange !== (token.created !== undefined)) throw invalidToken('it was issued for a list with other createdSince/createdBefore');
  if (!token.created) return q;
  const out: ListQuery = { ...q };
  delete out.createdSince;
  delete out.createdBefore;
  if (token.created[0] !== null) out.createdSince = token.created[0];
  if (token.created[1] !== null) out.createdBefore = token.created[1];
  return out;
}

/** One row of a page with its place in the sort (sort values only with orderBy; the kind only in a collection). */
type Placed = SortPosition & { item: StoredObject; group?: string; resource?: string };

export async function list(knex: Knex, dialect: Dialect, query: ListQuery): Promise<ListResult> {
  checkTermBudget(query);
  if (query.kinds && query.orderBy?.length) throw badRequest('orderBy cannot be combined with a collection: its kinds are merged in list order (namespace, name, cluster, then kind)');
  const token = query.continue !== undefined && query.continue !== '' ? decodeContinue(query.continue) : undefined;
  let q = token ? continuedQuery(query, token) : query;
  const order = q.orderBy?.length ? q.orderBy : undefined;
  const trx = await dialect.snapshot(knex);
  try {
    const meta = await readMeta(trx);
    if (q.minRv !== undefined && meta.rv < q.minRv) throw new RvTooLargeError(q.minRv, meta.rv);
    let rv = meta.rv;
    if (token) {
      if (token.rv < meta.compactedRv) throw new CompactedError(token.rv, meta.compactedRv, 'continue');
      if (token.rv > meta.rv) throw new RvTooLargeError(token.rv, meta.rv);
      rv = token.rv;
    } else if (q.exactRv !== undefined) {
      if (q.exactRv < meta.compactedRv) throw new CompactedError(q.exactRv, meta.compactedRv, 'list');
      if (q.exactRv > meta.rv) throw new RvTooLargeError(q.exactRv, meta.rv);
      rv = q.exactRv;
    }
    const historic = rv < meta.rv;
    const after: Key | undefined = token;
    const limit = q.limit && q.limit > 0 ? q.limit : undefined;
    q = await planTerms(trx, dialect, q, limit);

    const live = () => {
      const qb = trx('objects as o');
      whereMatches(qb, trx, dialect, q);
      if (historic) qb.andWhere('o.rv', '<=', rv);
      return qb;
    };
    await enforceBudget(trx, dialect, q, (rest) => whereMatches(trx('objects as o'), trx, dialect, rest), maxSortedObjects);
    const pageOpts = { limit: limit ? limit + 1 : undefined, atRv: historic ? rv : undefined };
    if (order) await checkSortBudget(trx, dialect, q, pageOpts.atRv);
    const position = token && order ? { ...token, values: token.sortValues ?? [] } : undefined;
    if (position && position.values.length !== order!.length) throw invalidToken('not a token issued by this server');
    const page = order ? orderedPageQuery(trx, dialect, q, { ...pageOpts, after: position }) : pageQuery(trx, dialect, q, { ...pageOpts, after });
    const rows = page ? ((await page) as Array<ObjectRow & Record<string, unknown>>) : [];
    let placed: Placed[] = rows.map((r) => {
      const item = toStored(r);
      return { item, namespace: item.namespace, name: item.name, cluster: item.cluster, ...(q.kinds ? { group: item.group, resource: item.resource } : {}), values: order ? order.map((_, i) => String(r[`sk${i}`])) : [] };
    });

    const rebuilt = historic ? await rebuiltAt(trx, q, rv) : [];
    if (rebuilt.length > 0) {
      const compare = (a: SortPosition, b: SortPosition) => (order ? comparePositions(order, a, b) : compareKeys(a, b));
      const more: Placed[] = rebuilt.map((item) => ({ item, namespace: item.namespace, name: item.name, cluster: item.cluster, ...(q.kinds ? { group: item.group, resource: item.resource } : {}), values: order ? sortValues(order, item, JSON.parse(item.object) as KubeObject) : [] }));
      const start = position ?? (after ? { ...after, values: [] } : undefined);
      placed = placed.concat(start ? more.filter((o) => compare(o, start) > 0) : more).sort(compare);
    }

    const items = placed.map((p) => p.item);
    const result: ListResult = { resourceVersion: rv, items };
    if (limit && items.length > limit) {
      items.length = limit;
      const last = placed[limit - 1];
      let total = token?.total;
      if (total === undefined && !token) total = await countAll(trx, q, historic, live, rebuilt.length);
      const served = (token?.served ?? 0) + items.length;
      const next: ContinueToken = { rv, namespace: last.namespace, name: last.name, cluster: last.cluster, total, served };
      if (q.kinds) {
        next.group = last.item.group;
        next.resource = last.item.resource;
      }
      if (order) {
        next.order = orderSignature(order);
        next.sortValues = last.values;
      }
      if (q.createdSince !== undefined || q.createdBefore !== undefined) next.created = [q.createdSince ?? null, q.createdBefore ?? null];
      result.continue = encodeContinue(next);
      if (total !== undefined) result.remainingItemCount = Math.max(0, total - served);
    }
    return result;
  } catch (err) {
    throw budgetTimeout(err, q, dialect);
  } finally {
    await trx.commit();
  }
}
