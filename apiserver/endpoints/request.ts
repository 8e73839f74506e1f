// The parsed form of a resource request (list, get or watch), shared by the list and get
// handlers and by the watch module: which view and resource, the selectors and search
// parameters, resourceVersion semantics, and the output format with its Table options.
import type { FieldSelector } from '../../kube/fields.ts';
import type { LabelSelector } from '../../kube/labels.ts';
import type { JsonFieldRequirement } from '../../storage/json-fields.ts';
import type { OrderKey } from '../../storage/types.ts';
import type { ResourceInfo } from '../discovery/catalog.ts';

/** Which clusters a URL reads: every cluster (the `.../resources/...` prefix) or one (`.../resources/clusters/<c>/...`). */
export interface View {
  /** undefined: the all-clusters view. */
  cluster?: string;
}

export type Verb = 'list' | 'get' | 'watch';

/** Panoptes search beyond Kubernetes: query parameters and search.panoptes.io/* label keys, intersected. */
export interface SearchParams {
  clusters?: string[];
  namespaces?: string[];
  names?: string[];
  ownerUIDs?: string[];
  /** Substrings every name holds (apiserver/read/name-contains.ts). */
  fuzzyNames?: string[];
  /** creationTimestamp range, resolved to kube's text (apiserver/read/created-range.ts). */
  createdSince?: string;
  createdBefore?: string;
  /** apiserver/read/order-by.ts; unset: list order. */
  orderBy?: OrderKey[];
  /** apiserver/read/owners.ts */
  ownerNames?: string[];
  ownerGR?: string[];
  ownerSeniority?: string[];
}

export type ResourceVersionMatch = 'Exact' | 'NotOlderThan';

/** Query parameters of a list, get or watch, validated. */
export interface ListParams {
  /** Without the search.panoptes.io/* requirements (those are in `search`). */
  labelSelector: LabelSelector;
  /** Checked against the kind's selectable fields. */
  fieldSelector: FieldSelector;
  /** Terms on JSON paths (apiserver/read/field-paths.ts). */
  jsonFields: JsonFieldRequirement[];
  search: SearchParams;
  /** Page size, already capped at the server's maximum; undefined: everything. */
  limit?: number;
  continue?: string;
  /** As given ("" when absent). */
  resourceVersion: string;
  resourceVersionMatch?: ResourceVersionMatch;
  /** Watch: timeoutSeconds. */
  timeoutSeconds?: number;
  allowWatchBookmarks: boolean;
  sendInitialEvents?: boolean;
  /** `timeout=` (client-go's request timeout), in ms. */
  timeoutMs?: number;
}

/** What the response body is. */
export type OutputKind = 'json' | 'table' | 'partial';

export interface OutputFormat {
  kind: OutputKind;
  /** For table and partial: meta.k8s.io version asked for. */
  metaVersion: 'v1' | 'v1beta1';
  /** Table rows' `object`: kube-apiserver's default is Metadata. */
  includeObject: 'None' | 'Metadata' | 'Object';
  /** Content-Type of the response. */
  contentType: string;
}

export interface ResourceRequest {
  verb: Verb;
  view: View;
  /** The resource as the view serves it (version, kind, scope, printer columns). */
  info: ResourceInfo;
  /** From the path (`/namespaces/<ns>/...`); undefined: all namespaces (or cluster-scoped). */
  namespace?: string;
  /** get: the object's name; watch: set by the legacy `/watch/.../<name>` form. */
  name?: string;
  params: ListParams;
  output: OutputFormat;
}

/** `group/version` as apiVersion. */
export const apiVersionOf = (info: { group: string; version: string }): string => (info.group ? `${info.group}/${info.version}` : info.version);
