// Compaction: drop change-log rows outside the retention window. Reads from an older rv
// (watch resumes, continue tokens, exact lists) then get 410 Expired.
import type { Knex } from 'knex';
import { readMeta } from './meta.ts';
import type { CompactResult, RetentionPolicy } from './types.ts';

export async function compact(knex: Knex, policy: RetentionPolicy, now = Date.now()): Promise<CompactResult> {
  return knex.transaction(async (trx) => {
    const meta = await readMeta(trx);
    const byCount = meta.rv - policy.minCount;
    const oldEnough = await trx('changes').where('ts', '<', now - policy.minAgeMs).max({ rv: 'rv' }).first();
    const byAge = Number((oldEnough as { rv: number | string | null } | undefined)?.rv ?? 0);
    const target = Math.min(byCount, byAge);
    if (target <= meta.compactedRv) return { compactedRv: meta.compactedRv, deleted: 0 };
    const deleted = await trx('changes').where('rv', '<=', target).delete();
    await trx('meta').where({ key: 'compacted_rv' }).update({ value: target });
    return { compactedRv: target, deleted: Number(deleted) };
  });
}
