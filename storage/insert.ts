// Multi-row INSERT (and upsert) as one statement: `ON CONFLICT ... DO UPDATE` and
// `RETURNING` are the same on SQLite ≥ 3.35 and PostgreSQL; how the rows travel is the
// dialect's (knex's own multi-row insert for SQLite is a UNION ALL SELECT, slow and capped
// at 500 rows).
import type { Knex } from 'knex';
import type { Dialect } from './dialect.ts';

export interface InsertOptions {
  /** Unique columns of an upsert: `ON CONFLICT (cols) DO UPDATE SET` the `update` columns. */
  conflict?: string[];
  update?: string[];
  returning?: string[];
}

export const quote = (id: string) => `"${id.replace(/"/g, '""')}"`;

export async function insertRows<R extends Record<string, unknown>, Out = Record<string, unknown>>(
  trx: Knex | Knex.Transaction,
  dialect: Dialect,
  table: string,
  rows: R[],
  opts: InsertOptions = {},
): Promise<Out[]> {
  if (rows.length === 0) return [];
  const columns = Object.keys(rows[0]);
  let suffix = '';
  if (opts.conflict) {
    const sets = (opts.update ?? []).map((c) => `${quote(c)} = excluded.${quote(c)}`).join(', ');
    suffix += ` ON CONFLICT (${opts.conflict.map(quote).join(', ')}) DO ${sets ? `UPDATE SET ${sets}` : 'NOTHING'}`;
  }
  if (opts.returning) suffix += ` RETURNING ${opts.returning.map(quote).join(', ')}`;
  const head = `INSERT INTO ${quote(table)} (${columns.map(quote).join(', ')}) `;
  const out: Out[] = [];
  for (const [source, bindings] of dialect.rowsSource(table, columns, rows)) {
    const result = await trx.raw(head + source + suffix, bindings as Knex.ValueDict[keyof Knex.ValueDict][]);
    if (opts.returning) out.push(...returnedRows<Out>(result));
  }
  return out;
}

/** Rows of a raw RETURNING statement: better-sqlite3 answers an array, pg a result object. */
function returnedRows<Out>(result: unknown): Out[] {
  if (Array.isArray(result)) return result as Out[];
  return ((result as { rows?: Out[] }).rows ?? []) as Out[];
}
