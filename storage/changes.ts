// Reading the change log in rv order, as the apiserver's poller does.
import type { Knex } from 'knex';
import { CompactedError } from './errors.ts';
import { readMeta } from './meta.ts';
import { hotRead } from './prepared.ts';
import { toChange, type ChangeRow } from './rows.ts';
import type { Change } from './types.ts';

/**
 * The changes with rv > `rv`, oldest first, at most `limit`. rvs have no holes, so a first
 * row other than rv+1 (or no row while the watermark is past rv) means the rows after `rv`
 * were compacted: 410 Expired, never a silent skip.
 */
export async function changesAfter(knex: Knex, rv: number, limit: number): Promise<Change[]> {
  return (await readChangesAfter(knex, rv, limit)).changes;
}

/**
 * changesAfter as a hot standby answers it, with whether it was still in recovery when it read
 * them (`inRecovery`: the dialect's expression, in the same statement, so after its snapshot was
 * taken: true means the rows are the primary's timeline; undefined when it read none). A
 * standby promoted since it was last checked answers false (storage/read-pool.ts).
 */
export function changesAfterInRecovery(knex: Knex, inRecovery: string, rv: number, limit: number): Promise<{ changes: Change[]; recovery: boolean | undefined }> {
  return readChangesAfter(knex, rv, limit, inRecovery);
}

async function readChangesAfter(knex: Knex, rv: number, limit: number, inRecovery?: string): Promise<{ changes: Change[]; recovery: boolean | undefined }> {
  // Every poll of every apiserver runs this: prepared once per connection (storage/prepared.ts).
  const rows = await hotRead<ChangeRow & { in_recovery?: boolean | number }>(
    knex,
    `SELECT *${inRecovery === undefined ? '' : `, ${inRecovery} AS in_recovery`} FROM changes WHERE rv > ? ORDER BY rv LIMIT ?`,
    [rv, limit],
  );
  const changes = rows.map(toChange);
  const recovery = inRecovery === undefined || rows.length === 0 ? undefined : rows.every((r) => r.in_recovery === true || r.in_recovery === 1);
  if (changes.length > 0 && changes[0].rv === rv + 1) return { changes, recovery };
  const meta = await readMeta(knex);
  if (rv < meta.compactedRv) throw new CompactedError(rv, meta.compactedRv, 'watch');
  return { changes, recovery };
}

/**
 * The changes of `resources` (group, resource) with rv in (`rv`, `upTo`], oldest first, at most
 * `limit`: a reader that follows a few resources reads only their rows (the changes_by_resource
 * index), not every row of the log. `upTo` is a watermark read before (everything up to it is
 * committed, so nothing in the range commits late). CompactedError when changes after `rv`
 * were compacted, before or during the read.
 */
export async function changesOfResources(knex: Knex, rv: number, upTo: number, resources: ReadonlyArray<{ group: string; resource: string }>, limit: number): Promise<Change[]> {
  const compacted = async () => {
    const meta = await readMeta(knex);
    if (rv < meta.compactedRv) throw new CompactedError(rv, meta.compactedRv, 'watch');
  };
  await compacted();
  if (resources.length === 0 || upTo <= rv) return [];
  const rows: ChangeRow[] = await knex('changes')
    .where('rv', '>', rv)
    .andWhere('rv', '<=', upTo)
    .andWhere((b) => {
      for (const r of resources) void b.orWhere({ grp: r.group, resource: r.resource });
    })
    .orderBy('rv')
    .limit(limit)
    .select('*');
  await compacted();
  return rows.map(toChange);
}
