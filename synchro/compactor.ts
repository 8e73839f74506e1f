// Compaction of the change log, run by the one synchro member holding the compactor lease:
// every interval, drop changes outside the retention window (older than minAge and beyond the minCount newest). Watches, continue
// tokens and exact lists from before the window then get 410 Expired, and clients relist.
import type { Logger } from '../lib/log.ts';
import type { Store } from '../storage/store.ts';
import type { RetentionPolicy } from '../storage/types.ts';

export interface CompactionOptions extends RetentionPolicy {
  intervalMs: number;
}

export const defaultCompaction: CompactionOptions = { minAgeMs: 15 * 60_000, minCount: 100_000, intervalMs: 60_000 };

/** Compacts every interval while `holdsLease()` (one compactor among the synchro members). */
export function startCompactor(store: Store, opts: CompactionOptions, log: Logger, holdsLease: () => boolean = () => true): { stop(): Promise<void> } {
  let running: Promise<void> = Promise.resolve();
  const tick = () => {
    if (!holdsLease()) return;
    running = store
      .compact({ minAgeMs: opts.minAgeMs, minCount: opts.minCount })
      .then((r) => {
        if (r.deleted > 0) log.info('change log compacted', { compactedRv: r.compactedRv, deleted: r.deleted });
      })
      .catch((err: Error) => log.warn('change log compaction failed; retrying next interval', { err }));
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
