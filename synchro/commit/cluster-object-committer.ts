// Group commit of Cluster objects: every cluster this process holds writes its status into its
// Cluster object (synchro/cluster/cluster-objects.ts), and each such write appends a change, so it
// takes the one rv lock. One transaction per cluster meant, at a thousand clusters, hundreds
// of transactions queued on that lock, each holding a pool connection while it waited: the
// batches of events and the lease renewals waited behind them, and a member started its
// clusters one lock wait at a time. Here the writes queued while a round commits form the next
// round: one transaction, one lock, for all of them (Store.writeClusterObjects).
//
// A round's failures stay with the write they belong to:
// - fenced: that cluster's lease moved on; its write is refused (FencedError), the rest is
//   written;
// - refused rows (anything but an outage, a throwing decide included): the round is written
//   one write at a time, so only the refused one fails;
// - outage: every write of the round fails, as one write alone would; each cluster's next
//   status write tries again.
import type { Logger } from '../../lib/log.ts';
import type { ClusterObjectResult, ClusterObjectState, ClusterObjectWrite } from '../../storage/cluster-objects.ts';
import { FencedError, type Fence } from '../../storage/leases.ts';
import type { Store } from '../../storage/store.ts';
import { writeErrorKind } from '../../storage/write-errors.ts';

interface Pending {
  name: string;
  decide: (current: ClusterObjectState | undefined) => ClusterObjectWrite;
  fence: Fence;
  resolve: (r: ClusterObjectResult) => void;
  reject: (err: unknown) => void;
}

export interface ClusterObjectCommitterOptions {
  /** Writes per transaction at most (default 32: a round holds the rv lock for every statement of its writes, and other writers wait). */
  maxPerRound?: number;
  /** Called after each round with its size (a metric). */
  onRound?: (writes: number) => void;
}

export class ClusterObjectCommitter {
  private queue: Pending[] = [];
  private draining?: Promise<void>;
  private closed = false;
  private readonly maxPerRound: number;

  constructor(
    private readonly store: Store,
    private readonly log: Logger,
    private readonly opts: ClusterObjectCommitterOptions = {},
  ) {
    this.maxPerRound = opts.maxPerRound ?? 32;
  }

  /**
   * Store.writeClusterObject, in the next round. Writes of one cluster are written in the order
   * given, one per round. After close(), a write goes to storage on its own.
   */
  write(name: string, decide: Pending['decide'], fence: Fence): Promise<ClusterObjectResult> {
    if (this.closed) return this.store.writeClusterObject(name, decide, fence);
    return new Promise<ClusterObjectResult>((resolve, reject) => {
      this.queue.push({ name, decide, fence, resolve, reject });
      this.kick();
    });
  }

  /** Drains the queue unless a drain runs; one queued as the last drain ended starts the next. */
  private kick(): void {
    if (this.draining) return;
    this.draining = this.drain().finally(() => {
      this.draining = undefined;
      if (this.queue.length > 0) this.kick();
    });
  }

  /** Waits for what is queued; later writes go to storage one by one. */
  async close(): Promise<void> {
    this.closed = true;
    while (this.draining) await this.draining;
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const round: Pending[] = [];
      const names = new Set<string>();
      const rest: Pending[] = [];
      for (const p of this.queue) {
        if (round.length < this.maxPerRound && !names.has(p.name)) {
          names.add(p.name);
          round.push(p);
        } else rest.push(p);
      }
      this.queue = rest;
      this.opts.onRound?.(round.length);
      await this.writeRound(round);
    }
  }

  private async writeRound(round: Pending[]): Promise<void> {
    while (round.length > 0) {
      try {
        const results = await this.store.writeClusterObjects(round.map(({ name, decide, fence }) => ({ name, decide, fence })));
        round.forEach((p, i) => p.resolve(results[i]));
        return;
      } catch (err) {
        if (err instanceof FencedError) {
          const i = round.findIndex((p) => p.fence.lease === err.fence.lease && p.fence.epoch === err.fence.epoch);
          if (i >= 0) {
            round.splice(i, 1)[0].reject(err);
            continue;
          }
        }
        if (round.length > 1 && writeErrorKind(err) !== 'outage') {
          this.log.warn('storage refused a group of Cluster object writes; writing them one by one', { writes: round.length, err: err as Error });
          for (const p of round) await this.writeRound([p]);
          return;
        }
        for (const p of round) p.reject(err);
        return;
      }
    }
  }
}
