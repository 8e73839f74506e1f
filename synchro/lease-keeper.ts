// This synchro process as a member of the group sharing the writes: its heartbeat in
// storage, the leases it holds (one per member cluster it writes for, and the compactor's),
// their renewal, and the watchdog that gives every lease up at once when renewal did not
// succeed in time. A lease given up or lost is reported to the owner of the work (onLost),
// which stops it; storage fences whatever is still in flight.
import { hostname } from 'node:os';
import type { Logger } from '../lib/log.ts';
import { compactorLease, type Fence } from '../storage/leases.ts';
import type { Store } from '../storage/store.ts';
import type { SynchroMetrics } from './metrics.ts';

export interface ShardSettings {
  /** This process's name among the members (default: host name and pid). */
  identity: string;
  /** How long a lease and a heartbeat last without renewal (default 15 s). */
  leaseTtlMs: number;
  /** How often leases and the heartbeat are renewed (default a third of the TTL). */
  renewIntervalMs: number;
  /** How often the assignment of clusters to members is checked (default 1 s). */
  assignIntervalMs: number;
}

export function defaultShardSettings(over: Partial<ShardSettings> = {}): ShardSettings {
  const leaseTtlMs = over.leaseTtlMs ?? 15_000;
  return {
    identity: over.identity ?? `${hostname()}-${process.pid}`,
    leaseTtlMs,
    renewIntervalMs: over.renewIntervalMs ?? Math.max(100, Math.floor(leaseTtlMs / 3)),
    assignIntervalMs: over.assignIntervalMs ?? 1000,
  };
}

export type LostReason = 'renew-failed' | 'renew-timeout' | 'fenced';

interface Held {
  epoch: number;
  acquiredAt: string;
  /** performance.now() when the last successful renewal (or the acquisition) was sent. */
  renewedAt: number;
}

const kindOf = (name: string) => (name === compactorLease ? 'compactor' : 'cluster');

/** Whether a process of this host with this pid still runs. */
function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export class LeaseKeeper {
  private readonly held = new Map<string, Held>();
  private readonly host = hostname();
  private renewTimer?: NodeJS.Timeout;
  private watchdog?: NodeJS.Timeout;
  private renewing?: Promise<void>;
  private stopped = false;

  constructor(
    private readonly store: Store,
    readonly settings: ShardSettings,
    private readonly metrics: SynchroMetrics,
    private readonly log: Logger,
    /** A lease this process held is gone: stop its work now (its writes are fenced anyway). */
    private readonly onLost: (name: string, epoch: number, reason: LostReason) => void,
  ) {}

  get identity(): string {
    return this.settings.identity;
  }

  /** Heartbeats once, then keeps heartbeating and renewing every renewIntervalMs. */
  async start(): Promise<void> {
    await this.store.heartbeat({ id: this.identity, host: this.host, pid: process.pid }, this.settings.leaseTtlMs);
    const loop = () => {
      this.renewTimer = setTimeout(() => {
        this.renewing = this.renew().finally(() => {
          this.renewing = undefined;
          if (!this.stopped) loop();
        });
      }, this.settings.renewIntervalMs);
    };
    loop();
    // Well before the TTL runs out locally: a lease not renewed by then may be someone else's.
    const margin = Math.min(2000, this.settings.leaseTtlMs / 5);
    this.watchdog = setInterval(() => {
      const now = performance.now();
      for (const [name, h] of [...this.held]) if (now - h.renewedAt > this.settings.leaseTtlMs - margin) this.lose(name, h.epoch, 'renew-timeout');
    }, Math.max(50, Math.min(500, this.settings.renewIntervalMs / 2)));
  }

  /**
   * The live members (this one included) and the members of this host whose process is gone
   * (their leases are taken at once instead of after their expiry).
   */
  async members(): Promise<{ live: string[]; deadHere: string[] }> {
    const { now, members } = await this.store.members();
    const live = new Set<string>([this.identity]);
    const deadHere: string[] = [];
    for (const m of members) {
      if (m.id === this.identity) continue;
      const dead = m.host === this.host && !processAlive(m.pid);
      if (dead) deadHere.push(m.id);
      else if (m.expiresAt > now) live.add(m.id);
    }
    this.metrics.members.set(live.size);
    return { live: [...live].sort(), deadHere };
  }

  /** The epoch this process holds `name` at, if it does. */
  epoch(name: string): number | undefined {
    return this.held.get(name)?.epoch;
  }

  /** What a writer under `name` carries with every batch. */
  fence(name: string): Fence | undefined {
    const h = this.held.get(name);
    return h ? { lease: name, holder: this.identity, epoch: h.epoch } : undefined;
  }

  /** When the lease was acquired (ISO time), for status. */
  acquiredAt(name: string): string | undefined {
    return this.held.get(name)?.acquiredAt;
  }

  heldNames(kind?: 'cluster' | 'compactor'): string[] {
    return [...this.held.keys()].filter((n) => kind === undefined || kindOf(n) === kind);
  }

  /** Takes `name` if it is free, expired, released, or its holder is dead; returns the epoch or undefined. */
  async acquire(name: string, deadHolders: string[] = []): Promise<number | undefined> {
    if (this.stopped) return undefined;
    const sentAt = performance.now();
    const before = (await this.store.listLeasesNamed([name]))[0];
    const epoch = await this.store.acquireLease(name, this.identity, this.settings.leaseTtlMs, deadHolders);
    if (epoch === undefined) return undefined;
    const reason = !before || before.holder === null ? (before && before.epoch > 0 ? 'released' : 'free') : before.holder === this.identity ? 'own' : deadHolders.includes(before.holder) ? 'dead-holder' : 'expired';
    this.held.set(name, { epoch, acquiredAt: new Date().toISOString(), renewedAt: sentAt });
    this.metrics.leaseAcquisitions.inc({ kind: kindOf(name), reason });
    this.updateHeld();
    this.log.info('lease acquired', { lease: name, epoch, previousHolder: before?.holder ?? null, reason });
    return epoch;
  }

  /** Gives `name` up (graceful: the next holder need not wait for the expiry). */
  async release(name: string, reason: 'rebalance' | 'shutdown' | 'removed'): Promise<void> {
    const h = this.held.get(name);
    if (!h) return;
    this.held.delete(name);
    this.updateHeld();
    this.metrics.leaseHandovers.inc({ kind: kindOf(name), reason });
    if (reason === 'removed') await this.store.deleteLease(name, this.identity, h.epoch);
    else await this.store.releaseLease(name, this.identity, h.epoch);
    this.log.info('lease released', { lease: name, epoch: h.epoch, reason });
  }

  /** Storage fenced a write under `name`: the lease is lost. */
  fenced(name: string, epoch: number): void {
    this.lose(name, epoch, 'fenced');
  }

  /** Stops renewing; releases what is still held and leaves the member list (graceful stop). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.renewTimer);
    clearInterval(this.watchdog);
    await this.renewing;
    for (const name of [...this.held.keys()]) await this.release(name, 'shutdown').catch((err: Error) => this.log.warn('lease release failed', { lease: name, err }));
    await this.store.removeMember(this.identity).catch((err: Error) => this.log.warn('leaving the member list failed', { err }));
  }

  private async renew(): Promise<void> {
    const sentAt = performance.now();
    const snapshot = [...this.held].map(([name, h]) => ({ name, epoch: h.epoch }));
    try {
      await this.store.heartbeat({ id: this.identity, host: this.host, pid: process.pid }, this.settings.leaseTtlMs);
      const renewed = await this.store.renewLeases(this.identity, snapshot, this.settings.leaseTtlMs);
      this.metrics.leaseRenewDuration.observe((performance.now() - sentAt) / 1000);
      for (const { name, epoch } of snapshot) {
        const h = this.held.get(name);
        if (!h || h.epoch !== epoch) continue; // released or re-acquired meanwhile
        if (renewed.has(name)) h.renewedAt = sentAt;
        else this.lose(name, epoch, 'renew-failed');
      }
    } catch (err) {
      this.log.warn('lease renewal failed; retrying', { err: err as Error, leases: snapshot.length });
    }
  }

  private lose(name: string, epoch: number, reason: LostReason): void {
    const h = this.held.get(name);
    if (!h || h.epoch !== epoch) return;
    this.held.delete(name);
    this.updateHeld();
    this.metrics.leaseHandovers.inc({ kind: kindOf(name), reason });
    this.log.warn('lease lost; stopping its work at once', { lease: name, epoch, reason });
    this.onLost(name, epoch, reason);
  }

  private updateHeld(): void {
    this.metrics.leasesHeld.set({ kind: 'cluster' }, this.heldNames('cluster').length);
    this.metrics.leasesHeld.set({ kind: 'compactor' }, this.heldNames('compactor').length);
  }
}
