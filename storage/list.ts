// List over one consistent snapshot, paged by key with a continue token that pins the
// snapshot rv. Page N of a list started at rv R is read at R too: `objects` rows not changed
// since R are served as they are; objects changed after R are served as they were at R,
// which is the prev_object of their first change after R (the change log keeps it).
import type { Knex } from 'knex';
import type { Dialect } from './dialect.ts';
import { kindQuery, kindsOf } from './collection.ts';
import { decodeContinue, encodeContinue, invalidContinue } from './continue.ts';
import { CompactedError, RvTooLargeError } from './errors.ts';
import { objectMatches, whereMatches } from './filters.ts';
import { readMeta } from './meta.ts';
import { pageQuery, type Key } from './list-scan.ts';
import { compareKeys, toStored, type ChangeRow, type ObjectRow } from './rows.ts';
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
  for (const r of rows) {
    const k = `${r.cluster}\u0000${r.namespace}\u0000${r.name}`;
    if (seen.has(k)) continue;
    seen.add(k);
    if (r.type === 'ADDED' || r.prev_object === null) continue; // did not exist at rv
    const obj = JSON.parse(r.prev_object) as KubeObject;
    const key = { cluster: r.cluster, group: r.grp, resource: r.resource, namespace: r.namespace, name: r.name };
    if (!objectMatches(q, key, obj)) continue;
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
  if (q.labelSelector?.length || q.fieldSelector?.length || q.names || q.ownerUIDs) return undefined;
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

export async function list(knex: Knex, dialect: Dialect, q: ListQuery): Promise<ListResult> {
  const token = q.continue !== undefined && q.continue !== '' ? decodeContinue(q.continue) : undefined;
  // A collection's key names a kind, a single kind's does not: a token resumes the list it came from.
  if (token && (token.group !== undefined) !== (q.kinds !== undefined)) throw invalidContinue(q.kinds ? 'not a token of a collection' : 'a token of a collection');
  const trx = await dialect.snapshot(knex);
  try {
    const meta = await readMeta(trx);
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

    const live = () => {
      const qb = trx('objects as o');
      whereMatches(qb, trx, dialect, q);
      if (historic) qb.andWhere('o.rv', '<=', rv);
      return qb;
    };
    const page = pageQuery(trx, dialect, q, { after, limit: limit ? limit + 1 : undefined, atRv: historic ? rv : undefined });
    let items = page ? ((await page) as ObjectRow[]).map(toStored) : [];

    const rebuilt = historic ? await rebuiltAt(trx, q, rv) : [];
    if (rebuilt.length > 0) {
      const later = after ? rebuilt.filter((o) => compareKeys(o, after) > 0) : rebuilt;
      items = items.concat(later).sort(compareKeys);
    }

    const result: ListResult = { resourceVersion: rv, items };
    if (limit && items.length > limit) {
      items.length = limit;
      const last = items[limit - 1];
      let total = token?.total;
      if (total === undefined && !token) total = await countAll(trx, q, historic, live, rebuilt.length);
      const served = (token?.served ?? 0) + items.length;
      const kind = q.kinds ? { group: last.group, resource: last.resource } : {};
      result.continue = encodeContinue({ rv, namespace: last.namespace, name: last.name, cluster: last.cluster, ...kind, total, served });
      if (total !== undefined) result.remainingItemCount = Math.max(0, total - served);
    }
    return result;
  } finally {
    await trx.commit();
  }
}
