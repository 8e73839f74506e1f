// Which way a list reads its substring and creation-range terms on SQLite: through the term's own index
// (every matching row fetched, then sorted: cheap while they are few) or as a filter of the
// ordered scan (which stops at the page's end: cheap when they are many, as a page of 500 at
// 10% reads about 5,000 index entries). A count of the matches through the term's index,
// stopped at a cap, decides, per list. Measured at 100,000 objects (docs/bench/search-terms.md):
// SQLite fetches a row through the FTS5 table in about 11 µs and checks a name in the list
// index in about 0.15 µs; a creation range's rows come from objects_by_created in about 2 µs.
import type { Knex } from 'knex';
import type { Dialect } from './dialect.ts';
import { asciiLower } from './name-contains.ts';
import type { ListQuery } from './types.ts';

/** Up to this many name matches, read through the trigram index. */
export const nameIndexCap = 1000;
/** Up to this many objects in a creation range, read through objects_by_created (SQLite). */
export const createdIndexCap = 5000;

async function countCreated(trx: Knex.Transaction, q: ListQuery, cap: number): Promise<number> {
  const sub = trx('objects as o').select(trx.raw('1')).where('o.grp', q.group).andWhere('o.resource', q.resource);
  if (q.createdSince !== undefined) sub.andWhere('o.created_at', '>=', q.createdSince);
  if (q.createdBefore !== undefined) sub.andWhere('o.created_at', '<', q.createdBefore).andWhere('o.created_at', '>', '');
  const row = (await trx.count({ n: '*' }).from(sub.limit(cap).as('s')).first()) as { n: number | string };
  return Number(row.n);
}

/**
 * `q` with its plan (one given is kept: tests force each way). A list without a limit reads
 * every match, through the indexes; PostgreSQL's planner chooses by itself (Dialect.plansTerms).
 */
export async function planTerms(trx: Knex.Transaction, dialect: Dialect, q: ListQuery, limit: number | undefined): Promise<ListQuery> {
  if (limit === undefined || q.termPlan || dialect.plansTerms) return q;
  const plan: NonNullable<ListQuery['termPlan']> = {};
  if (q.nameContains?.length && dialect.countNameCandidates) {
    const needle = asciiLower([...q.nameContains].sort((a, b) => b.length - a.length)[0]);
    plan.names = (await dialect.countNameCandidates(trx, needle, nameIndexCap)) < nameIndexCap ? 'index' : 'scan';
  }
  if (q.createdSince !== undefined || q.createdBefore !== undefined) {
    plan.created = (await countCreated(trx, q, createdIndexCap)) < createdIndexCap ? 'index' : 'scan';
  }
  return { ...q, termPlan: plan };
}
