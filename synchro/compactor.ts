// Compaction of the change log, run by the one synchro member holding the compactor lease,
// every compaction under that lease's fence (a member that lost it compacts nothing): every
// interval, drop changes outside the retention window (older than minAge, on the database's
// clock, and beyond the minCount newest). Watches, continue tokens and exact lists from before
// the window then get 410 Expired, and clients relist.
import type { Logger } from '../lib/log.ts';
import { FencedError, type Fence } from '../storage/leases.ts';
import type { Store } from '../storage/store.ts';
import type { RetentionPolicy } from '../storage/types.ts';

export interface CompactionOptions extends RetentionPolicy {
  intervalMs: number;
}

export const defaultCompaction: CompactionOptions = { minAgeMs: 15 * 60_000, minCount: 100_000, intervalMs: 60_000 };

/** The compactor lease as the lease keeper holds it. */
export interface CompactorLease {
  /** Its fence while this process holds it. */
  fence(): Fence | undefined;
  /** Storage refused a write under `fence`: the lease moved on; give it up. */
  onFenced(fence: Fence): void;
}

/** Compacts every interval while this process holds the compactor lease. */
export function startCompactor(store: Store, opts: CompactionOptions, log: Logger, lease: CompactorLease): { stop(): Promise<void> } {
  let running: Promise<void> | undefined;
  const tick = () => {
    const fence = lease.fence();
    if (!fence || running) return;
    running = store
      .compact({ minAgeMs: opts.minAgeMs, minCount: opts.minCount }, fence)
      .then((r) => {
        if (r.deleted > 0) log.info('change log compacted', { compactedRv: r.compactedRv, deleted: r.deleted });
      })
      .catch((err: Error) => {
        if (err instanceof FencedError) {
          log.warn('compactor lease lost: this process compacts no more', { reason: err.message });
          lease.onFenced(fence);
        } else log.warn('change log compaction failed; retrying next interval', { err });
      })
      .finally(() => (running = undefined));
  };
  const timer = setInterval(tick, opts.intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
