// Request routing of one simulated cluster: health, version, discovery, OpenAPI (openapi.ts), and the REST verbs
// on /api/v1/... and /apis/G/V/... (list, watch, get, create, update, patch, delete,
// deletecollection, status and scale subresources), answered as JSON, Table or
// PartialObjectMetadata as the Accept header asks (output.ts). /_sim/ goes to control.ts.
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { stringifyJson } from '../../kube/json-text.ts';
import { negotiateDiscovery } from '../../apiserver/endpoints/negotiate.ts';
import type { Verb } from '../../apiserver/endpoints/request.ts';
import { checkFieldSelector, matchesFields, parseFieldSelector } from '../../kube/fields.ts';
import { matchesLabels, parseLabelSelector } from '../../kube/labels.ts';
import { StatusError } from '../../kube/status.ts';
import { isNonResourcePath, type SimAuth, type SimUser } from './auth.ts';
import type { Churn } from './churn.ts';
import type { Controllers } from './controllers.ts';
import { handleControl } from './control.ts';
import { serveExtraApi } from './extra-apis.ts';
import type { Crud, DeleteOptions, WriteOptions } from './crud.ts';
import { aggregatedDiscovery, apiGroupDoc, apiGroupList, apiResourceList, apiVersions, versionInfo } from './discovery.ts';
import type { Faults } from './faults.ts';
import { readBody, sendError, sendJson, sendText } from './http.ts';
import { serveOpenAPI } from './openapi.ts';
import { listBody, negotiate, objectBody, watchLineEncoder, type Output } from './output.ts';
import { patchTypeOf } from './patch.ts';
import type { Registry, ResourceInfo } from './resources.ts';
import type { Store } from './store.ts';
import { serveLog } from './streams/logs.ts';
import type { SimStreams } from './streams/upgrade.ts';
import { isObject, type KObject } from './types.ts';
import type { WatchHub } from './watch.ts';

export interface ServerOptions {
  /** Watches without timeoutSeconds end after this long (kube-apiserver: 30 to 60 minutes). */
  defaultWatchTimeoutSeconds: number;
  /** How long a request for a future resourceVersion waits before 504 (kube-apiserver: 3 s). */
  tooLargeWaitMs: number;
  /** Whether /openapi/v3 is served (false: v2 only, as a member without OpenAPI v3). */
  openapiV3: boolean;
}

/** Everything a request handler of one cluster needs. */
export interface SimContext {
  name: string;
  store: Store;
  registry: Registry;
  crud: Crud;
  hub: WatchHub;
  faults: Faults;
  churn: Churn;
  controllers: Controllers;
  options: ServerOptions;
  auth: SimAuth;
  /** Streaming subresources' state: container filesystems, open exec/attach/portforward sessions, log pace. */
  streams: SimStreams;
  /** host:port, for /api's serverAddressByClientCIDRs. */
  address(): string;
}

const healthChecks = ['ping', 'log', 'etcd', 'informer-sync', 'poststarthook/start-apiextensions-controllers', 'shutdown'];

const notFoundPath = () => new StatusError('NotFound', 'the server could not find the requested resource');

export async function handle(ctx: SimContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  try {
    const url = new URL(req.url ?? '/', 'http://sim');
    if (url.pathname.startsWith('/_sim/')) return await handleControl(ctx, req, res, url);
    const user = ctx.auth.check(req);
    if (ctx.faults.unavailable) {
      throw new StatusError('ServiceUnavailable', 'the server is currently unable to handle the request (simulated outage)');
    }
    if (ctx.faults.latencyMs > 0) await new Promise((r) => setTimeout(r, ctx.faults.latencyMs));
    await route(ctx, req, res, url, user);
  } catch (err) {
    sendError(res, err);
  }
}

async function route(ctx: SimContext, req: IncomingMessage, res: ServerResponse, url: URL, user: SimUser | undefined): Promise<void> {
  const path = url.pathname.replace(/\/+$/, '') || '/';
  const method = req.method ?? 'GET';
  if (isNonResourcePath(path)) ctx.auth.authorizePath(user, method.toLowerCase(), path);
  const health = /^\/(healthz|livez|readyz)(\/[^/]+)?$/.exec(path);
  if (health) {
    if (health[2]) return sendText(res, 200, 'ok');
    if (url.searchParams.has('verbose')) {
      return sendText(res, 200, `${healthChecks.map((c) => `[+]${c} ok`).join('\n')}\n${health[1]} check passed\n`);
    }
    return sendText(res, 200, 'ok');
  }
  if (path === '/version') return sendJson(res, 200, versionInfo());
  if (serveOpenAPI(req, res, url, path, { store: ctx.store, registry: ctx.registry, openapiV3: ctx.options.openapiV3 })) return;
  const segs = path.split('/').filter(Boolean).map(decodeURIComponent);
  if (segs[0] === 'api' || segs[0] === 'apis') {
    const core = segs[0] === 'api';
    if (segs.length === 1 || (!core && segs.length === 2)) {
      if (method !== 'GET') throw new StatusError('MethodNotAllowed', `the server does not allow this method on the requested resource`);
      return discovery(ctx, req, res, core, segs[1]);
    }
    const group = core ? '' : segs[1];
    const version = core ? segs[1] : segs[2];
    const rest = segs.slice(core ? 2 : 3);
    if (!ctx.registry.hasGroupVersion(group, version)) {
      if (rest.length > 0 && (await serveExtraApi(ctx.store, ctx.auth, user, req, res, url, group, version, rest))) return;
      if (rest.length === 0) {
        const doc = apiResourceList(ctx.registry, group, version);
        if (doc) return sendJson(res, 200, doc);
      }
      throw notFoundPath();
    }
    if (rest.length === 0) {
      const doc = apiResourceList(ctx.registry, group, version);
      if (!doc) throw notFoundPath();
      negotiateDiscovery(req.headers.accept, false);
      return sendJson(res, 200, doc);
    }
    return resource(ctx, req, res, url, group, version, rest, user);
  }
  throw notFoundPath();
}

function discovery(ctx: SimContext, req: IncomingMessage, res: ServerResponse, core: boolean, group: string | undefined): void {
  const n = negotiateDiscovery(req.headers.accept, group === undefined);
  if (n.aggregated) {
    // As kube-apiserver's aggregated discovery: an ETag (the document's sha512), 304 to a request that holds it.
    const text = stringifyJson(aggregatedDiscovery(ctx.registry, core ? 'api' : 'apis', n.version));
    const etag = `"${createHash('sha512').update(text).digest('hex').toUpperCase()}"`;
    const headers = { ETag: etag, Vary: 'Accept', 'Cache-Control': 'public' };
    if (req.headers['if-none-match'] === etag) {
      res.writeHead(304, headers);
      res.end();
      return;
    }
    return sendJson(res, 200, text, n.contentType, headers);
  }
  if (core) return sendJson(res, 200, apiVersions(ctx.address()));
  if (group === undefined) return sendJson(res, 200, apiGroupList(ctx.registry));
  const doc = apiGroupDoc(ctx.registry, group);
  if (!doc) throw notFoundPath();
  sendJson(res, 200, doc);
}

interface Target {
  info: ResourceInfo;
  namespace?: string;
  name?: string;
  subresource?: string;
}

function parseTarget(ctx: SimContext, group: string, version: string, rest: string[]): Target {
  let namespace: string | undefined;
  let parts = rest;
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    const info = ctx.registry.lookup(group, version, rest[2]);
    if (info?.namespaced) {
      namespace = rest[1];
      parts = rest.slice(2);
    }
  }
  const info = ctx.registry.lookup(group, version, parts[0]);
  if (!info || parts.length > 3) throw notFoundPath();
  const t: Target = { info, namespace, name: parts[1], subresource: parts[2] };
  if (t.name !== undefined && info.namespaced && namespace === undefined) throw notFoundPath();
  const podStream = info.id === '/pods' && t.subresource !== undefined && ['log', 'exec', 'attach', 'portforward'].includes(t.subresource);
  if (t.subresource !== undefined && !podStream && !((t.subresource === 'status' && info.status) || (t.subresource === 'scale' && info.scale))) throw notFoundPath();
  return t;
}

function boolParam(url: URL, name: string): boolean {
  const v = url.searchParams.get(name);
  return v === 'true' || v === '1';
}

function fieldManager(req: IncomingMessage, url: URL): string | undefined {
  const fm = url.searchParams.get('fieldManager');
  if (fm) return fm;
  const ua = req.headers['user-agent'];
  return ua ? ua.split('/')[0] : undefined;
}

/** The verb kube's RequestInfo gives a resource request. */
function requestVerb(method: string, named: boolean, watch: boolean): string {
  switch (method) {
    case 'GET': return named ? 'get' : watch ? 'watch' : 'list';
    case 'POST': return 'create';
    case 'PUT': return 'update';
    case 'PATCH': return 'patch';
    case 'DELETE': return named ? 'delete' : 'deletecollection';
    default: return method.toLowerCase();
  }
}

async function resource(ctx: SimContext, req: IncomingMessage, res: ServerResponse, url: URL, group: string, version: string, rest: string[], user: SimUser | undefined): Promise<void> {
  const t = parseTarget(ctx, group, version, rest);
  const { info } = t;
  const method = req.method ?? 'GET';
  if (info.id === '/pods' && t.subresource !== undefined && t.subresource !== 'status') return podSubresource(ctx, req, res, url, t, user);
  const isWatch = t.name === undefined && method === 'GET' && boolParam(url, 'watch');
  ctx.auth.authorize(user, { verb: requestVerb(method, t.name !== undefined, isWatch), group, resource: info.resource, subresource: t.subresource, namespace: t.namespace, name: t.name });
  // One object back (get, create, update, patch, delete) or a list (list, deletecollection).
  const verb: Verb = isWatch ? 'watch' : t.name !== undefined || method === 'POST' ? 'get' : 'list';
  const out = negotiate(req.headers.accept, verb, url.searchParams.get('includeObject'), info, version, t.subresource === 'scale' ? 'scale' : undefined);
  const apiVersion = group ? `${group}/${version}` : version;
  const served = (o: KObject): KObject => (o.apiVersion === apiVersion ? o : { ...o, apiVersion });
  const fv = url.searchParams.get('fieldValidation');
  const opts: WriteOptions = {
    dryRun: url.searchParams.get('dryRun') === 'All', fieldManager: fieldManager(req, url),
    fieldValidation: fv === 'Ignore' || fv === 'Strict' ? fv : 'Warn', warnings: [],
  };
  const send = (code: number, o: KObject) => {
    // Unknown fields dropped under fieldValidation=Warn, as kube-apiserver reports them (RFC 7234 warn-code 299).
    if (opts.warnings?.length) res.setHeader('Warning', opts.warnings.map((w) => `299 - ${JSON.stringify(w)}`));
    sendJson(res, code, objectBody(out, o));
  };

  if (t.name === undefined) {
    if (method === 'GET') {
      if (isWatch) return watch(ctx, res, url, t, version, out);
      return list(ctx, res, url, t, apiVersion, out);
    }
    if (method === 'POST') {
      if (info.namespaced && t.namespace === undefined) throw notFoundPath();
      const created = ctx.crud.create(info, version, t.namespace, await readBody(req), opts);
      return send(201, served(created));
    }
    if (method === 'DELETE') {
      const match = selectorMatcher(url, info);
      const deleted: KObject[] = [];
      for (const o of ctx.store.list(info.id, { namespace: t.namespace, match }).items) {
        deleted.push(ctx.crud.delete(info, o.metadata.namespace, o.metadata.name!, opts).object);
      }
      return sendJson(res, 200, listBody(out, info.listKind, apiVersion, { resourceVersion: String(ctx.store.resourceVersion) }, deleted.map(served)));
    }
    throw new StatusError('MethodNotAllowed', `the server does not allow this method on the requested resource`);
  }

  const name = t.name;
  const scale = t.subresource === 'scale';
  const subresource = t.subresource === 'status' ? ('status' as const) : undefined;
  switch (method) {
    case 'GET':
      return send(200, scale ? ctx.crud.getScale(info, t.namespace, name) : served(ctx.crud.get(info, t.namespace, name)));
    case 'PUT': {
      const body = await readBody(req);
      return send(200, scale ? ctx.crud.updateScale(info, version, t.namespace, name, body, opts) : served(ctx.crud.update(info, version, t.namespace, name, body, { ...opts, subresource })));
    }
    case 'PATCH': {
      const type = patchTypeOf(req.headers['content-type']);
      if (!type) {
        throw new StatusError('UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml${info.crd ? '' : ', application/strategic-merge-patch+json'}`);
      }
      const body = await readBody(req);
      return send(200, scale ? ctx.crud.patchScale(info, version, t.namespace, name, type, body, opts) : served(ctx.crud.patch(info, version, t.namespace, name, type, body, { ...opts, subresource })));
    }
    case 'DELETE': {
      if (t.subresource) throw new StatusError('MethodNotAllowed', 'the server does not allow this method on the requested resource');
      const body = await readBody(req);
      const del: DeleteOptions = { ...opts };
      if (isObject(body)) {
        if (isObject(body.preconditions)) del.preconditions = body.preconditions as DeleteOptions['preconditions'];
        if (typeof body.propagationPolicy === 'string') del.propagationPolicy = body.propagationPolicy as DeleteOptions['propagationPolicy'];
        if (Array.isArray(body.dryRun) && body.dryRun.includes('All')) del.dryRun = true;
      }
      const pp = url.searchParams.get('propagationPolicy');
      if (pp) del.propagationPolicy = pp as DeleteOptions['propagationPolicy'];
      const result = ctx.crud.delete(info, t.namespace, name, del);
      if (!result.deleted || info.id === '/pods' || info.crd) return send(200, served(result.object));
      return send(200, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details: { ...ctx.crud.details(info, name, result.object.metadata.uid) } });
    }
    default:
      throw new StatusError('MethodNotAllowed', 'the server does not allow this method on the requested resource');
  }
}

function selectorMatcher(url: URL, info: ResourceInfo): ((o: KObject) => boolean) | undefined {
  const labels = parseLabelSelector(url.searchParams.get('labelSelector') ?? '');
  const fields = parseFieldSelector(url.searchParams.get('fieldSelector') ?? '');
  checkFieldSelector(info.group, info.resource, fields);
  if (labels.length === 0 && fields.length === 0) return undefined;
  return (o) => matchesLabels(labels, o.metadata.labels) && matchesFields(fields, info.group, info.resource, o);
}

function parseRv(text: string): number {
  if (!/^\d+$/.test(text)) throw new StatusError('BadRequest', `invalid resource version: ${JSON.stringify(text)}`);
  return Number(text);
}

/** Waits up to tooLargeWaitMs for a future rv, then 504 as kube-apiserver. */
async function awaitRv(ctx: SimContext, rv: number): Promise<void> {
  if (rv <= ctx.store.resourceVersion) return;
  if (await ctx.store.waitForRv(rv, ctx.options.tooLargeWaitMs)) return;
  throw new StatusError('Timeout', `Too large resource version: ${rv}, current: ${ctx.store.resourceVersion}`, {
    causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }],
    retryAfterSeconds: 1,
  });
}

async function list(ctx: SimContext, res: ServerResponse, url: URL, t: Target, apiVersion: string, out: Output): Promise<void> {
  const p = url.searchParams;
  const match = selectorMatcher(url, t.info);
  const rvText = p.get('resourceVersion') ?? '';
  const rvMatch = p.get('resourceVersionMatch') ?? '';
  const cont = p.get('continue') ?? '';
  const limitText = p.get('limit') ?? '';
  if (limitText !== '' && !/^\d+$/.test(limitText)) throw new StatusError('BadRequest', `invalid limit: ${JSON.stringify(limitText)}`);
  const limit = limitText === '' ? 0 : Number(limitText);
  if (rvMatch !== '' && rvMatch !== 'Exact' && rvMatch !== 'NotOlderThan') {
    throw new StatusError('Invalid', `resourceVersionMatch: Unsupported value: "${rvMatch}": supported values: "Exact", "NotOlderThan"`);
  }
  if (rvMatch !== '' && rvText === '') throw new StatusError('Invalid', 'resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided');
  if (rvMatch === 'Exact' && rvText === '0') throw new StatusError('Invalid', 'resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"');
  if (cont !== '' && rvText !== '' && rvText !== '0') throw new StatusError('BadRequest', 'specifying resource version is not allowed when using continue');
  if (cont !== '' && rvMatch !== '') throw new StatusError('Invalid', 'resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided');

  let atRv: number | undefined;
  if (rvText !== '' && rvText !== '0') {
    const rv = parseRv(rvText);
    await awaitRv(ctx, rv);
    // Exact, or legacy: a non-zero rv with a limit and no match reads that exact snapshot.
    if (rvMatch === 'Exact' || (rvMatch === '' && limit > 0)) atRv = rv;
  }
  const result = ctx.store.list(t.info.id, { namespace: t.namespace, match, limit, continue: cont || undefined, atRv });
  const metadata: Record<string, unknown> = { resourceVersion: String(result.resourceVersion) };
  if (result.continue) metadata.continue = result.continue;
  if (result.remainingItemCount !== undefined) metadata.remainingItemCount = result.remainingItemCount;
  const items = result.items.map((o) => (o.apiVersion === apiVersion ? o : { ...o, apiVersion }));
  sendJson(res, 200, listBody(out, t.info.listKind, apiVersion, metadata, items));
}

async function watch(ctx: SimContext, res: ServerResponse, url: URL, t: Target, version: string, out: Output): Promise<void> {
  const p = url.searchParams;
  const match = selectorMatcher(url, t.info) ?? (() => true);
  const rvText = p.get('resourceVersion') ?? '';
  const rvMatch = p.get('resourceVersionMatch') ?? '';
  const sendInitial = p.get('sendInitialEvents');
  const allowBookmarks = boolParam(url, 'allowWatchBookmarks');
  if (sendInitial !== null) {
    if (rvMatch !== 'NotOlderThan') throw new StatusError('Invalid', 'resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan');
    if (!allowBookmarks && sendInitial === 'true') throw new StatusError('Invalid', 'allowWatchBookmarks: Forbidden: sendInitialEvents requires setting allowWatchBookmarks to true');
  } else if (rvMatch !== '') {
    throw new StatusError('Invalid', 'resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided');
  }
  const timeoutText = p.get('timeoutSeconds');
  let timeoutSeconds = ctx.options.defaultWatchTimeoutSeconds;
  if (timeoutText !== null) {
    if (!/^\d+$/.test(timeoutText)) throw new StatusError('BadRequest', `invalid timeoutSeconds: ${JSON.stringify(timeoutText)}`);
    timeoutSeconds = Number(timeoutText);
  }
  let resourceVersion: number | undefined;
  if (rvText !== '' && rvText !== '0') {
    resourceVersion = parseRv(rvText);
    await awaitRv(ctx, resourceVersion);
  }
  ctx.hub.serve(res, {
    info: t.info, version, namespace: t.namespace, match, resourceVersion, allowBookmarks, timeoutSeconds,
    sendInitialEvents: sendInitial === 'true', encode: watchLineEncoder(out),
  });
}

/** pods/log (GET: a stream of text), and exec, attach, portforward without a connection upgrade (400, as kube-apiserver). */
async function podSubresource(ctx: SimContext, req: IncomingMessage, res: ServerResponse, url: URL, t: Target, user: SimUser | undefined): Promise<void> {
  const method = req.method ?? 'GET';
  const sub = t.subresource!;
  const attrs = { group: '', resource: 'pods', subresource: sub, namespace: t.namespace, name: t.name };
  if (sub === 'log') {
    if (method !== 'GET') throw new StatusError('MethodNotAllowed', 'the server does not allow this method on the requested resource');
    ctx.auth.authorize(user, { verb: 'get', ...attrs });
    return serveLog(ctx, req, res, url, t.namespace!, t.name!, { intervalMs: ctx.streams.logIntervalMs });
  }
  if (method !== 'GET' && method !== 'POST') throw new StatusError('MethodNotAllowed', 'the server does not allow this method on the requested resource');
  ctx.auth.authorize(user, { verb: 'create', ...attrs });
  throw new StatusError('BadRequest', 'Upgrade request required');
}
