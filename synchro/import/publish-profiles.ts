// Panoptes as a cluster manager of SIG Multicluster's Cluster Inventory API: one ClusterProfile
// (multicluster.x-k8s.io/v1alpha1; kubernetes-sigs/cluster-inventory-api,
// apis/v1alpha1/clusterprofile_types.go) per Cluster, in one namespace of the host cluster, so
// that `kubectl get clusterprofiles -A` and every inventory consumer see the fleet. Off unless
// asked for (--publish-cluster-profiles NAMESPACE). Each profile carries upstream's label
// x-k8s.io/cluster-manager=panoptes, spec.clusterManager.name panoptes, and this
// installation's id (label panoptes.io/installation); its status says Panoptes' health of the
// cluster (ControlPlaneHealthy, upstream's predefined condition: the readiness probe; Joined:
// Panoptes has reached it), its sync state as properties, and how to reach it as an access
// provider (server and CA only: never a credential; consumers bring their own, KEP-5339).
//
// Written by the holder of the importer lease alone, every intervalMs: before each write the
// lease is checked (still held, at the epoch the pass began, long enough for the write), and
// each write is conditional on what was read (PUT with its resourceVersion, DELETE with uid
// and resourceVersion preconditions), so nobody's change in between is overwritten. A profile
// without both labels of this installation is never changed nor deleted (another manager's,
// or another installation's, of the same name: left alone, said in the log); a profile of
// this installation whose Cluster is gone (or being deleted) is deleted.
import { installationLabel } from '../../api/multicluster-service.ts';
import { canonicalJson } from '../../kube/patch.ts';
import type { Logger } from '../../lib/log.ts';
import { HttpError, type WritableClusterClient } from '../../member/client.ts';
import type { ClusterRegistration } from '../../storage/cluster-objects.ts';
import type { KubeObject } from '../../storage/types.ts';
import { clusterManagerLabel, panoptesManager, profileApiVersion, profilesPath } from './sources/cluster-profiles.ts';

/** The access provider a published profile offers (server and CA): a consumer's ClusterSource names it. */
export const publishedAccessProvider = 'panoptes';

type Obj = Record<string, unknown>;
const isRecord = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const kubeTime = (d: Date): string => d.toISOString().replace(/\.\d{3}Z$/, 'Z');
/** metav1.Condition's reason pattern. */
const reasonPattern = /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/;

/** The labels that make a ClusterProfile this installation's. */
export const profileLabels = (installation: string): Record<string, string> => ({ [clusterManagerLabel]: panoptesManager, [installationLabel]: installation });
export const isOwnProfile = (o: KubeObject, installation: string): boolean => o.metadata?.labels?.[clusterManagerLabel] === panoptesManager && o.metadata?.labels?.[installationLabel] === installation;

/** The health Panoptes observes of a Cluster, as upstream's conditions say it. */
function conditions(status: Obj, had: Obj[], now: Date): Obj[] {
  const phase = typeof status.phase === 'string' ? status.phase : 'Pending';
  const message = typeof status.message === 'string' ? status.message.slice(0, 1024) : '';
  const healthy =
    status.ready === true
      ? { status: 'True', reason: 'ProbeSucceeded', message: 'the readiness probe of Panoptes succeeds' }
      : phase === 'Pending'
        ? { status: 'Unknown', reason: 'Pending', message: 'Panoptes has not probed the cluster yet' }
        : { status: 'False', reason: reasonPattern.test(phase) ? phase : 'ProbeFailed', message };
  const reached = typeof status.clusterID === 'string' && status.clusterID !== '';
  const joined = reached ? { status: 'True', reason: 'Reached', message: `Panoptes reaches the cluster (${String(status.clusterIDSource ?? 'clusterID')} ${String(status.clusterID)})` } : { status: 'False', reason: reasonPattern.test(phase) ? phase : 'NotReached', message: message || 'Panoptes has not reached the cluster' };
  return [
    { type: 'ControlPlaneHealthy', ...healthy },
    { type: 'Joined', ...joined },
  ].map((c) => {
    const before = had.find((h) => h.type === c.type);
    return { ...c, lastTransitionTime: before && before.status === c.status && typeof before.lastTransitionTime === 'string' ? before.lastTransitionTime : kubeTime(now) };
  });
}

/** Panoptes' sync state of a Cluster, as properties (values of at least one character). */
function properties(status: Obj): Obj[] {
  const out: Obj[] = [];
  const add = (name: string, v: unknown) => {
    if ((typeof v === 'string' && v !== '') || typeof v === 'number' || typeof v === 'boolean') out.push({ name, value: String(v).slice(0, 1024) });
  };
  add('panoptes.io/phase', status.phase);
  const sync = isRecord(status.initialSync) ? status.initialSync : {};
  add('panoptes.io/initial-sync-complete', sync.complete);
  add('panoptes.io/objects', sync.objects);
  if (typeof sync.resourcesSynced === 'number' && typeof sync.resourcesTotal === 'number') add('panoptes.io/resources-synced', `${sync.resourcesSynced}/${sync.resourcesTotal}`);
  add('panoptes.io/installation', status.installation);
  return out;
}

/** The ClusterProfile of a Cluster: its metadata and spec, and its status (times kept from `live`). */
export function desiredProfile(reg: ClusterRegistration, namespace: string, installation: string, live: KubeObject | undefined, now = new Date()): { object: KubeObject; status: Obj } {
  const spec = isRecord(reg.object.spec) ? reg.object.spec : {};
  const status = isRecord(reg.object.status) ? reg.object.status : {};
  const prev = isRecord(live?.status) ? live.status : {};
  const had = (Array.isArray(prev.conditions) ? prev.conditions : []).filter(isRecord);
  const server = typeof spec.server === 'string' ? spec.server : typeof status.server === 'string' ? status.server : undefined;
  // Where the cluster is and which CA signs it: what any consumer needs besides its own credentials. Never a credential.
  const cluster = server ? { server, ...(typeof spec.caData === 'string' ? { 'certificate-authority-data': spec.caData } : {}), ...(typeof spec.tlsServerName === 'string' ? { 'tls-server-name': spec.tlsServerName } : {}) } : undefined;
  const version = typeof status.kubernetesVersion === 'string' ? { version: { kubernetes: status.kubernetesVersion } } : {};
  return {
    object: {
      apiVersion: profileApiVersion,
      kind: 'ClusterProfile',
      metadata: { name: reg.name, namespace, labels: { ...(live?.metadata?.labels ?? {}), ...profileLabels(installation) } },
      spec: { displayName: reg.name, clusterManager: { name: panoptesManager } },
    },
    status: {
      conditions: conditions(status, had, now),
      ...version,
      properties: properties(status),
      ...(cluster ? { accessProviders: [{ name: publishedAccessProvider, cluster }] } : {}),
    },
  };
}

/** How the publisher proves, before each write, that it still holds the importer lease. */
export interface PublishLease {
  /** The epoch of the importer lease this process holds, and how long it still lasts; undefined: not held. */
  held(): { epoch: number; remainingMs: number } | undefined;
}

export interface PublishOptions {
  client: WritableClusterClient;
  namespace: string;
  installation: string;
  clusters: () => Promise<ClusterRegistration[]>;
  lease: PublishLease;
  log: Logger;
  /** A write is started only with this much of the lease left (default 1000 ms). */
  minLeaseMs?: number;
  /** Each request's timeout (default 10 s). */
  timeoutMs?: number;
}

/** What one pass did. */
export interface PublishResult {
  created: string[];
  updated: string[];
  deleted: string[];
  /** Profiles of a Cluster's name that are not this installation's: left alone. */
  leftAlone: string[];
  /** The lease was lost (or the CRD is not served): the pass stopped. */
  stopped?: string;
}

class LeaseLost extends Error {}

/** One pass: the profiles made what the Clusters say. */
export async function publishProfiles(o: PublishOptions): Promise<PublishResult> {
  const result: PublishResult = { created: [], updated: [], deleted: [], leftAlone: [] };
  const start = o.lease.held();
  if (!start) return { ...result, stopped: 'the importer lease is not held' };
  const timeoutMs = o.timeoutMs ?? 10_000;
  const check = () => {
    const now = o.lease.held();
    if (!now || now.epoch !== start.epoch) throw new LeaseLost(`the importer lease is no longer held at epoch ${start.epoch}`);
    if (now.remainingMs < (o.minLeaseMs ?? 1000)) throw new LeaseLost(`the importer lease ends in ${Math.round(now.remainingMs)} ms: no write is started`);
    return { timeoutMs: Math.min(timeoutMs, now.remainingMs), fieldManager: 'panoptes-synchro' };
  };
  const path = profilesPath(o.namespace);
  let live: KubeObject[];
  try {
    live = ((await o.client.get<{ items?: KubeObject[] }>(path, { timeoutMs })).items ?? []);
  } catch (err) {
    if (err instanceof HttpError && err.status === 404) return { ...result, stopped: `ClusterProfiles are not served in namespace ${o.namespace} of the host cluster (CustomResourceDefinition clusterprofiles.multicluster.x-k8s.io, or the namespace, is missing)` };
    throw err;
  }
  const byName = new Map(live.map((p) => [p.metadata?.name as string, p]));
  const clusters = (await o.clusters()).filter((c) => !c.object.metadata?.deletionTimestamp);
  const wanted = new Set(clusters.map((c) => c.name));
  try {
    for (const reg of clusters) {
      const cur = byName.get(reg.name);
      if (cur && !isOwnProfile(cur, o.installation)) {
        result.leftAlone.push(reg.name);
        continue;
      }
      const want = desiredProfile(reg, o.namespace, o.installation, cur);
      let obj = cur;
      if (!obj) {
        obj = await o.client.create<KubeObject>(path, want.object, check());
        result.created.push(reg.name);
      } else if (canonicalJson({ l: obj.metadata?.labels, s: obj.spec }) !== canonicalJson({ l: want.object.metadata?.labels, s: want.object.spec })) {
        obj = await o.client.update<KubeObject>(`${path}/${encodeURIComponent(reg.name)}`, { ...obj, metadata: { ...obj.metadata, labels: want.object.metadata?.labels }, spec: want.object.spec }, check());
        result.updated.push(reg.name);
      }
      if (canonicalJson(obj.status ?? {}) === canonicalJson(want.status)) continue;
      await o.client.update(`${path}/${encodeURIComponent(reg.name)}/status`, { ...obj, status: want.status }, check());
      if (!result.created.includes(reg.name) && !result.updated.includes(reg.name)) result.updated.push(reg.name);
    }
    for (const p of live) {
      const name = p.metadata?.name as string;
      if (wanted.has(name) || !isOwnProfile(p, o.installation)) continue;
      await o.client.delete(`${path}/${encodeURIComponent(name)}`, { ...check(), preconditions: { uid: p.metadata?.uid as string, resourceVersion: p.metadata?.resourceVersion as string } });
      result.deleted.push(name);
    }
  } catch (err) {
    if (err instanceof LeaseLost) return { ...result, stopped: err.message };
    throw err;
  }
  return result;
}

/** Runs publishProfiles every intervalMs (while this process holds the importer lease), one pass at a time. */
export class ProfilePublisher {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private stopped = false;
  private readonly reported = new Set<string>();

  constructor(private readonly opts: PublishOptions & { intervalMs?: number }) {}

  start(): void {
    const tick = () => {
      if (this.stopped) return;
      this.running = this.pass().finally(() => {
        this.running = undefined;
        if (!this.stopped) this.timer = setTimeout(tick, this.opts.intervalMs ?? 10_000);
      });
    };
    tick();
  }

  private async pass(): Promise<void> {
    if (!this.opts.lease.held()) return;
    try {
      const r = await publishProfiles(this.opts);
      const changed = r.created.length + r.updated.length + r.deleted.length;
      if (changed) this.opts.log.info('cluster profiles published', { namespace: this.opts.namespace, created: r.created, updated: r.updated.length, deleted: r.deleted });
      for (const name of r.leftAlone) this.once(`left:${name}`, `ClusterProfile ${this.opts.namespace}/${name} is not this installation's (labels ${clusterManagerLabel}=${panoptesManager}, ${installationLabel}=${this.opts.installation}): left alone, not published`);
      if (r.stopped) this.once(`stopped:${r.stopped}`, r.stopped);
    } catch (err) {
      // A conflict (someone wrote in between) or an unreachable host: the next pass reads again.
      this.opts.log.warn('publishing cluster profiles failed', { err: err as Error });
    }
  }

  private once(key: string, message: string): void {
    if (this.reported.has(key)) return;
    this.reported.add(key);
    this.opts.log.warn(message);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
    this.opts.client.close();
  }
}
