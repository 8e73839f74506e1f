// The multi-cluster Service dispatcher of one synchro member: for the consumer clusters whose
// lease this member holds, it keeps what each should hold of every exported Service (plan:
// desired.ts) equal to what it holds (storage's copy of it, overlaid with what this dispatcher
// wrote since: diff.ts), writing only the difference (writer.ts), and writes each consumer's
// part of the MultiClusterService's status under that consumer's lease (status.ts), in the
// background (keyed-queue.ts): a status write waiting for storage's lock holds back no dispatch.
//
// Level-triggered. It follows the change log for the few resources plans depend on
// (triggers.ts), woken by this process's commits and, on PostgreSQL, by the other processes'
// NOTIFY (storage/listen.ts), with a short poll as the fallback, and plans again only the keys
// a change concerns: a provider's slice change reaches the consumers at once. A full pass
// every resyncIntervalMs (and whenever the consumers it holds change) plans every key again
// and repairs drift. A failed write is the key's own and waits out a backoff of its own, unless
// it is provably about the dispatcher's identity there (failures.ts: 401, or a 403 a
// SelfSubjectAccessReview confirms), which blocks the consumer (or that namespace of it) for a
// growing backoff; a consumer that is away is skipped (and gets its state once it is back: its
// return is a change), a consumer whose lease goes stops being written at once: every write
// checks the lease first and in-flight requests are aborted. Everything it writes carries this
// installation's id (Store.installationId), and what another installation wrote is never
// changed (ownership.ts).
import { mcsResource, type McsConsumerStatus } from '../../api/multicluster-service.ts';
import { setImmediate } from 'node:timers/promises';
import type { Logger } from '../../lib/log.ts';
import type { WritableClusterClient } from '../../member/client.ts';
import { CompactedError } from '../../storage/errors.ts';
import { clusterLease, FencedError, type Fence } from '../../storage/leases.ts';
import { listenForCommits, type CommitSubscription } from '../../storage/listen.ts';
import type { OwnObjectState, OwnObjectWrite } from '../../storage/own-objects.ts';
import type { Store } from '../../storage/store.ts';
import type { Change, KubeObject } from '../../storage/types.ts';
import { upstreamRvAnnotation } from '../../storage/write.ts';
import { Backoff, Waker, type BackoffOptions } from '../../lib/backoff.ts';
import { ConsumerFailures } from './failures.ts';
import { isMine, isPanoptes } from './ownership.ts';
import type { ClusterPhase } from '../cluster/cluster.ts';
import type { Membership } from '../membership/membership.ts';
import type { SynchroMetrics } from '../metrics/metrics.ts';
import { keyString, planKey, type ClusterObject, type ConsumerPlan, type KeyPlan, type ServiceKey } from './desired.ts';
import { deletedSince, diff, holdsNothing, overlay, type Held, type Kind, type Written } from './diff.ts';
import { kinds, managedKeys, readClusters, readExports, readKey, readMcs, type DispatchCluster, type KeyRows, type McsState } from './inputs.ts';
import { consumerEntry, everyConsumerCleaned, mergeStatus, statusDigest, withoutFinalizer, type ConsumerOutcome, type Reason } from './status.ts';
import { KeyedQueue } from './keyed-queue.ts';
import { followed, triggersOf } from './triggers.ts';
import { LeaseGoneError, MemberWriter, type Applied } from './writer.ts';

export interface DispatcherOptions {
  /** Full pass period: every key planned again, drift repaired (default 60 s). */
  resyncIntervalMs: number;
  /** How often the change log is read when nothing wakes the dispatcher (default 1 s). */
  pollIntervalMs: number;
  /** Keys a change asked for planned at once (default 4): each reads storage and writes its consumers in parallel. */
  keyConcurrency: number;
  /** Longest time of one member request (default 10 s; never beyond what is left of the lease). */
  writeTimeoutMs: number;
  /** Least time between two status writes of one consumer that change only counts and times (default 5 s). */
  statusCountsIntervalMs: number;
  /** How long a write of this dispatcher stands in for storage's copy while the consumer's watch catches up (default 60 s). */
  writtenTtlMs: number;
  /** A write needs at least this much of its lease left (default 500 ms). */
  minLeaseMs: number;
  /** After a failure of the dispatcher's identity in a consumer (401, or a 403 a SelfSubjectAccessReview confirms): no write there for this long, growing (default 10 s to 5 min). */
  forbiddenBackoff: BackoffOptions;
  /** After any other failure of a key's write in a consumer: that key waits this long there, growing (default 1 s to 60 s). */
  errorBackoff: BackoffOptions;
  /**
   * A deleted MultiClusterService waits this long at most for a consumer that is not Ready, or
   * whose cleanup keeps failing (default 300 s): then it goes, and what that consumer holds is
   * removed when it can be.
   */
  awayConsumerGraceMs: number;
  /** System Services (kube-*, default/kubernetes) dispatched nonetheless: namespaces, or namespace/name (--mcs-allow-system-services). */
  allowedSystemServices: string[];
}

export const defaultDispatcherOptions: DispatcherOptions = {
  resyncIntervalMs: 60_000,
  pollIntervalMs: 1000,
  keyConcurrency: 4,
  writeTimeoutMs: 10_000,
  statusCountsIntervalMs: 5000,
  writtenTtlMs: 60_000,
  minLeaseMs: 500,
  forbiddenBackoff: { initialMs: 10_000, maxMs: 300_000 },
  errorBackoff: { initialMs: 1000, maxMs: 60_000 },
  awayConsumerGraceMs: 300_000,
  allowedSystemServices: [],
};

/** Where the dispatcher finds the clusters this member runs: their connection and lease epoch. */
export interface ConsumerSource {
  connection(name: string): { client: WritableClusterClient; epoch: number; phase: ClusterPhase; synced: boolean } | undefined;
}

export interface DispatcherDeps {
  store: Store;
  membership: Membership;
  source: ConsumerSource;
  metrics: SynchroMetrics;
  log: Logger;
  options?: Partial<DispatcherOptions>;
}

/** One consumer cluster this member holds the lease of. */
interface Consumer {
  cluster: string;
  epoch: number;
  client: WritableClusterClient;
  abort: AbortController;
  /** What this dispatcher wrote (or found in place), per key, per `Kind/name`. */
  written: Map<string, Map<string, Written & { at: number }>>;
  /** Its failures: which keys (or which namespaces, for its identity) wait, and until when (failures.ts). */
  failures: ConsumerFailures;
  /** Writes in flight (awaited before the lease is released). */
  inflight: Set<Promise<unknown>>;
  /** Its phase and initial sync, as its ClusterSync says. */
  phase: ClusterPhase;
  synced: boolean;
}

const writtenKey = (kind: Kind, name: string) => `${kind}/${name}`;
/** The resources of what the dispatcher writes into consumers. */
const upstreamRvOf = (change: Change): string | undefined => (JSON.parse(change.object) as KubeObject).metadata?.annotations?.[upstreamRvAnnotation];
const echoKinds: Record<Kind, { group: string; resource: string }> = { Service: kinds.services, EndpointSlice: kinds.endpointSlices, ServiceImport: kinds.serviceImports };
const sortKeys = (keys: Iterable<ServiceKey>) => [...keys].sort((a, b) => keyString(a).localeCompare(keyString(b)));

export class McsDispatcher {
  private readonly opts: DispatcherOptions;
  private readonly consumers = new Map<string, Consumer>();
  private readonly waker = new Waker();
  private stopped = false;
  private loop?: Promise<void>;
  private unsubscribe?: () => void;
  private listen?: CommitSubscription;
  /** The change log read up to here (-1: not yet: the first pass is a full one). */
  private watermark = -1;
  private following: Promise<void> | undefined;
  private fullDue = true;
  private nextResync = 0;
  /** Keys to plan again, with the commit time of the oldest change that asked for it (ms), if a change did. */
  private readonly dirty = new Map<string, { key: ServiceKey; since?: number }>();
  /** Keys to plan again at a time (performance.now()): a grace period ends, a backoff ends, a status write is due. */
  private readonly timers = new Map<string, { key: ServiceKey; at: number }>();
  /** The clusters as the last full pass read them: every change of a cluster's readiness, of what it serves, or of the set of clusters asks for a full pass. */
  private clusterViews?: DispatchCluster[];
  /** When each (key, consumer) status was last written (performance.now()). */
  private readonly statusWrittenAt = new Map<string, number>();
  /** Status writes, in the background: a write of storage that waits never holds back the consumers' writes. */
  private readonly statusWrites = new KeyedQueue((err, service) => this.log.warn('status write failed', { err: err as Error, service }));
  private readonly statusBackoff = new Backoff({ initialMs: 200, maxMs: 10_000 });
  private readonly log: Logger;
  /** This installation's id (Store.installationId), read before the first pass. */
  private installation = '';

  constructor(private readonly deps: DispatcherDeps) {
    this.opts = { ...defaultDispatcherOptions, ...deps.options };
    this.log = deps.log.child({ part: 'mcs-dispatcher' });
  }

  start(): void {
    const { store } = this.deps;
    this.unsubscribe = store.onCommit(() => this.waker.wake());
    try {
      this.listen = listenForCommits(store.conn, () => this.waker.wake());
    } catch (err) {
      this.log.warn("no LISTEN for other processes' commits: the change log is polled", { err: err as Error, pollIntervalMs: this.opts.pollIntervalMs });
    }
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    this.waker.wake();
    for (const c of this.consumers.values()) c.abort.abort();
    await this.loop;
    this.statusWrites.clear();
    await this.statusWrites.idle();
    await this.listen?.close();
    await Promise.all([...this.consumers.values()].map((c) => Promise.allSettled([...c.inflight])));
    this.consumers.clear();
  }

  /** Plan and write now (tests; a commit does it by itself). */
  wake(): void {
    this.waker.wake();
  }

  /** Cluster `name` leaves this member (rebalance, removal): no write from now on; resolves once none is in flight. */
  async release(name: string): Promise<void> {
    const c = this.consumers.get(name);
    if (!c) return;
    this.drop(c);
    await Promise.allSettled([...c.inflight]);
  }

  /** The lease of `name` at `epoch` is lost: no write from now on, in-flight requests cut. */
  lost(name: string, epoch: number): void {
    const c = this.consumers.get(name);
    if (c && c.epoch === epoch) this.drop(c);
  }

  private drop(c: Consumer): void {
    this.consumers.delete(c.cluster);
    c.abort.abort();
    for (const slot of [...this.statusWrittenAt.keys()]) if (slot.endsWith(`|${c.cluster}`)) this.statusWrittenAt.delete(slot);
  }

  private async run(): Promise<void> {
    const backoff = new Backoff({ initialMs: 200, maxMs: 10_000 });
    while (!this.stopped) {
      try {
        if (!this.installation) {
          this.installation = await this.deps.store.installationId();
          this.log.info('dispatching as this installation', { installation: this.installation });
        }
        await this.step();
        backoff.reset();
        await this.waker.sleep(this.nextDelay());
      } catch (err) {
        if (this.stopped) break;
        const retryInMs = backoff.next();
        this.log.warn('dispatch pass failed; retrying', { err: err as Error, retryInMs });
        this.fullDue = true;
        await this.waker.sleep(retryInMs);
      }
    }
  }

  private nextDelay(): number {
    const now = performance.now();
    let at = Math.min(now + this.opts.pollIntervalMs, this.nextResync);
    for (const t of this.timers.values()) at = Math.min(at, t.at);
    return Math.max(0, at - now);
  }

  /** One round: new changes, the consumers held now, due timers; then one pass. */
  private async step(): Promise<void> {
    await this.follow();
    this.refreshConsumers();
    const now = performance.now();
    let trigger: 'change' | 'resync' | 'retry' = 'change';
    if (now >= this.nextResync) {
      this.fullDue = true;
      trigger = 'resync';
    }
    for (const [k, t] of this.timers) {
      if (t.at > now) continue;
      this.timers.delete(k);
      if (!this.dirty.has(k)) this.dirty.set(k, { key: t.key });
      if (trigger === 'change') trigger = 'retry';
    }
    if (!this.fullDue && this.dirty.size === 0) return;
    const full = this.fullDue;
    const dirty = new Map(this.dirty);
    this.fullDue = false;
    this.dirty.clear();
    if (full) this.nextResync = performance.now() + this.opts.resyncIntervalMs;
    this.deps.metrics.mcsPasses.inc({ trigger: full && trigger === 'change' ? 'resync' : trigger });
    await this.pass(full, dirty);
  }

  /**
   * Reads the followed resources' changes since the watermark into dirty keys (or a full pass).
   * One read at a time: planned keys catch up from their own reads while a pass follows too.
   */
  private follow(): Promise<void> {
    this.following ??= this.followNow().finally(() => {
      this.following = undefined;
    });
    return this.following;
  }

  private async followNow(): Promise<void> {
    const { store } = this.deps;
    if (this.watermark < 0) {
      this.watermark = await store.watermark();
      this.fullDue = true;
      return;
    }
    const upTo = await store.watermark();
    for (let page = 0; page < 100 && this.watermark < upTo; page++) {
      let changes;
      try {
        changes = await store.changesOfResources(this.watermark, upTo, followed, 1000);
      } catch (err) {
        if (!(err instanceof CompactedError)) throw err;
        this.log.info('the change log was compacted past the dispatcher; planning everything again', { from: this.watermark });
        this.watermark = upTo;
        this.fullDue = true;
        return;
      }
      for (const c of changes) {
        for (const t of triggersOf(c)) {
          if (t.all) this.fullDue = true;
          else if (!this.ownEcho(c, t.key)) {
            this.forgetDeleted(c, t.key);
            const k = keyString(t.key);
            const before = this.dirty.get(k);
            this.dirty.set(k, { key: t.key, since: Math.min(before?.since ?? Infinity, c.ts) });
          }
        }
      }
      this.watermark = changes.length < 1000 ? upTo : changes[changes.length - 1].rv;
    }
  }

  /**
   * A consumer's object as this dispatcher just wrote it, synced back (its upstream
   * resourceVersion is the write's): it moves no plan, and planning the key again for it would
   * only find everything in place. Anyone else's change of the object is not one.
   */
  private ownEcho(change: Change, key: ServiceKey): boolean {
    if (change.type === 'DELETED') return false;
    const w = this.writtenOf(change, key)?.record;
    if (!w?.object) return false;
    return upstreamRvOf(change) === w.rv;
  }

  /**
   * A consumer's object this dispatcher wrote, deleted there since (by hand, by a controller):
   * the record of the write goes, so the key's plan sees it missing and writes it again, instead
   * of taking storage's missing copy for one that has not caught up with the write yet.
   */
  private forgetDeleted(change: Change, key: ServiceKey): void {
    if (change.type !== 'DELETED') return;
    const w = this.writtenOf(change, key);
    const rv = upstreamRvOf(change);
    if (w && rv !== undefined && deletedSince(w.record, rv)) w.of.delete(w.name);
  }

  /** This dispatcher's record of its last write of the changed object, in the consumer it changed in. */
  private writtenOf(change: Change, key: ServiceKey): { of: Map<string, Written & { at: number }>; name: string; record: Written } | undefined {
    const c = this.consumers.get(change.cluster);
    const kind = (Object.keys(echoKinds) as Kind[]).find((k) => echoKinds[k].group === change.group && echoKinds[k].resource === change.resource);
    const of = kind && c?.written.get(keyString(key));
    if (!kind || !of) return undefined;
    const name = writtenKey(kind, change.name);
    const record = of.get(name);
    return record && { of, name, record };
  }

  /** The consumers are the cluster leases this member holds whose sync runs; a new one (or a new epoch) asks for a full pass. */
  private refreshConsumers(): void {
    const { membership, source } = this.deps;
    const held = new Set(membership.heldNames('cluster').map((l) => l.slice(clusterLease('').length)));
    for (const [name, c] of this.consumers) {
      if (!held.has(name) || membership.epoch(clusterLease(name)) !== c.epoch) this.lost(name, c.epoch);
    }
    for (const name of held) {
      const conn = source.connection(name);
      if (!conn || conn.epoch !== membership.epoch(clusterLease(name))) continue;
      const c = this.consumers.get(name);
      if (c && c.epoch === conn.epoch) {
        c.client = conn.client; // a restarted sync (its configuration changed) has a new connection
        // Synced or back: everything it should hold is planned again.
        if ((conn.synced && !c.synced) || (conn.phase === 'Ready' && c.phase !== 'Ready')) this.fullDue = true;
        c.phase = conn.phase;
        c.synced = conn.synced;
        continue;
      }
      this.consumers.set(name, {
        cluster: name,
        epoch: conn.epoch,
        client: conn.client,
        abort: new AbortController(),
        written: new Map(),
        failures: new ConsumerFailures(name, this.opts),
        inflight: new Set(),
        phase: conn.phase,
        synced: conn.synced,
      });
      this.fullDue = true;
    }
  }

  /** Plans the keys (every key on a full pass) and brings each consumer held here to its plan. */
  private async pass(full: boolean, dirty: Map<string, { key: ServiceKey; since?: number }>): Promise<void> {
    const { store } = this.deps;
    const clusters = full || !this.clusterViews ? (this.clusterViews = await readClusters(store, [...this.consumers.keys()])) : this.clusterViews;
    if (!full) return this.planEach([...dirty.values()], clusters);
    const mcs = new Map((await readMcs(store)).map((m) => [keyString(m.key), m]));
    const exports = await readExports(store);
    const keys = new Map([...dirty].map(([k, d]) => [k, d.key]));
    for (const m of mcs.values()) keys.set(keyString(m.key), m.key);
    for (const k of exports.keys()) {
      const [namespace, name] = [k.slice(0, k.indexOf('/')), k.slice(k.indexOf('/') + 1)];
      keys.set(k, { namespace, name });
    }
    for (const k of await managedKeys(store, [...this.consumers.keys()], this.installation)) keys.set(keyString(k), k);
    /** Keys planned during this pass from reads newer than its own (a change came meanwhile): not planned again with its older reads. */
    const planned = new Set<string>();
    for (const key of sortKeys(keys.values())) {
      if (this.stopped) return;
      const k = keyString(key);
      if (planned.has(k)) continue;
      await this.processKey(key, clusters, mcs.get(k), exports.get(k) ?? [], dirty.get(k)?.since);
      // Storage reads that answer at once (SQLite) never leave the event loop: without a turn of
      // it between keys, a pass with nothing to write would hold back the members' watches, the
      // lease renewals and the changes to plan until it ends.
      await setImmediate();
      // A full pass plans every key (seconds, with many): a provider's change that comes meanwhile is planned now, between its keys, not after them.
      for (const x of await this.changedMeanwhile(clusters)) planned.add(x);
    }
  }

  /** Plans one key from what storage holds now. */
  private async planNow(key: ServiceKey, clusters: DispatchCluster[], since: number | undefined): Promise<void> {
    const { store } = this.deps;
    await this.processKey(key, clusters, (await readMcs(store, key))[0], (await readExports(store, key)).get(keyString(key)) ?? [], since);
  }

  /** The keys the change log asks for since it was last read, planned now; returns them. */
  private async changedMeanwhile(clusters: DispatchCluster[]): Promise<string[]> {
    await this.follow();
    if (this.dirty.size === 0) return [];
    const dirty = new Map(this.dirty);
    this.dirty.clear();
    await this.planEach([...dirty.values()], clusters);
    return [...dirty.keys()];
  }

  /**
   * Plans the keys changes asked for (each a different key), keyConcurrency at once: a key
   * whose consumers or reads are slow does not hold back the others, and the event loop runs
   * after every keyConcurrency keys at most. The first error is
   * thrown once none runs any more (a retried pass never meets a key still planned).
   */
  private async planEach(keys: Array<{ key: ServiceKey; since?: number }>, clusters: DispatchCluster[]): Promise<void> {
    let next = 0;
    let failed: { err: unknown } | undefined;
    const worker = async () => {
      while (next < keys.length && !failed && !this.stopped) {
        const d = keys[next++];
        try {
          await this.planNow(d.key, clusters, d.since);
        } catch (err) {
          failed ??= { err };
        }
        // As between a full pass's keys: storage that answers at once never leaves the event
        // loop, and many changed keys (every Service of a provider that came back) would hold
        // back the watches and the lease renewals until the last is planned.
        await setImmediate();
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, Math.min(this.opts.keyConcurrency, keys.length)) }, worker));
    if (failed) throw failed.err;
  }

  private async processKey(key: ServiceKey, clusters: DispatchCluster[], mcs: McsState | undefined, exporters: string[], since: number | undefined): Promise<void> {
    const rows = await readKey(this.deps.store, key, { now: Date.now(), clusters, mcs, exporters, awayGraceMs: this.opts.awayConsumerGraceMs, installation: this.installation, allowedSystemServices: this.opts.allowedSystemServices });
    const plan = planKey(rows);
    const k = keyString(key);
    // Rows newer than the changes followed (a resync reading a provider's change before the
    // change log was read for it): its commit time is found now, so the write it causes is timed.
    if (this.watermark >= 0 && this.watermark < rows.readAt) {
      for (let i = 0; i < 3 && this.watermark < rows.readAt; i++) await this.follow();
      const followed = this.dirty.get(k)?.since;
      if (followed !== undefined) since = Math.min(since ?? Infinity, followed);
    }
    if (plan.recheckAt !== undefined) this.schedule(key, performance.now() + Math.max(0, plan.recheckAt - Date.now()) + 50);
    if (!plan.source) for (const slot of [...this.statusWrittenAt.keys()]) if (slot.startsWith(`${k}|`)) this.statusWrittenAt.delete(slot);
    const entries = new Set((mcs?.status?.consumers ?? []).map((e) => e.cluster));
    const outcomes: ConsumerOutcome[] = [];
    await Promise.all(
      [...this.consumers.values()].map(async (c) => {
        const held = this.heldOf(c, k, rows);
        // A cluster that is no consumer, holds nothing of this key and has no entry to keep: not concerned.
        const consumer = plan.consumers.has(c.cluster) || plan.consumerSet.includes(c.cluster);
        if (!consumer && holdsNothing(held, this.installation) && !entries.has(c.cluster)) return;
        const o = await this.dispatchTo(c, plan, rows, held, since);
        if (o) outcomes.push(o);
      }),
    );
    if (mcs && outcomes.length > 0) this.writeStatus(mcs, plan, outcomes);
    else if (mcs?.deleting) this.releaseFinalizer(mcs, plan);
  }

  /** What consumer `c` holds of key `k`: storage's copy, overlaid with this dispatcher's writes not yet synced back. */
  private heldOf(c: Consumer, k: string, rows: KeyRows): Held {
    const mine = (list: ClusterObject[]) => list.filter((o) => o.cluster === c.cluster);
    const written = c.written.get(k) ?? new Map<string, Written & { at: number }>();
    const expired = performance.now() - this.opts.writtenTtlMs;
    const view = (kind: Kind, name: string, synced: ClusterObject | undefined): KubeObject | undefined => {
      const w = written.get(writtenKey(kind, name));
      if (w && w.at < expired) written.delete(writtenKey(kind, name));
      const r = overlay(synced ? { object: synced.object, upstreamRv: synced.upstreamRv ?? '' } : undefined, w && w.at >= expired ? w : undefined);
      if (r.caughtUp) written.delete(writtenKey(kind, name));
      return r.object;
    };
    const service = view('Service', rows.key.name, mine(rows.services)[0]);
    const serviceImport = view('ServiceImport', rows.key.name, mine(rows.serviceImports)[0]);
    const slices = new Map<string, KubeObject>();
    const names = new Set([...mine(rows.slices).filter((s) => isPanoptes(s.object)).map((s) => s.object.metadata!.name!), ...[...written.keys()].filter((w) => w.startsWith('EndpointSlice/')).map((w) => w.slice('EndpointSlice/'.length))]);
    for (const name of names) {
      const o = view('EndpointSlice', name, mine(rows.slices).find((s) => s.object.metadata?.name === name));
      if (o && isPanoptes(o)) slices.set(name, o);
    }
    if (written.size === 0) c.written.delete(k);
    else c.written.set(k, written);
    return { service, serviceImport, slices };
  }

  /** Brings consumer `c` to its plan for one key; undefined when its lease went meanwhile (nothing to report under it). */
  private async dispatchTo(c: Consumer, plan: KeyPlan, rows: KeyRows, held: Held, since: number | undefined): Promise<ConsumerOutcome | undefined> {
    const k = keyString(plan.key);
    const cp = plan.consumers.get(c.cluster);
    const installation = this.installation;
    const outcome: ConsumerOutcome = { cluster: c.cluster, serviceInPlace: false, slices: 0, endpoints: 0, wrote: false, inSync: false, holdsNothing: holdsNothing(held, installation), conflicts: [] };
    const { ops, conflicts } = diff(cp, held, { cluster: c.cluster, ...plan.key }, installation);
    for (const x of conflicts) {
      outcome.conflicts.push(x.message);
      this.deps.metrics.mcsConflicts.inc({ cluster: c.cluster, kind: x.kind });
    }
    // A Service of the consumer's own that the plan already found (synced before the export) is a conflict met too.
    if (cp?.service.kind === 'conflict') this.deps.metrics.mcsConflicts.inc({ cluster: c.cluster, kind: 'Service' });
    const view = this.tally(cp, held, outcome);
    if (!c.synced) return undefined; // its view is not current yet: the end of its initial sync asks for a full pass
    const failingSince = c.failures.failingSince(plan.key);
    if (failingSince) outcome.failingSince = failingSince;
    if (ops.length === 0) {
      outcome.inSync = outcome.conflicts.length === 0;
      return outcome;
    }
    if (c.phase !== 'Ready') {
      outcome.blocked = { reason: 'ConsumerUnreachable', message: `cluster ${c.cluster} is ${c.phase}: ${ops.length} write(s) wait until it is back` };
      return outcome;
    }
    // A key waiting out its own backoff, or a consumer (namespace) refusing the dispatcher's identity: planned again when it ends.
    const waiting = c.failures.waiting(plan.key);
    if (waiting) {
      if (waiting.identity) outcome.blocked = waiting.reason;
      else outcome.error = waiting.reason;
      this.schedule(plan.key, waiting.until);
      return outcome;
    }
    if (ops.some((o) => o.verb !== 'delete') && this.syncsNamespaces(c, rows) && !rows.namespaceIn.has(c.cluster)) {
      outcome.error = { reason: 'NamespaceNotFound', message: `namespace ${plan.key.namespace} does not exist in cluster ${c.cluster}` };
      return outcome;
    }

    const lease = clusterLease(c.cluster);
    const writer = new MemberWriter(c.client, {
      signal: c.abort.signal,
      remainingMs: () => {
        const fence = this.deps.membership.fence(lease);
        if (!fence || fence.epoch !== c.epoch || c.abort.signal.aborted) throw new LeaseGoneError(`this member no longer holds the lease of ${c.cluster} at epoch ${c.epoch}`);
        const left = this.deps.membership.remainingMs(lease);
        if (left < this.opts.minLeaseMs) throw new LeaseGoneError(`the lease of ${c.cluster} ends in ${Math.round(left)} ms: no write is started`);
        return left;
      },
    }, this.opts.writeTimeoutMs, { ...plan.key, installation, serviceMine: isMine(held.service, installation) });
    const started = performance.now();
    const counts: Record<string, number> = {};
    const written = c.written.get(k) ?? new Map<string, Written & { at: number }>();
    c.written.set(k, written);
    let failed = 0;
    for (const op of ops) {
      if (c.abort.signal.aborted) return undefined;
      let applied: Applied;
      const run = writer.apply(op);
      c.inflight.add(run);
      try {
        applied = await run;
      } catch (err) {
        if (err instanceof LeaseGoneError || c.abort.signal.aborted) return undefined;
        failed++;
        const w = await c.failures.failed(plan.key, err, c.client, c.abort.signal, this.opts.writeTimeoutMs);
        this.deps.metrics.mcsErrors.inc({ cluster: c.cluster, reason: w.reason.reason });
        this.schedule(plan.key, w.until);
        outcome.failingSince = c.failures.failingSince(plan.key) ?? outcome.failingSince;
        if (w.identity) {
          outcome.blocked = w.reason;
          // The block's end plans everything again: every key it held back.
          this.nextResync = Math.min(this.nextResync, w.until);
          break;
        }
        outcome.error = w.reason;
        continue;
      } finally {
        c.inflight.delete(run);
      }
      for (const verb of applied.writes) {
        counts[`${op.kind}.${verb}`] = (counts[`${op.kind}.${verb}`] ?? 0) + 1;
        this.deps.metrics.mcsWrites.inc({ cluster: c.cluster, kind: op.kind, verb });
      }
      if (applied.writes.length > 0) {
        outcome.wrote = true;
        if (since !== undefined) this.deps.metrics.mcsDispatchLatency.observe({ cluster: c.cluster }, Math.max(0, Date.now() - since) / 1000);
      }
      if (applied.conflict) {
        failed++;
        outcome.conflicts.push(`cluster ${c.cluster}: ${applied.conflict}`);
        this.deps.metrics.mcsConflicts.inc({ cluster: c.cluster, kind: op.kind });
      }
      // What the consumer holds now: what was written, or the live object (someone's own, in a conflict), or nothing.
      written.set(writtenKey(op.kind, op.name), { rv: applied.rv ?? '', ...(applied.object ? { object: applied.object } : {}), at: performance.now() });
      view.apply(op.kind, op.name, applied.object);
    }
    if (!outcome.error && !outcome.blocked) {
      c.failures.succeeded(plan.key);
      delete outcome.failingSince;
    }
    outcome.inSync = failed === 0 && outcome.conflicts.length === 0;
    view.finish();
    const batch = { consumer: c.cluster, service: k, writes: counts, ops: ops.length, failed, ms: Math.round(performance.now() - started), epoch: c.epoch };
    // One line per batch: what was written to this consumer for this Service (or why not).
    if (failed > 0) this.log.warn('dispatch batch', { ...batch, error: outcome.error ? `${outcome.error.reason}: ${outcome.error.message}` : outcome.blocked ? `${outcome.blocked.reason}: ${outcome.blocked.message}` : undefined, conflicts: outcome.conflicts.length || undefined });
    else if (outcome.wrote) this.log.info('dispatch batch', batch);
    else this.log.debug('dispatch batch: already in place', batch);
    return outcome;
  }

  /** Counts what is in place for the status, before the writes and as they land. */
  private tally(cp: ConsumerPlan | undefined, held: Held, outcome: ConsumerOutcome) {
    const installation = this.installation;
    const now = { service: held.service, slices: new Map(held.slices), serviceImport: held.serviceImport };
    const finish = () => {
      const svc = cp?.service;
      outcome.serviceInPlace = svc?.kind === 'provider' || (svc?.kind === 'ensure' && isMine(now.service, installation));
      let slices = 0;
      let endpoints = 0;
      for (const name of cp?.slices.keys() ?? []) {
        const s = now.slices.get(name);
        if (!s) continue;
        slices++;
        endpoints += Array.isArray(s.endpoints) ? s.endpoints.length : 0;
      }
      outcome.slices = slices;
      outcome.endpoints = endpoints;
      outcome.holdsNothing = holdsNothing({ service: now.service, slices: now.slices, serviceImport: now.serviceImport }, installation);
    };
    finish();
    return {
      apply(kind: Kind, name: string, object: KubeObject | undefined) {
        if (kind === 'Service') now.service = object ?? (now.service && !isMine(now.service, installation) ? now.service : undefined);
        else if (kind === 'ServiceImport') now.serviceImport = object ?? (now.serviceImport && !isMine(now.serviceImport, installation) ? now.serviceImport : undefined);
        else if (object && isPanoptes(object)) now.slices.set(name, object);
        else now.slices.delete(name);
      },
      finish,
    };
  }

  private syncsNamespaces(c: Consumer, rows: KeyRows): boolean {
    return rows.clusters.find((x) => x.name === c.cluster)?.synced.has('/namespaces') ?? false;
  }

  /** Plans `key` again at `at` (performance.now()). */
  private schedule(key: ServiceKey, at: number): void {
    const k = keyString(key);
    const before = this.timers.get(k);
    if (before && before.at <= at) return;
    this.timers.set(k, { key, at });
  }

  /**
   * Writes the entries of the consumers held here that changed (and the drops of former
   * consumers') into the status, in one write under all their leases: at once when what they
   * say changed (conditions, errors, which consumers, the providers' readiness, the
   * finalizer), counts and times of each consumer at most every statusCountsIntervalMs.
   */
  private writeStatus(mcs: McsState, plan: KeyPlan, outcomes: ConsumerOutcome[]): void {
    const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    const k = keyString(plan.key);
    const previous = new Map((mcs.status?.consumers ?? []).map((e) => [e.cluster, e]));
    interface Part {
      c: Consumer;
      entry?: McsConsumerStatus;
      drop: boolean;
      slot: string;
    }
    const changed: Part[] = [];
    for (const o of outcomes.sort((a, b) => a.cluster.localeCompare(b.cluster))) {
      const c = this.consumers.get(o.cluster);
      if (!c) continue;
      const slot = `${k}|${o.cluster}`;
      const before = previous.get(o.cluster);
      if (!plan.deleting && !plan.consumers.has(o.cluster) && o.holdsNothing) {
        if (before) changed.push({ c, drop: true, slot });
        continue;
      }
      const entry = consumerEntry(plan, o, before, now);
      if (!before || statusDigest({ consumers: [entry] }).all !== statusDigest({ consumers: [before] }).all) changed.push({ c, entry, drop: false, slot });
    }
    const merged = mergeStatus(mcs.status, plan, changed.flatMap((x) => (x.entry ? [x.entry] : [])), changed.filter((x) => x.drop).map((x) => x.c.cluster), now);
    const before = statusDigest(mcs.status);
    const after = statusDigest(merged);
    const finalizerDue = plan.deleting && everyConsumerCleaned(merged, plan) && withoutFinalizer(mcs.object) !== undefined;
    if (before.all === after.all && !finalizerDue) return;
    // Only what the providers' part says moved (no entry of this member's): written under any consumer lease held here.
    const firstHeld = outcomes.map((o) => this.consumers.get(o.cluster)).find((c) => c !== undefined);
    let parts: Part[] = changed.length > 0 ? changed : firstHeld ? [{ c: firstHeld, drop: false, slot: `${k}|` }] : [];
    if (before.major === after.major && !finalizerDue) {
      const due = (x: Part) => (this.statusWrittenAt.get(x.slot) ?? -Infinity) + this.opts.statusCountsIntervalMs;
      const later = parts.filter((x) => due(x) > performance.now());
      if (later.length > 0) this.schedule(plan.key, Math.min(...later.map(due)));
      parts = parts.filter((x) => !later.includes(x));
    }
    if (parts.length === 0) return;
    this.queueStatus(plan.key, async () => {
      // Consumers released since: their entries are not written under a lease this member gave up.
      const held = parts.filter((x) => this.consumers.get(x.c.cluster) === x.c);
      if (held.length === 0) return;
      const entries = held.flatMap((x) => (x.entry ? [x.entry] : []));
      const drops = held.filter((x) => x.drop).map((x) => x.c.cluster);
      const result = await this.writeUnder(held.map((x) => x.c), mcs, (cur) => this.decideStatus(cur, mcs, plan, entries, drops, now));
      if (result === undefined) return;
      for (const x of held) this.statusWrittenAt.set(x.slot, performance.now());
    });
  }

  /**
   * Runs a status write of `key` in the background (statusWrites): the consumers' writes of the
   * next keys go on meanwhile. A newer one of the same key replaces it while it waits; one that
   * fails plans the key again after a backoff.
   */
  private queueStatus(key: ServiceKey, write: () => Promise<void>): void {
    this.statusWrites.push(keyString(key), async () => {
      if (this.stopped) return;
      try {
        await write();
        this.statusBackoff.reset();
      } catch (err) {
        if (this.stopped) return;
        const retryInMs = this.statusBackoff.next();
        this.log.warn('status write failed; planning the Service again', { err: err as Error, service: keyString(key), retryInMs });
        this.schedule(key, performance.now() + retryInMs);
        this.waker.wake();
      }
    });
  }

  /** The status write's decision: the entries merged into the status as stored now; the finalizer released once every consumer is cleaned; nothing when nothing changes. */
  private decideStatus(cur: OwnObjectState | undefined, mcs: McsState, plan: KeyPlan, entries: McsConsumerStatus[], drop: string[], now: string): OwnObjectWrite {
    if (!cur || cur.uid !== mcs.uid || Number(cur.object.metadata?.generation ?? 1) !== mcs.generation) return { action: 'none' };
    const status = mergeStatus(cur.object.status as McsState['status'], plan, entries, drop, now);
    let object: KubeObject = { ...cur.object, status };
    if (plan.deleting && everyConsumerCleaned(status, plan)) {
      const released = withoutFinalizer(object);
      if (released) {
        object = released;
        if (((released.metadata?.finalizers as string[] | undefined) ?? []).length === 0) return { action: 'delete' };
      }
    }
    return statusDigest(status).all === statusDigest(cur.object.status as McsState['status']).all && object.metadata === cur.object.metadata ? { action: 'none' } : { action: 'put', object };
  }

  /** A deleting MultiClusterService whose consumers are all cleaned (as stored) loses its finalizer, written under any consumer lease held here. */
  private releaseFinalizer(mcs: McsState, plan: KeyPlan): void {
    if (!everyConsumerCleaned(mcs.status, plan) || withoutFinalizer(mcs.object) === undefined) return;
    const c = [...this.consumers.values()].sort((a, b) => a.cluster.localeCompare(b.cluster))[0];
    if (!c) return;
    const now = new Date().toISOString();
    this.queueStatus(plan.key, async () => {
      if (this.consumers.get(c.cluster) === c) await this.writeUnder([c], mcs, (cur) => this.decideStatus(cur, mcs, plan, [], [], now));
    });
  }

  /** One write of the MultiClusterService under the leases of consumers `under` (every one still held here); returns the status written (undefined: none, or a lease is gone). */
  private async writeUnder(under: Consumer[], mcs: McsState, decide: (cur: OwnObjectState | undefined) => OwnObjectWrite): Promise<McsState['status'] | undefined> {
    const fences: Array<{ cluster: string; fence: Fence }> = [];
    for (const c of under) {
      const fence = this.deps.membership.fence(clusterLease(c.cluster));
      if (!fence || fence.epoch !== c.epoch || c.abort.signal.aborted) return undefined;
      fences.push({ cluster: c.cluster, fence });
    }
    const seen: { decided: OwnObjectWrite } = { decided: { action: 'none' } };
    try {
      const result = await this.deps.store.writeOwnObjectUnder({ resource: mcsResource, ...mcs.key }, fences, (cur) => (seen.decided = decide(cur)));
      if (!result.change) return undefined;
      const decided = seen.decided;
      if (decided.action === 'delete') this.log.info('MultiClusterService removed: every consumer is cleaned up', { service: keyString(mcs.key) });
      else if (decided.action === 'put' && withoutFinalizer(decided.object) === undefined && withoutFinalizer(mcs.object) !== undefined) this.log.info('MultiClusterService finalizer released: every consumer is cleaned up', { service: keyString(mcs.key) });
      return decided.action === 'put' ? (decided.object.status as McsState['status']) : undefined;
    } catch (err) {
      if (!(err instanceof FencedError)) throw err;
      this.deps.membership.fenced(err.fence.lease, err.fence.epoch);
      return undefined;
    }
  }
}
