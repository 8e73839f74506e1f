// Group commit of per-cluster writes made under each cluster's lease: the writes queued while a
// round commits form the next round, one transaction for all of them, at most one write per
// cluster (its writes go in the order given). The Cluster objects (cluster-object-committer.ts)
// and the `clusters` table's statuses (cluster-status-committer.ts) are written this way: one
// transaction per cluster meant, at a thousand clusters, hundreds of transactions each holding
// a pool connection, and the batches of events and the lease renewals waited for a connection.
//
// A round's failures stay with the write they belong to:
// - fenced: that cluster's lease moved on; its write is refused (FencedError), the rest is
//   written;
// - refused rows (anything but an outage, a throwing callback included): the round is written
//   one write at a time, so only the refused one fails;
// - outage: every write of the round fails, as one write alone would; each cluster's next
//   write tries again.
import type { Logger } from '../../lib/log.ts';
import { FencedError, type Fence } from '../../storage/leases.ts';
import { writeErrorKind } from '../../storage/write-errors.ts';

/** One cluster's write, under its lease. */
export interface RoundWrite {
  name: string;
  fence: Fence;
}

export interface RoundOptions {
  /** Writes per transaction at most. */
  maxPerRound: number;
  /** What is written, for the log ("Cluster object writes"). */
  what: string;
  /** Called after each round with its size (a metric). */
  onRound?: (writes: number) => void;
}

interface Pending<W, R> {
  write: W;
  resolve: (r: R) => void;
  reject: (err: unknown) => void;
}

export class RoundCommitter<W extends RoundWrite, R> {
  private queue: Array<Pending<W, R>> = [];
  private draining?: Promise<void>;
  private closed = false;

  /** `writeAll` writes a round in one transaction (one result per write, in order); `writeOne` is used once closed. */
  constructor(
    private readonly writeAll: (writes: W[]) => Promise<R[]>,
    private readonly writeOne: (write: W) => Promise<R>,
    private readonly log: Logger,
    private readonly opts: RoundOptions,
  ) {}

  /** `write`, in the next round. After close(), a write goes to storage on its own. */
  write(write: W): Promise<R> {
    if (this.closed) return this.writeOne(write);
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ write, resolve, reject });
      this.kick();
    });
  }

  /** Waits for what is queued; later writes go to storage one by one. */
  async close(): Promise<void> {
    this.closed = true;
    while (this.draining) await this.draining;
  }

  /** Drains the queue unless a drain runs; one queued as the last drain ended starts the next. */
  private kick(): void {
    if (this.draining) return;
    this.draining = this.drain().finally(() => {
      this.draining = undefined;
      if (this.queue.length > 0) this.kick();
    });
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const round: Array<Pending<W, R>> = [];
      const names = new Set<string>();
      const rest: Array<Pending<W, R>> = [];
      for (const p of this.queue) {
        if (round.length < this.opts.maxPerRound && !names.has(p.write.name)) {
          names.add(p.write.name);
          round.push(p);
        } else rest.push(p);
      }
      this.queue = rest;
      this.opts.onRound?.(round.length);
      await this.writeRound(round);
    }
  }

  private async writeRound(round: Array<Pending<W, R>>): Promise<void> {
    while (round.length > 0) {
      try {
        const results = await this.writeAll(round.map((p) => p.write));
        round.forEach((p, i) => p.resolve(results[i]));
        return;
      } catch (err) {
        if (err instanceof FencedError) {
          const i = round.findIndex((p) => p.write.fence.lease === err.fence.lease && p.write.fence.epoch === err.fence.epoch);
          if (i >= 0) {
            round.splice(i, 1)[0].reject(err);
            continue;
          }
        }
        if (round.length > 1 && writeErrorKind(err) !== 'outage') {
          this.log.warn(`storage refused a group of ${this.opts.what}; writing them one by one`, { writes: round.length, err: err as Error });
          for (const p of round) await this.writeRound([p]);
          return;
        }
        for (const p of round) p.reject(err);
        return;
      }
    }
  }
}
