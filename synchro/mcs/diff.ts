// What a consumer holds of one exported Service, and the writes that bring it to its plan:
// pure. What it holds is what storage synced from it, overlaid with what this dispatcher
// wrote since (the consumer's watch may not have caught up yet), so the same change is never
// written twice. Whose each object is, is ownership.ts's to say: only this installation's
// objects are updated or deleted (and the ones Panoptes wrote before installations had ids,
// which the writer adopts or deletes by the rules there); a Service or ServiceImport of the
// consumer's own, or of another installation, is a conflict, reported and left alone.
import { annotations, installationLabel, labels, managedByLabel, providerReadyAnnotation } from '../../api/multicluster-service.ts';
import { canonicalJson } from '../../kube/patch.ts';
import type { KubeObject } from '../../storage/types.ts';
import type { ConsumerPlan } from './desired.ts';
import { isMine, ownerOf, type Kind, type Verb } from './ownership.ts';

export type { Kind, Verb };

/** One write to a consumer. */
export interface Op {
  kind: Kind;
  verb: Verb;
  name: string;
  /** The object to write (create, update). */
  desired?: KubeObject;
}

/** What a consumer holds of one key. */
export interface Held {
  /** Its Service of that name, whoever made it. */
  service?: KubeObject;
  /** The slices of that Service carrying Panoptes' mark (any installation's), by name. */
  slices: Map<string, KubeObject>;
  /** Its ServiceImport of that name, whoever made it. */
  serviceImport?: KubeObject;
}

/** An object as storage synced it: its upstream resourceVersion says how recent it is. */
export interface Synced {
  object: KubeObject;
  upstreamRv: string;
}

/** What this dispatcher last wrote (or found in place) for an object: the member's answer and its resourceVersion. */
export interface Written {
  rv: string;
  /** The object as the member answered; absent: deleted. */
  object?: KubeObject;
}

/** a is newer than or as new as b (resourceVersions compared as integers when both are, as storage compares them). */
function atLeast(a: string, b: string): boolean {
  if (/^\d+$/.test(a) && /^\d+$/.test(b)) return BigInt(a) >= BigInt(b);
  return a === b;
}

/**
 * The consumer's object was deleted (its deletion carries `deletedRv`) after this dispatcher
 * wrote it: the record of the write no longer says what the consumer holds.
 */
export function deletedSince(written: Written, deletedRv: string): boolean {
  return atLeast(deletedRv, written.rv);
}

/**
 * What the consumer holds, as far as this member knows: storage's copy once it is as recent as
 * this dispatcher's last write (`caughtUp`: the record can go), this dispatcher's write before
 * that. A deletion is caught up once storage's copy is gone or newer than the deleted object.
 */
export function overlay(synced: Synced | undefined, written: Written | undefined): { object?: KubeObject; caughtUp: boolean } {
  if (!written) return { object: synced?.object, caughtUp: true };
  if (synced && atLeast(synced.upstreamRv, written.rv) && !(written.object === undefined && synced.upstreamRv === written.rv)) return { object: synced.object, caughtUp: true };
  if (!synced && written.object === undefined) return { caughtUp: true };
  return { object: written.object, caughtUp: false };
}

type Obj = Record<string, unknown>;
const isRecord = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const specOf = (o: KubeObject): Obj => (isRecord(o.spec) ? o.spec : {});

/** Ports as kube defaults them: name '' and protocol TCP when unset (EndpointPort and ServicePort alike). */
function ports(list: unknown, fields: string[]): string {
  const items = (Array.isArray(list) ? list : []).filter(isRecord).map((p) => {
    const out: Obj = { name: p.name ?? '', protocol: p.protocol ?? 'TCP' };
    for (const f of fields) if (p[f] !== undefined && p[f] !== null) out[f] = p[f];
    return out;
  });
  return canonicalJson(items);
}

const servicePorts = (o: KubeObject) => ports(specOf(o).ports, ['port', 'appProtocol']);

/** The fields of a dispatched slice Panoptes owns; a Ready provider's last-sync time is when the slice was written, not a difference. */
function sliceDigest(o: KubeObject): string {
  const l = o.metadata?.labels ?? {};
  const a = o.metadata?.annotations ?? {};
  const ready = a[providerReadyAnnotation];
  return canonicalJson({
    labels: [labels.serviceName, labels.mcsServiceName, labels.sourceCluster, labels.endpointSliceManagedBy, managedByLabel, installationLabel].map((k) => l[k] ?? null),
    source: a[annotations.source] ?? null,
    ready: ready ?? null,
    lastSync: ready === 'true' ? null : (a[annotations.providerLastSync] ?? null),
    addressType: o.addressType ?? null,
    endpoints: o.endpoints ?? [],
    ports: ports(o.ports, ['port', 'appProtocol']),
  });
}

export const sameSlice = (a: KubeObject, b: KubeObject): boolean => sliceDigest(a) === sliceDigest(b);

/** Both carry the same owner's labels (the managed-by mark and the installation id). */
const sameOwner = (a: KubeObject, b: KubeObject) => [managedByLabel, installationLabel].every((k) => a.metadata?.labels?.[k] === b.metadata?.labels?.[k]);

/** A Panoptes Service as it should be: its owner's labels, no selector, the plan's ports (what kube defaults, clusterIP, targetPort..., is not compared). */
export function sameService(current: KubeObject, desired: KubeObject): boolean {
  const sel = specOf(current).selector;
  return sameOwner(current, desired) && (!isRecord(sel) || Object.keys(sel).length === 0) && servicePorts(current) === servicePorts(desired);
}

const importSpec = (o: KubeObject) => canonicalJson({ type: specOf(o).type ?? null, ports: ports(specOf(o).ports, ['port', 'appProtocol']) });
const importClusters = (o: KubeObject) => {
  const st = isRecord(o.status) ? o.status : {};
  return canonicalJson((Array.isArray(st.clusters) ? st.clusters : []).filter(isRecord).map((c) => String(c.cluster)).sort());
};

/** The ServiceImport's spec (type, ports) as the plan's. */
export const sameImportSpec = (current: KubeObject, desired: KubeObject): boolean => sameOwner(current, desired) && importSpec(current) === importSpec(desired);
/** Its status.clusters as the plan's. */
export const sameImportStatus = (current: KubeObject, desired: KubeObject): boolean => importClusters(current) === importClusters(desired);

export interface DiffResult {
  ops: Op[];
  /** Objects of the consumer's own that stand in the way (reported, never written). */
  conflicts: Array<{ kind: Kind; message: string }>;
}

/** The conflict of an object in the way of the plan, or undefined when this installation may write it (its own, or one to adopt). */
function inTheWay(kind: Kind, o: KubeObject, installation: string, where: { cluster: string; namespace: string; name: string }): string | undefined {
  const owner = ownerOf(o, installation);
  const ref = `${where.namespace}/${o.metadata?.name ?? where.name}`;
  if (owner === 'consumer') return `cluster ${where.cluster} has a ${kind} ${ref} that Panoptes did not create: it is left alone`;
  if (owner === 'other') return `cluster ${where.cluster} has a ${kind} ${ref} that another Panoptes installation (${installationLabel}=${o.metadata?.labels?.[installationLabel]}) dispatched: it is left alone`;
  return undefined;
}

/**
 * The writes that make `held` what `plan` says (no plan: the consumer gets nothing of this
 * Service): creates and updates first (the Service before its slices), deletes last. Only
 * this installation's objects, and the ones without an installation id, get writes.
 */
export function diff(plan: ConsumerPlan | undefined, held: Held, where: { cluster: string; namespace: string; name: string }, installation: string): DiffResult {
  const ops: Op[] = [];
  const deletes: Op[] = [];
  const conflicts: DiffResult['conflicts'] = [];
  const svc = plan?.service;
  const ownOrLegacy = (o: KubeObject | undefined) => o !== undefined && ['mine', 'legacy'].includes(ownerOf(o, installation));

  if (svc?.kind === 'ensure') {
    const inTheWayOf = held.service && inTheWay('Service', held.service, installation, where);
    if (!held.service) ops.push({ kind: 'Service', verb: 'create', name: where.name, desired: svc.object });
    else if (inTheWayOf) conflicts.push({ kind: 'Service', message: inTheWayOf });
    else if (!sameService(held.service, svc.object)) ops.push({ kind: 'Service', verb: 'update', name: where.name, desired: svc.object });
  } else if (isMine(held.service, installation)) {
    deletes.push({ kind: 'Service', verb: 'delete', name: where.name });
  }

  const imp = plan?.serviceImport;
  if (imp) {
    const inTheWayOf = held.serviceImport && inTheWay('ServiceImport', held.serviceImport, installation, where);
    if (!held.serviceImport) ops.push({ kind: 'ServiceImport', verb: 'create', name: where.name, desired: imp });
    else if (inTheWayOf) conflicts.push({ kind: 'ServiceImport', message: inTheWayOf });
    else if (!sameImportSpec(held.serviceImport, imp) || !sameImportStatus(held.serviceImport, imp)) ops.push({ kind: 'ServiceImport', verb: 'update', name: where.name, desired: imp });
  } else if (ownOrLegacy(held.serviceImport)) {
    deletes.push({ kind: 'ServiceImport', verb: 'delete', name: where.name });
  }

  const want = plan?.slices ?? new Map<string, KubeObject>();
  const sliceDeletes: Op[] = [];
  for (const [name, desired] of want) {
    const cur = held.slices.get(name);
    const inTheWayOf = cur && inTheWay('EndpointSlice', cur, installation, where);
    if (!cur) ops.push({ kind: 'EndpointSlice', verb: 'create', name, desired });
    else if (inTheWayOf) conflicts.push({ kind: 'EndpointSlice', message: inTheWayOf });
    else if (!sameSlice(cur, desired)) ops.push({ kind: 'EndpointSlice', verb: 'update', name, desired });
  }
  for (const name of [...held.slices.keys()].sort()) if (!want.has(name) && ownOrLegacy(held.slices.get(name))) sliceDeletes.push({ kind: 'EndpointSlice', verb: 'delete', name });
  // The slices go before their ServiceImport and Service.
  return { ops: [...ops, ...sliceDeletes, ...deletes], conflicts };
}

/** Whether a consumer holds nothing this installation dispatched for this key (its cleanup is done). */
export const holdsNothing = (held: Held, installation: string): boolean =>
  !isMine(held.service, installation) && !isMine(held.serviceImport, installation) && ![...held.slices.values()].some((s) => isMine(s, installation));
