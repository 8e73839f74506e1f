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
}

/** What a source module reads: the objects of the collections it asked for, by collection. */
export interface SourceObjects {
  secrets: HostObject[];
  /** Cluster API `Cluster`s, or Karmada `Cluster`s. */
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
  candidates(spec: ClusterSourceSpec, objects: SourceObjects): ImportCandidate[];
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
