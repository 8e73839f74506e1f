// Fault injection for one simulated cluster: drop watches, expire the history, go down
// (refuse connections, or answer 503) for a while, add latency. Driven from the JS API and
// over HTTP (POST /_sim/..., see server.ts and hack/README.md).
import type { Store } from './store.ts';
import type { WatchHub } from './watch.ts';

export type DownMode = 'refuse' | 'unavailable';

/** What the cluster process provides: closing and reopening its listening socket. */
export interface ListenerControl {
  /** Stops listening and resets every open connection. */
  stopListening(): Promise<void>;
  /** Listens again on the same port. */
  startListening(): Promise<void>;
}

export interface FaultState {
  /** 'up', or how the cluster is down. */
  state: 'up' | DownMode;
  /** When it comes back by itself (ms since epoch), if scheduled. */
  upAt?: number;
  latencyMs: number;
}

export class Faults {
  private mode: 'up' | DownMode = 'up';
  private upTimer?: NodeJS.Timeout;
  private upAt?: number;
  /** Added before every answer (except /_sim/ controls). */
  latencyMs = 0;

  constructor(
    private readonly store: Store,
    private readonly hub: WatchHub,
    private readonly listener: ListenerControl,
  ) {}

  /** Ends every open watch (abrupt: reset the connections instead of ending the streams). Returns how many. */
  dropWatches(opts: { abrupt?: boolean } = {}): number {
    return this.hub.dropAll(opts.abrupt ?? false);
  }

  /** Compacts the history: watches and continue tokens from any earlier rv get 410 Expired. */
  expireHistory(): { compactedRv: number } {
    this.store.expireHistory();
    return { compactedRv: this.store.compactedRv };
  }

  /** Adds latency to every answer; 0 removes it. */
  setLatency(ms: number): void {
    this.latencyMs = Math.max(0, ms);
  }

  /** Whether requests are answered 503 (mode 'unavailable'). */
  get unavailable(): boolean {
    return this.mode === 'unavailable';
  }

  /**
   * Takes the cluster down: 'refuse' closes the listening socket (connections are refused
   * until up()), 'unavailable' keeps listening but answers 503 to everything but /_sim/.
   * Open watches are cut either way. With `forMs`, comes back up by itself.
   */
  async down(opts: { mode?: DownMode; forMs?: number } = {}): Promise<void> {
    const mode = opts.mode ?? 'refuse';
    clearTimeout(this.upTimer);
    this.upTimer = undefined;
    this.upAt = undefined;
    if (this.mode !== mode) {
      if (this.mode === 'refuse') await this.listener.startListening();
      this.mode = mode;
      this.hub.dropAll(true);
      if (mode === 'refuse') await this.listener.stopListening();
    }
    if (opts.forMs !== undefined) {
      this.upAt = Date.now() + opts.forMs;
      this.upTimer = setTimeout(() => void this.up().catch(() => undefined), opts.forMs);
    }
  }

  /** Brings the cluster back (listening again on the same port). */
  async up(): Promise<void> {
    clearTimeout(this.upTimer);
    this.upTimer = undefined;
    this.upAt = undefined;
    const was = this.mode;
    this.mode = 'up';
    if (was === 'refuse') await this.listener.startListening();
  }

  state(): FaultState {
    const s: FaultState = { state: this.mode, latencyMs: this.latencyMs };
    if (this.upAt !== undefined) s.upAt = this.upAt;
    return s;
  }

  /** Clears timers (the cluster is closing). */
  dispose(): void {
    clearTimeout(this.upTimer);
    this.upTimer = undefined;
  }
}
