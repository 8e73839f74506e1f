// The compactor, run by the one synchro member holding the compactor lease, every write under
// that lease's fence (a member that lost it writes nothing):
// - every interval, drops changes outside the retention window (older than minAge, on the
//   database's clock, and beyond the minCount newest). Watches, continue tokens and exact
//   lists from before the window then get 410 Expired, and clients relist.
// - at the start of each term (a new epoch of the lease) and then every countRepairIntervalMs,
//   recounts object_counts from the objects (storage/counts.ts): a synchro of an earlier
//   release still writing during a rolling upgrade does not keep them.
import type { Logger } from '../../lib/log.ts';
import { FencedError, type Fence } from '../../storage/leases.ts';
import type { Store } from '../../storage/store.ts';
import type { RetentionPolicy } from '../../storage/types.ts';

export interface CompactionOptions extends RetentionPolicy {
  intervalMs: number;
  /** How often object_counts is recounted within one term (besides once at its start). */
  countRepairIntervalMs: number;
}

/**
 * A recount holds the rv lock (writers wait) for as long as it counts: measured over 100,000
 * pods (about 1.5 KB each) in 2,000 (cluster, namespace) counts, 42 ms on SQLite and 50 ms on
 * PostgreSQL (60 ms with every count wrong), median of 5, on a 2-core machine. Every 10 minutes
 * that is under 0.01% of the writers' time, and it bounds how long counts stay wrong while a
 * writer of an earlier release runs.
 */
export const defaultCompaction: CompactionOptions = { minAgeMs: 15 * 60_000, minCount: 100_000, intervalMs: 60_000, countRepairIntervalMs: 10 * 60_000 };

/** The compactor lease as the lease keeper holds it. */
export interface CompactorLease {
  /** Its fence while this process holds it. */
  fence(): Fence | undefined;
  /** Storage refused a write under `fence`: the lease moved on; give it up. */
  onFenced(fence: Fence): void;
}

/** Compacts and repairs counts while this process holds the compactor lease. */
export function startCompactor(store: Store, opts: CompactionOptions, log: Logger, lease: CompactorLease): { stop(): Promise<void> } {
  let running: Promise<void> | undefined;
  let term: number | undefined;
  let lastRepair = 0;
  let lastCompaction = performance.now();
  /** After a failure (not a fence): the next attempt waits an interval. */
  let retryAt = 0;

  const pass = async (fence: Fence) => {
    const now = performance.now();
    if (fence.epoch !== term || now - lastRepair >= opts.countRepairIntervalMs) {
      const started = performance.now();
      const r = await store.repairCounts(fence);
      term = fence.epoch;
      lastRepair = now;
      const ms = Math.round(performance.now() - started);
      if (r.repaired > 0) log.warn('object counts had drifted; recounted from the objects', { repaired: r.repaired, checked: r.checked, ms, epoch: fence.epoch });
      else log.debug('object counts checked', { checked: r.checked, ms });
    }
    if (now - lastCompaction >= opts.intervalMs) {
      lastCompaction = now;
      const r = await store.compact({ minAgeMs: opts.minAgeMs, minCount: opts.minCount }, fence);
      if (r.deleted > 0) log.info('change log compacted', { compactedRv: r.compactedRv, deleted: r.deleted });
    }
  };

  const tick = () => {
    const fence = lease.fence();
    if (!fence || running || performance.now() < retryAt) return;
    running = pass(fence)
      .catch((err: Error) => {
        if (err instanceof FencedError) {
          log.warn('compactor lease lost: this process compacts no more', { reason: err.message });
          lease.onFenced(fence);
          return;
        }
        retryAt = performance.now() + opts.intervalMs;
        log.warn('change log compaction or count repair failed; retrying next interval', { err });
      })
      .finally(() => (running = undefined));
  };
  // Often enough to start a new term's recount within a second of acquiring the lease.
  const timer = setInterval(tick, Math.max(10, Math.min(opts.intervalMs, opts.countRepairIntervalMs, 1000)));
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
