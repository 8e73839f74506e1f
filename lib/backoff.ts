// Exponential backoff with jitter, and an abortable sleep.

export interface BackoffOptions {
  initialMs?: number;
  maxMs?: number;
  factor?: number;
  /** Fraction of the delay randomized: 0.5 gives delays in [0.75d, 1.25d). */
  jitter?: number;
}

export class Backoff {
  private attempt = 0;
  private readonly initialMs: number;
  private readonly maxMs: number;
  private readonly factor: number;
  private readonly jitter: number;

  constructor(opts: BackoffOptions = {}) {
    this.initialMs = opts.initialMs ?? 250;
    this.maxMs = opts.maxMs ?? 30_000;
    this.factor = opts.factor ?? 2;
    this.jitter = opts.jitter ?? 0.5;
  }

  /** The next delay; each call doubles the base up to the maximum. */
  next(): number {
    const base = Math.min(this.maxMs, this.initialMs * this.factor ** Math.min(this.attempt, 30));
    this.attempt++;
    return Math.round(base * (1 - this.jitter / 2 + Math.random() * this.jitter));
  }

  get attempts(): number {
    return this.attempt;
  }

  reset(): void {
    this.attempt = 0;
  }
}

/** Resolves after `ms`, or at once when `signal` aborts (never rejects). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** A sleep that can also be cut short by `wake()` (e.g. the cluster came back). */
export class Waker {
  private wakers = new Set<() => void>();

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        this.wakers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal?.addEventListener('abort', done, { once: true });
      this.wakers.add(done);
    });
  }

  wake(): void {
    for (const w of [...this.wakers]) w();
  }
}
