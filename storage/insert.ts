// INSERT (and upsert) of many rows: `ON CONFLICT ... DO UPDATE` and `RETURNING` are the
// same on SQLite ≥ 3.35 and PostgreSQL; how the rows travel is the dialect's (runInsert).
import type { Knex } from 'knex';
import type { Dialect, InsertStatement } from './dialect.ts';

export interface InsertOptions {
  /** Unique columns of an upsert: `ON CONFLICT (cols) DO UPDATE SET` the `update` columns. */
  conflict?: string[];
  update?: string[];
  /** Instead of `update`: the SET clause itself (it may refer to `excluded.col`). */
  updateSql?: string;
  returning?: string[];
}

export const quote = (id: string) => `"${id.replace(/"/g, '""')}"`;

/** The INSERT of `rows` (at least one) into `table`, as the dialects run it. */
export function insertStatement(table: string, rows: Array<Record<string, unknown>>, opts: InsertOptions = {}): InsertStatement {
  const columns = Object.keys(rows[0]);
  let suffix = '';
  if (opts.conflict) {
    const sets = opts.updateSql ?? (opts.update ?? []).map((c) => `${quote(c)} = excluded.${quote(c)}`).join(', ');
    suffix += ` ON CONFLICT (${opts.conflict.map(quote).join(', ')}) DO ${sets ? `UPDATE SET ${sets}` : 'NOTHING'}`;
  }
  if (opts.returning) suffix += ` RETURNING ${opts.returning.map(quote).join(', ')}`;
  const head = `INSERT INTO ${quote(table)} (${columns.map(quote).join(', ')})`;
  return { table, head, suffix, columns, rows, returning: opts.returning !== undefined };
}

export async function insertRows<R extends Record<string, unknown>, Out = Record<string, unknown>>(
  trx: Knex.Transaction,
  dialect: Dialect,
  table: string,
  rows: R[],
  opts: InsertOptions = {},
): Promise<Out[]> {
  if (rows.length === 0) return [];
  return dialect.runInsert<Out>(trx, insertStatement(table, rows, opts));
}
