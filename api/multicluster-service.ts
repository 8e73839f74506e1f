// The `MultiClusterService` kind (multiclusterservices.panoptes.io/v1alpha1): a Service of
// some member clusters (the providers) made reachable by its ordinary name from pods of other
// member clusters (the consumers). Namespaced, named after the Service it exports. The
// apiserver serves it (written with kubectl like Cluster); synchro's dispatcher collects the
// providers' EndpointSlices from storage and writes, in each consumer, the Service (when
// absent), one EndpointSlice per provider slice and, where the CRD exists, a ServiceImport.
// The MCS-API's `ServiceExport` (multicluster.x-k8s.io) in a member is read as a
// MultiClusterService of that member's Service with every other cluster as consumer.
//
// This module is the contract both sides share: the types, the names and labels of what is
// dispatched, the defaults. Pure: no I/O.
import { createHash } from 'node:crypto';

export const mcsGroup = 'panoptes.io';
export const mcsVersion = 'v1alpha1';
export const mcsResource = 'multiclusterservices';
export const mcsKind = 'MultiClusterService';

/** What happens to a provider's dispatched endpoints while that provider is not Ready. */
export type ProviderNotReadyPolicy =
  /** Keep the last endpoints for `gracePeriodSeconds`, then remove them (the default). */
  | 'KeepForGracePeriod'
  /** Remove them as soon as the provider is not Ready. */
  | 'RemoveImmediately'
  /** Keep them until the provider is Ready again (or leaves the MultiClusterService). */
  | 'Keep';

export const providerNotReadyPolicies: readonly ProviderNotReadyPolicy[] = ['KeepForGracePeriod', 'RemoveImmediately', 'Keep'];

/** The grace period of KeepForGracePeriod when the spec gives none. */
export const defaultGracePeriodSeconds = 300;

export interface MultiClusterServicePort {
  /** The Service port's name; with `port`, both must match. */
  name?: string;
  port?: number;
}

export interface MultiClusterServiceSpec {
  /** Clusters whose Service of this namespace and name (and its EndpointSlices) are collected; absent or empty: every cluster. */
  providerClusters?: string[];
  /** Clusters the Service and slices are dispatched to; absent or empty: every cluster. A provider never receives its own slices. */
  consumerClusters?: string[];
  /** Only these ports are dispatched; absent: every port of the provider's Service. */
  ports?: MultiClusterServicePort[];
  providerNotReady?: { policy?: ProviderNotReadyPolicy; gracePeriodSeconds?: number };
}

/** A condition, as metav1.Condition. */
export interface McsCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

/** One consumer's state, written by the synchro member holding that consumer's lease. */
export interface McsConsumerStatus {
  cluster: string;
  /** The Service is in place in the consumer (created by Panoptes, or the consumer is also a provider of it). */
  serviceApplied: boolean;
  /** Dispatched EndpointSlices in place, and the endpoints they hold. */
  endpointSlices: number;
  endpoints: number;
  /** When the consumer was last brought to the desired state. */
  lastDispatchTime?: string;
  /** The last error of a write to this consumer (a Status reason and message, never a member's body). */
  lastError?: string;
  /** ServiceApplied and EndpointSlicesDispatched, as Karmada names them. */
  conditions: McsCondition[];
  /** After the MultiClusterService was deleted: everything dispatched to this consumer is gone. */
  cleanedUp?: boolean;
}

export interface McsProviderStatus {
  cluster: string;
  /** Ready endpoints of the provider's slices. */
  endpoints: number;
  /** The provider cluster is Ready (its data is current). */
  ready: boolean;
  /** Since when it is not Ready (for the grace period). */
  notReadySince?: string;
}

export interface MultiClusterServiceStatus {
  observedGeneration?: number;
  providers?: McsProviderStatus[];
  consumers?: McsConsumerStatus[];
  /** Ready: every consumer has the Service and its slices. */
  conditions?: McsCondition[];
}

/** Set by the apiserver on create; released by synchro once every consumer is cleaned up. */
export const mcsFinalizer = 'panoptes.io/mcs-dispatch';

// --- What is dispatched to consumer clusters, and how Panoptes recognises its own objects.

/** `endpointslice.kubernetes.io/managed-by` of dispatched slices (never endpointslice-controller.k8s.io, so kube's controller leaves them alone). */
export const dispatchManagedBy = 'panoptes.io-mcs-dispatcher';

/** The label on every Service, EndpointSlice and ServiceImport Panoptes writes to a member: nothing without it is ever changed or deleted. */
export const managedByLabel = 'app.kubernetes.io/managed-by';
export const managedByValue = 'panoptes.io';

export const labels = {
  /** kube-proxy and cluster DNS join slices to their Service by it. */
  serviceName: 'kubernetes.io/service-name',
  /** The MCS-API's labels (KEP-1645), for CoreDNS multicluster and clusterset.local tooling. */
  mcsServiceName: 'multicluster.kubernetes.io/service-name',
  sourceCluster: 'multicluster.kubernetes.io/source-cluster',
  endpointSliceManagedBy: 'endpointslice.kubernetes.io/managed-by',
} as const;

export const annotations = {
  /** When the provider's data was last synced (RFC 3339): how stale a dispatched slice may be. */
  providerLastSync: 'panoptes.io/provider-last-sync',
  /** The provider slice a dispatched slice copies (`<cluster>/<namespace>/<name>`). */
  source: 'panoptes.io/source',
} as const;

/** The MCS-API group and its kinds. */
export const mcsApi = { group: 'multicluster.x-k8s.io', version: 'v1alpha1', serviceExports: 'serviceexports', serviceImports: 'serviceimports' } as const;

/** kube's limit on an object name that is a DNS subdomain (EndpointSlice names are). */
const maxNameLength = 253;

/**
 * The name of the slice dispatched to consumers for provider `cluster`'s slice `slice`:
 * `<cluster>-<slice>`, deterministic, a DNS subdomain of at most 253 characters (a longer one
 * keeps its start and ends with a hash of the whole, so two never collide).
 */
export function dispatchedSliceName(cluster: string, slice: string): string {
  const name = `${cluster}-${slice}`;
  if (name.length <= maxNameLength) return name;
  const hash = createHash('sha256').update(name).digest('hex').slice(0, 10);
  return `${name.slice(0, maxNameLength - hash.length - 1).replace(/[-.]+$/, '')}-${hash}`;
}

/** The effective not-Ready policy of a spec. */
export function providerNotReadyOf(spec: MultiClusterServiceSpec): { policy: ProviderNotReadyPolicy; gracePeriodSeconds: number } {
  return { policy: spec.providerNotReady?.policy ?? 'KeepForGracePeriod', gracePeriodSeconds: spec.providerNotReady?.gracePeriodSeconds ?? defaultGracePeriodSeconds };
}

/** Whether `cluster` is named by a list that means "every cluster" when absent or empty. */
export function listed(list: string[] | undefined, cluster: string): boolean {
  return !list || list.length === 0 || list.includes(cluster);
}

// --- The dispatcher's side of the contract (synchro/mcs/): what its writes carry besides the
// labels and annotations above, and the condition types it writes into the status.

/** Beside providerLastSync: "true" while the provider is Ready (the slice is live: providerLastSync is when it was written), "false" once it is not (providerLastSync is when it stopped being Ready). */
export const providerReadyAnnotation = 'panoptes.io/provider-ready';

/** The `fieldManager` of every write the dispatcher makes to a member (managedFields show it). */
export const dispatchFieldManager = 'panoptes-mcs-dispatcher';

/** The condition types of the status: per consumer ServiceApplied and EndpointSlicesDispatched (as Karmada names them), and the object's Ready. */
export const mcsConditions = { ready: 'Ready', serviceApplied: 'ServiceApplied', endpointSlicesDispatched: 'EndpointSlicesDispatched' } as const;
