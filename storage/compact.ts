// Compaction: drop change-log rows outside the retention window. Reads from an older rv
// (watch resumes, continue tokens, exact lists) then get 410 Expired. Run by the holder of the
// compactor lease (storage/fenced.ts); compacted_rv only ever rises (in the statement that
// writes it), so two compactions that overlap — a second process, or one that resumed — never
// move it back below rows already deleted, where a watch would skip changes instead of a 410.
// The retention age is measured on the database's clock, as the change rows' times are
// written: hosts' clocks never meet.
import type { Knex } from 'knex';
import type { Dialect } from './dialect.ts';
import { fenceOf, writeTransaction } from './fenced.ts';
import { compactorLease, type Fence } from './leases.ts';
import { readMeta } from './meta.ts';
import { rowsOf } from './rows.ts';
import type { CompactResult, RetentionPolicy } from './types.ts';

export async function compact(knex: Knex, dialect: Dialect, policy: RetentionPolicy, fence: Fence): Promise<CompactResult> {
  return writeTransaction(knex, dialect, [fenceOf(fence, compactorLease)], 'leases', async (trx, { now }) => {
    const meta = await readMeta(trx);
    const byCount = meta.rv - policy.minCount;
    const oldEnough = await trx('changes').where('ts', '<=', now - policy.minAgeMs).max({ rv: 'rv' }).first();
    const byAge = Number((oldEnough as { rv: number | string | null } | undefined)?.rv ?? 0);
    const target = Math.min(byCount, byAge);
    if (target <= meta.compactedRv) return { compactedRv: meta.compactedRv, deleted: 0 };
    const deleted = await trx('changes').where('rv', '<=', target).delete();
    const [row] = rowsOf<{ value: number | string }>(
      await trx.raw("UPDATE meta SET value = CASE WHEN value < ? THEN ? ELSE value END WHERE key = 'compacted_rv' RETURNING value", [target, target]),
    );
    return { compactedRv: Number(row.value), deleted: Number(deleted) };
  });
}
