// HTTP to one member cluster: connection settings from a kubeconfig context or inline
// credentials, JSON GETs with a timeout, and streaming GETs for watches. node:http(s) with a
// keep-alive agent, or for an https:// member that offers it in ALPN one HTTP/2 session per
// endpoint (member/http2.ts; --member-http2): the list and watch paths parse JSON themselves.
// Connection upgrades use the agent (HTTP/1.1) always. A connection with
// a network guard (clusters registered through the API) reaches no loopback, link-local or
// unspecified address outside the operator's allowance, however its name resolves
// (member/networks.ts). An answer that is not a success is reported by its HTTP status and
// Kubernetes reason only: nothing of the body of a server that may not be a kube-apiserver
// goes into an error, and no answer is read past its bound (member/answer-size.ts). Every
// credential a connection loads (token, token file, password, client key, a plugin's token)
// is registered with the redactor (lib/redact.ts).
//
// Writes (create, update, delete: synchro's multi-cluster Service dispatcher, as the holder of
// the member's lease) go through the same connection, TLS settings, credentials and network
// guard. Their errors are HttpErrors too: the HTTP status, the Status reason and, from a
// Kubernetes v1 Status body only, its message (clipped, redacted); nothing else of a body.
import { readFileSync } from 'node:fs';
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { dirname } from 'node:path';
import { encodePath, pathSegments } from '../kube/path-segments.ts';
import { redact, rememberSecrets } from '../lib/redact.ts';
import { maxAnswerBytes, maxErrorBodyBytes, readBounded } from './answer-size.ts';
import { h2Response, Http2Sessions, type Http2Options, type MemberResponse } from './http2.ts';
import { kubeconfigContext, rawContext, readKubeconfig } from './kubeconfig.ts';
import { allowHint, guardedLookup, MemberNetworks, memberNetworksFlag, RefusedAddressError, type Resolve } from './networks.ts';

/** How to reach a cluster: a kubeconfig context, or inline connection settings. */
export interface ClusterConnection {
  kubeconfig?: string;
  context?: string;
  server?: string;
  certificateAuthority?: string;
  certificateAuthorityData?: string;
  token?: string;
  tokenFile?: string;
  clientCertificate?: string;
  clientCertificateData?: string;
  clientKey?: string;
  clientKeyData?: string;
  insecureSkipTLSVerify?: boolean;
  tlsServerName?: string;
  /**
   * Set for clusters registered through the API: the networks (CIDRs) the operator allows
   * although they are refused by default; every other loopback, link-local or unspecified
   * address is refused, and plain http:// with a token reaches only these.
   */
  networkGuard?: { allow: string[] };
}

/** A non-2xx answer, with the Kubernetes Status reason (and message) when the body was a v1 Status. */
export class HttpError extends Error {
  override name = 'HttpError';
  constructor(
    readonly status: number,
    message: string,
    readonly reason?: string,
    /** The v1 Status's own message (clipped, redacted): kept apart from `message`, for the writers that report it. */
    readonly statusMessage?: string,
  ) {
    super(message);
  }
}

/** A 410 Expired: the resourceVersion or continue token is older than the cluster keeps. */
export const isExpired = (err: unknown): boolean => err instanceof HttpError && (err.status === 410 || err.reason === 'Expired' || err.reason === 'Gone');

export interface RequestOptions {
  /** Whole-request timeout for get(); time to response headers for stream(). */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** The answer of a conditional GET: the document, or that the one whose ETag was given still stands (304). */
export type ConditionalAnswer<T> = { notModified: true } | { notModified: false; body: T; contentType: string; etag?: string };

export interface ConditionalOptions extends RequestOptions {
  /** The Accept header (default application/json). */
  accept?: string;
  /** The ETag of the copy held: sent as If-None-Match. */
  etag?: string;
}

export interface ClusterClient {
  readonly server: string;
  /** The name the server's certificate is verified for, when not the server's host (tls-server-name). */
  readonly tlsServerName?: string;
  /** What is weak about the connection (plain HTTP), for the log and the cluster's status. */
  readonly warnings: readonly string[];
  get<T = unknown>(path: string, opts?: RequestOptions): Promise<T>;
  /** A GET with an Accept of the caller's and If-None-Match (kube's aggregated discovery answers 304 to a current ETag). */
  getConditional<T = unknown>(path: string, opts?: ConditionalOptions): Promise<ConditionalAnswer<T>>;
  /** Starts a streaming GET; resolves to the 200 response (the caller reads it), rejects on other codes. */
  stream(path: string, opts?: RequestOptions): Promise<MemberResponse>;
  close(): void;
}

export interface WriteOptions extends RequestOptions {
  /** kube's `fieldManager` query parameter (the writer's name in managedFields). */
  fieldManager?: string;
}

/** DeleteOptions.preconditions: the delete happens only if the object still has this uid and resourceVersion (409 Conflict otherwise). */
export interface Preconditions {
  uid?: string;
  resourceVersion?: string;
}

/** A member connection that also writes: POST, PUT and DELETE as kube-apiserver takes them. */
export interface WritableClusterClient extends ClusterClient {
  /** POST `path` (a collection): the created object (409 AlreadyExists, 404 for a missing namespace, 422 Invalid: HttpError). */
  create<T = unknown>(path: string, body: unknown, opts?: WriteOptions): Promise<T>;
  /** PUT `path` (an object, or its status): optimistic when the body carries metadata.resourceVersion (409 Conflict on a stale one). */
  update<T = unknown>(path: string, body: unknown, opts?: WriteOptions): Promise<T>;
  /** DELETE `path` with DeleteOptions (preconditions): the answer, the object or a Status (404 NotFound when already gone: HttpError). */
  delete<T = unknown>(path: string, opts?: WriteOptions & { preconditions?: Preconditions }): Promise<T>;
}

interface Settings {
  server: URL;
  tls: https.AgentOptions;
  /** Headers for the next request (tokens from exec plugins and token files are refreshed). */
  headers: () => Promise<Record<string, string>>;
  warnings: string[];
}

const plainHttp = (server: URL, credentials: string) =>
  `server ${server.origin} is plain HTTP: the connection is neither encrypted nor authenticated (${credentials}); use https:// for anything but a local test cluster`;

/**
 * A token file's content, read again once a minute as client-go does (projected tokens
 * rotate); `readNow` reads it at once (a missing file fails here), otherwise at first use.
 */
function rotatingToken(file: string, readNow: boolean): () => string {
  const read = () => {
    const t = readFileSync(file, 'utf8').trim();
    rememberSecrets(t);
    return t;
  };
  let token = readNow ? read() : '';
  let readAt = readNow ? Date.now() : 0;
  return () => {
    if (Date.now() - readAt > 60_000) {
      token = read();
      readAt = Date.now();
    }
    return token;
  };
}

function readMaybe(file?: string, data?: string): Buffer | undefined {
  if (file) return readFileSync(file);
  if (data) return Buffer.from(data, 'base64');
  return undefined;
}

async function fromKubeconfig(c: ClusterConnection): Promise<Settings> {
  const kc = readKubeconfig(c.kubeconfig!);
  const { context, cluster, user } = kubeconfigContext(kc, c.context);
  rememberSecrets(user?.token, user?.password, user?.keyData);
  const server = new URL(cluster.server);
  if (server.protocol === 'http:') {
    // As kubectl: client-go's clientcmd reads a context's credentials and TLS settings only for
    // an https server ("only try to read the auth information if we are secure"); impersonation
    // applies either way. (@kubernetes/client-node's KubeConfig refuses http:// unless
    // insecure-skip-tls-verify is set, which is not a kubeconfig rule.)
    const headers: Record<string, string> = user?.impersonateUser ? { 'Impersonate-User': user.impersonateUser } : {};
    const hasCredentials = Boolean(user && (user.token || user.tokenFile || user.username || user.plugin || user.certData || user.certFile));
    return {
      server,
      tls: {},
      headers: async () => headers,
      warnings: [plainHttp(server, hasCredentials ? `the credentials of user ${JSON.stringify(user!.name)} are not sent, as kubectl does not send them either` : 'no credentials')],
    };
  }
  const tls: https.AgentOptions = {
    ca: readMaybe(cluster.caFile, cluster.caData),
    ...(user ? { cert: readMaybe(user.certFile, user.certData), key: readMaybe(user.keyFile, user.keyData) } : {}),
  };
  if (cluster.skipTLSVerify) tls.rejectUnauthorized = false;
  if (cluster.tlsServerName) tls.servername = cluster.tlsServerName;
  if (user?.plugin) return { server, warnings: [], ...(await pluginSettings(c.kubeconfig!, context, tls)) };
  const fixed: Record<string, string> = {};
  if (user?.impersonateUser) fixed['Impersonate-User'] = user.impersonateUser;
  if (user?.username) fixed.Authorization = `Basic ${Buffer.from(`${user.username}:${user.password ?? ''}`).toString('base64')}`;
  if (user?.token) fixed.Authorization = `Bearer ${user.token}`;
  const tokenFile = user?.token ? undefined : user?.tokenFile;
  const fileToken = tokenFile ? rotatingToken(tokenFile, true) : undefined;
  return {
    server,
    tls,
    warnings: [],
    headers: async () => {
      if (!fileToken) return fixed;
      const token = fileToken();
      return { ...fixed, ...(token ? { Authorization: `Bearer ${token}` } : {}) };
    },
  };
}

/**
 * Credentials from an exec plugin or auth provider, through @kubernetes/client-node (loaded
 * only here): a client certificate the plugin gives at start, headers fresh for each request.
 */
async function pluginSettings(file: string, context: string, tls: https.AgentOptions): Promise<Pick<Settings, 'tls' | 'headers'>> {
  const { KubeConfig } = await import('@kubernetes/client-node');
  const kc = new KubeConfig();
  // Only this context, its cluster and its user: KubeConfig reads every user's token file
  // at load, relative to the working directory.
  kc.loadFromString(JSON.stringify(rawContext(file, context)));
  kc.makePathsAbsolute(dirname(file));
  const toHeaders = (o: https.RequestOptions): Record<string, string> => {
    const h: Record<string, string> = {};
    for (const [k, v] of Object.entries(o.headers ?? {})) if (v !== undefined) h[k] = String(v);
    if (o.auth) h.Authorization = `Basic ${Buffer.from(o.auth).toString('base64')}`;
    return h;
  };
  const first: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(first);
  return {
    tls: { ...tls, ...(first.cert ? { cert: first.cert } : {}), ...(first.key ? { key: first.key } : {}) },
    headers: async () => {
      const o: https.RequestOptions = {};
      await kc.applyToHTTPSOptions(o);
      const h = toHeaders(o);
      rememberSecrets(h.Authorization?.replace(/^\S+\s+/, ''));
      return h;
    },
  };
}

function fromInline(c: ClusterConnection): Settings {
  rememberSecrets(c.token, c.clientKeyData);
  const tls: https.AgentOptions = {
    ca: readMaybe(c.certificateAuthority, c.certificateAuthorityData),
    cert: readMaybe(c.clientCertificate, c.clientCertificateData),
    key: readMaybe(c.clientKey, c.clientKeyData),
  };
  if (c.insecureSkipTLSVerify) tls.rejectUnauthorized = false;
  if (c.tlsServerName) tls.servername = c.tlsServerName;
  const fileToken = c.tokenFile ? rotatingToken(c.tokenFile, false) : undefined;
  const server = new URL(c.server!);
  const credentials = c.token || c.tokenFile ? 'the token is sent in clear text' : 'no credentials';
  return {
    server,
    tls,
    warnings: server.protocol === 'http:' ? [plainHttp(server, credentials)] : [],
    headers: async (): Promise<Record<string, string>> => {
      const token = fileToken ? fileToken() : c.token;
      return token ? { Authorization: `Bearer ${token}` } : {};
    },
  };
}

/** The longest v1 Status message an HttpError keeps (kube's own are a line or two). */
const maxStatusMessage = 512;

/**
 * The error of a non-success answer: its HTTP status, and the reason of a Kubernetes v1 Status
 * body (a CamelCase word such as Forbidden). Nothing else of the body goes into the message: a
 * server that is not a kube-apiserver (a metadata service, any internal service a Cluster's
 * server points at) must not have its answer copied into a status anyone who reads Clusters
 * sees. A v1 Status's own message (a kube-apiserver's answer, e.g. why a write was refused) is
 * kept apart in `statusMessage`: one line, control characters dropped, clipped and redacted.
 */
function statusMessage(status: number, body: string): HttpError {
  let reason: string | undefined;
  let message: string | undefined;
  try {
    const s = JSON.parse(body) as { kind?: unknown; apiVersion?: unknown; reason?: unknown; message?: unknown };
    if (s.kind === 'Status' && s.apiVersion === 'v1') {
      if (typeof s.reason === 'string' && /^[A-Z][A-Za-z]{0,63}$/.test(s.reason)) reason = s.reason;
      if (typeof s.message === 'string' && s.message !== '') {
        const line = s.message.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, ' ').replace(/ {2,}/g, ' ').trim();
        message = redact(line.length > maxStatusMessage ? `${line.slice(0, maxStatusMessage)}...` : line);
      }
    }
  } catch {
    // not JSON
  }
  return new HttpError(status, reason ? `HTTP ${status} ${reason}` : `HTTP ${status}`, reason, message);
}

/** The guard of a connection: refuses its server now when it is an address, and checks every resolved address when it is a name. */
function guard(c: ClusterConnection, server: URL, resolve: ConnectOptions['resolve']): http.AgentOptions {
  if (!c.networkGuard) return {};
  const networks = new MemberNetworks(c.networkGuard.allow);
  const onlyAllowed = server.protocol === 'http:' && Boolean(c.token || c.tokenFile);
  const refused = networks.hostRefused(server.hostname);
  if (refused) throw new RefusedAddressError(`server ${server.host}: ${refused}: ${allowHint}`);
  const literal = /^\[.*\]$|^[\d.]+$/.test(server.hostname);
  if (onlyAllowed && literal && !networks.hostAllowed(server.hostname)) {
    throw new RefusedAddressError(`server ${server.host}: plain http:// with a token reaches only networks allowed with ${memberNetworksFlag}`);
  }
  return { lookup: guardedLookup(networks, { onlyAllowed, ...(resolve ? { resolve } : {}) }) };
}

export interface ConnectOptions {
  /** The resolver behind a guarded connection's lookup (tests give their own). */
  resolve?: Resolve;
  /**
   * HTTP/2 to https:// members that offer it in ALPN (default: memberHttp2Default); false:
   * HTTP/1.1 only. An object sets the PING health check's timings (tests).
   */
  http2?: boolean | Http2Options;
}

/** Whether member connections try HTTP/2 unless told otherwise (--member-http2). */
export const memberHttp2Default = true;

/**
 * What opening a request to a member takes: its server, the pooled agent (TLS settings and
 * network guard), the HTTP/2 sessions when the member may speak h2, the path prefix of the
 * server URL, and the credential headers of the next request (refreshed tokens). Used by
 * connectCluster and by the apiserver's proxy; requests go through send(), connection
 * upgrades (HTTP/1.1 only) through `transport` and `agent`.
 */
export interface MemberEndpoint {
  server: URL;
  /** The server URL's path, without a trailing slash ('' for most). */
  base: string;
  agent: http.Agent;
  transport: typeof http | typeof https;
  /** Set for https:// members when HTTP/2 is on: the sessions of this endpoint (this credential set). */
  http2?: Http2Sessions;
  headers: () => Promise<Record<string, string>>;
  warnings: string[];
  tlsServerName?: string;
  /** Replaced credentials: no new connections; idle ones close now, busy ones when their requests end. */
  retire(): void;
  /** Every connection ends now. */
  close(): void;
}

/**
 * The request path of a Kubernetes path on a member: the server URL's own path (a gateway's
 * prefix: Rancher's `/k8s/clusters/<id>`, a Karmada proxy's) then each segment, checked by the
 * one path-segment rule and percent-encoded (kube/path-segments.ts), then the query as given
 * (without `?`). Built from segments, never by resolving a concatenated string as a URL, so
 * no segment can climb out of the prefix the member's credentials were given for.
 */
export function memberRequestPath(e: Pick<MemberEndpoint, 'base'>, segments: readonly string[], query = ''): string {
  return `${e.base}${encodePath(segments)}${query ? `?${query}` : ''}`;
}

/** memberRequestPath of a Kubernetes path given as text (`/api/v1/pods?limit=500`): its segments read by the one rule (each decoded once and checked), then built again below the member's base. */
export function memberRequestPathOf(e: Pick<MemberEndpoint, 'base'>, path: string): string {
  const q = path.indexOf('?');
  return memberRequestPath(e, pathSegments(q < 0 ? path : path.slice(0, q)), q < 0 ? '' : path.slice(q + 1));
}

/** One request to a member: its answer (any status), and a way to end it (timeout, abort). */
export interface MemberCall {
  response: Promise<MemberResponse>;
  destroy(err: Error): void;
}

/**
 * Sends a request over the endpoint: an HTTP/2 stream when the member speaks h2, else an
 * HTTP/1.1 request on the keep-alive agent. `path` includes the endpoint's base and query.
 */
export function send(e: MemberEndpoint, r: { method: string; path: string; headers: Record<string, string | string[] | number>; body?: Buffer | string }): MemberCall {
  let ended: Error | undefined;
  let current: { destroy(err?: Error): void } | undefined;
  let abort: (err: Error) => void = () => undefined;
  const aborted = new Promise<never>((_, reject) => (abort = reject));
  const work = (async (): Promise<MemberResponse> => {
    const stream = e.http2 && !e.http2.onlyHttp1 ? await e.http2.request({ method: r.method, path: r.path, headers: r.headers }) : undefined;
    if (ended) {
      stream?.destroy();
      throw ended;
    }
    if (stream) {
      current = stream;
      const answer = h2Response(stream);
      stream.end(r.body);
      return answer;
    }
    const req = e.transport.request({ protocol: e.server.protocol, hostname: e.server.hostname, port: e.server.port, path: r.path, method: r.method, headers: r.headers, agent: e.agent });
    current = req;
    return new Promise<IncomingMessage>((resolve, reject) => {
      req.once('response', resolve);
      req.once('error', reject);
      req.end(r.body);
    });
  })();
  work.catch(() => undefined);
  aborted.catch(() => undefined);
  return {
    response: Promise.race([work, aborted]),
    destroy(err) {
      ended ??= err;
      abort(err);
      current?.destroy(err);
    },
  };
}

/** The endpoint of a cluster; throws when its settings cannot be loaded (bad kubeconfig, missing files) or its guard refuses the server. */
export async function memberEndpoint(c: ClusterConnection, opts: ConnectOptions = {}): Promise<MemberEndpoint> {
  const s = c.kubeconfig ? await fromKubeconfig(c) : fromInline(c);
  const secure = s.server.protocol === 'https:';
  if (!secure && s.server.protocol !== 'http:') throw new Error(`server ${s.server.href}: only http:// and https:// are supported`);
  const guarded = guard(c, s.server, opts.resolve);
  const agent = secure
    ? new https.Agent({ ...s.tls, ...guarded, keepAlive: true, maxSockets: Infinity, maxFreeSockets: 16 })
    : new http.Agent({ ...guarded, keepAlive: true, maxSockets: Infinity, maxFreeSockets: 16 });
  const h2 = opts.http2 ?? memberHttp2Default;
  // The same TLS options and guarded lookup as the agent's sockets.
  const http2 = secure && h2 !== false ? new Http2Sessions(s.server, s.tls, guarded.lookup, typeof h2 === 'object' ? h2 : {}) : undefined;
  return {
    server: s.server,
    base: s.server.pathname.replace(/\/+$/, ''),
    agent,
    transport: secure ? https : http,
    ...(http2 ? { http2 } : {}),
    headers: s.headers,
    warnings: s.warnings,
    ...(secure && typeof s.tls.servername === 'string' ? { tlsServerName: s.tls.servername } : {}),
    retire() {
      http2?.retire();
      agent.on('free', (socket: { destroy(): void }) => socket.destroy());
      for (const list of Object.values(agent.freeSockets)) for (const socket of list ?? []) socket.destroy();
    },
    close() {
      http2?.destroy();
      agent.destroy();
    },
  };
}

/** Builds a client for a cluster; throws when its settings cannot be loaded (bad kubeconfig, missing files) or its guard refuses the server. */
export async function connectCluster(c: ClusterConnection, opts: ConnectOptions = {}): Promise<WritableClusterClient> {
  const e = await memberEndpoint(c, opts);
  const s = { server: e.server, headers: e.headers, warnings: e.warnings };
  const request = async (path: string, opts: RequestOptions, method = 'GET', body?: string, extra: Record<string, string> = {}): Promise<MemberResponse> => {
    const headers: Record<string, string | number> = { Accept: 'application/json', 'User-Agent': 'panoptes-synchro', ...extra, ...(await s.headers()) };
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      headers['Content-Length'] = Buffer.byteLength(body);
    }
    if (opts.signal?.aborted) throw new Error('aborted');
    // Synchro's paths carry names a member gave (resources, OpenAPI URLs): read by the one segment rule, so none leaves the server's own path prefix.
    const call = send(e, { method, path: memberRequestPathOf(e, path), headers, ...(body !== undefined ? { body } : {}) });
    const timer = opts.timeoutMs ? setTimeout(() => call.destroy(new Error(`no answer within ${opts.timeoutMs} ms`)), opts.timeoutMs) : undefined;
    const onAbort = () => call.destroy(new Error('aborted'));
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const res = await call.response;
      res.once('close', () => opts.signal?.removeEventListener('abort', onAbort));
      return res;
    } catch (err) {
      opts.signal?.removeEventListener('abort', onAbort);
      throw err;
    } finally {
      clearTimeout(timer);
    }
  };

  /** The body of `res` as text: a success's at most maxAnswerBytes (else AnswerTooLargeError), an error's first maxErrorBodyBytes. */
  const readBody = async (res: MemberResponse, timeoutMs?: number): Promise<string> => {
    const timer = timeoutMs ? setTimeout(() => res.destroy(new Error(`body not complete within ${timeoutMs} ms`)), timeoutMs) : undefined;
    const ok = (res.statusCode ?? 0) >= 200 && (res.statusCode ?? 0) < 300;
    try {
      return (await readBounded(res, ok ? maxAnswerBytes : maxErrorBodyBytes, { truncate: !ok })).toString('utf8');
    } finally {
      clearTimeout(timer);
    }
  };

  /** One request with a JSON answer: the parsed body of a 2xx (with its headers), an HttpError otherwise; a 304 when `notModified` is allowed. */
  const answer = async <T>(method: string, path: string, opts: RequestOptions, body?: unknown, extra?: Record<string, string>): Promise<ConditionalAnswer<T>> => {
    const started = Date.now();
    const res = await request(path, opts, method, body === undefined ? undefined : JSON.stringify(body), extra);
    const text = await readBody(res, opts.timeoutMs ? Math.max(1, opts.timeoutMs - (Date.now() - started)) : undefined);
    const status = res.statusCode ?? 0;
    if (status === 304 && extra?.['If-None-Match'] !== undefined) return { notModified: true };
    if (status < 200 || status >= 300) throw statusMessage(status, text);
    let parsed: T;
    try {
      parsed = JSON.parse(text) as T;
    } catch {
      throw new Error(`${method} ${path}: the answer is not JSON`);
    }
    const etag = res.headers.etag;
    return { notModified: false, body: parsed, contentType: String(res.headers['content-type'] ?? ''), ...(typeof etag === 'string' ? { etag } : {}) };
  };
  const exchange = async <T>(method: string, path: string, opts: RequestOptions, body?: unknown): Promise<T> => {
    const a = await answer<T>(method, path, opts, body);
    if (a.notModified) throw new Error(`${method} ${path}: 304 to a request that was not conditional`);
    return a.body;
  };
  const withManager = (path: string, opts: WriteOptions) => (opts.fieldManager ? `${path}${path.includes('?') ? '&' : '?'}fieldManager=${encodeURIComponent(opts.fieldManager)}` : path);

  return {
    server: s.server.href,
    ...(e.tlsServerName !== undefined ? { tlsServerName: e.tlsServerName } : {}),
    warnings: s.warnings,
    get<T>(path: string, opts: RequestOptions = {}): Promise<T> {
      return exchange<T>('GET', path, opts);
    },
    getConditional<T>(path: string, opts: ConditionalOptions = {}): Promise<ConditionalAnswer<T>> {
      const extra: Record<string, string> = {};
      if (opts.accept !== undefined) extra.Accept = opts.accept;
      if (opts.etag !== undefined) extra['If-None-Match'] = opts.etag;
      return answer<T>('GET', path, opts, undefined, extra);
    },
    create<T>(path: string, body: unknown, opts: WriteOptions = {}): Promise<T> {
      return exchange<T>('POST', withManager(path, opts), opts, body);
    },
    update<T>(path: string, body: unknown, opts: WriteOptions = {}): Promise<T> {
      return exchange<T>('PUT', withManager(path, opts), opts, body);
    },
    delete<T>(path: string, opts: WriteOptions & { preconditions?: Preconditions } = {}): Promise<T> {
      const options = { apiVersion: 'v1', kind: 'DeleteOptions', ...(opts.preconditions ? { preconditions: opts.preconditions } : {}) };
      return exchange<T>('DELETE', path, opts, options);
    },
    async stream(path: string, opts: RequestOptions = {}): Promise<MemberResponse> {
      const res = await request(path, opts);
      const status = res.statusCode ?? 0;
      if (status !== 200) throw statusMessage(status, await readBody(res, 5000));
      return res;
    },
    close() {
      e.close();
    },
  };
}

/** A short description of a connection error (ECONNREFUSED 127.0.0.1:6443, HTTP 503 ...). */
export function describeError(err: unknown): string {
  const e = err as NodeJS.ErrnoException & { address?: string; port?: number };
  if (e && e.code && typeof e.code === 'string') return `${e.code}${e.address ? ` ${e.address}${e.port ? `:${e.port}` : ''}` : ''}: ${e.message}`;
  return e instanceof Error ? e.message : String(err);
}
