// A simulated member cluster: one HTTP listener on 127.0.0.1 with its own store,
// resourceVersion counter, watch hub, faults and churn generator. Several per process.
// With `tls` it serves HTTPS as a kube-apiserver does: HTTP/2 and HTTP/1.1 on one port
// (ALPN h2, http/1.1; connection upgrades over HTTP/1.1), or HTTP/1.1 only.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createSecureServer, type Http2ServerRequest } from 'node:http2';
import { createServer as createHttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { StatusError } from '../../kube/status.ts';
import { Churn } from './churn.ts';
import { Controllers, type ControllerOptions } from './controllers.ts';
import { Crud } from './crud.ts';
import { Faults } from './faults.ts';
import { defaultMcsRelease, installMcsCRDs, type McsRelease } from './mcs-crds.ts';
import { installImportCRDs } from './import-crds.ts';
import { keepApiServices } from './apiservices.ts';
import { Registry, type AggregatedApi } from './resources.ts';
import { SimAuth } from './auth.ts';
import { handle, type SimContext } from './server.ts';
import { Store } from './store.ts';
import { handleUpgrade, SimStreams } from './streams/upgrade.ts';
import type { KObject } from './types.ts';
import { WatchHub } from './watch.ts';
import { loadWorkload, type WorkloadOptions } from './workload.ts';

export interface SimClusterOptions {
  name: string;
  /** Port on 127.0.0.1; 0 (default) picks a free one. */
  port?: number;
  host?: string;
  /** Events kept for watch resumption and paging; older rvs get 410 (default 10000). */
  historySize?: number;
  /** The first write gets initialRv + 1 (default 100). */
  initialRv?: number;
  /** Bookmark period for watches with allowWatchBookmarks (default 60 s). */
  bookmarkIntervalMs?: number;
  /** Watches without timeoutSeconds end after this long (default 1800 s). */
  defaultWatchTimeoutSeconds?: number;
  /** Wait for a future resourceVersion before answering 504 (default 3000 ms). */
  tooLargeWaitMs?: number;
  /** Load the demo workload (deployments, services, a CRD...) at start. */
  workload?: boolean | WorkloadOptions;
  /** Serve /openapi/v3 (default true); false: /openapi/v2 only, as a member without OpenAPI v3. */
  openapiV3?: boolean;
  /**
   * Run the controllers (default true): Deployments make ReplicaSets and pods, Services with a
   * selector get EndpointSlices. false: a static cluster, where nothing changes but what
   * clients write (the demo workload still gets its statuses and slices, once, at start).
   */
  controllers?: boolean | ControllerOptions;
  /** Install the MCS-API's ServiceExport and ServiceImport CRDs (multicluster.x-k8s.io): true is release v0.4.1 (v1alpha1). */
  mcsCRDs?: boolean | McsRelease;
  /** Install Cluster API's and Karmada's Cluster CRDs: a host cluster Panoptes imports clusters from. */
  importCRDs?: boolean;
  /**
   * APIs served behind the aggregator (an APIService with a service; the simulator serves their
   * resources itself): e.g. `panoptesApis` (apiservices.ts), a host cluster Panoptes is installed in.
   */
  aggregatedApis?: AggregatedApi[];
  /**
   * Serve HTTPS with this serving certificate: HTTP/2 (ALPN h2) and HTTP/1.1, or with
   * `http2: false` HTTP/1.1 only; `maxConcurrentStreams` is the HTTP/2 SETTINGS limit
   * (default 1000, as the generic apiserver's recommended options).
   */
  tls?: { key: string; cert: string; http2?: boolean; maxConcurrentStreams?: number };
}

export interface SimCluster {
  name: string;
  /** http://127.0.0.1:<port> (https:// with `tls`) */
  url: string;
  port: number;
  /** With `tls`: the ALPN protocol of each TLS connection accepted so far ('' for none), in order. */
  tlsConnections: string[];
  /** Every open client connection (its raw socket): tests cut or stall them. */
  sockets: ReadonlySet<Socket>;
  store: Store;
  registry: Registry;
  crud: Crud;
  hub: WatchHub;
  faults: Faults;
  churn: Churn;
  /** Bearer tokens it requires (none by default) and the tokens clients presented. */
  auth: SimAuth;
  /** The controllers (stopped in a static cluster): `await c.controllers.settle()` waits until every change so far is acted on. */
  controllers: Controllers;
  /** pods/log, exec, attach and portforward: container filesystems, the sessions open, the log pace (`logIntervalMs`). */
  streams: SimStreams;
  /**
   * Stores many objects without HTTP (benchmarks): `resource` is `pods`, `deployments.apps`
   * or `apps/deployments`. kind/apiVersion are filled in; each object gets its own rv.
   */
  bulkCreate(resource: string, objects: KObject[]): number;
  close(): Promise<void>;
}

/** The namespaces every new cluster has. */
const systemNamespaces = ['default', 'kube-node-lease', 'kube-public', 'kube-system'];

export async function startSimCluster(opts: SimClusterOptions): Promise<SimCluster> {
  const host = opts.host ?? '127.0.0.1';
  const registry = new Registry();
  const store = new Store({ historySize: opts.historySize, initialRv: opts.initialRv });
  const crud = new Crud(store, registry);
  const hub = new WatchHub(store, { bookmarkIntervalMs: opts.bookmarkIntervalMs });
  const churn = new Churn(crud);
  const controllers = new Controllers(crud, typeof opts.controllers === 'object' ? opts.controllers : {});
  const sockets = new Set<Socket>();
  let port = opts.port ?? 0;

  const tlsConnections: string[] = [];
  const server = listener(opts.tls);
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.on('secureConnection', (s: TLSSocket) => tlsConnections.push(s.alpnProtocol || ''));
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const onError = (err: Error) => reject(err);
      server.once('error', onError);
      server.listen(port, host, () => {
        server.off('error', onError);
        const addr = server.address();
        if (addr && typeof addr === 'object') port = addr.port;
        resolve();
      });
    });
  const stopListening = () =>
    new Promise<void>((resolve) => {
      if (!server.listening) return resolve();
      server.close(() => resolve());
      for (const s of sockets) s.destroy();
    });
  const faults = new Faults(store, hub, { stopListening, startListening: listen });
  const auth = new SimAuth();
  const streams = new SimStreams();

  const ctx: SimContext = {
    name: opts.name, store, registry, crud, hub, faults, churn, auth, controllers, streams,
    options: { defaultWatchTimeoutSeconds: opts.defaultWatchTimeoutSeconds ?? 1800, tooLargeWaitMs: opts.tooLargeWaitMs ?? 3000, openapiV3: opts.openapiV3 ?? true },
    address: () => `${host}:${port}`,
  };
  server.on('request', (req: IncomingMessage | Http2ServerRequest, res: ServerResponse) => void handle(ctx, asHttp1(req), res));
  server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => void handleUpgrade(ctx, streams, req, socket, head));

  const nsInfo = registry.lookup('', 'v1', 'namespaces')!;
  for (const name of systemNamespaces) crud.create(nsInfo, 'v1', undefined, { metadata: { name } });
  keepApiServices(store, registry);
  for (const api of opts.aggregatedApis ?? []) registry.addAggregated(api);
  if (opts.mcsCRDs) installMcsCRDs(crud, opts.mcsCRDs === true ? defaultMcsRelease : opts.mcsCRDs);
  if (opts.importCRDs) installImportCRDs(crud);
  if (opts.workload) loadWorkload(crud, { cluster: opts.name, ...(typeof opts.workload === 'object' ? opts.workload : {}) });
  if (opts.controllers !== false) {
    controllers.start();
    await controllers.settle();
  }

  await listen();

  const resolve = (resource: string) => {
    const [a, b] = resource.includes('/') ? resource.split('/') : [resource.split('.').slice(1).join('.'), resource.split('.')[0]];
    const info = registry.byId(`${a}/${b}`);
    if (!info) throw new StatusError('NotFound', `the server doesn't have a resource type "${resource}"`);
    return info;
  };

  return {
    name: opts.name,
    get url() {
      return `${opts.tls ? 'https' : 'http'}://${host}:${port}`;
    },
    get port() {
      return port;
    },
    tlsConnections,
    sockets,
    store, registry, crud, hub, faults, churn, auth, controllers, streams,
    bulkCreate(resource, objects) {
      const info = resolve(resource);
      const apiVersion = info.group ? `${info.group}/${info.versions[0]}` : info.versions[0];
      return store.bulkCreate(info.id, objects.map((o) => ({ ...o, apiVersion: o.apiVersion ?? apiVersion, kind: o.kind ?? info.kind })));
    },
    async close() {
      controllers.stop();
      churn.stop();
      faults.dispose();
      hub.dropAll(true);
      await stopListening();
      await streams.echo.close();
    },
  };
}

/** The listener: plain HTTP, HTTPS with HTTP/2 and HTTP/1.1 (as a kube-apiserver), or HTTPS with HTTP/1.1 only. */
function listener(tls: SimClusterOptions['tls']): Server {
  if (!tls) {
    const server = createServer();
    server.keepAliveTimeout = 30_000;
    return server;
  }
  if (tls.http2 === false) {
    const server = createHttpsServer({ key: tls.key, cert: tls.cert, ALPNProtocols: ['http/1.1'] });
    server.keepAliveTimeout = 30_000;
    return server;
  }
  // One Server-shaped event source: the handlers below take what HTTP/1.1 and the compatibility API share.
  return createSecureServer({ key: tls.key, cert: tls.cert, allowHTTP1: true, settings: { maxConcurrentStreams: tls.maxConcurrentStreams ?? 1000 } }) as unknown as Server;
}

/**
 * An HTTP/2 request as the handlers read an HTTP/1.1 one: the compatibility API has no
 * headersDistinct (impersonation reads it), so it is made from the headers.
 */
function asHttp1(req: IncomingMessage | Http2ServerRequest): IncomingMessage {
  if (!('stream' in req)) return req;
  const distinct: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(req.headers)) if (!k.startsWith(':') && v !== undefined) distinct[k] = Array.isArray(v) ? v : [v];
  Object.defineProperty(req, 'headersDistinct', { value: distinct });
  return req as unknown as IncomingMessage;
}

export interface SimClustersOptions extends Omit<SimClusterOptions, 'name' | 'port' | 'mcsCRDs'> {
  /** Cluster i listens on basePort + i; 0 or unset: ephemeral ports. */
  basePort?: number;
  /** The MCS-API CRDs: in every cluster (true, or a release), or only in the clusters named. */
  mcsCRDs?: boolean | McsRelease | string[];
  /** The release the named clusters get (default v0.4.1). */
  mcsRelease?: McsRelease;
}

/** Starts one simulated cluster per name (closes the started ones if one fails). */
export async function startSimClusters(names: string[], opts: SimClustersOptions = {}): Promise<SimCluster[]> {
  const { basePort, mcsCRDs, mcsRelease, ...rest } = opts;
  const crdsOf = (name: string): boolean | McsRelease | undefined => (Array.isArray(mcsCRDs) ? mcsCRDs.includes(name) && (mcsRelease ?? true) : mcsCRDs);
  const started: SimCluster[] = [];
  try {
    for (const [i, name] of names.entries()) {
      // A pod network of its own per cluster (10.244, 10.245, ...): their pods' addresses differ, as a multi-cluster network needs.
      const workload = rest.workload ? { ...(typeof rest.workload === 'object' ? rest.workload : {}), podNetwork: 244 + i } : rest.workload;
      started.push(await startSimCluster({ ...rest, ...(workload !== undefined ? { workload } : {}), name, port: basePort ? basePort + i : 0, mcsCRDs: crdsOf(name) }));
    }
  } catch (err) {
    await Promise.all(started.map((c) => c.close()));
    throw err;
  }
  return started;
}
