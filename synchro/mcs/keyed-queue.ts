// Work of one kind per key, run in the background one job at a time: a key queued again
// before its job started keeps its place and runs once, with the newest job (what it writes
// is decided from the newest plan). The dispatcher's status writes go through it, so that a
// write of storage that waits (on PostgreSQL, for the change log's rv lock while the synced
// copies of a dispatch wave commit) never holds back the writes to the consumers.

export class KeyedQueue {
  private readonly pending = new Map<string, () => Promise<void>>();
  private running?: Promise<void>;

  /** `onError`: a job that threw (jobs handle their own failures; this is the last resort). */
  constructor(private readonly onError: (err: unknown, key: string) => void) {}

  /** Queues `job` for `key`, in place of a job of `key` that has not started. */
  push(key: string, job: () => Promise<void>): void {
    this.pending.set(key, job);
    this.running ??= this.drain();
  }

  /** Forgets the jobs not started. */
  clear(): void {
    this.pending.clear();
  }

  /** Jobs queued and not started. */
  get size(): number {
    return this.pending.size;
  }

  /** Resolves once no job runs and none is queued. */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  private async drain(): Promise<void> {
    try {
      for (let next = this.pending.entries().next(); !next.done; next = this.pending.entries().next()) {
        const [key, job] = next.value;
        this.pending.delete(key);
        try {
          await job();
        } catch (err) {
          this.onError(err, key);
        }
      }
    } finally {
      this.running = undefined;
    }
  }
}
