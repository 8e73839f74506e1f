// synchro's writes of Cluster objects (clusters.panoptes.io), under the cluster's lease:
// their status, each write a MODIFIED change in the log — so only when the status means
// something new (phase, readiness, synced resources, owner, errors: at once; object counts:
// at most every countsIntervalMs; probe and event times: never by themselves) — the objects
// of clusters.yaml entries (created, their spec kept equal to the file's), and the end of a
// removal: a file cluster's object deleted, an API object's finalizer released (and the
// object gone with it).
import { randomUUID } from 'node:crypto';
import type { Logger } from '../../lib/log.ts';
import { redactDeep } from '../../lib/redact.ts';
import { canonicalJson } from '../../kube/patch.ts';
import type { ClusterObjectResult, ClusterObjectState, ClusterObjectWrite } from '../../storage/cluster-objects.ts';
import type { Fence } from '../../storage/leases.ts';
import type { Store } from '../../storage/store.ts';
import type { KubeObject } from '../../storage/types.ts';
import type { CredentialsSource } from '../../member/cluster-config.ts';
import { clusterFinalizer } from '../../api/cluster.ts';
import { isFileObject } from '../config/registrations.ts';
import { importConflictCondition } from '../import/apply.ts';
import { sourceConditionPrefix } from '../import/candidate.ts';

/** Where a cluster's configuration comes from, as its object shows it. */
export interface ObjectSource {
  source: 'file' | 'api';
  /** File clusters: the served spec of the entry (the object is created and kept equal to it). */
  fileSpec?: Record<string, unknown>;
  /** API clusters: the generation of the object the configuration was made from. */
  generation?: number;
  credentials?: CredentialsSource;
}

type Obj = Record<string, unknown>;
const isRecord = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);


const kubeTime = (d: Date): string => d.toISOString().replace(/\.\d{3}Z$/, 'Z');

/** A status split into what is worth an event at once (`major`), object counts, and the rest (times). */
export function statusDigest(status: Obj | undefined): { major: string; counts: string } {
  const s: Obj = structuredClone(status ?? {});
  const counts: unknown[] = [];
  delete s.lastProbeTime;
  if (isRecord(s.initialSync)) {
    counts.push(s.initialSync.objects);
    delete s.initialSync.objects;
  }
  if (Array.isArray(s.resources)) {
    for (const r of s.resources.filter(isRecord)) {
      counts.push(r.objects);
      for (const k of ['objects', 'lastEventTime', 'lastSyncTime', 'errorTime']) delete r[k];
    }
  }
  if (isRecord(s.openapi)) delete s.openapi.lastSyncTime;
  return { major: canonicalJson(s), counts: canonicalJson(counts) };
}

export interface ObjectWriterOptions {
  store: Store;
  name: string;
  log: Logger;
  /** Least time between two writes that change only object counts (default 10 s). */
  countsIntervalMs?: number;
  /** Where the write goes (default: Store.writeClusterObject on its own; ClusterSync groups them: cluster-object-committer.ts). */
  commit?: (name: string, decide: (current: ClusterObjectState | undefined) => ClusterObjectWrite, fence: Fence) => Promise<ClusterObjectResult>;
}

/** One cluster's object writes (status, and a file cluster's object), rate-limited as the header says. */
export class ClusterObjectWriter {
  private lastWrite = 0;
  /** The last write left newer object counts unwritten (within countsIntervalMs of the write before). */
  countsPending = false;
  private readonly countsIntervalMs: number;

  constructor(private readonly opts: ObjectWriterOptions) {
    this.countsIntervalMs = opts.countsIntervalMs ?? 10_000;
  }

  /** The status the object shows: the cluster's, with observedGeneration, credentials and the Accepted condition of API objects. */
  private decorate(status: Obj, source: ObjectSource, obj: KubeObject, previous: Obj): Obj {
    const out: Obj = { ...status };
    const fileObject = isFileObject(obj);
    const generation = source.source === 'file' ? obj.metadata?.generation : source.generation;
    if (typeof generation === 'number') out.observedGeneration = generation;
    out.credentials = source.source === 'file' ? { source: 'File' } : (source.credentials ?? { source: 'None' });
    const conditions = Array.isArray(status.conditions) ? [...status.conditions] : [];
    if (!fileObject) {
      const conflict = source.source === 'file';
      const accepted = conflict
        ? { type: 'Accepted', status: 'False', reason: 'DefinedInClustersFile', message: `the clusters file of synchro also defines ${this.opts.name}: that entry is synced, and this object's spec is not used while it is there` }
        : { type: 'Accepted', status: 'True', reason: 'SpecInEffect', message: 'synchro syncs the cluster as this object specifies' };
      const before = (Array.isArray(previous.conditions) ? previous.conditions : []).filter(isRecord).find((c) => c.type === 'Accepted');
      const since = before && before.status === accepted.status && before.reason === accepted.reason ? before.lastTransitionTime : kubeTime(new Date());
      conditions.push({ ...accepted, lastTransitionTime: since });
    }
    // The importer's conditions — on a Cluster whose name a ClusterSource wants, and its source object's own (a ClusterProfile's health): the importer's to set and clear.
    conditions.push(...(Array.isArray(previous.conditions) ? previous.conditions : []).filter((c) => isRecord(c) && (c.type === importConflictCondition || (typeof c.type === 'string' && c.type.startsWith(sourceConditionPrefix)))));
    out.conditions = conditions;
    return out;
  }

  private decide(cur: ClusterObjectState | undefined, status: Obj, source: ObjectSource, force: boolean): ClusterObjectWrite {
    const now = new Date();
    let obj: KubeObject;
    let specChanged = false;
    if (!cur) {
      if (source.source !== 'file' || !source.fileSpec) return { action: 'none' };
      obj = {
        apiVersion: 'panoptes.io/v1alpha1',
        kind: 'Cluster',
        metadata: { name: this.opts.name, uid: randomUUID(), generation: 1, creationTimestamp: kubeTime(now) },
        spec: source.fileSpec,
      };
      specChanged = true;
    } else {
      obj = cur.object;
      if (isFileObject(obj) && source.source === 'file' && source.fileSpec && canonicalJson(obj.spec) !== canonicalJson(source.fileSpec)) {
        obj = { ...obj, metadata: { ...obj.metadata, generation: Number(obj.metadata?.generation ?? 1) + 1 }, spec: source.fileSpec };
        specChanged = true;
      }
    }
    const previous = isRecord(obj.status) ? obj.status : {};
    // Every message and condition of the status goes through the one redactor.
    const next = redactDeep(this.decorate(status, source, obj, previous));
    const a = statusDigest(previous);
    const b = statusDigest(next);
    const countsDue = a.counts !== b.counts && Date.now() - this.lastWrite >= this.countsIntervalMs;
    if (!specChanged && !force && a.major === b.major && !countsDue) {
      this.countsPending = a.counts !== b.counts;
      return { action: 'none' };
    }
    this.countsPending = false;
    return { action: 'put', object: { ...obj, status: next } };
  }

  /**
   * Writes the cluster's status into its object (creating a file cluster's object), under the
   * lease; `force` writes even when nothing meaningful changed. Returns whether it wrote; a
   * lost lease writes nothing (FencedError).
   */
  async write(status: Obj, source: ObjectSource, fence: Fence, force = false): Promise<boolean> {
    // Most calls have nothing new to write: decide first on a plain read, without the rv lock
    // (only this lease's holder writes a status, so the locked decision rarely differs).
    if (!force && this.decide(await this.opts.store.getClusterObject(this.opts.name), status, source, false).action === 'none') return false;
    const decide = (cur: ClusterObjectState | undefined) => this.decide(cur, status, source, force);
    const r = await (this.opts.commit ? this.opts.commit(this.opts.name, decide, fence) : this.opts.store.writeClusterObject(this.opts.name, decide, fence));
    if (r.change) this.lastWrite = Date.now();
    return r.change !== undefined;
  }
}

/**
 * The end of a cluster's removal, once its objects are deleted: the object of a file
 * cluster is deleted; an API object marked for deletion loses synchro's finalizer (and, with
 * no other finalizer left, is deleted: DELETED in the log). An API object that is not being
 * deleted stays.
 */
export async function finishRemoval(store: Store, name: string, fence: Fence): Promise<'deleted' | 'released' | 'kept'> {
  let outcome: 'deleted' | 'released' | 'kept' = 'kept';
  await store.writeClusterObject(
    name,
    (cur): ClusterObjectWrite => {
      outcome = 'kept';
      if (!cur) return { action: 'none' };
      const md = cur.object.metadata ?? {};
      if (isFileObject(cur.object)) {
        outcome = 'deleted';
        return { action: 'delete' };
      }
      const held = Array.isArray(md.finalizers) ? (md.finalizers as string[]) : [];
      if (!md.deletionTimestamp || !held.includes(clusterFinalizer)) return { action: 'none' };
      const finalizers = held.filter((f) => f !== clusterFinalizer);
      if (finalizers.length === 0) {
        outcome = 'deleted';
        return { action: 'delete' };
      }
      outcome = 'released';
      return { action: 'put', object: { ...cur.object, metadata: { ...md, finalizers } } };
    },
    fence,
  );
  return outcome;
}
