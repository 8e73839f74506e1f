// What every handler gets: storage, the discovery catalog, limits, the watch engine and the
// services of the other groups (what a handler answers: reply.ts).
import { maxRequestBodyBytes } from '../../kube/json-limits.ts';
import type { Logger } from '../../lib/log.ts';
import type { MemberNetworks } from '../../member/networks.ts';
import type { ReadPool } from '../../storage/read-pool.ts';
import { defaultQueryBudget, type QueryBudget } from '../../storage/json-fields.ts';
import type { Store } from '../../storage/store.ts';
import type { Catalog } from '../discovery/catalog.ts';
import { defaultProxyWriteWaitMs } from '../proxy/write-consistency.ts';
import type { Authorizer } from '../auth/authz.ts';
import type { CollectionsDeps } from '../collections/definitions.ts';
import type { OpenAPIService } from '../openapi/service.ts';
import type { ProxyDeps } from '../proxy/proxy-deps.ts';
import type { ExternalMetricsDeps } from '../external/deps.ts';
import type { WatchHub } from '../watch/index.ts';

export type { Reply } from './reply.ts';

export interface ApiserverLimits {
  /** limit values above this are served as pages of this size (default 10000). */
  maxLimit: number;
  /** Requests other than watches end with 504 after this long (default 60 s; `timeout=` may shorten it). */
  requestTimeoutMs: number;
  /** How long a list or get waits for a future resourceVersion before 504 (default 3 s). */
  tooLargeWaitMs: number;
  /** Longest request URL accepted (default 16 KiB). */
  maxUrlBytes: number;
  /** Largest request body accepted (default 3 MiB, kube-apiserver's MaxRequestBodyBytes; reads take none). */
  maxBodyBytes: number;
  /**
   * Writes served at once (default 16); beyond them 429, as kube-apiserver's
   * --max-mutating-requests-inflight (200 there). Each may hold a body and its decoding:
   * this bounds the memory writes can take together.
   */
  maxMutatingInFlight: number;
  /** How long a write proxied to a member waits for synchro to store it before it answers the member's object (default 5 s, --proxy-write-wait; apiserver/proxy/write-consistency.ts). */
  proxyWriteWaitMs: number;
  /** What a list with unindexed JSON path field terms may cost (storage/json-fields.ts; default 20,000 objects, 2 s). */
  queryBudget: QueryBudget;
}

export const defaultLimits: ApiserverLimits = {
  maxLimit: 10_000,
  requestTimeoutMs: 60_000,
  tooLargeWaitMs: 3_000,
  maxUrlBytes: 16 * 1024,
  maxBodyBytes: maxRequestBodyBytes,
  maxMutatingInFlight: 16,
  proxyWriteWaitMs: defaultProxyWriteWaitMs,
  queryBudget: defaultQueryBudget,
};

export interface Deps {
  /** The primary database: writes, and the source of truth for what "most recent" is. */
  store: Store;
  /** Where lists, gets and metrics read: the primary, or standbys (--storage-read; apiserver/read/rv.ts). */
  reads: ReadPool;
  catalog: Catalog;
  log: Logger;
  limits: ApiserverLimits;
  /** The process's one watch engine (poller, window, watchers). */
  watch: WatchHub;
  /** OpenAPI documents of the views, from the member documents in storage. */
  openapi: OpenAPIService;
  /** external.metrics.k8s.io: the metrics file's rules, their metrics, the authorizer (apiserver/external/). */
  externalMetrics: ExternalMetricsDeps;
  /** collectionresources.panoptes.io: the collections served and the authorizer of their kinds (apiserver/collections/). */
  collections: CollectionsDeps;
  /** Networks the operator lets API-registered clusters reach although they are refused by default (--allow-member-networks). */
  memberNetworks: MemberNetworks;
  /** The proxy to member clusters (writes, subresources, unsynced reads of a one-cluster view). */
  proxy: ProxyDeps;
  /**
   * The host cluster's authorizer (absent without authentication): the reviews a write of an
   * own kind needs beyond its verb (granting multi-cluster Service roles: apiserver/registry/generic/own-writes.ts).
   */
  authorizer?: Pick<Authorizer, 'authorize'>;
}
