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
import { wallNow, wallOf } from '../lib/trace.ts';
import type { Dialect, LeaseState } from './dialect.ts';
import { allocateRvs, beginParallel, publishAndCommit, type Allocation, runAlone, sawParallel, SwitchedToParallel, syncAllocator, writeProtocol } from './ordered-commits.ts';
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

/** …and the rvs of a write that appends to the change log. */
export interface RvLocks extends HeldLocks {
  /** The last allocated rv when the write began (serial, or alone); NaN for a parallel writer, whose rvs come from allocate. */
  rv: number;
  /**
   * The next `n` rvs: returns the first (NaN for none). Serial, or alone: rv + 1 on, at once.
   * Parallel: steps 1 and 3 of the protocol (storage/ordered-commits.ts): the locks and the
   * fences' check come with it, so `now`, `lockWaitMs` and `lockedAt` are known only after it;
   * once per write.
   */
  allocate(n: number): Promise<number>;
  /** Whether the write moves the watermark itself (serial, or alone) or the protocol's publish does, after it (parallel). */
  movesWatermark: boolean;
  /**
   * Set by allocate for a parallel writer whose allocation found no earlier writer in flight:
   * it may publish in its own write (moving the watermark and filling the gaps below its first
   * rv: BatchRows.fillGapsBelow) and say so with `published`; its commit then needs no publish
   * step, and no round trip more than a serial write's.
   */
  headOfLine?: boolean;
  /** Set by a write that published itself (headOfLine). */
  published?: boolean;
  /**
   * Set by writeTransaction: when the write's serialized section began (lib/trace.ts wall
   * clock), the part no other writer overlaps. Serial, or alone: when the lock was taken;
   * parallel: when the writers it waited for had ended, just before its publish and commit.
   */
  serializedFrom: number;
  /**
   * Set by writeTransaction for a parallel writer: how long its serialized sections took, as
   * the database measured them: ALLOC, and its publish from the end of its waits to its commit
   * (sent with the publish). What its process does around them overlaps other writers.
   */
  serializedMs?: number;
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
 * runs `write`. `leases`: only the fences' leases (a lease holder's write outside the change
 * log). `rv`: a write that appends to the change log, or must not interleave with one, run
 * alone: on SQLite and on a serial PostgreSQL database under the rv lock, taken first and held
 * to commit; on a parallel one with the world lock held exclusively (ordered-commits.ts).
 * `ordered`: a lease holder's write that may run in parallel with others (every fence
 * given): on a parallel PostgreSQL database it takes its rvs with `allocate` once it knows how
 * many, and publishes them after `write`, in allocation order; elsewhere it is an `rv` write.
 * Its `prelude` reads before its locks, which only rows its leases alone guard allow;
 * `ordered-locked`: the same with its locks taken first (rows others may write: Cluster objects).
 * With no fence it is an unleased write, which only the Store's named unleased methods make.
 */
export function writeTransaction<T>(knex: Knex, dialect: Dialect, fences: readonly Fence[], lock: 'rv' | 'ordered' | 'ordered-locked', write: (trx: Knex.Transaction, locks: RvLocks) => Promise<T>, prelude?: (trx: Knex.Transaction) => Promise<void>): Promise<T>;
export function writeTransaction<T>(knex: Knex, dialect: Dialect, fences: readonly Fence[], lock: 'leases', write: (trx: Knex.Transaction, locks: HeldLocks) => Promise<T>): Promise<T>;
/**
 * `prelude` runs in the transaction before its locks are taken (after them for a parallel
 * writer; PostgreSQL only: a read first could not be upgraded to SQLite's write lock): reads
 * whose result the fences make safe to use under the locks, taken out of the serialized
 * section (storage/write.ts).
 */
export async function writeTransaction<T>(knex: Knex, dialect: Dialect, fences: readonly Fence[], lock: 'rv' | 'ordered' | 'ordered-locked' | 'leases', write: (trx: Knex.Transaction, locks: RvLocks) => Promise<T>, prelude?: (trx: Knex.Transaction) => Promise<void>): Promise<T> {
  if (lock !== 'rv' && fences.length === 0) throw new Error(`writeTransaction: a write under ${lock === 'leases' ? 'leases' : 'ordered commits'} needs its fences`);
  if (prelude && dialect.name !== 'postgres') throw new Error('writeTransaction: a read before the locks is for PostgreSQL only');
  const names = fences.map((f) => f.lease);
  if (lock === 'leases') {
    return knex.transaction(async (trx) => {
      const started = performance.now();
      const locked = await dialect.lockLeases(trx, names);
      const lockedAt = performance.now();
      verifyFences(fences, locked.leases);
      return write(trx, unallocated(locked.now, lockedAt - started, wallOf(lockedAt)));
    });
  }
  for (let attempt = 0; ; attempt++) {
    const protocol = dialect.name === 'postgres' ? await writeProtocol(knex) : 'serial';
    try {
      if (protocol === 'parallel' && lock !== 'rv') return await parallelWrite(knex, fences, lock === 'ordered-locked', write, prelude);
      return await knex.transaction(async (trx) => {
        if (prelude) await prelude(trx);
        const started = performance.now();
        let rv: number;
        let now: number;
        let leases: LeaseState[];
        if (protocol === 'parallel') {
          ({ rv, now } = await runAlone(trx));
          leases = names.length > 0 ? (await dialect.lockLeases(trx, names)).leases : [];
        } else {
          const locked = await dialect.lockRv(trx, names);
          if (locked.switched) throw new SwitchedToParallel();
          ({ rv, now, leases } = locked);
        }
        const lockedAt = performance.now();
        verifyFences(fences, leases);
        let last = rv;
        const locks: RvLocks = {
          rv,
          now,
          lockWaitMs: lockedAt - started,
          lockedAt: wallOf(lockedAt),
          serializedFrom: wallOf(lockedAt),
          movesWatermark: true,
          allocate: async (n) => {
            const first = last + 1;
            last += n;
            return first;
          },
        };
        const result = await write(trx, locks);
        if (protocol === 'parallel') await syncAllocator(trx);
        return result;
      });
    } catch (err) {
      // A serial write queued behind the switch to parallel writes: it starts again, as one.
      if (!(err instanceof SwitchedToParallel) || attempt >= 2) throw err;
      sawParallel(knex);
    }
  }
}

/** The locks of a `leases` write: no rvs. */
function unallocated(now: number, lockWaitMs: number, lockedAt: number): RvLocks {
  return {
    rv: Number.NaN,
    now,
    lockWaitMs,
    lockedAt,
    serializedFrom: lockedAt,
    movesWatermark: false,
    allocate: () => Promise.reject(new Error('writeTransaction: a write under leases allocates no rv')),
  };
}

/**
 * A parallel writer (storage/README.md, steps 1 to 5). Its reads (`prelude`) come first: under
 * its clusters' leases only it writes their rows, its own earlier rounds have committed, and a
 * lease taken over meanwhile has a new epoch, which the fence check refuses. Then, once it
 * knows how many changes it appends, one statement takes its locks, checks its fences and
 * allocates its rvs (allocate; with none, the same at the end: the fences are checked
 * whatever it writes); its publish goes with its commit.
 */
async function parallelWrite<T>(knex: Knex, fences: readonly Fence[], locksFirst: boolean, write: (trx: Knex.Transaction, locks: RvLocks) => Promise<T>, prelude?: (trx: Knex.Transaction) => Promise<void>): Promise<T> {
  let committing = Number.NaN;
  let allocMs = 0;
  let held: RvLocks | undefined;
  const result = await knex.transaction(async (trx) => {
    let begun = false;
    let allocated: (Allocation & { n: number }) | undefined;
    const locks: RvLocks = {
      rv: Number.NaN,
      now: Number.NaN,
      lockWaitMs: Number.NaN,
      lockedAt: Number.NaN,
      serializedFrom: Number.NaN,
      movesWatermark: false,
      allocate: async (n) => {
        if (allocated) throw new Error('writeTransaction: a parallel write allocates once');
        if (!begun) await begin(n);
        else if (n > 0) {
          allocated = { ...(await allocateRvs(trx, n)), n };
          locks.headOfLine = allocated.waits.length === 0;
        }
        return allocated?.first ?? Number.NaN;
      },
    };
    held = locks;
    // The locks and the fences' check, with the rvs when n > 0.
    const begin = async (n: number) => {
      begun = true;
      const started = performance.now();
      const r = await beginParallel(trx, n, fences);
      const lockedAt = performance.now();
      Object.assign(locks, { now: r.now, lockWaitMs: lockedAt - started, lockedAt: wallOf(lockedAt) });
      verifyFences(fences, r.leases);
      if (n > 0 && !r.allocated) throw new Error('writeTransaction: no rvs allocated although every fence holds');
      if (r.allocated) allocated = { ...r.allocated, n };
      if (allocated) locks.headOfLine = allocated.waits.length === 0;
    };
    if (locksFirst) await begin(0);
    if (prelude) await prelude(trx);
    const result = await write(trx, locks);
    if (!begun) await begin(0);
    if (allocated && locks.published) {
      if (!locks.headOfLine) throw new Error('writeTransaction: only the head of the line publishes in its write');
      // Its commit is the caller's COMMIT: measured below, from here (an upper bound: the round trip is in it).
      locks.serializedFrom = wallNow();
      committing = performance.now();
      allocMs = allocated.allocMs;
    } else if (allocated) {
      const publishing = wallNow();
      const { waitedMs, orderedMs } = await publishAndCommit(trx, allocated.waits, allocated.first, allocated.first + allocated.n - 1);
      locks.serializedFrom = publishing + waitedMs;
      locks.serializedMs = allocated.allocMs + orderedMs;
    } else locks.serializedFrom = wallNow();
    return result;
  });
  if (held && !Number.isNaN(committing)) held.serializedMs = allocMs + (performance.now() - committing);
  return result;
}

