// Clusters that no member syncs, made visible. Every member watches the clusters that
// rendezvous hashing gives to the other members: one whose lease nobody holds (free,
// released or expired) for longer than a grace period is not being synced — its member
// cannot work (a synchro of an older release with a broken file, a stuck one) — while its
// status still says what its last owner saw. The member that notices takes the cluster's
// lease, writes Ready=Unknown with reason NotSynced into its status and its Cluster object
// (fenced by that lease, like every status write), and releases the lease at once, so the
// assigned member can take it whenever it comes back; that member's first status write
// makes the cluster Ready again.
//
// As Kubernetes' node lifecycle controller does for a kubelet that stopped posting status
// (after --node-monitor-grace-period, NodeReady becomes Unknown, reason NodeStatusUnknown,
// "Kubelet stopped posting node status."): the data may be fine, but nobody vouches for it.
// The time a lease has been free is measured on this process's clock from when it first saw
// it free, as client-go's leader election measures a lease's age from its observation.
import type { Logger } from '../../lib/log.ts';
import type { ClusterObjectWrite } from '../../storage/cluster-objects.ts';
import { clusterLease, FencedError, type Fence } from '../../storage/leases.ts';
import type { Store } from '../../storage/store.ts';
import type { Membership } from './membership.ts';

export const notSyncedReason = 'NotSynced';

type Obj = Record<string, unknown>;
const isRecord = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `status` as it reads while nobody syncs the cluster: not Ready, Ready condition Unknown (other conditions kept), no owner. */
export function notSyncedStatus(status: Obj, message: string, now: string): Obj {
  const ready = { type: 'Ready', status: 'Unknown', reason: notSyncedReason, message, lastTransitionTime: now };
  const others = (Array.isArray(status.conditions) ? status.conditions : []).filter((c) => !isRecord(c) || c.type !== 'Ready');
  const out: Obj = { ...status, phase: 'Pending', ready: false, reason: notSyncedReason, message, lastTransitionTime: now, conditions: [ready, ...others] };
  delete out.owner;
  return out;
}

export class NotSyncedMarker {
  /** performance.now() when each cluster of another member was first seen without a live lease. */
  private readonly freeSince = new Map<string, number>();

  constructor(
    private readonly store: Store,
    private readonly membership: Membership,
    private readonly graceMs: number,
    private readonly log: Logger,
  ) {}

  /**
   * One pass over `others` (cluster → the member rendezvous gives it to) at database time
   * `now`: marks those whose lease has been without a live holder for longer than the grace.
   */
  async check(others: Map<string, string>, now: number): Promise<void> {
    for (const name of [...this.freeSince.keys()]) if (!others.has(name)) this.freeSince.delete(name);
    if (others.size === 0) return;
    const leases = new Map((await this.store.listLeasesNamed([...others.keys()].map(clusterLease))).map((l) => [l.name, l]));
    const seen = performance.now();
    for (const [name, assignee] of others) {
      const l = leases.get(clusterLease(name));
      if (l && l.holder !== null && l.expiresAt > now) {
        this.freeSince.delete(name);
        continue;
      }
      const since = this.freeSince.get(name) ?? seen;
      this.freeSince.set(name, since);
      if (seen - since >= this.graceMs) await this.mark(name, assignee, seen - since);
    }
  }

  private async mark(name: string, assignee: string, freeMs: number): Promise<void> {
    const rec = await this.store.getCluster(name);
    if (!rec || rec.status.reason === notSyncedReason) return;
    const lease = clusterLease(name);
    if ((await this.membership.acquire(lease)) === undefined) return; // someone took it meanwhile
    try {
      const fence: Fence = this.membership.fence(lease)!;
      const message = `no synchro member syncs this cluster: it is assigned to member ${assignee}, which has not held its lease for ${Math.round(freeMs / 1000)} s (it cannot work, or runs an older release); its objects are served as last synced`;
      const now = new Date().toISOString();
      const current = (await this.store.getCluster(name))?.status ?? rec.status;
      try {
        // The Cluster object first, the status row last: the row's reason is what says the
        // cluster is marked (see above), so a write that fails between the two leaves it
        // unmarked, and the next pass marks what is left (the object only if it is not yet).
        await this.store.writeClusterObject(name, (cur): ClusterObjectWrite => {
          const status = isRecord(cur?.object.status) ? cur.object.status : {};
          return cur && status.reason !== notSyncedReason ? { action: 'put', object: { ...cur.object, status: notSyncedStatus(status, message, now) } } : { action: 'none' };
        }, fence);
        if (!(await this.store.setClusterStatus(name, notSyncedStatus(current, message, now), fence))) return;
      } catch (err) {
        if (!(err instanceof FencedError)) throw err;
        return; // the lease moved on between acquiring and writing: its new holder writes the status
      }
      this.log.warn('cluster not synced by any member; marked not Ready', { cluster: name, assignedTo: assignee, freeMs: Math.round(freeMs) });
    } finally {
      await this.membership.release(lease, 'not-synced');
    }
  }
}
