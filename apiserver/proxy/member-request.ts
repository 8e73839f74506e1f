// One request to a member as a user, the step every proxied request shares (memberTarget:
// also what a connection upgrade needs to open its own): the cluster (404 when unknown),
// Panoptes' review on clusters/proxy, the member's endpoint from the pool (503 + Retry-After when it is away),
// the headers (the client's forwardable ones, the connection's credentials, the user's
// impersonation), a timeout unless long-running, and an abort when the caller goes away.
// Resolves with the member's answer (any status); a member that does not answer is a 503.
import type { IncomingHttpHeaders } from 'node:http';
import { StatusError, notFound } from '../../kube/status.ts';
import { describeError, memberRequestPath, send, type MemberEndpoint } from '../../member/client.ts';
import type { MemberResponse } from '../../member/http2.ts';
import { panoptesGroupName } from '../discovery/panoptes-group.ts';
import type { UserInfo } from '../auth/authn.ts';
import type { Deps } from '../endpoints/deps.ts';
import { requestTimeout } from '../endpoints/request-deadline.ts';
import { proxiedHeaders } from './impersonation.ts';
import { memberUnavailable } from './members.ts';

export interface MemberRequest {
  cluster: string;
  user: UserInfo;
  /** The verb of Panoptes' review on clusters/proxy (kube's RequestInfo verb of the request). */
  verb: string;
  method: string;
  /** The Kubernetes path's segments (`api`, `v1`, ...), decoded and checked (kube/path-segments.ts). */
  segments: readonly string[];
  /** The query, as received, without `?` ('' for none). */
  query?: string;
  /** The client's headers (filtered here). */
  headers: IncomingHttpHeaders;
  body?: Buffer;
  /** 0: none (a long-running request). */
  timeoutMs: number;
  /** Aborts the member request (the client went away). */
  signal?: AbortSignal;
  /** Header names not to send (e.g. accept-encoding when the answer is read here). */
  drop?: string[];
}

/** What opening a request to a member as a user takes (also for connection upgrades: exec, attach, port-forward). */
export interface MemberTarget {
  endpoint: MemberEndpoint;
  /** The member's request path of a Kubernetes path (its segments, its query without `?`): below the member URL's own path, never resolved (member/client.ts memberRequestPath). */
  path(segments: readonly string[], query?: string): string;
  /** The headers to send: the client's forwardable ones, the connection's credentials, the user's impersonation. */
  headers(incoming: IncomingHttpHeaders): Promise<Record<string, string | string[]>>;
}

/**
 * The member `cluster` as `user` may reach it with `verb`: 404 for an unknown cluster, 403 when
 * Panoptes' review on clusters/proxy refuses, 503 with Retry-After when it is away or has no
 * usable credentials here.
 */
export async function memberTarget(deps: Deps, cluster: string, user: UserInfo, verb: string): Promise<MemberTarget> {
  if (!deps.catalog.hasCluster(cluster)) await deps.catalog.refreshOnMiss();
  if (!deps.catalog.hasCluster(cluster)) throw notFound(`clusters.${panoptesGroupName} "${cluster}" not found`, { name: cluster, group: panoptesGroupName, kind: 'clusters' });
  await deps.proxy.authorizer?.authorizeProxy(user, verb, cluster);
  const endpoint = await deps.proxy.members.endpoint(cluster, deps.catalog.cluster(cluster));
  return {
    endpoint,
    path: (segments, query) => memberRequestPath(endpoint, segments, query),
    headers: async (incoming) => proxiedHeaders(incoming, user, await endpoint.headers()),
  };
}

export async function memberRequest(deps: Deps, r: MemberRequest): Promise<MemberResponse> {
  const target = await memberTarget(deps, r.cluster, r.user, r.verb);
  const endpoint = target.endpoint;
  const headers = await target.headers(r.headers);
  for (const h of r.drop ?? []) delete headers[h];
  if (r.body !== undefined) headers['content-length'] = String(r.body.length);
  const member = send(endpoint, { method: r.method, path: target.path(r.segments, r.query), headers, ...(r.body !== undefined ? { body: r.body } : {}) });
  let finished = false;
  const abort = () => {
    if (!finished) member.destroy(new Error('the client went away'));
  };
  r.signal?.addEventListener('abort', abort, { once: true });
  const timer = r.timeoutMs ? setTimeout(() => member.destroy(requestTimeout()), r.timeoutMs) : undefined;
  const done = () => {
    finished = true;
    clearTimeout(timer);
    r.signal?.removeEventListener('abort', abort);
  };
  let res: MemberResponse;
  try {
    res = await member.response;
  } catch (err) {
    done();
    if (err instanceof StatusError) throw err;
    deps.log.debug('member request failed', { cluster: r.cluster, error: describeError(err) });
    throw memberUnavailable(r.cluster, `the member did not answer (${describeError(err)})`);
  }
  res.once('end', done);
  res.once('close', () => clearTimeout(timer));
  return res;
}
