// The one request-header trust rule: which front-proxy headers (X-Remote-*) name the user,
// exactly as kube's delegated authentication trusts them (k8s.io/apiserver
// pkg/server/options/authentication.go, pkg/authentication/request/headerrequest).
//
// Where the header names come from, as a whole from one source:
//   - the flags, when --requestheader-client-ca-file is given: each header list from its flag,
//     or kube's default where the flag is absent (X-Remote-User, X-Remote-Group,
//     X-Remote-Extra-; and no UID header: kube defaults none, since aggregators before 1.32
//     pass a client's own X-Remote-Uid on);
//   - else the host's ConfigMap kube-system/extension-apiserver-authentication, exactly as it
//     names them: a key it lacks names no header (a v1.28 host names no UID header, so no UID
//     is read from any header). Header flags without the CA flag are refused at start (kube
//     ignores them silently; here a setting that would not apply is an error).
// Which headers are read, only those named: the user from the first username header that has
// a value, the UID the same way, every value of every group header, the extras of every header
// starting with an extra prefix (the key after it lowercased, then percent-decoded). Then every
// named header is removed from the request.
import type { IncomingMessage } from 'node:http';
import type { UserInfo } from './user.ts';

/** Which headers carry the user, and which front-proxy certificate names may set them. */
export interface RequestHeaderNames {
  /** Allowed CNs of the front-proxy client certificate; empty: any CN the request-header CA signed. */
  allowedNames: string[];
  usernameHeaders: string[];
  uidHeaders: string[];
  groupHeaders: string[];
  extraHeaderPrefixes: string[];
}

/** The flags of the header names (besides --requestheader-client-ca-file). */
export const requestHeaderFlags = ['requestheader-allowed-names', 'requestheader-username-headers', 'requestheader-uid-headers', 'requestheader-group-headers', 'requestheader-extra-headers-prefix'] as const;
export type RequestHeaderFlag = (typeof requestHeaderFlags)[number];

/** kube's defaults (NewDelegatingAuthenticationOptions): no UID header. */
const defaults: Record<RequestHeaderFlag, string[]> = {
  'requestheader-allowed-names': [],
  'requestheader-username-headers': ['X-Remote-User'],
  'requestheader-uid-headers': [],
  'requestheader-group-headers': ['X-Remote-Group'],
  'requestheader-extra-headers-prefix': ['X-Remote-Extra-'],
};

const list = (v: string) =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');

/** The names from the flags (with --requestheader-client-ca-file); throws the reason of a setting kube refuses. */
export function requestHeaderNamesFromFlags(flags: Partial<Record<RequestHeaderFlag, string>>): RequestHeaderNames {
  const get = (f: RequestHeaderFlag) => (flags[f] === undefined ? defaults[f] : list(flags[f]));
  const uidHeaders = get('requestheader-uid-headers');
  if (uidHeaders.length && !uidHeaders.some((h) => h.toLowerCase() === 'x-remote-uid')) {
    throw new Error('--requestheader-uid-headers is set without specifying the standard X-Remote-Uid header - API aggregation will not work');
  }
  return {
    allowedNames: get('requestheader-allowed-names'),
    usernameHeaders: get('requestheader-username-headers'),
    uidHeaders,
    groupHeaders: get('requestheader-group-headers'),
    extraHeaderPrefixes: get('requestheader-extra-headers-prefix'),
  };
}

/** A ConfigMap value: a JSON list of strings; absent or empty: none. */
function jsonList(key: string, v: string | undefined): string[] {
  if (v === undefined || v === '') return [];
  let a: unknown;
  try {
    a = JSON.parse(v);
  } catch {
    throw new Error(`${key} is not a JSON list of strings`);
  }
  if (!Array.isArray(a) || !a.every((x) => typeof x === 'string')) throw new Error(`${key} is not a JSON list of strings`);
  return a.map((s) => s.trim()).filter((s) => s !== '');
}

/** The names from the host's ConfigMap, exactly as it names them; throws when a value is not a JSON list of strings (kube's controller keeps the last good one). */
export function requestHeaderNamesFromConfigMap(data: Record<string, string>): RequestHeaderNames {
  return {
    allowedNames: jsonList('requestheader-allowed-names', data['requestheader-allowed-names']),
    usernameHeaders: jsonList('requestheader-username-headers', data['requestheader-username-headers']),
    uidHeaders: jsonList('requestheader-uid-headers', data['requestheader-uid-headers']),
    groupHeaders: jsonList('requestheader-group-headers', data['requestheader-group-headers']),
    extraHeaderPrefixes: jsonList('requestheader-extra-headers-prefix', data['requestheader-extra-headers-prefix']),
  };
}

/**
 * Every value of every header, by lowercase name, as sent (repeated headers stay separate).
 * From rawHeaders, which HTTP/1.1 and HTTP/2 requests both have (HTTP/2's compatibility
 * request has no headersDistinct).
 */
function distinctHeaders(req: Pick<IncomingMessage, 'rawHeaders'>): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    const k = req.rawHeaders[i].toLowerCase();
    const vals = out.get(k) ?? [];
    vals.push(req.rawHeaders[i + 1].trim());
    out.set(k, vals);
  }
  return out;
}

/** kube's headerValue: the first value of the first named header that has one. */
function firstValue(headers: Map<string, string[]>, names: string[]): string | undefined {
  for (const n of names) {
    const v = headers.get(n.toLowerCase())?.[0];
    if (v) return v;
  }
  return undefined;
}

/** The user the named headers of a front-proxy request carry (undefined: no username header has a value). */
export function requestHeaderUser(req: Pick<IncomingMessage, 'rawHeaders'>, rh: RequestHeaderNames): UserInfo | undefined {
  const headers = distinctHeaders(req);
  const name = firstValue(headers, rh.usernameHeaders);
  if (!name) return undefined;
  const groups = rh.groupHeaders.flatMap((h) => (headers.get(h.toLowerCase()) ?? []).filter((v) => v !== ''));
  const extra: Record<string, string[]> = {};
  for (const prefix of rh.extraHeaderPrefixes) {
    const p = prefix.toLowerCase();
    for (const [h, vals] of headers) {
      if (!h.startsWith(p)) continue;
      let key = h.slice(p.length);
      try {
        key = decodeURIComponent(key);
      } catch {
        // kept as sent, as kube keeps a malformed key
      }
      (extra[key] ??= []).push(...vals);
    }
  }
  const uid = firstValue(headers, rh.uidHeaders);
  return { name, ...(uid ? { uid } : {}), groups, extra };
}

/** Removes every named request-header authentication header (whoever sent them). */
export function clearAuthHeaders(req: IncomingMessage, rh: RequestHeaderNames | undefined): void {
  if (!rh) return;
  const names = new Set([...rh.usernameHeaders, ...rh.uidHeaders, ...rh.groupHeaders].map((h) => h.toLowerCase()));
  const prefixes = rh.extraHeaderPrefixes.map((p) => p.toLowerCase());
  for (const h of Object.keys(req.headers)) {
    if (names.has(h) || prefixes.some((p) => h.startsWith(p))) delete req.headers[h];
  }
}
