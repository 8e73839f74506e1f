// The headers of a proxied request: what of the client's request goes on to the member, and
// kube's impersonation headers naming the requesting user, so the member's RBAC decides and
// its audit log names the user (never Panoptes' own identity).
//
// Dropped from the client's request: every Impersonate-* header (a client names itself
// through Panoptes' authentication, never by asking Panoptes to impersonate someone else),
// Authorization (the client's credential for Panoptes is not the member's business), the
// front proxy's X-Remote-* identity headers, cookies, and hop-by-hop headers (RFC 9110
// 7.6.1: Connection and what it lists, Keep-Alive, Proxy-*, TE, Trailer, Transfer-Encoding,
// Upgrade), as kube-apiserver's own proxy drops them (k8s.io/apimachinery/pkg/util/proxy
// and net/http/httputil.ReverseProxy's hopHeaders). Host and Content-Length are the
// forwarder's.
//
// Impersonation as client-go writes it (k8s.io/client-go/transport/round_trippers.go,
// NewImpersonatingRoundTripper): Impersonate-User, Impersonate-Uid, one Impersonate-Group
// header per group, and Impersonate-Extra-<key> per value, the key percent-encoded where it
// is not a legal header-name byte (and `%` itself), values as they are.
import type { IncomingHttpHeaders } from 'node:http';
import { StatusError } from '../../kube/status.ts';
import type { UserInfo } from '../auth/authn.ts';

/** Header names never forwarded (lower case); `impersonate-*` and `x-remote-*` are matched by prefix. */
const dropped = new Set([
  'authorization',
  'proxy-authorization',
  'proxy-authenticate',
  'proxy-connection',
  'connection',
  'keep-alive',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'content-length',
  'cookie',
]);
const droppedPrefixes = ['impersonate-', 'x-remote-'];

/** Bytes of an RFC 7230 token (a legal header name), as client-go's legalHeaderByte. */
const tokenByte = /^[!#$&'*+\-.^_`|~0-9A-Za-z]$/;

/** client-go's headerKeyEscape: %XX for every byte that is not a header token byte, and for `%`. */
export function headerKeyEscape(key: string): string {
  let out = '';
  for (const b of Buffer.from(key, 'utf8')) {
    const c = String.fromCharCode(b);
    out += b < 0x80 && tokenByte.test(c) ? c : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/**
 * A header value as Go's net/http writes a string: its UTF-8 bytes (node:http writes a
 * string's characters as latin1 bytes, and refuses characters above U+00FF). Control
 * characters cannot be sent in a header at all: a 400 naming what, never a 500.
 */
function headerValue(v: string, what: string): string {
  if (/[\u0000-\u0008\u000a-\u001f\u007f]/.test(v)) throw new StatusError('BadRequest', `the ${what} has control characters and cannot be passed on to the member cluster`);
  return Buffer.from(v, 'utf8').toString('latin1');
}

/** The impersonation headers naming `user` (for node:http: a repeated header is an array). */
export function impersonationHeaders(user: UserInfo): Record<string, string | string[]> {
  const h: Record<string, string | string[]> = { 'Impersonate-User': headerValue(user.name, "user's name") };
  if (user.uid) h['Impersonate-Uid'] = headerValue(user.uid, "user's uid");
  if (user.groups.length) h['Impersonate-Group'] = user.groups.map((g) => headerValue(g, "user's group"));
  for (const [key, values] of Object.entries(user.extra)) {
    if (values.length) h[`Impersonate-Extra-${headerKeyEscape(key)}`] = values.map((v) => headerValue(v, `user's extra ${JSON.stringify(key)}`));
  }
  return h;
}

/** The client's headers that go on to the member: everything but credentials, identities and hop-by-hop headers. */
export function forwardedHeaders(incoming: IncomingHttpHeaders): Record<string, string | string[]> {
  const listed = new Set(
    String(incoming.connection ?? '')
      .split(',')
      .map((s) => s.trim().toLowerCase())
      .filter(Boolean),
  );
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(incoming)) {
    const n = name.toLowerCase();
    if (value === undefined || n.startsWith(':')) continue; // HTTP/2 pseudo-headers
    if (dropped.has(n) || listed.has(n) || droppedPrefixes.some((p) => n.startsWith(p))) continue;
    out[n] = value;
  }
  return out;
}

/**
 * The headers of a proxied request: the client's forwardable ones, the member connection's
 * credentials, and the user's impersonation. A kubeconfig's own impersonation (`as:`) is not
 * used: the connection authenticates Panoptes, the request is the user's.
 */
export function proxiedHeaders(incoming: IncomingHttpHeaders, user: UserInfo, credentials: Record<string, string>): Record<string, string | string[]> {
  const own = Object.fromEntries(Object.entries(credentials).filter(([k]) => !k.toLowerCase().startsWith('impersonate-')));
  return { ...forwardedHeaders(incoming), ...own, ...impersonationHeaders(user) };
}
