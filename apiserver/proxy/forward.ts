// Forwarding one request to a member cluster as the requesting user (the one place proxied
// requests go through): who the user is (authenticated, or the development mode's named
// user; never Panoptes itself), Panoptes' own authorization on clusters/proxy, the member's
// endpoint from the pool (503 + Retry-After when it is away), the headers (impersonation,
// nothing of the client's credentials), then:
//   - reads (GET, HEAD): the member's answer streamed to the client as it comes, never
//     buffered; a client that goes away aborts the member request;
//   - writes: the body (bounded as every write's) through the resourceVersion translation,
//     the answer of a success through read-your-writes (consistency.ts).
// A member's 403 for the impersonation itself becomes a 403 naming the missing permission.
//
// Timeouts as kube-apiserver's: long-running requests (logs, watches; kube's
// --long-running-request-regexp covers log, watch, exec, attach, portforward, proxy) have
// none; every other request ends with 504 after the request timeout (60 s by default).
import type { Context } from 'koa';
import { StatusError } from '../../kube/status.ts';
import type { AuthState } from '../auth/middleware.ts';
import type { UserInfo } from '../auth/authn.ts';
import type { ResourceAttributes } from '../auth/attributes.ts';
import type { Deps } from '../endpoints/deps.ts';
import { warningValue } from '../endpoints/warnings.ts';
import { requestDeadline } from '../endpoints/request-deadline.ts';
import { readBody } from '../endpoints/write-request.ts';
import type { ProxiedWrite } from './consistency.ts';
import { readBounded } from '../../member/answer-size.ts';
import { memberRequest } from './member-request.ts';
import { dryRunOf } from './write-consistency.ts';
import { memberUnavailable } from './members.ts';

/** One request to forward: the member, the request as kube's RequestInfo reads it, and the member's path with the query. */
export interface ProxyRequest {
  cluster: string;
  attrs: ResourceAttributes;
  /** The Kubernetes path's segments (`api`, `v1`, ...), decoded and checked by the route (kube/path-segments.ts). */
  segments: readonly string[];
  /** The query as received, without `?`. */
  query: string;
}

/** The largest answer to a write that is read whole (a deletecollection's list may be big). */
const maxWriteAnswerBytes = 64 * 1024 * 1024;
/** The largest error answer read whole (a Status is a few hundred bytes). */
const maxErrorAnswerBytes = 1024 * 1024;

/** Response headers not passed back: hop-by-hop, and what the answer's own framing sets. */
const droppedResponseHeaders = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-authenticate', 'proxy-connection', 'te', 'trailer', 'content-length', 'set-cookie']);

/** kube's long-running requests (k8s.io/apiserver DefaultLongRunningRequestRE and LongRunningRequestCheck): no request timeout. */
export function isLongRunning(a: ResourceAttributes): boolean {
  return a.verb === 'watch' || (a.subresource !== undefined && ['log', 'exec', 'attach', 'portforward', 'proxy'].includes(a.subresource));
}

/** The user a proxied request goes as: the authenticated one, or in development mode the one the operator named; else 403. */
export function proxyUser(ctx: Context, deps: Deps): UserInfo {
  return proxyUserOf((ctx.state as AuthState).user, deps);
}

/** proxyUser for a request outside Koa (a connection upgrade): `authenticated` is who the server authenticated, if anyone. */
export function proxyUserOf(authenticated: UserInfo | undefined, deps: Deps): UserInfo {
  const user = authenticated ?? deps.proxy.unauthenticatedUser;
  if (!user) {
    throw new StatusError(
      'Forbidden',
      'forbidden: the proxy to member clusters forwards requests as the requesting user, and this server authenticates nobody (development mode); start it with --insecure-proxy-user to name the user members see, or serve with authentication',
      {},
    );
  }
  return user;
}

/** The Status of a member's 403 refusing the impersonation: names the permission Panoptes' identity lacks there. */
function impersonationRefused(cluster: string, user: UserInfo, memberMessage: string): StatusError {
  return new StatusError(
    'Forbidden',
    `cluster ${JSON.stringify(cluster)} refuses to let Panoptes act as user ${JSON.stringify(user.name)}: Panoptes' identity there needs the verb impersonate on users, groups, uids and userextras (the role in manifests/member-cluster/); the member said: ${memberMessage}`,
    { name: cluster, group: 'panoptes.io', kind: 'clusters' },
  );
}

const isJson = (contentType: string | undefined) => /^application\/json\b/i.test(contentType ?? '');
const isReview = (a: ResourceAttributes) => a.group === 'authorization.k8s.io' || a.group === 'authentication.k8s.io';

/** A v1 Status's message when `body` is one (else undefined). */
function statusMessage(body: Buffer): string | undefined {
  try {
    const s = JSON.parse(body.toString('utf8')) as { kind?: unknown; message?: unknown };
    return s.kind === 'Status' && typeof s.message === 'string' ? s.message : undefined;
  } catch {
    return undefined;
  }
}

/** Forwards the request to its member and writes the answer. */
export async function forward(ctx: Context, deps: Deps, p: ProxyRequest): Promise<void> {
  const user = proxyUser(ctx, deps);
  const method = ctx.method;
  const write = method !== 'GET' && method !== 'HEAD';
  const w: ProxiedWrite = { ...p.attrs, cluster: p.cluster };

  let body: Buffer | undefined;
  if (write) {
    await deps.proxy.authorizer?.authorizeProxy(user, p.attrs.verb, p.cluster); // before the body is read and translated
    body = await readBody(ctx, deps.limits.maxBodyBytes);
    if (dryRunOf(new URLSearchParams(ctx.querystring), body)) w.dryRun = true;
    if (body.length) body = await deps.proxy.consistency.translateBody(w, body, ctx.get('Content-Type'));
  }
  const gone = new AbortController();
  ctx.res.once('close', () => gone.abort());
  const res = await memberRequest(deps, {
    cluster: p.cluster,
    user,
    verb: p.attrs.verb,
    method,
    segments: p.segments,
    query: p.query,
    headers: ctx.req.headers,
    body,
    timeoutMs: isLongRunning(p.attrs) ? 0 : requestDeadline(ctx).remaining(),
    signal: gone.signal,
    // A write's answer is read here (read-your-writes): asked for uncompressed.
    drop: write ? ['accept-encoding'] : [],
  });

  const status = res.statusCode ?? 502;
  const copyHeaders = () => {
    for (const [k, v] of Object.entries(res.headers)) if (v !== undefined && !droppedResponseHeaders.has(k)) ctx.set(k, v);
  };

  if (status >= 200 && status < 300 && !write) {
    // Streamed: Koa pipes it and destroys it (and so the member request) when the client goes away.
    ctx.status = status;
    copyHeaders();
    ctx.body = res;
    return;
  }
  const answer = await readBounded(res, status >= 300 ? maxErrorAnswerBytes : maxWriteAnswerBytes).catch((err: Error) => {
    throw memberUnavailable(p.cluster, `the member's answer broke off (${err.message})`);
  });
  if (status === 403) {
    const m = statusMessage(answer);
    if (m && /cannot impersonate resource/.test(m)) throw impersonationRefused(p.cluster, user, m);
  }
  ctx.status = status;
  copyHeaders();
  if (status >= 200 && status < 300 && isJson(res.headers['content-type']) && !isReview(p.attrs)) {
    let object: unknown;
    try {
      object = JSON.parse(answer.toString('utf8'));
    } catch {
      ctx.body = answer;
      return;
    }
    const settled = await deps.proxy.consistency.settle(w, object);
    if (settled.warnings.length) ctx.append('Warning', settled.warnings.map(warningValue));
    ctx.body = JSON.stringify(settled.object);
    ctx.set('Content-Type', res.headers['content-type'] ?? 'application/json');
    return;
  }
  ctx.body = answer;
}
