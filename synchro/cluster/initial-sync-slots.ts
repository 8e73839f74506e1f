// How many clusters of this process run their initial sync at once. A member that takes
// hundreds of clusters (its start, or a member leaving the fleet) would otherwise list every
// resource of every one of them together: the lists' objects pile up in memory, the event
// loop parses them all, and heartbeats and lease renewals wait behind that work until the
// leases expire, every other member then takes the clusters and melts the same way (measured
// at 1,000 clusters on 3 members: bench:fleet). With a bounded number of slots, clusters
// finish one group after another, each at the speed of one. A slot is given in the order
// asked, held from the cluster's first discovery until its initial sync is complete, and
// given back sooner when the cluster stops or when its sync takes longer than the hold limit
// (a member that lists slowly or keeps failing must not keep the others waiting).

export type Release = () => void;

/** Initial syncs at once per process, unless configured (--initial-sync-concurrency). */
export const defaultInitialSyncConcurrency = 32;

export class InitialSyncSlots {
  private used = 0;
  private readonly waiting: Array<{ grant: (release: Release | undefined) => void; signal: AbortSignal; onAbort: () => void }> = [];

  constructor(
    /** Slots; Infinity: no limit. */
    readonly size: number,
    private readonly onChange?: (running: number, waiting: number) => void,
  ) {
    if (!(size >= 1)) throw new Error('InitialSyncSlots: size must be at least 1');
  }

  get running(): number {
    return this.used;
  }

  get queued(): number {
    return this.waiting.length;
  }

  /** A slot, once one is free (in the order asked); undefined when `signal` aborts first. The release is idempotent. */
  acquire(signal: AbortSignal): Promise<Release | undefined> {
    if (signal.aborted) return Promise.resolve(undefined);
    if (this.used < this.size) return Promise.resolve(this.take());
    return new Promise((resolve) => {
      const entry = {
        grant: resolve,
        signal,
        onAbort: () => {
          const i = this.waiting.indexOf(entry);
          if (i >= 0) this.waiting.splice(i, 1);
          this.changed();
          resolve(undefined);
        },
      };
      signal.addEventListener('abort', entry.onAbort, { once: true });
      this.waiting.push(entry);
      this.changed();
    });
  }

  private take(): Release {
    this.used++;
    this.changed();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.used--;
      this.next();
    };
  }

  private next(): void {
    while (this.used < this.size && this.waiting.length > 0) {
      const w = this.waiting.shift()!;
      w.signal.removeEventListener('abort', w.onAbort);
      w.grant(this.take());
    }
    this.changed();
  }

  private changed(): void {
    this.onChange?.(this.used, this.waiting.length);
  }
}
