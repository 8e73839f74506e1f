// Leases: which synchro process writes for which member cluster (and which one compacts),
// decided in storage so that every process sees the same answer (the members themselves:
// storage/members.ts).
// Times are the database's clock (dialect.nowMs), never a process's: members on different
// hosts compare expiries against one clock.
//
// Epochs only grow, for the life of the database: every acquisition takes the next value of
// one sequence (meta `lease_epoch`), so even a lease deleted with its cluster and created
// again when the cluster comes back starts above every epoch before it. A writer carries the
// epoch it acquired; every write it makes checks it in the write transaction
// (storage/fenced.ts), so a holder that lost its lease — paused past its expiry, partitioned,
// replaced, or its lease deleted and re-created — never writes a row.
import type { Knex } from 'knex';
import { StatusError } from '../kube/status.ts';
import type { Dialect } from './dialect.ts';
import { rowsOf } from './rows.ts';

/** What a writer proves with each batch: who it is and the epoch it acquired. */
export interface Fence {
  /** The lease, e.g. `cluster/east`. */
  lease: string;
  holder: string;
  epoch: number;
}

export interface Lease {
  name: string;
  holder: string | null;
  epoch: number;
  acquiredAt: number;
  renewedAt: number;
  expiresAt: number;
}

/** The lease of one member cluster's writes. */
export const clusterLease = (cluster: string): string => `cluster/${cluster}`;

/** The lease of change-log compaction (one compactor at a time). */
export const compactorLease = 'compactor';

/** The lease of importing clusters from ClusterSources (one importer at a time: synchro/import/). */
export const importerLease = 'importer';

/** A write refused because the writer's lease has moved on (or expired): nothing was written. */
export class FencedError extends StatusError {
  override name = 'FencedError';
  constructor(
    readonly fence: Fence,
    readonly found: { holder: string | null; epoch: number; expired: boolean } | undefined,
  ) {
    const why = !found
      ? 'the lease does not exist'
      : found.holder !== fence.holder || found.epoch !== fence.epoch
        ? `the lease is now held by ${found.holder ?? 'nobody'} at epoch ${found.epoch}`
        : 'the lease expired';
    super('Conflict', `write fenced: ${fence.holder} holds lease ${fence.lease} at epoch ${fence.epoch} no longer (${why})`);
  }
}

interface LeaseRow {
  name: string;
  holder: string | null;
  epoch: number | string;
  acquired_at: number | string;
  renewed_at: number | string;
  expires_at: number | string;
}

const toLease = (r: LeaseRow): Lease => ({
  name: r.name,
  holder: r.holder,
  epoch: Number(r.epoch),
  acquiredAt: Number(r.acquired_at),
  renewedAt: Number(r.renewed_at),
  expiresAt: Number(r.expires_at),
});

/** The database's clock, in ms since the epoch. */
export async function dbNow(knex: Knex | Knex.Transaction, dialect: Dialect): Promise<number> {
  const [row] = rowsOf<{ now: number | string }>(await knex.raw(`SELECT ${dialect.nowMs} AS now`));
  return Number(row.now);
}

/** Every lease, or those named. */
export async function listLeases(knex: Knex, names?: string[]): Promise<Lease[]> {
  const q = knex('leases').select('*').orderBy('name');
  if (names) q.whereIn('name', names);
  return ((await q) as LeaseRow[]).map(toLease);
}

/** The meta row of the epoch sequence (schema migration 9 starts it above every epoch used before). */
export const epochSequence = 'lease_epoch';

/**
 * Takes a lease that is free, expired, already this holder's, or held by one of `deadHolders`
 * (members known to be gone), at the next epoch of the database's sequence. Returns the new
 * epoch, or undefined when another holder has it (no epoch is used up then).
 */
export async function acquireLease(knex: Knex, dialect: Dialect, name: string, holder: string, ttlMs: number, deadHolders: string[] = []): Promise<number | undefined> {
  const takeable = ['leases.holder IS NULL', `leases.expires_at <= ${dialect.nowMs}`, 'leases.holder = ?', ...(deadHolders.length ? [`leases.holder IN (${deadHolders.map(() => '?').join(', ')})`] : [])];
  return knex.transaction(async (trx) => {
    // Locks the row (waiting for the writes whose fence holds it, and for other acquisitions)
    // if this holder may take it, or creates it; a row another holder has is neither locked
    // nor changed.
    const mayTake =
      (await dialect.lockLeaseForAcquisition(trx, name, takeable.join(' OR '), [holder, ...deadHolders])) ||
      rowsOf<{ name: string }>(await trx.raw('INSERT INTO leases (name, holder, epoch, acquired_at, renewed_at, expires_at) VALUES (?, NULL, 0, 0, 0, 0) ON CONFLICT (name) DO NOTHING RETURNING name', [name])).length > 0;
    if (!mayTake) return undefined;
    const [next] = rowsOf<{ value: number | string }>(await trx.raw('UPDATE meta SET value = value + 1 WHERE key = ? RETURNING value', [epochSequence]));
    const epoch = Number(next.value);
    await trx.raw(`UPDATE leases SET holder = ?, epoch = ?, acquired_at = ${dialect.nowMs}, renewed_at = ${dialect.nowMs}, expires_at = ${dialect.nowMs} + ? WHERE name = ?`, [holder, epoch, ttlMs, name]);
    return epoch;
  });
}

/** Extends every lease this holder holds at the given epochs; returns the names it still holds. */
export async function renewLeases(knex: Knex, dialect: Dialect, holder: string, held: Array<{ name: string; epoch: number }>, ttlMs: number): Promise<Set<string>> {
  if (held.length === 0) return new Set();
  const pairs = held.map(() => '(name = ? AND epoch = ?)').join(' OR ');
  const result = await knex.raw(
    `UPDATE leases SET renewed_at = ${dialect.nowMs}, expires_at = ${dialect.nowMs} + ? WHERE holder = ? AND expires_at > ${dialect.nowMs} AND (${pairs}) RETURNING name`,
    [ttlMs, holder, ...held.flatMap((h) => [h.name, h.epoch])],
  );
  return new Set(rowsOf<{ name: string }>(result).map((r) => r.name));
}

/** Gives a lease up at once (a graceful handover): the next holder need not wait for its expiry. */
export async function releaseLease(knex: Knex, name: string, holder: string, epoch: number): Promise<boolean> {
  const n = await knex('leases').where({ name, holder, epoch }).update({ holder: null, expires_at: 0 });
  return Number(n) > 0;
}

/**
 * Deletes a lease row (its cluster is gone), if the holder still holds it: lease rows do not
 * outlive their clusters, and the epoch sequence keeps a re-created lease above the old one.
 */
export async function deleteLease(knex: Knex, name: string, holder: string, epoch: number): Promise<void> {
  await knex('leases').where({ name, holder, epoch }).delete();
}
