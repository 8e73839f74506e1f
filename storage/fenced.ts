// The one path of every write a lease holder makes: a transaction that first locks the leases
// of its fences against acquisition until commit and reads them with the database's clock,
// then refuses (FencedError, nothing written) unless each fence's holder still holds its
// lease, at the same epoch, unexpired. A holder paused past its lease, replaced, or holding a
// lease deleted and re-created since (epochs only grow: storage/leases.ts) therefore writes
// nothing, whatever it writes: batches, Cluster objects and status, the clusters rows, OpenAPI
// documents, compaction, count repair. The Store (store.ts) makes the fence a required
// argument of each such method (`fencedWrites`), and the few writes made without a lease
// (the apiserver's Cluster writes, tests) go through writeTransaction with no fence.
import type { Knex } from 'knex';
import { wallOf } from '../lib/trace.ts';
import type { Dialect, LeaseState } from './dialect.ts';
import { FencedError, type Fence } from './leases.ts';

/** What the locks of a write transaction give it. */
export interface HeldLocks {
  /** The database's clock as the locks were taken (ms since the epoch): one clock for every host. */
  now: number;
  /** How long taking the locks waited (ms). */
  lockWaitMs: number;
  /** When they were taken, on this process's clock (lib/trace.ts wallNow). */
  lockedAt: number;
}

/** …and with the rv lock, the last allocated rv. */
export interface RvLocks extends HeldLocks {
  rv: number;
}

/**
 * Throws FencedError for the first fence that no longer holds its lease, unexpired, as the
 * write transaction read the leases (which stay locked until it ends: a write either commits
 * before its lease moves on or not at all).
 */
export function verifyFences(fences: readonly Fence[], found: LeaseState[]): void {
  for (const fence of fences) {
    const row = found.find((l) => l.name === fence.lease);
    if (!row || row.holder !== fence.holder || row.epoch !== fence.epoch || row.expired) throw new FencedError(fence, row);
  }
}

/** `fence`, after checking it is one of `lease` (a holder of one lease never writes what another lease guards). */
export function fenceOf(fence: Fence, lease: string): Fence {
  if (fence.lease !== lease) throw new Error(`a write guarded by lease ${lease} was given a fence of ${fence.lease}`);
  return fence;
}

/**
 * The write transaction of storage/: takes its locks, then checks every fence under them, then
 * runs `write`. `rv`: the rv lock (a write that appends to the change log, or must not
 * interleave with one) and the fences' leases; `leases`: only the fences' leases (a lease
 * holder's write outside the change log). With no fence it is an unleased write, which only
 * the Store's named unleased methods make, always under the rv lock.
 */
export function writeTransaction<T>(knex: Knex, dialect: Dialect, fences: readonly Fence[], lock: 'rv', write: (trx: Knex.Transaction, locks: RvLocks) => Promise<T>, prelude?: (trx: Knex.Transaction) => Promise<void>): Promise<T>;
export function writeTransaction<T>(knex: Knex, dialect: Dialect, fences: readonly Fence[], lock: 'leases', write: (trx: Knex.Transaction, locks: HeldLocks) => Promise<T>): Promise<T>;
/**
 * `prelude` runs in the transaction before its locks are taken (PostgreSQL only: a read first
 * could not be upgraded to SQLite's write lock): reads whose result the fences make safe to
 * use under the locks, taken out of the serialized section (storage/write.ts).
 */
export async function writeTransaction<T>(knex: Knex, dialect: Dialect, fences: readonly Fence[], lock: 'rv' | 'leases', write: (trx: Knex.Transaction, locks: RvLocks) => Promise<T>, prelude?: (trx: Knex.Transaction) => Promise<void>): Promise<T> {
  if (lock === 'leases' && fences.length === 0) throw new Error('writeTransaction: a write under leases needs their fences');
  if (prelude && dialect.name !== 'postgres') throw new Error('writeTransaction: a read before the locks is for PostgreSQL only');
  const names = fences.map((f) => f.lease);
  return knex.transaction(async (trx) => {
    if (prelude) await prelude(trx);
    const started = performance.now();
    const locked = lock === 'rv' ? await dialect.lockRv(trx, names) : { rv: Number.NaN, ...(await dialect.lockLeases(trx, names)) };
    const lockedAt = performance.now();
    verifyFences(fences, locked.leases);
    return write(trx, { rv: locked.rv, now: locked.now, lockWaitMs: lockedAt - started, lockedAt: wallOf(lockedAt) });
  });
}
