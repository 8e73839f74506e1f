// Group commit of the `clusters` table's statuses: every cluster this process holds writes its
// status there on every change of its sync, and at least every statusRefreshMs with its latest
// probe time (cluster.ts; the Cluster object gets only what means something new:
// cluster-objects.ts). Each was a transaction of its own, four round trips
// holding a pool connection: at a thousand clusters, about fourteen were open at any moment and
// the batches of events waited for a connection. Here the writes queued while a round commits
// form the next round: one transaction and one statement for all of them
// (Store.setClusterStatuses; rounds.ts says how a round's failures stay with their write).
import type { Logger } from '../../lib/log.ts';
import type { ClusterStatusWrite } from '../../storage/clusters.ts';
import type { Fence } from '../../storage/leases.ts';
import type { Store } from '../../storage/store.ts';
import { RoundCommitter } from './rounds.ts';

export interface ClusterStatusCommitterOptions {
  /** Writes per transaction at most (default 200: a round is one statement, and it takes no rv). */
  maxPerRound?: number;
  /** Called after each round with its size (a metric). */
  onRound?: (writes: number) => void;
}

export class ClusterStatusCommitter {
  private readonly rounds: RoundCommitter<ClusterStatusWrite, boolean>;

  constructor(store: Store, log: Logger, opts: ClusterStatusCommitterOptions = {}) {
    this.rounds = new RoundCommitter(
      (writes) => store.setClusterStatuses(writes),
      (w) => store.setClusterStatus(w.name, w.status, w.fence),
      log,
      { maxPerRound: opts.maxPerRound ?? 200, what: 'cluster status writes', ...(opts.onRound ? { onRound: opts.onRound } : {}) },
    );
  }

  /** Store.setClusterStatus, in the next round: whether the cluster is registered. After close(), a write goes to storage on its own. */
  write(name: string, status: Record<string, unknown>, fence: Fence): Promise<boolean> {
    return this.rounds.write({ name, status, fence });
  }

  /** Waits for what is queued; later writes go to storage one by one. */
  close(): Promise<void> {
    return this.rounds.close();
  }
}
