// Connection upgrades through the proxy: pods/exec, pods/attach and pods/portforward of a
// one-cluster view, over WebSocket (kubectl's first choice since 1.30/1.31) or SPDY/3.1
// (its fallback, and older kubectls). Handled on the HTTP server's `upgrade` event, outside
// Koa: the request is authenticated as every request is (apiserver/auth/), authorized on
// clusters/proxy for that cluster (Authorizer.authorizeProxy, verb `create`: kube-apiserver
// authorizes a WebSocket GET of exec/attach/portforward as create too, feature gate
// AuthorizePodWebsocketUpgradeCreatePermission, on by default since 1.31), then forwarded to
// the member with the user's impersonation headers (impersonation.ts: the client's
// credentials, Impersonate-* and hop-by-hop headers stripped; Connection and Upgrade put back
// with the protocol headers Sec-WebSocket-* and X-Stream-Protocol-Version, which are kept).
// The member's 101 is relayed as it came and bytes then go both ways unparsed; either side
// ending ends both. A refused upgrade relays the member's answer (its Status); a member that
// is away or does not answer is a 503 with Retry-After at once.
//
// Timeouts, as kube's: an upgraded stream has no request timeout (exec, attach and
// portforward are long-running requests, k8s.io/apiserver DefaultLongRunningRequestRE); it
// ends after 4 hours without a byte either way, the kubelet's default
// --streaming-connection-idle-timeout; an overall limit is off unless configured.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { Counter, Gauge, type Registry } from 'prom-client';
import { checkResourceNames, encodePath, pathNotFound, pathSegments } from '../../kube/path-segments.ts';
import { StatusError } from '../../kube/status.ts';
import { refuseUpgrade } from '../../kube/upgrade-refusal.ts';
import { describeError } from '../../member/client.ts';
import type { Authenticator } from '../auth/authn.ts';
import { resourcesPrefix } from '../auth/attributes.ts';
import type { Deps } from '../endpoints/deps.ts';
import { proxyUserOf } from './forward.ts';
import { memberTarget } from './member-request.ts';
import { memberUnavailable } from './members.ts';

export interface StreamLimits {
  /** A stream with no byte either way for this long is closed (default 4 h, the kubelet's streaming idle timeout). */
  idleTimeoutMs: number;
  /** A stream is closed after this long whatever it does (0: never, as kube). */
  maxDurationMs: number;
}

export const defaultStreamLimits: StreamLimits = { idleTimeoutMs: 4 * 60 * 60 * 1000, maxDurationMs: 0 };

/** The subresources served by upgrade. */
const upgradeSubresources = new Set(['exec', 'attach', 'portforward']);

interface Target {
  cluster: string;
  namespace: string;
  pod: string;
  subresource: string;
  /** The member's Kubernetes path, as checked segments (`api`, `v1`, `namespaces`, ...). */
  segments: string[];
  /** The query as received, without `?`. */
  query: string;
}

/**
 * The pod stream an upgrade request is for: its path read by the one segment rule of every
 * route (kube/path-segments.ts; 400 for a refused segment), the namespace a DNS-1123 label and
 * the pod a DNS-1123 subdomain; 405 naming the one-cluster URL in the all-clusters view; 404
 * for anything else.
 */
export function upgradeTarget(url: string): Target {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const query = q < 0 ? '' : url.slice(q + 1);
  if (!path.startsWith(`${resourcesPrefix}/`)) throw pathNotFound();
  const segs = pathSegments(path.slice(resourcesPrefix.length));
  const one = segs[0] === 'clusters';
  const kube = one ? segs.slice(2) : segs;
  const m = kube.length === 7 && kube[0] === 'api' && kube[1] === 'v1' && kube[2] === 'namespaces' && kube[4] === 'pods' && upgradeSubresources.has(kube[6]);
  if (!m) throw pathNotFound();
  if (!one) {
    throw new StatusError('MethodNotAllowed', `the server does not allow this method on the requested resource: pods/${kube[6]} is served for one cluster at a time, through the proxy to that member: ${resourcesPrefix}/clusters/<cluster>${encodePath(kube)}`, {});
  }
  if (segs[1] === undefined) throw pathNotFound();
  checkResourceNames({ namespace: kube[3], name: kube[5] }, 'pod');
  return { cluster: segs[1], namespace: kube[3], pod: kube[5], subresource: kube[6], segments: kube, query };
}

/** The largest refusal read from a member (a Status is a few hundred bytes). */
const maxRefusalBytes = 1024 * 1024;
/** Framing headers of a refusal, set anew when it is relayed. */
const framing = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive']);

/**
 * The head of the member's answer: a 101 as received (status line and raw headers); a
 * refusal (`bodyLength` given) with its framing replaced: Content-Length, Connection: close.
 */
function responseHead(res: IncomingMessage, bodyLength?: number): string {
  const lines = [`HTTP/1.1 ${res.statusCode ?? 502} ${res.statusMessage ?? ''}`.trimEnd()];
  for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) {
    if (bodyLength === undefined || !framing.has(res.rawHeaders[i].toLowerCase())) lines.push(`${res.rawHeaders[i]}: ${res.rawHeaders[i + 1]}`);
  }
  if (bodyLength !== undefined) lines.push(`Content-Length: ${bodyLength}`, 'Connection: close');
  return `${lines.join('\r\n')}\r\n\r\n`;
}

/** The streams through the proxy: upgrade requests handled, and the open tunnels (closed with the server). */
export class UpgradeProxy {
  private readonly tunnels = new Set<{ client: Duplex; member?: Duplex }>();
  /** Upgrade requests by subresource and the HTTP code answered (101: streamed). */
  private readonly started: Counter<'subresource' | 'code'>;
  private readonly openGauge: Gauge;

  constructor(
    private readonly deps: Deps,
    private readonly authenticator: Authenticator | undefined,
    private readonly limits: StreamLimits = defaultStreamLimits,
    registry?: Registry,
  ) {
    // One set per registry (a second server on a shared registry counts in its own, unregistered).
    const registers = registry && !registry.getSingleMetric('panoptes_proxy_streams_total') ? [registry] : [];
    this.started = new Counter({ name: 'panoptes_proxy_streams_total', help: 'exec, attach and portforward upgrade requests through the proxy, by subresource and the HTTP code answered (101: streamed)', labelNames: ['subresource', 'code'], registers });
    this.openGauge = new Gauge({ name: 'panoptes_proxy_streams_open', help: 'exec, attach and portforward streams open through the proxy', registers, collect: () => this.openGauge.set(this.tunnels.size) });
  }

  /** Streams open now. */
  get open(): number {
    return this.tunnels.size;
  }

  /** The HTTP server's `upgrade` listener. */
  async handle(req: IncomingMessage, client: Duplex, head: Buffer): Promise<void> {
    const tunnel: { client: Duplex; member?: Duplex } = { client };
    this.tunnels.add(tunnel);
    client.on('error', () => client.destroy());
    client.once('close', () => {
      this.tunnels.delete(tunnel);
      tunnel.member?.destroy();
    });
    const sub = /\/pods\/[^/]+\/(exec|attach|portforward)(?:[/?]|$)/.exec(req.url ?? '')?.[1] ?? 'other';
    try {
      const code = await this.forward(req, client, head, tunnel);
      this.started.inc({ subresource: sub, code: String(code) });
    } catch (err) {
      if (!(err instanceof StatusError)) this.deps.log.warn('upgrade failed', { error: describeError(err) });
      this.started.inc({ subresource: sub, code: String(err instanceof StatusError ? err.code : 500) });
      refuseUpgrade(client, err);
    }
  }

  /** Resolves with the HTTP code the client got (101 when streaming). */
  private async forward(req: IncomingMessage, client: Duplex, head: Buffer, tunnel: { member?: Duplex }): Promise<number> {
    const url = req.url ?? '/';
    if (Buffer.byteLength(url) > this.deps.limits.maxUrlBytes) throw new StatusError('BadRequest', `request URL is too long (${Buffer.byteLength(url)} bytes; at most ${this.deps.limits.maxUrlBytes})`);
    const authenticated = this.authenticator ? await this.authenticator.authenticate(req) : undefined;
    const t = upgradeTarget(url);
    const user = proxyUserOf(authenticated, this.deps);
    // Authorized before anything about the cluster is said (404), as the HTTP path is by the
    // auth middleware; memberTarget's own review is then the authorizer's cached answer.
    await this.deps.proxy.authorizer?.authorizeProxy(user, 'create', t.cluster);
    // The cluster (404), the review on clusters/proxy (verb create, see above), the endpoint
    // (503 when away), the headers: as every proxied request (member-request.ts).
    const target = await memberTarget(this.deps, t.cluster, user, 'create');
    const headers = await target.headers(req.headers);
    headers.connection = 'Upgrade';
    headers.upgrade = String(req.headers.upgrade ?? '');
    if (client.destroyed) return 499;
    this.deps.log.debug('stream through the proxy', { user: user.name, cluster: t.cluster, namespace: t.namespace, pod: t.pod, subresource: t.subresource });
    const server = target.endpoint.server;
    const member = target.endpoint.transport.request({
      protocol: server.protocol,
      hostname: server.hostname,
      port: server.port,
      path: target.path(t.segments, t.query),
      method: req.method,
      headers,
      agent: target.endpoint.agent,
    });
    client.once('close', () => member.destroy());
    return new Promise<number>((resolve, reject) => {
      member.once('upgrade', (res: IncomingMessage, socket: Duplex, memberHead: Buffer) => {
        tunnel.member = socket;
        if (client.destroyed) {
          socket.destroy();
          return resolve(499);
        }
        client.write(responseHead(res));
        if (memberHead.length) client.write(memberHead);
        if (head.length) socket.write(head);
        this.pipe(client, socket);
        resolve(res.statusCode ?? 101);
      });
      member.once('response', (res: IncomingMessage) => {
        // Refused by the member: its answer (a Status, read whole up to 1 MiB) goes back with
        // its code and headers, framed anew (Content-Length), then the connection ends.
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (d: Buffer) => {
          size += d.length;
          if (size > maxRefusalBytes) res.destroy(new Error('too large'));
          else chunks.push(d);
        });
        res.on('end', () => {
          const body = Buffer.concat(chunks);
          client.end(Buffer.concat([Buffer.from(responseHead(res, body.length)), body]));
          resolve(res.statusCode ?? 502);
        });
        res.on('error', () => reject(memberUnavailable(t.cluster, `the member's answer broke off`)));
      });
      member.once('error', (err) => reject(memberUnavailable(t.cluster, `the member did not answer (${describeError(err)})`)));
      member.end();
    });
  }

  /** Bytes both ways, unparsed; either side's end or error ends both; idle and overall limits. */
  private pipe(client: Duplex, member: Duplex): void {
    const end = () => {
      client.destroy();
      member.destroy();
    };
    client.pipe(member);
    member.pipe(client);
    for (const s of [client, member]) {
      s.once('end', () => (s === client ? member : client).end());
      s.once('close', end);
      s.on('error', end);
    }
    if (this.limits.idleTimeoutMs > 0) {
      let last = Date.now();
      const touch = () => (last = Date.now());
      client.on('data', touch);
      member.on('data', touch);
      const check = setInterval(() => {
        if (Date.now() - last >= this.limits.idleTimeoutMs) end();
      }, Math.min(this.limits.idleTimeoutMs, 60_000));
      check.unref();
      client.once('close', () => clearInterval(check));
    }
    if (this.limits.maxDurationMs > 0) {
      const timer = setTimeout(end, this.limits.maxDurationMs);
      timer.unref();
      client.once('close', () => clearTimeout(timer));
    }
  }

  /** Ends every stream (server shutdown). */
  closeAll(): void {
    for (const t of this.tunnels) {
      t.client.destroy();
      t.member?.destroy();
    }
    this.tunnels.clear();
  }
}
