// The work of the clusters this member holds the lease of, as the configuration says: each
// one's ClusterSync started, restarted when its configuration changes and stopped when the
// cluster leaves this member; an entry that cannot be used marked Invalid; a cluster that
// left the configuration removed (a DELETED per object, its row, its OpenAPI references, its
// Cluster object), then its lease deleted. Every write carries the cluster's lease fence.
import { redact } from '../../lib/redact.ts';
import type { MemberNetworks } from '../../member/networks.ts';
import { clusterLease, FencedError, type Fence } from '../../storage/leases.ts';
import type { Store } from '../../storage/store.ts';
import { fileClusterSpec } from '../../api/cluster.ts';
import { Batcher } from '../commit/batcher.ts';
import { ClusterSync, dropStored, type ClusterDeps, type ClusterPhase, type ClusterStatus } from './cluster.ts';
import type { WritableClusterClient } from '../../member/client.ts';
import { ClusterObjectWriter, finishRemoval, type ObjectSource } from './cluster-objects.ts';
import type { ClusterConfig, InvalidEntry, ParsedConfig } from '../../member/cluster-config.ts';
import type { HostSecrets } from '../../member/host-secrets.ts';
import type { Importer } from '../import/importer.ts';
import type { Membership } from '../membership/membership.ts';
import { apiClusters, isFileObject, needsSecrets, type ApiClusters } from '../config/registrations.ts';
import type { RecordedIdentity } from './identity.ts';

/** What the configuration (the file's and the API's) says about every cluster, this pass. */
export interface Desired {
  config: ParsedConfig;
  configured: Map<string, ClusterConfig>;
  invalid: Map<string, InvalidEntry>;
  api: ApiClusters;
  /** Every cluster to share among the members: configured, invalid, API objects, and those still in storage (to remove them). */
  universe: Set<string>;
  /** The member cluster id each registration's status records, by name (synchro/cluster/identity.ts): one member registered twice is synced once. */
  identities: Map<string, RecordedIdentity>;
}

/** The file's clusters and the Cluster objects registered through the API, merged. */
export async function desiredClusters(store: Store, config: ParsedConfig, hostSecrets?: HostSecrets, networks?: MemberNetworks, importer?: Importer): Promise<Desired> {
  const registrations = await store.listClusterRegistrations();
  if (needsSecrets(registrations)) hostSecrets?.start();
  const configured = new Map(config.clusters.map((c) => [c.name, c]));
  const invalid = new Map(config.invalid.filter((i) => i.name).map((i) => [i.name!, i]));
  // The file's names are the file's: an API object of the same name is reported as a conflict, never used.
  const api = apiClusters(registrations, new Set([...configured.keys(), ...invalid.keys()]), hostSecrets, networks, importer);
  for (const [name, c] of api.configs) configured.set(name, c);
  for (const [name, i] of api.invalid) invalid.set(name, i);
  const universe = new Set([...configured.keys(), ...invalid.keys(), ...api.objects.keys(), ...(await store.knownClusterNames())]);
  return { config, configured, invalid, api, universe, identities: await store.clusterIdentities() };
}

/** What this member runs for one cluster it holds. */
interface Work {
  /** The lease epoch it runs under. */
  epoch: number;
  sync?: ClusterSync;
  /** The message written for an invalid entry (written again only when it changes). */
  invalid?: string;
}

export class ClusterWork {
  private readonly running = new Map<string, Work>();

  constructor(
    private readonly deps: ClusterDeps,
    private readonly membership: Membership,
    /** Cluster `name` leaves this member: whatever else writes to it stops (resolves once nothing is in flight). */
    private readonly leaving: (name: string) => Promise<void> = async () => {},
  ) {}

  private fenceOf(name: string): Fence {
    return this.membership.fence(clusterLease(name))!;
  }

  /** Writes under `name`'s lease; refused (the lease moved on: nothing written), the lease is given up instead of failing the pass. */
  private async underLease(name: string, write: (fence: Fence) => Promise<unknown>): Promise<void> {
    const fence = this.fenceOf(name);
    try {
      await write(fence);
    } catch (err) {
      if (!(err instanceof FencedError)) throw err;
      this.membership.fenced(fence.lease, fence.epoch);
    }
  }

  /** Makes cluster `name`, whose lease this member holds, what `d` says: started, restarted, Invalid, or removed. */
  async apply(name: string, d: Desired): Promise<void> {
    const { store } = this.deps;
    let w = this.running.get(name);
    if (!w) {
      w = { epoch: this.fenceOf(name).epoch };
      this.running.set(name, w);
    }
    if (d.api.pending.has(name)) return; // its Secret is not read yet: leave it as it is
    const want = d.configured.get(name);
    const bad = d.invalid.get(name);
    const obj = d.api.objects.get(name)?.object;
    if (want) {
      // An API object marked for deletion while clusters.yaml syncs that name: released, the file's cluster and its data stay.
      if (obj && !isFileObject(obj) && obj.metadata?.deletionTimestamp && want.source === 'file') await this.underLease(name, (fence) => finishRemoval(store, name, fence));
      if (w.sync?.config.fingerprint === want.fingerprint) {
        w.sync.observeGeneration(want.generation);
        // Not awaited: a registration that becomes a duplicate deletes its objects meanwhile.
        void w.sync.checkSameMember(d.identities).catch(() => undefined);
        return;
      }
      if (w.sync) {
        this.deps.log.info('cluster configuration changed; restarting its sync', { cluster: name });
        await w.sync.stop();
      }
      w.invalid = undefined;
      await this.startCluster(want, w);
    } else if (bad) {
      if (w.sync) {
        this.deps.log.info('cluster entry became invalid; stopping its sync (data kept)', { cluster: name });
        await w.sync.stop();
        w.sync = undefined;
      }
      const fromFile = d.config.invalid.includes(bad);
      const generation = Number(obj?.metadata?.generation ?? 0) || undefined;
      const source: ObjectSource = fromFile ? { source: 'file', fileSpec: fileClusterSpec(bad.spec) } : { source: 'api', generation };
      const key = `${bad.message}@${generation ?? ''}`;
      if (w.invalid !== key) await this.underLease(name, () => this.writeInvalid(name, bad, source));
      w.invalid = key;
    } else {
      await this.leaving(name);
      await w.sync?.stop();
      await this.underLease(name, () => this.removeCluster(name));
      this.running.delete(name);
      await this.membership.release(clusterLease(name), 'removed');
    }
  }

  /** Stops `name`'s sync (it leaves this member), committing what was received; its data stays. */
  async stop(name: string): Promise<void> {
    const w = this.running.get(name);
    this.running.delete(name);
    await this.leaving(name);
    await w?.sync?.stop();
  }

  /** The lease of `name` at `epoch` is gone: its work stops now (its writes are fenced anyway). */
  lost(name: string, epoch: number): void {
    const w = this.running.get(name);
    if (!w || w.epoch !== epoch) return;
    this.running.delete(name);
    void w.sync?.stop().catch((err: Error) => this.deps.log.warn('stopping a cluster after its lease was lost failed', { cluster: name, err }));
  }

  async stopAll(): Promise<void> {
    const all = [...this.running.values()];
    this.running.clear();
    await Promise.all(all.map((w) => w.sync?.stop()));
  }

  /** The connection of cluster `name` running here, its lease epoch, phase and whether its initial sync is done: where the dispatcher writes. */
  connection(name: string): { client: WritableClusterClient; epoch: number; phase: ClusterPhase; synced: boolean } | undefined {
    const w = this.running.get(name);
    const client = w?.sync?.connection;
    if (!w || !client) return undefined;
    return { client, epoch: w.epoch, phase: w.sync!.currentPhase, synced: w.sync!.initialSyncDone };
  }

  /** Status of every cluster running here, by name. */
  statuses(): Record<string, ClusterStatus> {
    return Object.fromEntries([...this.running].filter(([, w]) => w.sync).map(([n, w]) => [n, w.sync!.status()]));
  }

  /** Every cluster running here finished its initial sync (or has unusable settings). */
  settled(): boolean {
    return [...this.running.values()].every((w) => !w.sync || w.sync.settled);
  }

  private startCluster(c: ClusterConfig, w: Work): Promise<void> {
    const m = this.membership;
    return this.underLease(c.name, async (fence) => {
      w.sync = new ClusterSync(c, this.deps, { fence, acquiredAt: m.acquiredAt(fence.lease)!, onFenced: () => m.fenced(fence.lease, fence.epoch) });
      await w.sync.start();
    });
  }

  /** DELETED for every object of a cluster (under its lease), then its row goes. */
  private async removeCluster(name: string): Promise<void> {
    const { store, committer, batch, metrics, log, onCommit } = this.deps;
    const started = Date.now();
    const fence = this.fenceOf(name);
    const batcher = new Batcher(committer, name, batch, metrics, log.child({ cluster: name }), { onCommit, fence, onFenced: () => this.membership.fenced(fence.lease, fence.epoch) });
    let objects = 0;
    try {
      for (const r of await store.storedResources(name)) objects += await dropStored(store, batcher, name, r.group, r.resource, metrics);
    } finally {
      await batcher.close();
    }
    await store.deleteClusterOpenAPI(name, fence);
    await store.deleteClusterRow(name, fence);
    await metrics.forget(name);
    const outcome = await finishRemoval(store, name, fence);
    log.info('cluster removed: its objects were deleted', { cluster: name, objects, ms: Date.now() - started, clusterObject: outcome });
  }

  private async writeInvalid(name: string, entry: InvalidEntry, source: ObjectSource): Promise<void> {
    const { store, log } = this.deps;
    const { spec } = entry;
    const message = redact(entry.message);
    const now = new Date().toISOString();
    await store.upsertCluster(name, spec, this.fenceOf(name));
    const status: Partial<ClusterStatus> = {
      phase: 'Invalid',
      ready: false,
      reason: 'InvalidConfig',
      message,
      lastTransitionTime: now,
      conditions: [{ type: 'Ready', status: 'False', reason: 'InvalidConfig', message, lastTransitionTime: now }],
      resources: [],
      apiResources: [],
    };
    if (await store.setClusterStatus(name, status as Record<string, unknown>, this.fenceOf(name))) {
      await new ClusterObjectWriter({ store, name, log }).write(status as Record<string, unknown>, source, this.fenceOf(name), true);
    }
  }
}
