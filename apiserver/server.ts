// The apiserver's Koa app and HTTP listener: request bounds (method, URL and body size,
// timeout), Status errors, metrics, health, authentication and authorization (when
// `secure` is given: HTTPS, apiserver/auth/), then routing. Without `secure`: plain HTTP,
// no authentication (the loopback-only development mode).
//
// HTTPS serves HTTP/2 (ALPN h2) and HTTP/1.1: kube-apiserver's aggregator proxies every
// request to an APIService through one HTTP/2 connection (more when the streams of one reach
// the server's limit), so thousands of watches arrive as streams of a few TLS connections
// instead of a TLS connection each (tens of KB of OpenSSL buffers per connection). Up to 1000
// concurrent streams per connection, as k8s.io/apiserver's RecommendedOptions set for aggregated API servers.
import './kinds.ts';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { createSecureServer, type Http2SecureServer } from 'node:http2';
import { authMiddleware } from './auth/middleware.ts';
import type { SecureServing } from './auth/config.ts';
import type { AddressInfo, Socket } from 'node:net';
import Koa, { type Context } from 'koa';
import { logger, type Logger } from '../lib/log.ts';
import { MemberNetworks } from '../member/networks.ts';
import { StatusError } from '../kube/status.ts';
import { ReadPool } from '../storage/read-pool.ts';
import type { Store } from '../storage/store.ts';
import { Catalog, type CatalogOptions } from './discovery/catalog.ts';
import { defaultLimits, type ApiserverLimits, type Deps, type Reply } from './endpoints/deps.ts';
import { encodeReply } from './endpoints/compression.ts';
import { readOnly, toStatus, writeStatus } from './endpoints/errors.ts';
import { fixedRoutes } from './endpoints/fixed-routes.ts';
import { catalogCheck, pingCheck, readStorageCheck, storageCheck, type HealthCheck } from './endpoints/health.ts';
import { ApiserverMetrics, inflightKind } from './endpoints/metrics.ts';
import { OpenAPIService, type OpenAPIServiceOptions } from './openapi/service.ts';
import { RulesSource } from './external/rules-source.ts';
import { clusterObjectsCluster, clusterResource } from '../storage/cluster-objects.ts';
import type { Change } from '../storage/types.ts';
import { isOwnWritePath } from './discovery/panoptes-group.ts';
import type { MetricLabels, Routed } from './endpoints/routed.ts';
import { isResourcesPath, route } from './endpoints/routes.ts';
import type { UserInfo } from './auth/authn.ts';
import type { WriteConsistency } from './proxy/consistency.ts';
import { createWriteConsistency, syncedInCatalog } from './proxy/write-consistency.ts';
import { MemberPool, noMemberCredentials, type MemberCredentials } from './proxy/members.ts';
import type { ConnectOptions } from '../member/client.ts';
import { defaultStreamLimits, UpgradeProxy, type StreamLimits } from './proxy/upgrade.ts';
import { builtinCollections, type CollectionDefinition } from './collections/definitions.ts';
import { bodyTooLarge, limitWritesInFlight } from './endpoints/write-request.ts';
import { beforeDeadline, requestDeadline, withRequestDeadline } from './endpoints/request-deadline.ts';
import { WatchHub, type HubOptions } from './watch/index.ts';

export interface ApiserverOptions {
  store: Store;
  /** Standbys lists, gets, metrics and the watch engine read from (--storage-read); default: the store alone. Not closed by the server. */
  reads?: ReadPool;
  /** A started catalog to share; by default the server makes and starts its own. */
  catalog?: Catalog;
  catalogOptions?: CatalogOptions;
  limits?: Partial<ApiserverLimits>;
  /** Metrics (all-in-one shares the registry with synchro). */
  metrics?: ApiserverMetrics;
  /** The watch engine's options (its metrics go to the apiserver's registry). */
  watch?: HubOptions;
  /** OpenAPI caches and reference refresh. */
  openapi?: OpenAPIServiceOptions;
  /** Extra /readyz checks (e.g. the watch poller). */
  readyChecks?: HealthCheck[];
  log?: Logger;
  /** HTTPS with authentication and authorization (apiserver/auth/); without it: plain HTTP, no auth. */
  secure?: Pick<SecureServing, 'tls' | 'authenticator' | 'authorizer'>;
  /** external.metrics.k8s.io: the metrics file of declared metrics (watched), and how often it is checked (default 1 s). */
  externalMetrics?: { file?: string; reloadIntervalMs?: number };
  /** The collections served (apiserver/collections/definitions.ts): the built-in ones unless given (--collections-file). */
  collections?: CollectionDefinition[];
  /** --allow-member-networks: networks API-registered clusters may reach although refused by default (loopback, link-local, unspecified). */
  memberNetworks?: MemberNetworks;
  /**
   * The proxy to member clusters: where member credentials come from (none: every proxied
   * request is a 503 saying so), the resourceVersion consistency of writes (default: pass
   * through), and in the development mode the user requests impersonate (absent: refused).
   */
  proxy?: { credentials?: MemberCredentials; consistency?: WriteConsistency; unauthenticatedUser?: UserInfo; connect?: ConnectOptions };
  /** Idle and overall limits of exec, attach and port-forward streams through the proxy (apiserver/proxy/upgrade.ts). */
  streams?: Partial<StreamLimits>;
}

export interface Apiserver {
  app: Koa;
  deps: Deps;
  metrics: ApiserverMetrics;
  /** Starts listening; resolves with the base URL (http://host:port). */
  listen(host: string, port: number): Promise<string>;
  /** The listening server, once listen() resolved (HTTP/2 and HTTP/1.1 with TLS, HTTP/1.1 without). */
  server?: Server | Http2SecureServer;
  /** exec, attach and port-forward streams through the proxy (connection upgrades). */
  streams: UpgradeProxy;
  /** Stops listening, ends open connections and the catalog's refresh (not the store). */
  close(): Promise<void>;
}

async function writeReply(ctx: Context, reply: Reply): Promise<void> {
  // A text answer is encoded to UTF-8 once here: the compression decision, Koa's Content-Length
  // and the socket would otherwise each encode or scan the string again.
  const body = typeof reply.body === 'string' ? Buffer.from(reply.body) : reply.body;
  const encoded = await encodeReply(reply.compression ?? 'api-object', ctx.get('Accept-Encoding'), body);
  ctx.status = reply.status ?? 200;
  for (const [k, v] of Object.entries(reply.headers ?? {})) ctx.set(k, v);
  if (encoded.vary) ctx.vary('Accept-Encoding');
  if (encoded.contentEncoding) ctx.set('Content-Encoding', encoded.contentEncoding);
  ctx.body = encoded.body; // Koa sets Content-Length from it (HEAD too: the length GET would send)
  ctx.set('Content-Type', reply.type); // as is: Koa's ctx.type would rewrite media type parameters
}

/** HTTP/2 streams a client may open at once on one connection (HTTP2MaxStreamsPerConnection of k8s.io/apiserver's RecommendedOptions for aggregated API servers). */
export const maxStreamsPerConnection = 1000;

export async function createApiserver(opts: ApiserverOptions): Promise<Apiserver> {
  const log = opts.log ?? logger('apiserver');
  const limits: ApiserverLimits = { ...defaultLimits, ...opts.limits };
  let ownCatalog = false;
  let catalog = opts.catalog;
  if (!catalog) {
    catalog = new Catalog(opts.store, { log, ...opts.catalogOptions });
    await catalog.start();
    ownCatalog = true;
  }
  const metrics = opts.metrics ?? new ApiserverMetrics();
  // One watch engine per server (one server per process): one poller whatever the number of watchers.
  // A Cluster object changed (synchro wrote its status, it was registered or removed), or a CRD: discovery follows at once.
  const followClusters = (changes: readonly Change[]) => {
    // (Not the other own kinds: synchro writes a MultiClusterService's status at every dispatch, which discovery does not show.)
    if (changes.some((c) => c.cluster === clusterObjectsCluster && c.resource === clusterResource)) catalog!.refreshSoon();
    // A CRD of a member changed: its printer columns, names and scope are read again.
    if (changes.some((c) => c.group === 'apiextensions.k8s.io' && c.resource === 'customresourcedefinitions')) catalog!.crdsChanged();
  };
  const reads = opts.reads ?? ReadPool.primaryOnly(opts.store);
  const hub = new WatchHub(opts.store, {
    registry: metrics.registry,
    log: log.child({ part: 'watch' }),
    onDispatched: followClusters,
    reads,
    ...opts.watch,
  });
  try {
    await hub.start();
  } catch (err) {
    if (ownCatalog) catalog.stop();
    throw err;
  }
  const openapi = new OpenAPIService(opts.store, { log: log.child({ part: 'openapi' }), ...opts.openapi });
  const rules = new RulesSource({
    ...opts.externalMetrics,
    log: log.child({ part: 'external-metrics' }),
    onLoad(ok, set) {
      metrics.externalRuleLoads.inc({ result: ok ? 'ok' : 'error' });
      metrics.externalRules.set({ state: 'valid' }, set.rules.size);
      metrics.externalRules.set({ state: 'invalid' }, set.invalid.size);
    },
  });
  rules.start();
  const deps: Deps = {
    store: opts.store,
    reads,
    catalog,
    log,
    limits,
    watch: hub,
    openapi,
    externalMetrics: { rules, metrics, authorizer: opts.secure?.authorizer },
    collections: { definitions: opts.collections ?? [...builtinCollections], authorizer: opts.secure?.authorizer },
    ...(opts.secure ? { authorizer: opts.secure.authorizer } : {}),
    memberNetworks: opts.memberNetworks ?? new MemberNetworks(),
    proxy: {
      members: new MemberPool(opts.proxy?.credentials ?? noMemberCredentials, log.child({ part: 'proxy' }), opts.proxy?.connect),
      consistency:
        opts.proxy?.consistency ??
        createWriteConsistency({
          store: opts.store,
          changes: hub,
          synced: syncedInCatalog(catalog),
          waitMs: limits.proxyWriteWaitMs,
          observe: (outcome, seconds) => metrics.proxyWriteWaits.observe({ outcome }, seconds),
        }),
      ...(opts.secure ? { authorizer: opts.secure.authorizer } : opts.proxy?.unauthenticatedUser ? { unauthenticatedUser: opts.proxy.unauthenticatedUser } : {}),
    },
  };
  const checks = { healthz: [pingCheck], livez: [pingCheck], readyz: [pingCheck, reads.hasStandbys ? readStorageCheck(reads) : storageCheck(opts.store), catalogCheck(catalog), ...(opts.readyChecks ?? [])] };
  if (reads.hasStandbys) metrics.followReads(reads);
  metrics.followMembers(opts.store);

  const app = new Koa();
  app.silent = true;
  app.on('error', (err: Error & { code?: string }) => {
    if (err.code === 'ECONNRESET' || err.code === 'EPIPE' || err.code === 'ERR_STREAM_PREMATURE_CLOSE') return;
    log.warn('response error', { err });
  });

  // Metrics and the request log (outermost: sees the final code).
  app.use(async (ctx, next) => {
    const started = process.hrtime.bigint();
    const kind = inflightKind(ctx.method, ctx.path, ctx.querystring);
    if (kind) metrics.inflight.inc({ request_kind: kind });
    try {
      await next();
    } finally {
      if (kind) metrics.inflight.dec({ request_kind: kind });
      const m = (ctx.state as { metric?: MetricLabels }).metric ?? { verb: 'other', group: '', resource: '' };
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      metrics.observe(m.verb, m.group, m.resource, ctx.status, seconds);
      log.debug('request', { method: ctx.method, url: ctx.url, code: ctx.status, ms: Math.round(seconds * 1000) });
    }
  });

  // Every error is a Status.
  app.use(async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      if (ctx.headerSent) {
        log.warn('error after the response started', { err: err as Error });
        ctx.res.destroy();
        return;
      }
      writeStatus(ctx, toStatus(err, log));
    }
  });

  // Each request's deadline, from its arrival (kube's timeout filter sits outside authentication too).
  app.use(withRequestDeadline(limits.requestTimeoutMs));

  // Authentication and authorization (health paths exempt).
  if (opts.secure) app.use(authMiddleware(opts.secure.authenticator, opts.secure.authorizer, log));

  // Writes in flight, each of which may hold a body and its decoding.
  app.use(limitWritesInFlight(limits.maxMutatingInFlight));

  // Bounds.
  app.use(async (ctx, next) => {
    if (Buffer.byteLength(ctx.url) > limits.maxUrlBytes) throw new StatusError('BadRequest', `request URL is too long (${Buffer.byteLength(ctx.url)} bytes; at most ${limits.maxUrlBytes})`);
    if (Number(ctx.get('Content-Length') || 0) > limits.maxBodyBytes) throw bodyTooLarge(ctx, limits.maxBodyBytes);
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD' && !isOwnWritePath(ctx.path) && !isResourcesPath(ctx.path)) throw readOnly(ctx.method);
    await next();
  });

  // A routed answer, within the request's deadline.
  const answer = async (ctx: Context, routed: Routed | Promise<Routed>): Promise<void> => {
    const r = await beforeDeadline(Promise.resolve(routed), requestDeadline(ctx));
    if ('watch' in r) return r.watch();
    if ('proxy' in r) return r.proxy();
    await writeReply(ctx, r.reply);
  };

  // The fixed paths (health, metrics, version, OpenAPI), then the resource URL space.
  app.use(fixedRoutes({ deps, checks, metrics, answer }));
  app.use((ctx) => answer(ctx, route(ctx, deps)));

  const sockets = new Set<Socket>();
  const streams = new UpgradeProxy(deps, opts.secure?.authenticator, { ...defaultStreamLimits, ...opts.streams }, metrics.registry);
  const handle: Apiserver = {
    app,
    deps,
    metrics,
    streams,
    async listen(host, port) {
      const maxHeaderSize = Math.max(16 * 1024, limits.maxUrlBytes + 8 * 1024);
      const tls = opts.secure?.tls;
      let server: Server | Http2SecureServer;
      if (tls) {
        const secure = createSecureServer(
          {
            ...tls.serverOptions(),
            allowHTTP1: true,
            settings: { maxConcurrentStreams: maxStreamsPerConnection, maxHeaderListSize: maxHeaderSize },
            // Data queued for a connection's streams counts against this; beyond it new streams
            // are refused. Each watcher's own queue is bounded (apiserver/watch/watcher.ts).
            maxSessionMemory: 256,
          },
          app.callback(),
        );
        tls.attach(secure);
        server = secure;
      } else {
        server = createServer(app.callback());
      }
      // HTTP/1.1 connections (the HTTP/2 server's HTTP/1.1 fallback reads them from it too).
      const http1 = server as Partial<Pick<Server, 'keepAliveTimeout' | 'headersTimeout' | 'requestTimeout'>> & { maxHeaderSize?: number };
      http1.maxHeaderSize = maxHeaderSize;
      http1.keepAliveTimeout = 65_000;
      http1.headersTimeout = 66_000;
      http1.requestTimeout = 0; // watches are long; other requests are bounded above
      // Connection upgrades (HTTP/1.1 only; the HTTP/2 server's HTTP/1.1 fallback emits them too): exec, attach, port-forward.
      server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => void streams.handle(req, socket, head));
      server.on('connection', (s: Socket) => {
        sockets.add(s);
        s.on('close', () => sockets.delete(s));
      });
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          resolve();
        });
      });
      handle.server = server;
      const addr = server.address() as AddressInfo;
      const shown = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
      return `${tls ? 'https' : 'http'}://${shown}:${addr.port}`;
    },
    async close() {
      if (ownCatalog) catalog.stop();
      rules.stop();
      deps.proxy.members.close();
      streams.closeAll();
      opts.secure?.tls.stop();
      await hub.stop(); // ends every watch stream cleanly (clients re-watch elsewhere)
      const server = handle.server;
      if (!server) return;
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      });
    },
  };
  return handle;
}
