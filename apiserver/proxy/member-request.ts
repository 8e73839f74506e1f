// One request to a member as a user, the step every proxied request shares: Panoptes' review
// on clusters/proxy, the member's endpoint from the pool (503 + Retry-After when it is away),
// the headers (the client's forwardable ones, the connection's credentials, the user's
// impersonation), a timeout unless long-running, and an abort when the caller goes away.
// Resolves with the member's answer (any status); a member that does not answer is a 503.
import type { ClientRequest, IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { StatusError } from '../../kube/status.ts';
import { describeError } from '../../member/client.ts';
import type { UserInfo } from '../auth/authn.ts';
import type { Deps } from '../deps.ts';
import { proxiedHeaders } from './impersonation.ts';
import { memberUnavailable } from './members.ts';

export interface MemberRequest {
  cluster: string;
  user: UserInfo;
  /** The verb of Panoptes' review on clusters/proxy (kube's RequestInfo verb of the request). */
  verb: string;
  method: string;
  /** `/api/...` or `/apis/...` with the query, encoded. */
  path: string;
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

const timeoutError = () => new StatusError('Timeout', 'Timeout: request did not complete within requested timeout - context deadline exceeded', {});

/**
 * The request to the member, made but not sent: reviewed, its endpoint and headers set. A
 * connection upgrade (upgrade.ts) sets Connection and Upgrade on it and waits for 'upgrade'.
 */
export async function openMemberRequest(deps: Deps, r: Omit<MemberRequest, 'timeoutMs' | 'signal' | 'body'> & { bodyLength?: number }): Promise<ClientRequest> {
  await deps.proxy.authorizer?.authorizeProxy(r.user, r.verb, r.cluster);
  const endpoint = await deps.proxy.members.endpoint(r.cluster, deps.catalog.cluster(r.cluster));
  const headers = proxiedHeaders(r.headers, r.user, await endpoint.headers());
  for (const h of r.drop ?? []) delete headers[h];
  if (r.bodyLength !== undefined) headers['content-length'] = String(r.bodyLength);
  return endpoint.transport.request({
    protocol: endpoint.server.protocol,
    hostname: endpoint.server.hostname,
    port: endpoint.server.port,
    path: endpoint.base + r.path,
    method: r.method,
    headers,
    agent: endpoint.agent,
  });
}

export async function memberRequest(deps: Deps, r: MemberRequest): Promise<IncomingMessage> {
  const member = await openMemberRequest(deps, { ...r, bodyLength: r.body?.length });
  let finished = false;
  const abort = () => {
    if (!finished) member.destroy(new Error('the client went away'));
  };
  r.signal?.addEventListener('abort', abort, { once: true });
  const timer = r.timeoutMs ? setTimeout(() => member.destroy(timeoutError()), r.timeoutMs) : undefined;
  const done = () => {
    finished = true;
    clearTimeout(timer);
    r.signal?.removeEventListener('abort', abort);
  };
  let res: IncomingMessage;
  try {
    res = await new Promise<IncomingMessage>((resolve, reject) => {
      member.once('response', resolve);
      member.once('error', reject);
      member.end(r.body);
    });
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
