// A MultiClusterService's status, pure: each consumer's entry (McsConsumerStatus, with the
// conditions ServiceApplied and EndpointSlicesDispatched as Karmada names them) from what one
// dispatch pass did there, and the merge of one member's entries into the status as stored —
// the other members' entries untouched, the providers, the object's Ready condition and
// observedGeneration recomputed — and when the finalizer may go.
import {
  mcsConditions,
  mcsFinalizer,
  type McsCondition,
  type McsConsumerStatus,
  type MultiClusterServiceStatus,
} from '../../api/multicluster-service.ts';
import { canonicalJson } from '../../kube/patch.ts';
import type { KubeObject } from '../../storage/types.ts';
import { keyString, type KeyPlan } from './desired.ts';

/** A reason and a message, as conditions carry them. */
export interface Reason {
  reason: string;
  message: string;
}

/** What one pass found and did in one consumer for one key. */
export interface ConsumerOutcome {
  cluster: string;
  /** Nothing could be written there (no RBAC, unreachable, not synced yet): why. */
  blocked?: Reason;
  /** A write failed in this pass (its Status reason and message). */
  error?: Reason;
  /** The Service is as the plan says (Panoptes', in place; or the consumer's own as a provider). */
  serviceInPlace: boolean;
  /** The plan's slices in place, and their endpoints. */
  slices: number;
  endpoints: number;
  /** Member writes made in this pass. */
  wrote: boolean;
  /** Every object of the plan in place and nothing left to delete. */
  inSync: boolean;
  /** It holds nothing Panoptes dispatched for this key. */
  holdsNothing: boolean;
  /** Objects of the consumer's own (or of another installation) in the way. */
  conflicts: string[];
  /** Since when this key's writes there keep failing (the dispatcher's failure record), if they do. */
  failingSince?: string;
}

/** metav1.Condition semantics: lastTransitionTime moves only when the status does. */
function condition(type: string, status: McsCondition['status'], r: Reason, previous: McsCondition[] | undefined, now: string, generation: number | undefined): McsCondition {
  const before = previous?.find((c) => c.type === type);
  return { type, status, reason: r.reason, message: r.message, lastTransitionTime: before && before.status === status ? before.lastTransitionTime : now, ...(generation !== undefined ? { observedGeneration: generation } : {}) };
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** The entry of consumer `o.cluster` after a pass over `plan`. */
export function consumerEntry(plan: KeyPlan, o: ConsumerOutcome, previous: McsConsumerStatus | undefined, now: string): McsConsumerStatus {
  const cp = plan.consumers.get(o.cluster);
  const svc = cp?.service;
  const ref = keyString(plan.key);
  let service: [McsCondition['status'], Reason];
  let slices: [McsCondition['status'], Reason];
  if (plan.deleting || !cp) {
    const r = plan.deleting
      ? { reason: 'Deleting', message: o.holdsNothing ? `everything dispatched for ${ref} is removed from ${o.cluster}` : `removing what was dispatched for ${ref} from ${o.cluster}` }
      : { reason: 'NotAConsumer', message: o.holdsNothing ? `${o.cluster} is not a consumer of ${ref}` : `${o.cluster} is no longer a consumer of ${ref}: removing what was dispatched` };
    service = ['False', r];
    slices = ['False', r];
  } else if (o.blocked) {
    service = ['False', o.blocked];
    slices = ['False', o.blocked];
  } else if (svc!.kind === 'conflict' || svc!.kind === 'none') {
    const r = svc!.kind === 'conflict' ? { reason: 'ServiceConflict', message: svc!.message } : { reason: svc!.reason, message: svc!.message };
    service = ['False', r];
    slices = ['False', r];
  } else if (svc!.kind === 'provider') {
    // Its own Service is used as it is: Panoptes adds nothing to a Service it did not create,
    // so the other providers' endpoints are not added to it (nor a ServiceImport beside it).
    const others = plan.dispatching.filter((p) => p !== o.cluster);
    const r = { reason: 'ProviderService', message: `${o.cluster} provides ${ref} itself: its own Service is used as it is${others.length ? `, without the endpoints of ${others.join(', ')} (Panoptes adds nothing to a Service it did not create)` : ''}` };
    service = ['True', r];
    slices = o.inSync ? ['True', r] : ['False', o.error ?? (o.conflicts.length ? { reason: 'Conflict', message: o.conflicts.join('; ') } : { reason: 'Pending', message: `removing what was dispatched to ${o.cluster} before` })];
  } else {
    service = o.serviceInPlace ? ['True', { reason: 'ServiceApplied', message: `Service ${ref} created by Panoptes is in place` }] : ['False', o.error ?? { reason: 'Pending', message: `Service ${ref} is not in place yet` }];
    const providers = plan.dispatching.filter((p) => p !== o.cluster);
    const refused = cp.refused.endpoints
      ? { reason: 'AddressesRefused', message: `${plural(cp.refused.endpoints, 'endpoint')} not dispatched (${cp.refused.examples.join('; ')}${cp.refused.endpoints > cp.refused.examples.length ? '; ...' : ''}); the others are` }
      : undefined;
    slices = o.inSync && !refused
      ? ['True', { reason: 'Dispatched', message: providers.length ? `the EndpointSlices of ${providers.join(', ')} are dispatched` : `no other provider's endpoints to dispatch` }]
      : ['False', o.error ?? (o.conflicts.length ? { reason: 'Conflict', message: o.conflicts.join('; ') } : refused && o.inSync ? refused : { reason: 'Pending', message: `${plural(cp.slices.size, 'EndpointSlice')} to dispatch` })];
  }
  const conditions = [
    condition(mcsConditions.serviceApplied, service[0], service[1], previous?.conditions, now, plan.generation),
    condition(mcsConditions.endpointSlicesDispatched, slices[0], slices[1], previous?.conditions, now, plan.generation),
  ];
  const failure = o.blocked ?? o.error;
  const lastError = failure ? `${failure.reason}: ${failure.message}` : o.inSync ? undefined : previous?.lastError;
  // A run of failures keeps the time of its first; a write that succeeds ends it.
  const failingSince = failure ? (previous?.failingSince ?? o.failingSince ?? now) : undefined;
  const lastDispatchTime = o.inSync && (o.wrote || !previous?.lastDispatchTime) ? now : previous?.lastDispatchTime;
  return {
    cluster: o.cluster,
    serviceApplied: service[0] === 'True',
    endpointSlices: o.slices,
    endpoints: o.endpoints,
    ...(lastDispatchTime ? { lastDispatchTime } : {}),
    ...(lastError ? { lastError } : {}),
    conditions,
    ...(plan.deleting ? { cleanedUp: o.holdsNothing } : {}),
    ...(failingSince ? { failingSince } : {}),
    ...(cp?.refused.endpoints ? { refusedEndpoints: cp.refused.endpoints } : {}),
  };
}

const isTrue = (e: McsConsumerStatus | undefined, type: string) => e?.conditions.some((c) => c.type === type && c.status === 'True') ?? false;

/** The object's Ready condition over the consumer entries. */
function readyCondition(plan: KeyPlan, consumers: McsConsumerStatus[], previous: McsCondition[] | undefined, now: string): McsCondition {
  const byCluster = new Map(consumers.map((c) => [c.cluster, c]));
  let status: McsCondition['status'] = 'False';
  let r: Reason;
  if (plan.deleting) {
    const left = consumers.filter((c) => c.cleanedUp !== true && !plan.away.includes(c.cluster)).map((c) => c.cluster);
    const away = plan.away.length ? `; not waiting for ${plan.away.join(', ')} (not Ready, no longer registered, or its cleanup kept failing): what was dispatched there is removed when it can be` : '';
    r = { reason: 'Deleting', message: `${left.length ? `removing what was dispatched from ${left.join(', ')}` : 'everything dispatched is removed'}${away}` };
  } else if (plan.consumerSet.length === 0) {
    r = { reason: 'NoConsumers', message: 'no known cluster is a consumer' };
  } else {
    const notReady = plan.consumerSet.filter((c) => !isTrue(byCluster.get(c), mcsConditions.serviceApplied) || !isTrue(byCluster.get(c), mcsConditions.endpointSlicesDispatched));
    if (notReady.length === 0) {
      status = 'True';
      r = { reason: 'Dispatched', message: `every consumer (${plan.consumerSet.join(', ')}) has the Service and its EndpointSlices` };
    } else {
      const why = notReady.slice(0, 5).map((c) => {
        const e = byCluster.get(c);
        const failed = e?.conditions.find((x) => x.status !== 'True');
        return `${c} (${failed ? failed.reason : 'no status yet'})`;
      });
      r = { reason: 'ConsumersNotReady', message: `not dispatched to ${why.join(', ')}${notReady.length > 5 ? ', ...' : ''}` };
    }
  }
  // Clusters named for a role the operator did not grant them take no part: said, not hidden.
  if (!plan.deleting && plan.ungranted.length) r = { ...r, message: `${r.message}; not taking part: ${plan.ungranted.join('; ')}` };
  return condition(mcsConditions.ready, status, r, previous, now, plan.generation);
}

/**
 * The status after one member's entries: `mine` replace those of the same clusters, `drop`
 * removes the entries of clusters that are no longer consumers and hold nothing any more;
 * the providers, Ready and observedGeneration are recomputed (observedGeneration is the
 * oldest generation any current consumer's entry was written for).
 */
export function mergeStatus(current: MultiClusterServiceStatus | undefined, plan: KeyPlan, mine: McsConsumerStatus[], drop: string[], now: string): MultiClusterServiceStatus {
  const replaced = new Set([...mine.map((e) => e.cluster), ...drop]);
  const consumers = [...(current?.consumers ?? []).filter((e) => !replaced.has(e.cluster)), ...mine].sort((a, b) => a.cluster.localeCompare(b.cluster));
  const observed = consumers
    .filter((e) => plan.consumerSet.includes(e.cluster))
    .map((e) => Math.min(...e.conditions.map((c) => c.observedGeneration ?? 0)))
    .reduce((a, b) => Math.min(a, b), plan.generation ?? 0);
  const out: MultiClusterServiceStatus = {
    ...current,
    observedGeneration: observed,
    providers: plan.providers,
    consumers,
    conditions: [readyCondition(plan, consumers, current?.conditions, now), ...(current?.conditions ?? []).filter((c) => c.type !== mcsConditions.ready)],
  };
  return out;
}

/**
 * Whether every cluster that must be cleaned (the consumers, and whoever still has an entry,
 * but those away: KeyPlan.away) says it is: the finalizer may go.
 */
export function everyConsumerCleaned(status: MultiClusterServiceStatus | undefined, plan: Pick<KeyPlan, 'consumerSet' | 'away'>): boolean {
  const entries = new Map((status?.consumers ?? []).map((e) => [e.cluster, e]));
  const must = new Set([...plan.consumerSet, ...entries.keys()]);
  return [...must].every((c) => plan.away.includes(c) || entries.get(c)?.cleanedUp === true);
}

/** The object without Panoptes' finalizer (undefined: it had none). */
export function withoutFinalizer(obj: KubeObject): KubeObject | undefined {
  const finalizers = (obj.metadata?.finalizers as string[] | undefined) ?? [];
  if (!finalizers.includes(mcsFinalizer)) return undefined;
  return { ...obj, metadata: { ...obj.metadata, finalizers: finalizers.filter((f) => f !== mcsFinalizer) } };
}

/**
 * Two digests of a status: `major` (conditions, which consumers, providers' readiness) is
 * written at once; `minor` also covers what moves with every endpoint (counts, dispatch
 * times), written at most every so often.
 */
export function statusDigest(status: MultiClusterServiceStatus | undefined): { major: string; all: string } {
  const s = structuredClone(status ?? {});
  const all = canonicalJson(s);
  for (const c of s.consumers ?? []) {
    delete (c as Partial<McsConsumerStatus>).endpoints;
    delete (c as Partial<McsConsumerStatus>).endpointSlices;
    delete c.lastDispatchTime;
  }
  for (const p of s.providers ?? []) delete (p as { endpoints?: number }).endpoints;
  return { major: canonicalJson(s), all };
}
