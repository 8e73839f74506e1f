// Group commit of Cluster objects: every cluster this process holds writes its status into its
// Cluster object (synchro/cluster/cluster-objects.ts), and each such write appends a change, so it
// takes the one rv lock. One transaction per cluster meant, at a thousand clusters, hundreds
// of transactions queued on that lock, each holding a pool connection while it waited: the
// batches of events and the lease renewals waited behind them, and a member started its
// clusters one lock wait at a time. Here the writes queued while a round commits form the next
// round: one transaction, one lock, for all of them (Store.writeClusterObjects; rounds.ts says
// how a round's failures stay with their write).
import type { Logger } from '../../lib/log.ts';
import type { ClusterObjectResult, ClusterObjectWriteRequest } from '../../storage/cluster-objects.ts';
import type { Fence } from '../../storage/leases.ts';
import type { Store } from '../../storage/store.ts';
import { RoundCommitter } from './rounds.ts';

export interface ClusterObjectCommitterOptions {
  /** Writes per transaction at most (default 32: a round holds the rv lock for every statement of its writes, and other writers wait). */
  maxPerRound?: number;
  /** Called after each round with its size (a metric). */
  onRound?: (writes: number) => void;
}

export class ClusterObjectCommitter {
  private readonly rounds: RoundCommitter<ClusterObjectWriteRequest, ClusterObjectResult>;

  constructor(store: Store, log: Logger, opts: ClusterObjectCommitterOptions = {}) {
    this.rounds = new RoundCommitter(
      (writes) => store.writeClusterObjects(writes),
      (w) => store.writeClusterObject(w.name, w.decide, w.fence),
      log,
      { maxPerRound: opts.maxPerRound ?? 32, what: 'Cluster object writes', ...(opts.onRound ? { onRound: opts.onRound } : {}) },
    );
  }

  /**
   * Store.writeClusterObject, in the next round. Writes of one cluster are written in the order
   * given, one per round. After close(), a write goes to storage on its own.
   */
  write(name: string, decide: ClusterObjectWriteRequest['decide'], fence: Fence): Promise<ClusterObjectResult> {
    return this.rounds.write({ name, decide, fence });
  }

  /** Waits for what is queued; later writes go to storage one by one. */
  close(): Promise<void> {
    return this.rounds.close();
  }
}
