// The `meta` row values: the last allocated rv (the watermark) and the compacted rv.
import type { Knex } from 'knex';

export interface Meta {
  /** Every change with rv ≤ this is committed and visible: the watermark. */
  rv: number;
  /** Changes with rv ≤ this are gone: reads from an older rv get 410 Expired. */
  compactedRv: number;
}

export async function readMeta(db: Knex | Knex.Transaction): Promise<Meta> {
  const rows: Array<{ key: string; value: number | string }> = await db('meta').whereIn('key', ['rv', 'compacted_rv']).select('key', 'value');
  const get = (k: string) => Number(rows.find((r) => r.key === k)?.value ?? 0);
  return { rv: get('rv'), compactedRv: get('compacted_rv') };
}
