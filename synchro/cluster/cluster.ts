// One member cluster: its connection, readiness probe, discovery, one reflector per selected
// resource, its batcher and its status row. Resources that leave the selection (a CRD was
// deleted, the configuration changed) and removed clusters get a DELETED change per object.
// Before its first discovery, and again after each reconnect, it identifies the member
// (identity.ts); a registration of a member that another registration, registered earlier,
// already syncs is a duplicate: its objects are deleted and it syncs nothing while both exist.
import { setMaxListeners } from 'node:events';
import type { Logger } from '../../lib/log.ts';
import { redactDeep } from '../../lib/redact.ts';
import { FencedError, type Fence } from '../../storage/leases.ts';
import type { Store } from '../../storage/store.ts';
import type { KubeObject } from '../../storage/types.ts';
import { Backoff, Waker, sleep, type BackoffOptions } from '../../lib/backoff.ts';
import { Batcher, clip, type BatcherOptions, type CommitHook } from '../commit/batcher.ts';
import type { ClusterObjectCommitter } from '../commit/cluster-object-committer.ts';
import type { ClusterStatusCommitter } from '../commit/cluster-status-committer.ts';
import type { InitialSyncSlots, Release } from './initial-sync-slots.ts';
import type { Committer } from '../commit/committer.ts';
import { connectCluster, describeError, type WritableClusterClient } from '../../member/client.ts';
import { fileClusterSpec } from '../../api/cluster.ts';
import { ClusterObjectWriter, statusDigest, type ObjectSource } from './cluster-objects.ts';
import { canonicalJson } from '../../kube/patch.ts';
import { publicSpec, type ClusterConfig } from '../../member/cluster-config.ts';
import { DiscoveryCache, discover, type DiscoveryResult } from './discovery.ts';
import { forbiddenCondition, forbiddenConditionType } from './forbidden.ts';
import { probe, probeFailure, type ProbeFailure } from './health.ts';
import type { SynchroMetrics } from '../metrics/metrics.ts';
import { OpenAPIFetcher, groupVersionKey, type OpenAPIStatus } from './openapi.ts';
import { Reflector, type ResourceStatus } from './reflector.ts';
import { duplicateConditionOf, duplicateReason, identifyCluster, kubernetesVersion, sameMember, type ClusterIDSource, type ClusterIdentity, type RecordedIdentity, type SameMember } from './identity.ts';
import { isWildcard, resourceId, resourceLabel, selectResources, type ApiResource } from './resources.ts';

/** Duplicate: the member is registered under another name, which syncs it; this registration does not. Unauthorized, Forbidden: its probe's 401, 403. */
export type ClusterPhase = 'Pending' | 'Ready' | 'Invalid' | 'Duplicate' | ProbeFailure;

/** The phases of a failed probe: the member is not reachable with these credentials. */
export const isProbeFailure = (p: ClusterPhase): p is ProbeFailure => p === 'Unreachable' || p === 'Unauthorized' || p === 'Forbidden';

export interface ClusterTimings {
  /** Readiness probe period while the cluster answers (default 10 s). */
  probeIntervalMs: number;
  /** Rediscovery period, to pick up and drop CRDs (default 30 s; CRD events trigger it sooner). */
  discoveryIntervalMs: number;
  /** Initial-sync progress line period (default 2 s). */
  progressIntervalMs: number;
  /** Minimum time between two status writes (default 1 s). */
  statusIntervalMs: number;
  /**
   * Longest time a status that stores nothing new (the same phase, conditions, resources and
   * object counts: only probe and event times moved) goes unwritten (default 60 s). An idle
   * cluster's probes then cost no write and no read of its Cluster object.
   */
  statusRefreshMs: number;
  /** Reconnect backoff of probes and reflectors. */
  backoff: BackoffOptions;
  /** Reflector watch timeoutSeconds lower bound (default 300). */
  minWatchTimeoutSeconds: number;
  /** Longest time a v2-only member's OpenAPI document is kept without asking again (default 10 min). */
  openapiV2RefreshMs: number;
  /** Least time between two writes of the Cluster object that change only its object counts (default 10 s). */
  objectCountsIntervalMs: number;
  /** Time between two lists of a resource the credentials may not read (a 403; default 5 min; forbidden.ts). */
  forbiddenRecheckMs: number;
  /** Longest time an initial sync keeps its slot (initial-sync-slots.ts) before the next cluster gets it (default 60 s). */
  initialSlotHoldMs: number;
}

export const defaultTimings: ClusterTimings = {
  probeIntervalMs: 10_000,
  discoveryIntervalMs: 30_000,
  progressIntervalMs: 2_000,
  statusIntervalMs: 1_000,
  statusRefreshMs: 60_000,
  backoff: { initialMs: 500, maxMs: 30_000 },
  minWatchTimeoutSeconds: 300,
  openapiV2RefreshMs: 600_000,
  objectCountsIntervalMs: 10_000,
  forbiddenRecheckMs: 300_000,
  initialSlotHoldMs: 60_000,
};

/** The lease a ClusterSync writes under: every batch and status write carries its fence. */
export interface ClusterLease {
  fence: Fence;
  /** When this process acquired it (ISO time), for status. */
  acquiredAt: string;
  /** Storage refused a write: the lease moved on. */
  onFenced: () => void;
}

export interface ClusterDeps {
  store: Store;
  metrics: SynchroMetrics;
  log: Logger;
  batch: BatcherOptions;
  /** The process's group committer: every cluster's batcher writes through it. */
  committer: Committer;
  /** How many of the process's clusters run their initial sync at once (default: no limit). */
  initialSyncs?: InitialSyncSlots;
  /** The process's group commit of Cluster objects: every cluster's status object is written through it (default: each on its own). */
  clusterObjects?: ClusterObjectCommitter;
  /** The process's group commit of the `clusters` table's statuses (default: each on its own). */
  clusterStatuses?: ClusterStatusCommitter;
  timings: ClusterTimings;
  onCommit?: CommitHook;
  /** The problem with the configuration file, while its last good version is in effect. */
  configError?: () => string | undefined;
  /** HTTP/2 to the member when it offers it (member/client.ts ConnectOptions.http2). */
  http2?: boolean;
  /** This installation's id (Store.installationId): shown in the status, carried by what the dispatcher writes into the member. */
  installation?: string;
}

/** What a cluster's row in the clusters table says about its health and sync state. */
export interface ClusterStatus {
  phase: ClusterPhase;
  ready: boolean;
  reason: string;
  message: string;
  lastTransitionTime: string;
  lastProbeTime?: string;
  server?: string;
  conditions: Array<{ type: 'Ready' | 'ObjectsQuarantined' | 'Duplicate' | typeof forbiddenConditionType; status: 'True' | 'False' | 'Unknown'; reason: string; message: string; lastTransitionTime: string }>;
  /** Objects storage refused (synchro/commit/batcher.ts), named, never shown: kept out until a newer version of them arrives. */
  quarantinedObjects?: Array<{ resource: string; namespace?: string; name: string; upstreamResourceVersion: string; reason: string; since: string }>;
  initialSync: { resourcesSynced: number; resourcesTotal: number; objects: number; complete: boolean; startedAt: string; completedAt?: string };
  resources: ResourceStatus[];
  /** Discovery metadata (kind, scope, names) of every synced resource: the apiserver's discovery is built from it. */
  apiResources: ApiResource[];
  discoveryErrors?: Record<string, string>;
  /** Set while the configuration file is broken and its last good version is in effect. */
  configError?: string;
  /** What is weak about the connection, e.g. a plain-HTTP server. */
  warnings?: string[];
  /** The synchro process writing for this cluster, under which lease epoch, since when. */
  owner?: { member: string; epoch: number; acquiredAt: string };
  /** The OpenAPI documents of the synced group versions, as stored for the apiserver (synchro/cluster/openapi.ts). */
  openapi?: OpenAPIStatus;
  /** Which member cluster this is (identity.ts): the uid of its kube-system namespace, or `server:URL` when that cannot be read. */
  clusterID?: string;
  clusterIDSource?: ClusterIDSource;
  /** The Panoptes installation syncing it: the panoptes.io/installation label of what it dispatches there. */
  installation?: string;
  /** The member's Kubernetes version (GET /version gitVersion), read at connect and at each reconnect. */
  kubernetesVersion?: string;
}

const crdId = 'apiextensions.k8s.io/customresourcedefinitions';
/** RBAC's own objects: a change to one, while a resource is forbidden, is a reason to try it again. */
const rbacIds = new Set(['roles', 'rolebindings', 'clusterroles', 'clusterrolebindings'].map((r) => `rbac.authorization.k8s.io/${r}`));
/** How long after an RBAC change the forbidden resources are listed again (a grant is often a role and its binding). */
const rbacRecheckDelayMs = 1000;

/** The progress of an initial sync (from the start, or from syncing again after being a duplicate). */
const initialSync = () => ({
  total: 0,
  ids: new Set<string>(),
  startedAt: new Date().toISOString(),
  startedMs: Date.now(),
  completedAt: undefined as string | undefined,
  discovered: false,
  recorded: false,
  /** Gives back the initial-sync slot this sync holds (initial-sync-slots.ts). */
  slot: undefined as Release | undefined,
});
type InitialSync = ReturnType<typeof initialSync>;

export class ClusterSync {
  readonly name: string;
  private client?: WritableClusterClient;
  /** The member's last discovery answers and their ETags: a rediscovery of an unchanged member is two 304s. */
  private discoveryCache = new DiscoveryCache();
  private batcher?: Batcher;
  private openapi?: OpenAPIFetcher;
  /** A CRD changed since the last OpenAPI pass (a v2-only member's document is fetched again). */
  private openapiStale = false;
  private readonly reflectors = new Map<string, Reflector>();
  private readonly abort = new AbortController();
  private readonly discoveryWaker = new Waker();
  private readonly log: Logger;
  private phase: ClusterPhase = 'Pending';
  private reason = 'Starting';
  private message = 'not probed yet';
  private transitionAt = new Date().toISOString();
  private lastProbeAt?: string;
  private discoveryErrors?: Record<string, string>;
  private loops: Promise<void>[] = [];
  private statusTimer?: NodeJS.Timeout;
  /** Status writes, one after another; once the sync stopped, no other is queued. */
  private statusWrites: Promise<void> = Promise.resolve();
  private statusClosed = false;
  private lastStatusWrite = 0;
  /** What the last status write stored (statusDigest and the object's source), and when. */
  private lastStored?: { key: string; at: number };
  private initial = initialSync();
  private tasks: Promise<void> = Promise.resolve();
  private readonly objectWriter: ClusterObjectWriter;
  /** The generation of the Cluster object this configuration follows (API clusters; it grows without a restart when nothing else changed). */
  private generation?: number;
  /** Which member this is; read before the first discovery and after each reconnect (`reidentify`). */
  private identity?: ClusterIdentity;
  private version?: string;
  private reidentify = true;
  /** The other registrations of the same member, since when; `duplicateOf`: the one that syncs it, when not this one. */
  private same?: SameMember;
  private sameSince = '';
  private duplicateOf?: string;
  private sameChecks: Promise<void> = Promise.resolve();

  constructor(
    readonly config: ClusterConfig,
    private readonly deps: ClusterDeps,
    readonly lease: ClusterLease,
  ) {
    this.name = config.name;
    this.log = deps.log.child({ cluster: config.name });
    this.generation = config.generation;
    const objects = deps.clusterObjects;
    this.objectWriter = new ClusterObjectWriter({
      store: deps.store,
      name: config.name,
      log: this.log,
      countsIntervalMs: deps.timings.objectCountsIntervalMs,
      ...(objects ? { commit: (name, decide, fence) => objects.write(name, decide, fence) } : {}),
    });
    setMaxListeners(0, this.abort.signal);
  }

  /** The Cluster object's generation moved on without a change to the configuration: status.observedGeneration follows. */
  observeGeneration(generation: number | undefined): void {
    if (generation === this.generation) return;
    this.generation = generation;
    this.scheduleStatus(true);
  }

  /** What the Cluster object says about where this configuration comes from. */
  private objectSource(): ObjectSource {
    const c = this.config;
    if (c.source === 'file') return { source: 'file', fileSpec: fileClusterSpec(publicSpec(c as unknown as Record<string, unknown>)) };
    return { source: 'api', generation: this.generation, credentials: c.credentials };
  }

  /** Registers the cluster and starts syncing it in the background. */
  async start(): Promise<void> {
    const { store } = this.deps;
    await store.upsertCluster(this.name, publicSpec(this.config as unknown as Record<string, unknown>), this.lease.fence);
    try {
      this.client = await connectCluster(this.config, this.deps.http2 !== undefined ? { http2: this.deps.http2 } : {});
    } catch (err) {
      this.deps.metrics.errors.inc({ cluster: this.name, kind: 'config' });
      this.transition('Invalid', 'InvalidConfig', `cannot use the connection settings: ${describeError(err)}`);
      this.log.error('cluster configuration is not usable', { error: describeError(err) });
      await this.writeStatus();
      return;
    }
    this.batcher = new Batcher(this.deps.committer, this.name, this.deps.batch, this.deps.metrics, this.log, {
      onCommit: this.deps.onCommit,
      fence: this.lease.fence,
      onFenced: () => this.lease.onFenced(),
      onQuarantine: () => this.scheduleStatus(true),
    });
    this.openapi = new OpenAPIFetcher({ cluster: this.name, client: this.client, store, lease: this.lease, metrics: this.deps.metrics, log: this.log, v2RefreshMs: this.deps.timings.openapiV2RefreshMs });
    // The id recorded for the same server stays in the row until the member is asked again (a restart does not hide a duplicate).
    const recorded = (await store.getCluster(this.name))?.status;
    if (recorded?.server === this.client.server && typeof recorded.clusterID === 'string') {
      this.identity = { clusterID: recorded.clusterID, source: recorded.clusterIDSource === 'Server' ? 'Server' : 'KubeSystemNamespace' };
    }
    this.log.info('cluster registered', { server: this.client.server, resources: this.config.resources });
    for (const warning of this.client.warnings) this.log.warn(warning, { server: this.client.server });
    // Written in the background (with the next group of Cluster objects): a member starting
    // hundreds of clusters does not start them one rv lock wait at a time.
    this.scheduleStatus(true);
    this.loops.push(this.whenSlotFree());
  }

  /** The member connection (undefined before start or with unusable settings): the dispatcher writes through it, under this sync's lease. */
  get connection(): WritableClusterClient | undefined {
    return this.duplicateOf === undefined ? this.client : undefined;
  }

  /** The cluster's phase as last probed. */
  get currentPhase(): ClusterPhase {
    return this.phase;
  }

  /** Whether the first list of every resource selected at first discovery has been committed. */
  get initialSyncDone(): boolean {
    return this.initial.completedAt !== undefined;
  }

  /** Initial sync done and recorded in the cluster's status, or nothing to wait for (the settings are unusable). */
  get settled(): boolean {
    return this.initial.recorded || this.phase === 'Invalid' || this.duplicateOf !== undefined;
  }

  /** Stops everything; queued events are committed first. Data stays in storage. */
  async stop(): Promise<void> {
    this.abort.abort();
    this.releaseSlot();
    this.discoveryWaker.wake();
    await this.sameChecks;
    this.deps.metrics.duplicateClusters.remove({ cluster: this.name });
    await Promise.all([...this.reflectors.values()].map((r) => r.stop()));
    await Promise.all(this.loops);
    await this.tasks.catch(() => undefined);
    // A discovery pass that was past its last check when the stop came: what it started stops too.
    await Promise.all([...this.reflectors.values()].map((r) => r.stop()));
    await this.batcher?.close().catch((err: Error) => this.log.error('final storage write failed', { err }));
    clearTimeout(this.statusTimer);
    clearTimeout(this.crdTimer);
    clearTimeout(this.rbacTimer);
    // The last status write: queued after every earlier one, and nothing after it (a timer or a
    // callback that fires later writes nothing once this resolved and storage may be closed).
    const last = this.writeStatus();
    this.statusClosed = true;
    await last.catch(() => undefined);
    this.client?.close();
  }

  status(): ClusterStatus {
    const resources = [...this.reflectors.values()].map((r) => r.status());
    // Forbidden resources are not wanted: SYNCED counts the rest (forbidden.ts).
    const wanted = [...this.reflectors.values()].filter((r) => !r.forbidden);
    const synced = wanted.filter((r) => r.hasSynced).length;
    const forbiddenInitial = [...this.initial.ids].filter((id) => this.reflectors.get(id)?.forbidden).length;
    const total = this.initial.total - forbiddenInitial;
    const duplicate = this.same && this.identity ? duplicateConditionOf(this.name, this.same, this.identity.clusterID, this.sameSince) : undefined;
    const phase: ClusterPhase = this.duplicateOf !== undefined ? 'Duplicate' : this.phase;
    const ready = phase === 'Ready';
    const [reason, message, since] = phase === 'Duplicate' && duplicate ? [duplicateReason, duplicate.message, this.sameSince] : [this.reason, this.message, this.transitionAt];
    const s: ClusterStatus = {
      phase,
      ready,
      reason,
      message,
      lastTransitionTime: since,
      conditions: [{ type: 'Ready', status: ready ? 'True' : phase === 'Pending' ? 'Unknown' : 'False', reason, message, lastTransitionTime: since }, ...(duplicate ? [duplicate] : [])],
      initialSync: {
        resourcesSynced: Math.min(synced, total || synced),
        resourcesTotal: total,
        objects: resources.reduce((n, r) => n + r.objects, 0),
        complete: this.initialSyncDone,
        startedAt: this.initial.startedAt,
      },
      resources,
      apiResources: [...this.reflectors.values()].map((r) => ({ ...r.resource })),
      owner: { member: this.lease.fence.holder, epoch: this.lease.fence.epoch, acquiredAt: this.lease.acquiredAt },
    };
    if (this.initial.completedAt) s.initialSync.completedAt = this.initial.completedAt;
    if (this.lastProbeAt) s.lastProbeTime = this.lastProbeAt;
    if (this.client) s.server = this.client.server;
    if (this.identity) {
      s.clusterID = this.identity.clusterID;
      s.clusterIDSource = this.identity.source;
    }
    if (this.deps.installation) s.installation = this.deps.installation;
    if (this.version) s.kubernetesVersion = this.version;
    const warnings = [...(this.client?.warnings ?? []), ...(this.identity?.warning ? [this.identity.warning] : [])];
    if (warnings.length) s.warnings = warnings;
    if (this.discoveryErrors) s.discoveryErrors = this.discoveryErrors;
    if (this.openapi) s.openapi = this.openapi.status();
    this.addQuarantine(s);
    const forbidden = forbiddenCondition(resources, this.deps.timings.forbiddenRecheckMs);
    if (forbidden) s.conditions.push(forbidden);
    const configError = this.deps.configError?.();
    if (configError) s.configError = configError;
    // What goes into the status row and the Cluster object: through the one redactor.
    return redactDeep(s);
  }

  /** The quarantined objects as a condition (which ones, by cluster, resource and namespace/name) and a list. */
  private addQuarantine(s: ClusterStatus): void {
    const held = this.batcher?.quarantined ?? [];
    if (held.length === 0) return;
    const named = held.slice(0, 10).map((q) => `${resourceLabel(q)} ${q.namespace ? `${clip(q.namespace)}/` : ''}${clip(q.name)}`);
    s.conditions.push({
      type: 'ObjectsQuarantined',
      status: 'True',
      reason: 'StorageRefusedObjects',
      message: `storage refused ${held.length} object(s) of cluster ${this.name}, kept out until a newer version of each arrives: ${named.join(', ')}${held.length > named.length ? ', ...' : ''}`,
      lastTransitionTime: held[0].since,
    });
    s.quarantinedObjects = held.slice(0, 100).map((q) => ({
      resource: resourceLabel(q),
      ...(q.namespace ? { namespace: clip(q.namespace) } : {}),
      name: clip(q.name),
      upstreamResourceVersion: clip(q.upstreamRv),
      reason: q.reason,
      since: q.since,
    }));
  }

  private transition(phase: ClusterPhase, reason: string, message: string): void {
    if (phase !== this.phase || reason !== this.reason) this.transitionAt = new Date().toISOString();
    const changed = phase !== this.phase;
    this.phase = phase;
    this.reason = reason;
    this.message = message;
    this.deps.metrics.clusterReady.set({ cluster: this.name }, phase === 'Ready' && this.duplicateOf === undefined ? 1 : 0);
    if (changed) this.scheduleStatus(true);
  }

  /** Writes the status row now, or at most once per statusIntervalMs. */
  private scheduleStatus(now = false): void {
    if (this.statusTimer) {
      if (!now) return;
      clearTimeout(this.statusTimer);
    }
    const wait = now ? 0 : Math.max(0, this.deps.timings.statusIntervalMs - (Date.now() - this.lastStatusWrite));
    this.statusTimer = setTimeout(() => {
      this.statusTimer = undefined;
      void this.writeStatus().catch((err: Error) => this.log.warn('status write failed', { err }));
    }, wait);
    this.statusTimer.unref?.();
  }

  private writeStatus(): Promise<void> {
    if (this.statusClosed) return Promise.resolve();
    const write = this.statusWrites.then(() => this.writeStatusNow());
    this.statusWrites = write.catch(() => undefined);
    return write;
  }

  private async writeStatusNow(): Promise<void> {
    this.lastStatusWrite = Date.now();
    const status = this.status() as unknown as Record<string, unknown>;
    const digest = statusDigest(status);
    const key = `${digest.major}\n${digest.counts}\n${canonicalJson(this.objectSource())}`;
    const stored = this.lastStored;
    if (stored && stored.key === key && Date.now() - stored.at < this.deps.timings.statusRefreshMs) return;
    try {
      const registered = this.deps.clusterStatuses ? this.deps.clusterStatuses.write(this.name, status, this.lease.fence) : this.deps.store.setClusterStatus(this.name, status, this.lease.fence);
      if (await registered) {
        await this.objectWriter.write(status, this.objectSource(), this.lease.fence);
        // Counts held back by the object's own interval are written by a later probe's pass.
        this.lastStored = this.objectWriter.countsPending ? undefined : { key, at: Date.now() };
      }
    } catch (err) {
      // The lease moved on: nothing was written, and this sync stops.
      if (!(err instanceof FencedError)) throw err;
      this.lease.onFenced();
    }
  }

  private get stopped(): boolean {
    return this.abort.signal.aborted;
  }

  /** Probes readiness: every probeIntervalMs while Ready, with exponential backoff and jitter while not. */
  private async probeLoop(): Promise<void> {
    const backoff = new Backoff(this.deps.timings.backoff);
    while (!this.stopped) {
      const result = await probe(this.client!, 5000, this.abort.signal);
      if (this.stopped) break;
      this.lastProbeAt = new Date().toISOString();
      if (result.ready) {
        const was = this.phase;
        this.transition('Ready', 'ProbeSucceeded', `GET ${result.path} answered ok`);
        if (was !== 'Ready') {
          if (isProbeFailure(was)) {
            this.log.info('cluster is reachable again', { after: backoff.attempts });
            this.deps.metrics.reconnects.inc({ cluster: this.name, resource: '' });
          }
          backoff.reset();
          // A reconnect may reach another member (a moved DNS name, a rebuilt cluster, an upgrade): ask again which, and what it serves.
          if (isProbeFailure(was)) {
            this.reidentify = true;
            this.discoveryCache = new DiscoveryCache();
          }
          for (const r of this.reflectors.values()) r.kick();
          this.discoveryWaker.wake();
        }
        this.scheduleStatus();
        await sleep(this.deps.timings.probeIntervalMs, this.abort.signal);
      } else {
        const failed = probeFailure(result);
        if (this.phase !== failed.phase) this.log.warn(failed.phase === 'Unreachable' ? 'cluster is unreachable; its data is kept and served as possibly stale' : 'cluster refuses the credentials; its data is kept and served as possibly stale', { phase: failed.phase, reason: result.reason });
        this.deps.metrics.errors.inc({ cluster: this.name, kind: 'probe' });
        this.transition(failed.phase, failed.reason, failed.message);
        this.scheduleStatus();
        await sleep(backoff.next(), this.abort.signal);
      }
    }
  }

  /** Discovers resources now and then (and soon after a CRD changed), and reconciles the reflectors. */
  private async discoveryLoop(): Promise<void> {
    const backoff = new Backoff(this.deps.timings.backoff);
    while (!this.stopped) {
      let delay = this.deps.timings.discoveryIntervalMs;
      try {
        if (this.reidentify) await this.identify();
        if (this.duplicateOf !== undefined) {
          await this.discoveryWaker.sleep(delay, this.abort.signal);
          continue;
        }
        if (!this.initial.discovered && !this.initial.slot && !(await this.takeSlot())) break;
        const found = await discover(this.client!, { signal: this.abort.signal, aggregation: this.config.patterns.some(isWildcard), cache: this.discoveryCache, onAnswer: (answer) => this.deps.metrics.discoveryAnswers.inc({ cluster: this.name, answer }) });
        if (this.stopped) break;
        await this.task(() => this.reconcileReflectors(found));
        backoff.reset();
        await this.syncOpenAPI();
      } catch (err) {
        if (this.stopped) break;
        // Not discovered yet: the slot goes to the next cluster while this one waits to retry.
        if (!this.initial.discovered) this.releaseSlot();
        this.deps.metrics.errors.inc({ cluster: this.name, kind: 'discovery' });
        delay = Math.min(delay, backoff.next());
        this.log.info('discovery failed; retrying', { error: describeError(err), retryInMs: delay });
      }
      await this.discoveryWaker.sleep(delay, this.abort.signal);
    }
  }

  /** Stores the OpenAPI documents of the synced group versions (unchanged ones are not fetched). */
  private async syncOpenAPI(): Promise<void> {
    if (!this.openapi || this.stopped) return;
    const force = this.openapiStale;
    this.openapiStale = false;
    const groupVersions = [...this.reflectors.values()].map((r) => groupVersionKey(r.resource.group, r.resource.version));
    const before = JSON.stringify(this.openapi.status());
    const after = await this.openapi.sync(groupVersions, { force, signal: this.abort.signal });
    if (JSON.stringify({ ...after, lastSyncTime: undefined }) !== JSON.stringify({ ...JSON.parse(before), lastSyncTime: undefined })) this.scheduleStatus();
  }

  /** Runs cluster-level changes (reflector set, drops) one at a time. */
  private task(fn: () => Promise<void>): Promise<void> {
    const run = this.tasks.then(fn);
    this.tasks = run.catch(() => undefined);
    return run;
  }

  /**
   * The sync's loops, once an initial-sync slot is free: a cluster waiting for one does nothing
   * yet (no probe, no discovery, no list, no status write but the first), so a member that
   * takes hundreds of clusters brings them up a slot's worth at a time.
   */
  private async whenSlotFree(): Promise<void> {
    const slots = this.deps.initialSyncs;
    if (slots && slots.running >= slots.size) {
      this.message = `waiting for an initial sync slot (${slots.size} clusters of this synchro process sync at once; ${slots.queued + 1} waiting)`;
      this.scheduleStatus(true);
    }
    if (!(await this.takeSlot())) return;
    if (this.message.startsWith('waiting for an initial sync slot')) this.message = 'not probed yet';
    this.loops.push(this.probeLoop(), this.discoveryLoop(), this.progressLoop());
  }

  /**
   * Waits for an initial-sync slot (none to wait for without a limit); false when the sync
   * stopped meanwhile. The slot is given back when the initial sync completes, when it stops,
   * when discovery fails before it started, or after initialSlotHoldMs.
   */
  private async takeSlot(): Promise<boolean> {
    const slots = this.deps.initialSyncs;
    if (!slots) return true;
    if (slots.running >= slots.size) this.log.info('waiting for an initial sync slot', { running: slots.running, waiting: slots.queued });
    const release = await slots.acquire(this.abort.signal);
    if (!release || this.stopped) {
      release?.();
      return false;
    }
    const initial = this.initial;
    const timer = setTimeout(() => {
      if (initial.slot === undefined) return;
      this.log.info('initial sync still running after its slot time; the slot goes to the next cluster', { heldMs: this.deps.timings.initialSlotHoldMs });
      this.releaseSlot(initial);
    }, this.deps.timings.initialSlotHoldMs);
    timer.unref?.();
    initial.slot = () => {
      clearTimeout(timer);
      release();
    };
    return true;
  }

  private releaseSlot(initial: InitialSync = this.initial): void {
    const release = initial.slot;
    initial.slot = undefined;
    release?.();
  }

  private async reconcileReflectors(found: DiscoveryResult): Promise<void> {
    if (this.duplicateOf !== undefined || this.stopped) return;
    const selected = selectResources(this.config.patterns, found.resources, found.aggregated);
    const wanted = new Map(selected.map((r) => [resourceId(r), r]));
    const errors = new Map(found.failedGroups);
    if (found.aggregationUnknown) {
      // `*` cannot leave aggregated APIs out (Panoptes' own groups still are).
      const message = `${found.aggregationUnknown}: "*" cannot tell aggregated APIs from the member's own resources and syncs them too; grant list on apiservices.apiregistration.k8s.io`;
      if (this.discoveryErrors?.['apiregistration.k8s.io'] !== message) this.log.warn('cannot read the APIServices: "*" includes aggregated APIs', { error: found.aggregationUnknown });
      errors.set('apiregistration.k8s.io', message);
    }
    this.discoveryErrors = errors.size ? Object.fromEntries(errors) : undefined;
    const keep = (group: string) => found.failedGroups.has(group);

    for (const [id, refl] of this.reflectors) {
      const want = wanted.get(id);
      if (want && want.version === refl.resource.version) continue;
      if (!want && keep(refl.resource.group)) continue;
      await refl.stop();
      this.reflectors.delete(id);
      if (!want) {
        this.log.info('resource no longer served or selected; deleting its objects', { resource: resourceLabel(refl.resource) });
        await this.dropResource(refl.resource.group, refl.resource.resource);
      }
    }
    if (!this.initial.discovered) {
      // After a restart or a configuration change: stored resources that are no longer selected.
      for (const s of await this.deps.store.storedResources(this.name)) {
        const id = resourceId(s);
        if (wanted.has(id) || keep(s.group)) continue;
        this.log.info('stored resource is not selected (any more); deleting its objects', { resource: resourceLabel(s) });
        await this.dropResource(s.group, s.resource);
      }
    }
    if (this.stopped) return;
    for (const [id, r] of wanted) {
      if (this.reflectors.has(id)) continue;
      this.startReflector(r);
    }
    if (!this.initial.discovered) {
      this.initial.discovered = true;
      this.initial.total = this.reflectors.size;
      this.initial.ids = new Set(this.reflectors.keys());
      this.log.info('initial sync started', { resources: this.reflectors.size });
      const initial = this.initial;
      void Promise.all([...this.reflectors.values()].map((r) => r.settled())).then(() => {
        if (this.stopped || this.initial !== initial) return;
        this.releaseSlot(initial);
        this.initial.completedAt = new Date().toISOString();
        const objects = [...this.reflectors.values()].reduce((n, r) => n + r.status().objects, 0);
        this.log.info('initial sync complete', { resources: this.initial.total, objects, ms: Date.now() - this.initial.startedMs });
        // Readers of the clusters table (the apiserver, waitForInitialSync) see it complete at once.
        return this.writeStatus()
          .catch((err: Error) => this.log.warn('status write failed', { err }))
          .finally(() => (this.initial.recorded = true));
      });
    }
    this.scheduleStatus();
  }

  /**
   * Asks the member which cluster it is, records the answer in the status row (where the
   * holders of other registrations read it) and compares it with the ids recorded for them.
   * A connection error throws (the discovery loop retries with backoff).
   */
  private async identify(): Promise<void> {
    const id = await identifyCluster(this.client!, this.abort.signal);
    const version = await kubernetesVersion(this.client!, this.abort.signal);
    this.reidentify = false;
    const changed = id.clusterID !== this.identity?.clusterID || id.warning !== this.identity?.warning || version !== this.version;
    this.version = version;
    if (id.warning && changed) this.log.warn('member cluster identified by its server URL', { clusterID: id.clusterID, reason: id.warning });
    this.identity = id;
    if (changed) await this.writeStatus();
    await this.checkSameMember(await this.deps.store.clusterIdentities());
  }

  /**
   * Compares this member's id with the ids recorded for the other registrations (`identities`:
   * name → id and registration time, the clusters table): with the same member registered
   * earlier under another name, this registration stops syncing and deletes its objects; when that other goes (or
   * turns out to be another member), it syncs again. Checks run one at a time.
   */
  checkSameMember(identities: ReadonlyMap<string, RecordedIdentity>): Promise<void> {
    const run = this.sameChecks.then(() => this.applySameMember(identities));
    this.sameChecks = run.catch((err: Error) => this.log.warn('comparing the member cluster with the other registrations failed', { err }));
    return run;
  }

  private async applySameMember(identities: ReadonlyMap<string, RecordedIdentity>): Promise<void> {
    if (!this.identity || this.stopped) return;
    const same = sameMember(this.name, this.identity.clusterID, identities);
    const key = (m?: SameMember) => (m ? `${m.syncedBy} ${m.others.join(',')}` : '');
    if (key(same) === key(this.same)) return;
    this.same = same;
    this.sameSince = new Date().toISOString();
    this.deps.metrics.duplicateClusters.set({ cluster: this.name }, same ? 1 : 0);
    if (same) this.log.warn('member cluster registered more than once', { clusterID: this.identity.clusterID, alsoRegisteredAs: same.others, syncedAs: same.syncedBy });
    else this.log.info('member cluster no longer registered under another name', { clusterID: this.identity.clusterID });
    const of = same && same.syncedBy !== this.name ? same.syncedBy : undefined;
    if (of !== undefined && this.duplicateOf === undefined) await this.task(() => this.becomeDuplicate(of));
    else if (of === undefined && this.duplicateOf !== undefined) {
      this.duplicateOf = undefined;
      this.releaseSlot();
      this.releaseSlot();
    this.initial = initialSync();
      this.deps.metrics.clusterReady.set({ cluster: this.name }, this.phase === 'Ready' ? 1 : 0);
      this.log.info('syncing the member cluster under this name again');
      this.discoveryWaker.wake();
    } else this.duplicateOf = of;
    this.scheduleStatus(true);
  }

  /** Stops syncing the member under this name (another registration syncs it): every reflector stops and every object stored under it gets its DELETED. */
  private async becomeDuplicate(of: string): Promise<void> {
    if (this.stopped) return;
    this.duplicateOf = of;
    this.deps.metrics.clusterReady.set({ cluster: this.name }, 0);
    await Promise.all([...this.reflectors.values()].map((r) => r.stop()));
    this.reflectors.clear();
    let objects = 0;
    for (const r of await this.deps.store.storedResources(this.name)) objects += await this.dropResource(r.group, r.resource);
    this.initial = initialSync();
    this.log.warn('not syncing this registration: its member cluster is synced under another name; its objects were deleted', { syncedAs: of, objects });
    await this.writeStatus();
  }

  private startReflector(r: ApiResource): void {
    if (this.stopped) return;
    const refl = new Reflector({
      cluster: this.name,
      client: this.client!,
      store: this.deps.store,
      batcher: this.batcher!,
      resource: r,
      namespaces: this.config.namespaces,
      metrics: this.deps.metrics,
      log: this.log.child({ resource: resourceLabel(r) }),
      backoff: this.deps.timings.backoff,
      minWatchTimeoutSeconds: this.deps.timings.minWatchTimeoutSeconds,
      forbiddenRecheckMs: this.deps.timings.forbiddenRecheckMs,
      // Readable again: the RBAC changed, so the other forbidden resources are checked at once.
      onForbidden: (forbidden) => {
        if (!forbidden) for (const other of this.reflectors.values()) if (other.forbidden) other.kick();
        this.scheduleStatus(true);
      },
      onStatus: () => this.scheduleStatus(),
      onEvent: resourceId(r) === crdId ? (type: string, _o: KubeObject) => this.crdChanged(type) : rbacIds.has(resourceId(r)) ? () => this.rbacChanged() : undefined,
    });
    this.reflectors.set(resourceId(r), refl);
    refl.start();
  }

  private crdTimer?: NodeJS.Timeout;
  /** A CRD came, changed or went: rediscover shortly (its resource is served once established). */
  private crdChanged(_type: string): void {
    this.openapiStale = true;
    clearTimeout(this.crdTimer);
    this.crdTimer = setTimeout(() => this.discoveryWaker.wake(), 300);
    this.crdTimer.unref?.();
  }

  private rbacTimer?: NodeJS.Timeout;
  /**
   * A Role, ClusterRole or binding changed in the member (a watch event of a synced RBAC
   * resource): the forbidden resources are listed again shortly, not at their slow interval.
   * Without RBAC among the synced resources, the interval alone rechecks them.
   */
  private rbacChanged(): void {
    if (this.rbacTimer || this.stopped || ![...this.reflectors.values()].some((r) => r.forbidden)) return;
    this.rbacTimer = setTimeout(() => {
      this.rbacTimer = undefined;
      if (this.stopped) return;
      for (const r of this.reflectors.values()) if (r.forbidden) r.kick();
    }, rbacRecheckDelayMs);
    this.rbacTimer.unref?.();
  }

  /** DELETED for every stored object of one resource of this cluster. */
  private async dropResource(group: string, resource: string): Promise<number> {
    return dropStored(this.deps.store, this.batcher!, this.name, group, resource, this.deps.metrics);
  }

  /** Logs the initial sync's progress until it is complete. */
  private async progressLoop(): Promise<void> {
    while (!this.stopped && !this.initialSyncDone) {
      await sleep(this.deps.timings.progressIntervalMs, this.abort.signal);
      if (this.stopped || this.initialSyncDone || !this.initial.discovered) continue;
      const s = this.status().initialSync;
      this.log.info('initial sync progress', { resources: `${s.resourcesSynced}/${s.resourcesTotal}`, objects: s.objects, phase: this.phase });
    }
  }
}

/** Pushes a reconcile DELETED for every stored object of (cluster, group, resource) and waits for the commit. */
export async function dropStored(store: Store, batcher: Batcher, cluster: string, group: string, resource: string, metrics: SynchroMetrics): Promise<number> {
  await batcher.flush();
  const keys = await store.storedKeys(cluster, group, resource);
  metrics.relists.inc({ cluster, resource: resourceLabel({ group, resource }), reason: 'dropped' });
  for (const k of keys) {
    const metadata = k.namespace ? { namespace: k.namespace, name: k.name, uid: k.uid } : { name: k.name, uid: k.uid };
    const wait = batcher.push({ type: 'DELETED', group, version: k.version, resource, object: { metadata } }, 256);
    if (wait) await wait;
  }
  await batcher.flush();
  metrics.objects.remove({ cluster, resource: resourceLabel({ group, resource }) });
  return keys.length;
}
