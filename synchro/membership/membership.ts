// This synchro process as a member of the fleet sharing the member clusters, and the leases
// it holds: one owner for the membership and ownership state, in the shape of client-go's
// leader election (tools/leaderelection: one LeaderElector holding the observed record and
// the time it observed it, whose transitions call OnStartedLeading / OnStoppedLeading),
// generalised to many leases split by bounded-load rendezvous hashing.
//
// The state, all of it:
//   phase      out (not counted: not joined yet, or left because it cannot work) | member | stopped
//   reason     why it is out
//   wanted     the wiring can do the work (configuration loaded): heartbeat and count
//   observed   the live members as last read (rendezvous runs over them) and the ones of
//              this machine whose process is provably gone (their leases are free at once)
//   held       lease → epoch, acquired at, last renewal sent
//
// Transitions: join() (first heartbeat; at start, an identity held by another live instance
// is an error), the tick every renewIntervalMs (heartbeat, then renew every lease; a refused
// heartbeat means another instance took the identity: leave), the watchdog (a lease, or the
// heartbeat, not renewed within the TTL minus a margin on this process's clock is lost at
// once), share() (release what rendezvous gives to others, after its work stopped; acquire
// what it gives to this member) and stop(). A lost lease is reported through onLost, which
// stops its work; storage fences whatever is still in flight.
import { randomUUID } from 'node:crypto';
import { readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import type { Logger } from '../../lib/log.ts';
import { clusterLease, compactorLease, type Fence } from '../../storage/leases.ts';
import type { Member, MemberRecord } from '../../storage/members.ts';
import type { Store } from '../../storage/store.ts';
import type { SynchroMetrics } from '../metrics/metrics.ts';
import { assignment, ownerOf } from './rendezvous.ts';

export interface ShardSettings {
  /** This process's name among the members (default: host name and a random id, unique per process). */
  identity: string;
  /** How long a lease and a heartbeat last without renewal (default 15 s). */
  leaseTtlMs: number;
  /** How often leases and the heartbeat are renewed (default a third of the TTL). */
  renewIntervalMs: number;
  /** How often the assignment of clusters to members is checked (default 1 s). */
  assignIntervalMs: number;
  /** How long a cluster may have no live lease before a member marks it NotSynced (default twice the TTL). */
  notSyncedAfterMs: number;
}

export function defaultShardSettings(over: Partial<ShardSettings> = {}): ShardSettings {
  const leaseTtlMs = over.leaseTtlMs ?? 15_000;
  return {
    // Host name and pid repeat across containers (every one is pid 1, often with one host
    // name); kube-controller-manager's leader election identity is the host name and a UUID.
    identity: over.identity ?? `${hostname()}_${randomUUID()}`,
    leaseTtlMs,
    renewIntervalMs: over.renewIntervalMs ?? Math.max(100, Math.floor(leaseTtlMs / 3)),
    assignIntervalMs: over.assignIntervalMs ?? 1000,
    notSyncedAfterMs: over.notSyncedAfterMs ?? 2 * leaseTtlMs,
  };
}

export type LostReason = 'renew-failed' | 'renew-timeout' | 'fenced' | 'left';
export type ReleaseReason = 'rebalance' | 'shutdown' | 'removed' | 'not-synced';

interface Held {
  epoch: number;
  acquiredAt: string;
  /** performance.now() when the last successful renewal (or the acquisition) was sent. */
  renewedAt: number;
}

/** Everything this process knows about its membership, as one record (SynchroHandle.membership()). */
export interface MembershipState {
  identity: string;
  instance: string;
  phase: 'out' | 'member' | 'stopped';
  /** Why it is out ('' while a member). */
  reason: string;
  /** The live members as last read, this one included while a member. */
  live: string[];
  /** Members of this machine whose process is gone. */
  deadHere: string[];
  /** Held leases and their epochs. */
  held: Record<string, number>;
}

/** Another live process holds this identity. */
export class IdentityConflictError extends Error {
  override name = 'IdentityConflictError';
  constructor(
    readonly identity: string,
    readonly holder: Member,
    now: number,
  ) {
    super(describeHolder(identity, holder, now));
  }
}

function describeHolder(identity: string, m: Member, now: number): string {
  const age = Math.max(0, (now - m.heartbeatAt) / 1000).toFixed(1);
  return `identity ${identity} is held by another live instance (host ${m.host}, pid ${m.pid}, instance ${m.instance ?? 'of an older release'}, heartbeat ${age} s ago): give every synchro process its own --identity`;
}

/** The machine and pid namespace this process runs in: a dead pid proves a member gone only within them. */
export interface Machine {
  host: string;
  pid: number;
  /** The kernel's boot id: one per machine and boot, shared by its containers. */
  bootId: string | null;
  /** The pid namespace (`pid:[inode]`): pids mean something only within it. */
  pidNamespace: string | null;
}

export function thisMachine(): Machine {
  const read = (f: () => string) => {
    try {
      return f().trim() || null;
    } catch {
      return null; // not Linux, or /proc hidden: never provably this machine
    }
  };
  return {
    host: hostname(),
    pid: process.pid,
    bootId: read(() => readFileSync('/proc/sys/kernel/random/boot_id', 'utf8')),
    pidNamespace: read(() => readlinkSync('/proc/self/ns/pid')),
  };
}

/** Whether a process of this pid namespace with this pid still runs. */
function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Whether member `m` is provably gone: it ran in this machine's boot and pid namespace (a
 * host name proves nothing: containers and cloned machines repeat them) and its pid does
 * not exist. The kernel's answer is current where a heartbeat is up to a TTL old, so this
 * holds even while its heartbeat is fresh: a process restarted under a new identity takes
 * its predecessor's clusters at once. A pid reused since errs toward alive (the TTL then
 * decides).
 */
export function provablyGone(m: Pick<Member, 'pid' | 'bootId' | 'pidNamespace'>, here: Machine): boolean {
  if (!here.bootId || !here.pidNamespace || m.bootId !== here.bootId || m.pidNamespace !== here.pidNamespace) return false;
  return m.pid !== here.pid && !processAlive(m.pid);
}

const kindOf = (name: string) => (name.startsWith(clusterLease('')) ? 'cluster' : name === compactorLease ? 'compactor' : 'importer');
const clusterOf = (lease: string) => lease.slice(clusterLease('').length);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class Membership {
  private phase: MembershipState['phase'] = 'out';
  private reason = 'not joined yet: the configuration is not loaded';
  private wanted = false;
  private observed: { live: string[]; deadHere: string[] } = { live: [], deadHere: [] };
  private readonly held = new Map<string, Held>();
  /** performance.now() when the last successful heartbeat was sent. */
  private heartbeatSentAt = 0;
  /** performance.now() when the heartbeat under way was sent (undefined: none under way). */
  private heartbeatPendingSince?: number;
  /** Why the last heartbeat failed ('' since one succeeded). */
  private heartbeatFailure = '';

  readonly instance = randomUUID();
  private readonly machine: Machine;
  private tickTimer?: NodeJS.Timeout;
  private watchdog?: NodeJS.Timeout;
  private ticking?: Promise<void>;

  constructor(
    private readonly store: Store,
    readonly settings: ShardSettings,
    private readonly metrics: SynchroMetrics,
    private readonly log: Logger,
    /** A lease this process held is gone: stop its work now (its writes are fenced anyway). */
    private readonly onLost: (name: string, epoch: number, reason: LostReason) => void,
    machine: Machine = thisMachine(),
  ) {
    this.machine = machine;
  }

  get identity(): string {
    return this.settings.identity;
  }

  get isMember(): boolean {
    return this.phase === 'member';
  }

  state(): MembershipState {
    return {
      identity: this.identity,
      instance: this.instance,
      phase: this.phase,
      reason: this.reason,
      live: [...this.observed.live],
      deadHere: [...this.observed.deadHere],
      held: Object.fromEntries([...this.held].map(([n, h]) => [n, h.epoch])),
    };
  }

  /** Starts the tick and the watchdog; nothing is written until join(). */
  start(): void {
    const loop = () => {
      this.tickTimer = setTimeout(() => {
        this.ticking = this.tick().finally(() => {
          this.ticking = undefined;
          if (this.phase !== 'stopped') loop();
        });
      }, this.settings.renewIntervalMs);
    };
    loop();
    const every = Math.max(50, Math.min(500, this.settings.renewIntervalMs / 2));
    let ranAt = performance.now();
    this.watchdog = setInterval(() => {
      const now = performance.now();
      // The interval fires every `every` ms while the event loop runs: a gap far longer is
      // time this process did not run at all (SIGSTOP, a frozen node or VM, a GC storm, a
      // blocking call), during which nothing could be written, whatever storage did.
      const stalledMs = now - ranAt - every;
      ranAt = now;
      const deadline = this.deadlineMs;
      if (this.phase === 'member' && now - this.heartbeatSentAt > deadline) this.leave(this.overdue(now, stalledMs > Math.max(1000, 4 * every) ? stalledMs : 0));
      for (const [name, h] of [...this.held]) if (now - h.renewedAt > deadline) this.lose(name, h.epoch, 'renew-timeout');
    }, every);
  }

  /**
   * Why the heartbeat is overdue, by what was measured: the process itself did not run
   * (`stalledMs`, the event loop's gap), the last write failed, the write sent is still
   * unanswered, or none was sent.
   */
  private overdue(now: number, stalledMs: number): string {
    const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
    const since = s(now - this.heartbeatSentAt);
    if (stalledMs > 0) return `the process did not run for ${s(stalledMs)} (paused? a stopped process, a frozen node or a long garbage collection): its heartbeat, last written ${since} ago, and its leases may have expired meanwhile`;
    if (this.heartbeatFailure) return `storage unreachable: no heartbeat written for ${since}; the last attempt failed: ${this.heartbeatFailure}`;
    if (this.heartbeatPendingSince !== undefined) return `storage too slow: no heartbeat written for ${since}; the one sent ${s(now - this.heartbeatPendingSince)} ago is still unanswered`;
    return `no heartbeat written for ${since}: none was sent (the event loop is too busy to run the renewal)`;
  }

  /**
   * The process can do the work: heartbeat and count from now on. At start (`atStart`), an
   * identity held by another instance is watched for up to its TTL: a holder whose heartbeat
   * advances is alive (IdentityConflictError: this process must not start), one that expires
   * or is provably gone is replaced. Later, a conflict leaves this process out until the
   * identity is free (retried every tick).
   */
  async join(atStart = false): Promise<void> {
    if (this.phase === 'stopped' || this.wanted) return;
    this.wanted = true;
    let first: Member | undefined;
    for (let attempt = 0; attempt < 10_000; attempt++) {
      const { now, heldBy } = await this.heartbeat(first && provablyGone(first, this.machine) ? first.instance : undefined);
      if (!heldBy) return;
      if (!atStart) return this.identityTaken(heldBy, now);
      if (first && (heldBy.instance !== first.instance || heldBy.heartbeatAt !== first.heartbeatAt)) {
        this.wanted = false;
        this.reason = describeHolder(this.identity, heldBy, now);
        throw new IdentityConflictError(this.identity, heldBy, now);
      }
      if (!first) this.log.warn('identity held by another instance; watching whether it is alive', { holder: heldBy.instance, host: heldBy.host, pid: heldBy.pid, expiresInMs: heldBy.expiresAt - now });
      first ??= heldBy;
      await sleep(Math.max(50, Math.min(500, this.settings.renewIntervalMs / 2, heldBy.expiresAt - now)));
    }
  }

  /**
   * The members as they are now, and this member's share of `clusters` by bounded-load
   * rendezvous hashing (rendezvous.ts: assignment), except `removals` (clusters only left in
   * storage, one delete each: no load), which go by plain rendezvous: what it holds and is no
   * longer its own is stopped (stopWork) and released, so the new owner starts at once; what
   * is its own is acquired (a lease still held elsewhere is tried again on the next pass).
   * Out of the membership, its share is empty. Returns the clusters it holds, the owner of
   * each of the others, and the database's now.
   */
  async share(clusters: Iterable<string>, stopWork: (cluster: string) => Promise<void>, removals: ReadonlySet<string> = new Set()): Promise<{ mine: string[]; others: Map<string, string>; now: number }> {
    const now = await this.observe();
    const mine = new Set<string>();
    const others = new Map<string, string>();
    const all = [...clusters];
    const balanced = this.isMember ? assignment(all.filter((c) => !removals.has(c)), this.observed.live) : new Map<string, string>();
    for (const c of all) {
      const owner = !this.isMember ? undefined : removals.has(c) ? ownerOf(c, this.observed.live) : balanced.get(c);
      if (owner === this.identity) mine.add(c);
      else if (owner !== undefined) others.set(c, owner);
    }
    for (const lease of this.heldNames('cluster')) {
      const cluster = clusterOf(lease);
      if (mine.has(cluster)) continue;
      const epoch = this.epoch(lease);
      await stopWork(cluster);
      await this.release(lease, 'rebalance');
      this.log.info('cluster handed over to another synchro member', { cluster, to: others.get(cluster), epoch });
    }
    const held: string[] = [];
    for (const c of [...mine].sort()) {
      if (this.phase !== 'member') break;
      if (this.epoch(clusterLease(c)) !== undefined || (await this.acquire(clusterLease(c))) !== undefined) held.push(c);
    }
    return { mine: held, others, now };
  }

  /** The epoch this process holds `name` at, if it does. */
  epoch(name: string): number | undefined {
    return this.held.get(name)?.epoch;
  }

  /** What a writer under `name` carries with every write. */
  fence(name: string): Fence | undefined {
    const h = this.held.get(name);
    return h ? { lease: name, holder: this.identity, epoch: h.epoch } : undefined;
  }

  /**
   * How long `name` is still surely held (ms, on this process's clock): until the watchdog
   * gives it up, unless a renewal comes first. 0 when not held. A write to a member (which
   * storage cannot fence) is started only with a timeout within it.
   */
  remainingMs(name: string): number {
    const h = this.held.get(name);
    return h ? Math.max(0, h.renewedAt + this.deadlineMs - performance.now()) : 0;
  }

  /** How long after its last renewal a lease is given up: well before the TTL runs out locally, when it may be someone else's. */
  private get deadlineMs(): number {
    return this.settings.leaseTtlMs - Math.min(2000, this.settings.leaseTtlMs / 5);
  }

  /** When the lease was acquired (ISO time), for status. */
  acquiredAt(name: string): string | undefined {
    return this.held.get(name)?.acquiredAt;
  }

  heldNames(kind?: 'cluster' | 'compactor' | 'importer'): string[] {
    return [...this.held.keys()].filter((n) => kind === undefined || kindOf(n) === kind);
  }

  /** Takes `name` if it is free, expired, released, or its holder is provably gone; returns the epoch or undefined. */
  async acquire(name: string): Promise<number | undefined> {
    if (this.phase !== 'member') return undefined;
    const sentAt = performance.now();
    const before = (await this.store.listLeasesNamed([name]))[0];
    const deadHere = this.observed.deadHere;
    const epoch = await this.store.acquireLease(name, this.identity, this.settings.leaseTtlMs, deadHere);
    if (epoch === undefined) return undefined;
    const reason = !before || before.holder === null ? (before && before.epoch > 0 ? 'released' : 'free') : before.holder === this.identity ? 'own' : deadHere.includes(before.holder) ? 'dead-holder' : 'expired';
    this.held.set(name, { epoch, acquiredAt: new Date().toISOString(), renewedAt: sentAt });
    this.metrics.leaseAcquisitions.inc({ kind: kindOf(name), reason });
    this.updateHeld();
    this.log.info('lease acquired', { lease: name, epoch, previousHolder: before?.holder ?? null, reason });
    return epoch;
  }

  /** Gives `name` up (graceful: the next holder need not wait for the expiry). */
  async release(name: string, reason: ReleaseReason): Promise<void> {
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

  /** Stops heartbeating and renewing; releases what is still held and leaves the member list (graceful stop). */
  async stop(): Promise<void> {
    if (this.phase === 'stopped') return;
    this.phase = 'stopped';
    this.reason = 'stopped';
    this.wanted = false;
    clearTimeout(this.tickTimer);
    clearInterval(this.watchdog);
    await this.ticking;
    for (const name of [...this.held.keys()]) await this.release(name, 'shutdown').catch((err: Error) => this.log.warn('lease release failed', { lease: name, err }));
    // Only this instance's row: another instance of the identity keeps its own.
    await this.store.removeMember(this.identity, this.instance).catch((err: Error) => this.log.warn('leaving the member list failed', { err }));
  }

  /** What the member row reports of the configuration (the clusters file's current problem); set by the wiring. */
  configError: () => string | undefined = () => undefined;

  private record(): MemberRecord {
    return { id: this.identity, host: this.machine.host, pid: this.machine.pid, bootId: this.machine.bootId, pidNamespace: this.machine.pidNamespace, instance: this.instance, configError: this.configError() ?? null };
  }

  /**
   * Out because it cannot work (not wanted): the row is written expired, so the fleet (and
   * whoever reads the member list) sees this process and its configuration problem without
   * counting it. Refused, and ignored, while another live instance holds the identity.
   */
  private async reportOut(): Promise<void> {
    if (this.phase !== 'out') return;
    await this.store.heartbeat(this.record(), 0).catch((err: Error) => this.log.debug('reporting the member row failed', { err }));
  }

  /** Writes the heartbeat; a success makes this process a member. `replacing`: an instance provably gone, whose row may be taken. */
  private async heartbeat(replacing?: string | null): Promise<{ now: number; heldBy?: Member }> {
    const sentAt = performance.now();
    const record = this.record();
    this.heartbeatPendingSince = sentAt;
    let r: Awaited<ReturnType<Store['heartbeat']>>;
    try {
      r = await this.store.heartbeat(record, this.settings.leaseTtlMs, replacing ?? undefined);
    } catch (err) {
      this.heartbeatFailure = (err as Error).message;
      throw err;
    } finally {
      if (this.heartbeatPendingSince === sentAt) this.heartbeatPendingSince = undefined;
    }
    this.heartbeatFailure = '';
    if (r.heldBy || this.phase === 'stopped') return r;
    this.heartbeatSentAt = sentAt;
    if (this.phase === 'out') {
      this.phase = 'member';
      this.reason = '';
      this.log.info('joined the synchro members', { identity: this.identity, instance: this.instance });
    }
    return r;
  }

  /** Every renewIntervalMs: the heartbeat (or a new attempt to join), then every held lease. */
  private async tick(): Promise<void> {
    if (!this.wanted) return this.reportOut();
    const sentAt = performance.now();
    const snapshot = [...this.held].map(([name, h]) => ({ name, epoch: h.epoch }));
    try {
      const { now, heldBy } = await this.heartbeat();
      if (heldBy) return this.identityTaken(heldBy, now);
      if (snapshot.length === 0) return;
      const renewed = await this.store.renewLeases(this.identity, snapshot, this.settings.leaseTtlMs);
      this.metrics.leaseRenewDuration.observe((performance.now() - sentAt) / 1000);
      for (const { name, epoch } of snapshot) {
        const h = this.held.get(name);
        if (!h || h.epoch !== epoch) continue; // released or re-acquired meanwhile
        if (renewed.has(name)) h.renewedAt = sentAt;
        else this.lose(name, epoch, 'renew-failed');
      }
    } catch (err) {
      this.log.warn('heartbeat or lease renewal failed; retrying', { err: err as Error, leases: snapshot.length });
    }
  }

  /** Another live instance holds this identity: out, until it is free again. */
  private identityTaken(holder: Member, now: number): void {
    const reason = describeHolder(this.identity, holder, now);
    if (this.phase === 'member') this.leave(reason);
    else if (!this.reason.startsWith(`identity ${this.identity} is held`)) this.log.error('cannot join the synchro members', { reason });
    this.reason = reason;
  }

  /** Out of the membership: every lease is lost at once (its work stops) and released in the background. */
  private leave(reason: string): void {
    if (this.phase !== 'member') return;
    this.phase = 'out';
    this.reason = reason;
    this.observed = { live: [], deadHere: [] };
    this.metrics.members.set(0);
    this.log.error('left the synchro members; its clusters are handed back', { reason, leases: this.held.size });
    for (const [name, h] of [...this.held]) {
      this.lose(name, h.epoch, 'left');
      void this.store.releaseLease(name, this.identity, h.epoch).catch(() => undefined);
    }
  }

  /** Reads the member list: live members (this one while a member) and the provably gone ones of this machine; returns the database's now. */
  private async observe(): Promise<number> {
    const { now, members } = await this.store.members();
    const live = new Set<string>(this.isMember ? [this.identity] : []);
    const deadHere: string[] = [];
    let out = 0;
    let configErrors = this.configError() ? 1 : 0;
    for (const m of members) {
      if (m.id === this.identity) continue;
      if (provablyGone(m, this.machine)) deadHere.push(m.id);
      else if (m.expiresAt > now) live.add(m.id);
      else if (now - m.heartbeatAt < this.settings.leaseTtlMs) out++; // reports itself out (its row written expired)
      else continue;
      if (m.configError && !deadHere.includes(m.id)) configErrors++;
    }
    this.observed = { live: [...live].sort(), deadHere };
    this.metrics.members.set(live.size);
    this.metrics.membersOut.set(out);
    this.metrics.membersConfigErrors.set(configErrors);
    return now;
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
