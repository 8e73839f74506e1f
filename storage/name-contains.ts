// Substring search of names ("fuzzy names"): every needle is found in the object's name,
// ASCII case-insensitively, in SQL (a trigram index on each engine: storage/dialect.ts
// nameSubstringIndex) and in memory (watches and rebuilt snapshot rows), alike.
import type { Knex } from 'knex';
import type { Dialect } from './dialect.ts';
import type { ListQuery } from './types.ts';

/** Trigram indexes find nothing shorter: a shorter needle would read every row. */
export const minNeedleLength = 3;

/** ASCII letters lowercased, nothing else: what SQLite's lower() and PostgreSQL's under COLLATE "C" do. */
export const asciiLower = (s: string): string => s.replace(/[A-Z]+/g, (c) => c.toLowerCase());

export function whereNameContains(qb: Knex.QueryBuilder, dialect: Dialect, q: Pick<ListQuery, 'nameContains' | 'termPlan'>): void {
  for (const needle of q.nameContains ?? []) {
    const [sql, bindings] = dialect.nameContains(asciiLower(needle), q.termPlan?.names ?? 'index');
    qb.andWhereRaw(sql, bindings as Knex.RawBinding[]);
  }
}

export function nameContainsMatches(q: Pick<ListQuery, 'nameContains'>, name: string): boolean {
  const lower = asciiLower(name);
  return (q.nameContains ?? []).every((n) => lower.includes(asciiLower(n)));
}
