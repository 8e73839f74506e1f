// The importer's writes, as the holder of the importer lease (one synchro process at a time):
// each ClusterSource's Clusters made what its source objects say — created, their spec kept
// equal to the source's (generation grows), marked for deletion when their source object goes
// (onSourceRemoval: Delete) or their ClusterSource does; the shards then delete their objects
// (DELETED to watchers) and release the Cluster as for any removed cluster. A name another
// Cluster already has (clusters.yaml, the API, another ClusterSource) is never taken over: a
// NameClash failure on the ClusterSource and an ImportConflict condition on that Cluster.
// Then the ClusterSource's status (imported, failures, Ready), and its finalizer released once
// a deleted ClusterSource has no Cluster left.
import { randomUUID } from 'node:crypto';
import { clusterFinalizer, servedSpec } from '../../api/cluster.ts';
import { clusterSourceFinalizer, importedFrom, importedSource, withDefaults, type ClusterSourceFailure, type ClusterSourceStatus } from '../../api/cluster-source.ts';
import { canonicalJson } from '../../kube/patch.ts';
import type { Logger } from '../../lib/log.ts';
import { redactDeep } from '../../lib/redact.ts';
import type { ClusterObjectWrite, ClusterRegistration } from '../../storage/cluster-objects.ts';
import type { Fence } from '../../storage/leases.ts';
import type { OwnObjectState } from '../../storage/own-objects.ts';
import type { Store } from '../../storage/store.ts';
import type { KubeObject } from '../../storage/types.ts';
import { describe, sourceConditionPrefix, type SourceCondition } from './candidate.ts';
import type { ImportedCluster, Importer, SourceView } from './importer.ts';

/** The label every imported Cluster carries: `kubectl get clusters -l panoptes.io/cluster-source=<name>`. */
export const clusterSourceLabel = 'panoptes.io/cluster-source';
/** The condition on a Cluster whose name a ClusterSource also wants. */
export const importConflictCondition = 'ImportConflict';

type Obj = Record<string, unknown>;
const isRecord = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const kubeTime = (d: Date): string => d.toISOString().replace(/\.\d{3}Z$/, 'Z');

/** The spec of the Cluster a source object makes (as served: compared with the stored one as is). */
export function importedSpec(sourceName: string, c: ImportedCluster, defaults: { resources?: string[]; namespaces?: Obj; multiClusterServices?: Obj } | undefined): Obj {
  const conn = c.connection;
  return servedSpec({
    source: importedSource(sourceName),
    sourceObject: c.sourceObject,
    ...(conn ? { server: conn.server } : {}),
    ...(conn?.caData ? { caData: conn.caData } : {}),
    ...(conn?.insecureSkipTLSVerify ? { insecureSkipTLSVerify: true } : {}),
    ...(conn?.tlsServerName ? { tlsServerName: conn.tlsServerName } : {}),
    ...(defaults?.resources ? { resources: defaults.resources } : {}),
    ...(defaults?.namespaces ? { namespaces: defaults.namespaces } : {}),
    // The roles the ClusterSource grants its Clusters (api/mcs-roles.ts): none unless it says so.
    ...(defaults?.multiClusterServices ? { multiClusterServices: defaults.multiClusterServices } : {}),
    ...(c.secret ? { credentials: { sourceSecretRef: c.secret } } : {}),
  });
}

export interface ApplyInput {
  store: Store;
  fence: Fence;
  importer: Importer;
  sources: OwnObjectState[];
  registrations: ClusterRegistration[];
  /** Names clusters.yaml has (they are the file's). */
  fileNames: Set<string>;
  log: Logger;
}

const markDeleted = (cur: KubeObject, now: Date): ClusterObjectWrite => ({
  action: 'put',
  object: { ...cur, metadata: { ...cur.metadata, generation: Number(cur.metadata?.generation ?? 1) + 1, deletionTimestamp: kubeTime(now), deletionGracePeriodSeconds: 0 } },
});

/** One pass of the importer's writes. */
export async function applyImports(inp: ApplyInput): Promise<void> {
  const { store, fence, importer, sources, registrations, fileNames, log } = inp;
  const byName = new Map(registrations.map((r) => [r.name, r]));
  const sourceNames = new Set(sources.map((s) => s.name));
  const now = new Date();
  const remove = (name: string, why: string) =>
    store.writeImportedClusterObject(
      name,
      (cur) => {
        if (!cur || cur.object.metadata?.deletionTimestamp || importedFrom(cur.object.spec) === undefined) return { action: 'none' };
        log.info('imported cluster removed', { cluster: name, why });
        return markDeleted(cur.object, now);
      },
      fence,
    );
  const conflicts = new Map<string, string>();

  // Clusters of ClusterSources that are gone altogether.
  for (const r of registrations) {
    const s = importedFrom(r.object.spec);
    if (s !== undefined && !sourceNames.has(s)) await remove(r.name, `ClusterSource ${s} is gone`);
  }

  for (const src of sources) {
    const spec = withDefaults(src.object.spec as never);
    const owned = registrations.filter((r) => importedFrom(r.object.spec) === src.name);
    if (src.object.metadata?.deletionTimestamp) {
      for (const r of owned) await remove(r.name, `ClusterSource ${src.name} is deleted`);
      if (owned.length === 0) await releaseSource(store, src.name, fence);
      continue;
    }
    const view = importer.view(src.name);
    if (!view || view.state === 'pending') continue;
    const failures: ClusterSourceFailure[] = [];
    let imported = 0;
    if (view.state === 'known') {
      for (const u of view.unnamed) failures.push({ object: u.object, reason: 'InvalidName', message: u.message });
      for (const d of view.duplicates) failures.push({ object: d.object, cluster: d.cluster, reason: 'NameClash', message: `another source object of this ClusterSource is imported as ${d.cluster}: give the objects names of their own, or use {namespace} in spec.naming.template` });
      for (const [name, c] of view.clusters) {
        const existing = byName.get(name);
        const other = existing ? importedFrom(existing.object.spec) : undefined;
        if (fileNames.has(name) || (existing && other !== src.name)) {
          const holder = fileNames.has(name) ? 'clusters.yaml of synchro' : other !== undefined ? `ClusterSource ${other}` : 'the API';
          failures.push({ object: describe(c.sourceObject), cluster: name, reason: 'NameClash', message: `a Cluster named ${name} already comes from ${holder}: it is not taken over; change spec.naming (e.g. a prefix) of this ClusterSource` });
          conflicts.set(name, `ClusterSource ${src.name} would import ${describe(c.sourceObject)} under this name, which this Cluster (from ${holder}) keeps`);
          continue;
        }
        if (c.invalid) failures.push({ object: describe(c.sourceObject), cluster: name, reason: 'Invalid', message: c.invalid });
        const want = importedSpec(src.name, c, spec.defaults as never);
        if (!c.invalid) imported++;
        if (existing && !existing.object.metadata?.deletionTimestamp) await markSourceConditions(store, existing, src.name, c.conditions, fence);
        // Most passes change nothing: decided on what was read, the write transaction only when it differs.
        if (existing && (existing.object.metadata?.deletionTimestamp || canonicalJson(existing.object.spec) === canonicalJson(want))) continue;
        await store.writeImportedClusterObject(
          name,
          (cur): ClusterObjectWrite => {
            if (!cur) {
              const md = { name, uid: randomUUID(), generation: 1, creationTimestamp: kubeTime(now), labels: { [clusterSourceLabel]: src.name }, finalizers: [clusterFinalizer] };
              const conditions = sourceConditions([], c.conditions, now);
              return { action: 'put', object: { apiVersion: 'panoptes.io/v1alpha1', kind: 'Cluster', metadata: md, spec: want, ...(conditions.length ? { status: { conditions } } : {}) } };
            }
            if (importedFrom(cur.object.spec) !== src.name || cur.object.metadata?.deletionTimestamp) return { action: 'none' };
            if (canonicalJson(cur.object.spec) === canonicalJson(want)) return { action: 'none' };
            return { action: 'put', object: { ...cur.object, metadata: { ...cur.object.metadata, generation: Number(cur.object.metadata?.generation ?? 1) + 1 }, spec: want } };
          },
          fence,
        );
      }
      if (spec.onSourceRemoval === 'Delete') for (const r of owned) if (!view.clusters.has(r.name)) await remove(r.name, `its source object of ClusterSource ${src.name} is gone`);
    }
    const status: ClusterSourceStatus = {
      observedGeneration: Number(src.object.metadata?.generation ?? 1),
      imported,
      failed: failures.length,
      ...(failures.length ? { failures } : {}),
      conditions: [readyCondition(view, imported, failures.length)],
    };
    await writeSourceStatus(store, src.name, status, fence);
  }
  await markConflicts(store, registrations, conflicts, fence);
}

/** A ClusterSource's Ready condition: the source unreadable, a CRD it reads not installed in the host cluster, or what it imported. */
function readyCondition(view: Exclude<SourceView, { state: 'pending' }>, imported: number, failed: number): NonNullable<ClusterSourceStatus['conditions']>[number] {
  if (view.state === 'error') return { type: 'Ready', status: 'False', reason: 'SourceUnreadable', message: view.message, lastTransitionTime: '' };
  const counts = `${imported} cluster${imported === 1 ? '' : 's'} imported${failed ? `, ${failed} not` : ''}`;
  if (view.missingCRDs?.length) {
    const missing = view.missingCRDs.map((c) => `CustomResourceDefinition ${c.name} is not installed in the host cluster: ${c.without}`).join('; ');
    return { type: 'Ready', status: 'False', reason: 'CRDNotFound', message: `${missing} (${counts})${view.note ? `; ${view.note}` : ''}`, lastTransitionTime: '' };
  }
  return { type: 'Ready', status: 'True', reason: 'Imported', message: `${counts}${view.note ? `; ${view.note}` : ''}`, lastTransitionTime: '' };
}

/** The status of a ClusterSource, written when it says something new (the condition's time kept while it holds). */
async function writeSourceStatus(store: Store, name: string, status: ClusterSourceStatus, fence: Fence): Promise<void> {
  await store.writeClusterSourceObject(
    name,
    (cur) => {
      if (!cur) return { action: 'none' };
      const prev = (isRecord(cur.object.status) ? cur.object.status : {}) as ClusterSourceStatus;
      const before = prev.conditions?.find((c) => c.type === 'Ready');
      const now = kubeTime(new Date());
      const next = redactDeep({
        ...status,
        conditions: status.conditions!.map((c) => ({ ...c, lastTransitionTime: before && before.status === c.status && before.reason === c.reason ? before.lastTransitionTime : now })),
      }) as ClusterSourceStatus;
      if (canonicalJson(next) === canonicalJson(prev)) return { action: 'none' };
      return { action: 'put', object: { ...cur.object, status: next as Obj } };
    },
    fence,
  );
}

/** A deleted ClusterSource whose Clusters are gone loses the importer's finalizer (and is gone with it when it was the last). */
async function releaseSource(store: Store, name: string, fence: Fence): Promise<void> {
  await store.writeClusterSourceObject(
    name,
    (cur) => {
      const md = cur?.object.metadata;
      const held = Array.isArray(md?.finalizers) ? (md.finalizers as string[]) : [];
      if (!cur || !held.includes(clusterSourceFinalizer)) return { action: 'none' };
      const finalizers = held.filter((f) => f !== clusterSourceFinalizer);
      if (finalizers.length === 0) return { action: 'delete' };
      return { action: 'put', object: { ...cur.object, metadata: { ...md, finalizers } } };
    },
    fence,
  );
}

/** The ImportConflict condition on every Cluster a ClusterSource wants the name of, and off those no source wants any more. */
async function markConflicts(store: Store, registrations: ClusterRegistration[], conflicts: Map<string, string>, fence: Fence): Promise<void> {
  for (const r of registrations) {
    const status = isRecord(r.object.status) ? r.object.status : {};
    const conditions = (Array.isArray(status.conditions) ? status.conditions : []).filter(isRecord);
    const had = conditions.find((c) => c.type === importConflictCondition);
    const message = conflicts.get(r.name);
    if (had?.message === message || (!had && message === undefined)) continue;
    await store.writeImportedClusterObject(
      r.name,
      (cur): ClusterObjectWrite => {
        if (!cur) return { action: 'none' };
        const added = message === undefined ? [] : [{ type: importConflictCondition, status: 'True', reason: 'NameClaimedByClusterSource', message, lastTransitionTime: kubeTime(new Date()) }];
        return { action: 'put', object: { ...cur.object, status: withConditions(cur.object, (t) => t === importConflictCondition, added) } };
      },
      fence,
    );
  }
}

const conditionsOf = (o: KubeObject): Obj[] => {
  const s = isRecord(o.status) ? o.status : {};
  return (Array.isArray(s.conditions) ? s.conditions : []).filter(isRecord);
};

/** The status of `o` with its conditions of the types `mine` selects replaced by `added`. */
function withConditions(o: KubeObject, mine: (type: unknown) => boolean, added: Obj[]): Obj {
  const s = isRecord(o.status) ? o.status : {};
  const others = (Array.isArray(s.conditions) ? s.conditions : []).filter((c) => !isRecord(c) || !mine(c.type));
  return { ...s, conditions: [...others, ...added] };
}

const isSourceCondition = (type: unknown): boolean => typeof type === 'string' && type.startsWith(sourceConditionPrefix);

/** A source object's conditions as the Cluster shows them: the source's time of transition, else the time kept while the condition holds, else now. */
function sourceConditions(had: Obj[], conditions: SourceCondition[] | undefined, now: Date): Obj[] {
  return (conditions ?? []).map((c) => {
    const before = had.find((h) => h.type === c.type);
    const since = c.lastTransitionTime || (before && before.status === c.status && typeof before.lastTransitionTime === 'string' ? before.lastTransitionTime : kubeTime(now));
    return redactDeep({ ...c, lastTransitionTime: since }) as Obj;
  });
}

/** The source object's conditions (a ClusterProfile's health) on its Cluster, when they changed. */
async function markSourceConditions(store: Store, existing: ClusterRegistration, source: string, conditions: SourceCondition[] | undefined, fence: Fence): Promise<void> {
  const had = conditionsOf(existing.object).filter((c) => isSourceCondition(c.type));
  if (canonicalJson(had) === canonicalJson(sourceConditions(had, conditions, new Date()))) return;
  await store.writeImportedClusterObject(
    existing.name,
    (cur): ClusterObjectWrite => {
      if (!cur || importedFrom(cur.object.spec) !== source || cur.object.metadata?.deletionTimestamp) return { action: 'none' };
      const before = conditionsOf(cur.object).filter((c) => isSourceCondition(c.type));
      const want = sourceConditions(before, conditions, new Date());
      if (canonicalJson(before) === canonicalJson(want)) return { action: 'none' };
      return { action: 'put', object: { ...cur.object, status: withConditions(cur.object, isSourceCondition, want) } };
    },
    fence,
  );
}
