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
// dispatched, the defaults, the validation of a spec and the allowlist of what is served of it.
// Pure: no I/O.
import { createHash } from 'node:crypto';
import { fieldDuplicate, fieldForbidden, fieldInvalid, fieldNotSupported, fieldRequired, uniqueStrings, type FieldError } from '../kube/field-errors.ts';
import { objectMetaShape, pruneUnknownFields, type Shape } from '../kube/known-fields.ts';
import { dns1035LabelProblem, dnsLabelProblem } from '../kube/names.ts';

export const mcsGroup = 'panoptes.io';
export const mcsVersion = 'v1alpha1';
export const mcsResource = 'multiclusterservices';
export const mcsKind = 'MultiClusterService';

/** What happens to a provider's dispatched endpoints while that provider is not Ready. */
export type ProviderNotReadyPolicy =
  /** Keep the last endpoints for `gracePeriodSeconds`, marked as going away (ready false, serving as they were, terminating), then remove them (the default). */
  | 'KeepForGracePeriod'
  /** Remove them as soon as the provider is not Ready. */
  | 'RemoveImmediately'
  /** Keep them, their conditions as the provider last said, until it is Ready again (or leaves the MultiClusterService). */
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
  /**
   * Since when writes for this Service keep failing in this consumer (the first failure of the
   * current run; gone once it is in place). A deletion waits for its cleanup there this long at
   * most (--mcs-away-consumer-grace): what is left is removed when a write succeeds.
   */
  failingSince?: string;
  /** Provider endpoints not dispatched to this consumer: addresses kube refuses, or inside its own pod or service ranges. */
  refusedEndpoints?: number;
}

export interface McsProviderStatus {
  cluster: string;
  /** Ready endpoints of the provider's slices. */
  endpoints: number;
  /** The provider cluster is Ready (its data is current). */
  ready: boolean;
  /** Since when it is not Ready (for the grace period). */
  notReadySince?: string;
  /** Its endpoints are dispatched now: it is Ready, or the providerNotReady policy still keeps them (false: removed from the consumers). */
  dispatched?: boolean;
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

/** kube's limit on an object name that is a DNS subdomain (EndpointSlice names are: ValidateEndpointSliceName). */
const maxNameLength = 253;
/** The hex digits of the hash that ends every dispatched slice's name. */
const sliceHashLength = 12;

/**
 * The name of the slice dispatched to consumers for provider `cluster`'s slice `slice`:
 * `<cluster>-<slice>` to read (cut to fit) and a hash of the pair, so that two pairs never
 * share a name (`east` + `a-web-x1` and `east-a` + `web-x1` do not), a DNS subdomain of at
 * most 253 characters. Slices named before the hash (`<cluster>-<slice>`) are not names of
 * this form: the dispatcher deletes them as it creates these.
 */
export function dispatchedSliceName(cluster: string, slice: string): string {
  const hash = createHash('sha256').update(`${cluster}\n${slice}`).digest('hex').slice(0, sliceHashLength);
  const readable = `${cluster}-${slice}`.slice(0, maxNameLength - sliceHashLength - 1).replace(/[-.]+$/, '');
  return `${readable}-${hash}`;
}

/**
 * The label that says which Panoptes installation (one storage database: Store.installationId)
 * wrote a dispatched object, beside the managed-by mark. An installation changes and deletes
 * only what carries its own id (and adopts what it wrote before the id existed: synchro/mcs/ownership.ts).
 */
export const installationLabel = 'panoptes.io/installation';

/**
 * Services Panoptes never dispatches unless the operator names them
 * (--mcs-allow-system-services): those of kube's own namespaces (`kube-*`) and the API
 * server's Service `default/kubernetes`. A Service of that name in a consumer carries its
 * control plane's traffic (API requests with ServiceAccount tokens, cluster DNS); whoever may
 * create a MultiClusterService must not be able to point it elsewhere.
 */
export function systemServiceProblem(key: { namespace: string; name: string }, allowed: readonly string[] = []): string | undefined {
  const system = key.namespace.startsWith('kube-') ? `namespace ${key.namespace} is one of kube's own (kube-*)` : key.namespace === 'default' && key.name === 'kubernetes' ? 'default/kubernetes is the API server\'s Service' : undefined;
  if (!system || allowed.includes(key.namespace) || allowed.includes(`${key.namespace}/${key.name}`)) return undefined;
  return `${system}: Panoptes dispatches no system Service unless the operator allows it with ${systemServicesFlag}`;
}

/** The flag of synchro and all-in-one that allows system Services (namespaces, or namespace/name), comma-separated. */
export const systemServicesFlag = '--mcs-allow-system-services';

/** The effective not-Ready policy of a spec. */
export function providerNotReadyOf(spec: MultiClusterServiceSpec): { policy: ProviderNotReadyPolicy; gracePeriodSeconds: number } {
  return { policy: spec.providerNotReady?.policy ?? 'KeepForGracePeriod', gracePeriodSeconds: spec.providerNotReady?.gracePeriodSeconds ?? defaultGracePeriodSeconds };
}

/** Whether `cluster` is named by a list that means "every cluster" when absent or empty. */
export function listed(list: string[] | undefined, cluster: string): boolean {
  return !list || list.length === 0 || list.includes(cluster);
}

// --- Validation: what the apiserver accepts (422 with one cause per field) and synchro may check again.

/** The fields of a MultiClusterService object, for the strict decoding of writes (`unknown field "spec.foo"`). */
export const mcsShape: Shape = {
  apiVersion: true,
  kind: true,
  metadata: objectMetaShape,
  spec: {
    providerClusters: true,
    consumerClusters: true,
    ports: { '[]': { name: true, port: true } },
    providerNotReady: { policy: true, gracePeriodSeconds: true },
  },
  status: true,
};

/** The fields of `obj` (a whole object) that a MultiClusterService does not have, as `spec.foo` paths. */
export function unknownMcsFields(obj: unknown): string[] {
  return pruneUnknownFields(obj, mcsShape).unknown;
}

/** Why `name` cannot name a MultiClusterService: it is the name of the Service it exports, a DNS-1035 label as kube requires of Service names. */
export function mcsNameProblem(name: string): string | undefined {
  const why = dns1035LabelProblem(name);
  return why && `a MultiClusterService is named after the Service it exports: ${why}`;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function clusterList(errs: FieldError[], path: string, v: unknown): void {
  if (v === undefined) return;
  uniqueStrings(errs, path, v, (s, p) => {
    const why = dnsLabelProblem(s);
    if (why) errs.push(fieldInvalid(p, s, `a member cluster name: ${why}`));
  });
}

function portList(errs: FieldError[], v: unknown): void {
  const path = 'spec.ports';
  if (v === undefined) return;
  if (!Array.isArray(v)) return void errs.push(fieldInvalid(path, v, 'must be a list of ports, each with a name and/or a port number'));
  const seen = new Set<string>();
  v.forEach((item, i) => {
    const p = `${path}[${i}]`;
    if (!isObject(item)) return void errs.push(fieldInvalid(p, item, 'must be an object with a name and/or a port number'));
    let ok = true;
    if (item.name !== undefined) {
      if (typeof item.name !== 'string') {
        errs.push(fieldInvalid(`${p}.name`, item.name, 'must be a string'));
        ok = false;
      } else {
        // A Service port's name is a DNS-1123 label (kube's validateServicePort).
        const why = dnsLabelProblem(item.name);
        if (why) {
          errs.push(fieldInvalid(`${p}.name`, item.name, why));
          ok = false;
        }
      }
    }
    if (item.port !== undefined) {
      if (typeof item.port !== 'number' || !Number.isInteger(item.port) || item.port < 1 || item.port > 65535) {
        // validation.IsValidPortNum's words.
        errs.push(fieldInvalid(`${p}.port`, item.port, 'must be between 1 and 65535, inclusive'));
        ok = false;
      }
    }
    if (item.name === undefined && item.port === undefined) return void errs.push(fieldRequired(p, 'a port name and/or number: which port of the Service to export'));
    if (!ok) return;
    const key = JSON.stringify([item.name ?? null, item.port ?? null]);
    if (seen.has(key)) return void errs.push(fieldDuplicate(p, { ...(item.name !== undefined ? { name: item.name } : {}), ...(item.port !== undefined ? { port: item.port } : {}) }));
    seen.add(key);
  });
}

function notReadyPolicy(errs: FieldError[], v: unknown): void {
  const path = 'spec.providerNotReady';
  if (v === undefined) return;
  if (!isObject(v)) return void errs.push(fieldInvalid(path, v, 'must be an object with policy and/or gracePeriodSeconds'));
  if (v.policy !== undefined && !(providerNotReadyPolicies as readonly unknown[]).includes(v.policy)) {
    errs.push(fieldNotSupported(`${path}.policy`, v.policy, [...providerNotReadyPolicies]));
  }
  const g = v.gracePeriodSeconds;
  if (g === undefined) return;
  if (typeof g !== 'number' || !Number.isSafeInteger(g)) errs.push(fieldInvalid(`${path}.gracePeriodSeconds`, g, 'must be an integer number of seconds'));
  // apimachinery's ValidateNonnegativeField words.
  else if (g < 0) errs.push(fieldInvalid(`${path}.gracePeriodSeconds`, g, 'must be greater than or equal to 0'));
  else if (v.policy !== undefined && v.policy !== 'KeepForGracePeriod') errs.push(fieldForbidden(`${path}.gracePeriodSeconds`, `only the policy KeepForGracePeriod has a grace period (the policy is ${String(v.policy)})`));
}

/** Every problem with the spec of a MultiClusterService, one error per field. An absent spec is every cluster to every cluster. */
export function validateMultiClusterServiceSpec(spec: unknown): FieldError[] {
  if (spec === undefined || spec === null) return [];
  if (!isObject(spec)) return [fieldInvalid('spec', spec, 'must be an object')];
  const errs: FieldError[] = [];
  clusterList(errs, 'spec.providerClusters', spec.providerClusters);
  clusterList(errs, 'spec.consumerClusters', spec.consumerClusters);
  portList(errs, spec.ports);
  notReadyPolicy(errs, spec.providerNotReady);
  return errs;
}

/**
 * The one allowlist of what is served of a MultiClusterService spec: these fields, of these
 * types, in the order they were written (kubectl apply compares its annotation as text), and
 * nothing else.
 */
export function servedMcsSpec(spec: unknown): MultiClusterServiceSpec {
  if (!isObject(spec)) return {};
  const strings = (v: unknown) => (Array.isArray(v) && v.every((x) => typeof x === 'string') ? [...(v as string[])] : undefined);
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(spec)) {
    const v = spec[k];
    if (k === 'providerClusters' || k === 'consumerClusters') {
      const s = strings(v);
      if (s) out[k] = s;
    } else if (k === 'ports' && Array.isArray(v)) {
      out.ports = v.filter(isObject).map((p) => ({ ...(typeof p.name === 'string' ? { name: p.name } : {}), ...(typeof p.port === 'number' ? { port: p.port } : {}) }));
    } else if (k === 'providerNotReady' && isObject(v)) {
      const pnr: Record<string, unknown> = {};
      for (const f of Object.keys(v)) {
        if (f === 'policy' && typeof v.policy === 'string') pnr.policy = v.policy;
        if (f === 'gracePeriodSeconds' && typeof v.gracePeriodSeconds === 'number') pnr.gracePeriodSeconds = v.gracePeriodSeconds;
      }
      out.providerNotReady = pnr;
    }
  }
  return out as MultiClusterServiceSpec;
}

// --- The dispatcher's side of the contract (synchro/mcs/): what its writes carry besides the
// labels and annotations above, and the condition types it writes into the status.

/** Beside providerLastSync: "true" while the provider is Ready (the slice is live: providerLastSync is when it was written), "false" once it is not (providerLastSync is when it stopped being Ready). */
export const providerReadyAnnotation = 'panoptes.io/provider-ready';

/** The `fieldManager` of every write the dispatcher makes to a member (managedFields show it). */
export const dispatchFieldManager = 'panoptes-mcs-dispatcher';

/** The condition types of the status: per consumer ServiceApplied and EndpointSlicesDispatched (as Karmada names them), and the object's Ready. */
export const mcsConditions = { ready: 'Ready', serviceApplied: 'ServiceApplied', endpointSlicesDispatched: 'EndpointSlicesDispatched' } as const;
