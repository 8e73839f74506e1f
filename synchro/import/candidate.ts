// What a source module makes of the source objects it reads: one candidate per member
// cluster, with the connection its source object gives (endpoint and credentials together:
// the credentials are used for that endpoint only), or the reason it cannot be used.
import { secretClusterLabel, type SourceObjectRef } from '../../api/cluster.ts';
import type { ClusterSourceSpec } from '../../api/cluster-source.ts';
import type { HostObject } from '../../member/list-watch.ts';

/** A member's endpoint and the credentials its source gives for it. */
export interface ImportedConnection {
  server: string;
  /** Base64 PEM. */
  caData?: string;
  insecureSkipTLSVerify?: boolean;
  tlsServerName?: string;
  token?: string;
  /** Base64 PEM. */
  clientCertData?: string;
  clientKeyData?: string;
}

export interface ImportCandidate {
  /** The source's own name of the cluster ({name} of the naming template). */
  baseName: string;
  /** {namespace}: the source object's namespace. */
  namespace: string;
  /** {context}: the kubeconfig context, for a Secret whose every context is a cluster. */
  context?: string;
  sourceObject: SourceObjectRef;
  /** The Secret holding the credentials (the Cluster names it, never copies it). */
  secret?: { namespace: string; name: string };
  connection?: ImportedConnection;
  /** Why the source object cannot be used (the Cluster is Invalid with it). */
  invalid?: string;
  /** The credentials are being obtained (an exec plugin runs): the Cluster waits, it is not Invalid. */
  pending?: string;
  /** The source object's own health conditions (a ClusterProfile's), shown on the Cluster beside Panoptes' own. */
  conditions?: SourceCondition[];
}

/** The prefix of the type of a source object's condition on its Cluster: the importer's to set and clear. */
export const sourceConditionPrefix = 'ClusterProfile';

/** A condition as the source object states it (metav1.Condition's fields, strings only). */
export interface SourceCondition {
  type: string;
  status: string;
  reason: string;
  message: string;
  lastTransitionTime: string;
}

/** Credentials only running code can produce: an exec plugin the operator configured on synchro (exec-credentials.ts). */
export interface ExecCredentialSource {
  /** Whether synchro has an exec provider of this name. */
  has(provider: string): boolean;
  /** The credentials of `provider` for this cluster: obtained (cached until they expire), being obtained, or why not. */
  get(provider: string, cluster: ExecClusterInfo): ExecCredentialResult;
}

/** What an exec plugin is told of the cluster (ExecCredential spec.cluster, with provideClusterInfo). */
export interface ExecClusterInfo {
  server: string;
  caData?: string;
  tlsServerName?: string;
  insecureSkipTLSVerify?: boolean;
  /** The extension client.authentication.k8s.io/exec of the access provider's cluster. */
  config?: unknown;
}

export type ExecCredentialResult = { state: 'ready'; token?: string; clientCertData?: string; clientKeyData?: string } | { state: 'pending' } | { state: 'error'; message: string };

/** What a source module may use besides its objects. */
export interface CandidateContext {
  exec?: ExecCredentialSource;
  /** This installation's id: what it publishes itself (synchro/import/publish-profiles.ts) is not imported back. */
  installation?: string;
}

/** What a source module reads: the objects of the collections it asked for, by collection. */
export interface SourceObjects {
  secrets: HostObject[];
  /** Cluster API `Cluster`s, Karmada `Cluster`s, or ClusterProfiles. */
  clusters: HostObject[];
}

/** A collection of the host cluster a source reads, per namespace (or cluster-wide). */
export interface Collection {
  role: keyof SourceObjects;
  path: string;
  labelSelector: string;
  /** A kind of a CRD: its name, and what the source imports without it (said when the host does not serve it). */
  crd?: { name: string; without: string };
}

/** One kind of source: what it lists, and the candidates it makes of them. */
export interface SourceKind {
  collections(spec: ClusterSourceSpec): Collection[];
  candidates(spec: ClusterSourceSpec, objects: SourceObjects, context?: CandidateContext): ImportCandidate[];
}

export const secretRef = (o: HostObject): SourceObjectRef => ({ apiVersion: 'v1', kind: 'Secret', namespace: o.metadata.namespace ?? '', name: o.metadata.name });
export const describe = (r: SourceObjectRef): string => `${r.kind} ${r.namespace ? `${r.namespace}/` : ''}${r.name}${r.context ? ` context ${r.context}` : ''}`;
export const unb64 = (s: string): string => Buffer.from(s, 'base64').toString('utf8');

/**
 * The Secrets collection of each namespace of the spec, with a label selector. Never a Secret
 * labelled panoptes.io/cluster: it holds the credentials of the one Cluster it names, for the
 * server its annotation names, and a source object (a Karmada Cluster naming it, say) must not
 * send them anywhere else.
 */
export const secretCollections = (spec: ClusterSourceSpec, labelSelector: string): Collection[] =>
  spec.namespaces.map((ns) => ({ role: 'secrets', path: `/api/v1/namespaces/${encodeURIComponent(ns)}/secrets`, labelSelector: [labelSelector, `!${secretClusterLabel}`].filter(Boolean).join(',') }));
