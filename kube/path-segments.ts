// The one path-segment rule, for every route of the apiserver (plain requests, connection
// upgrades, fleet-wide reads, the read path's own routes) and for every member path the proxy
// builds (member/client.ts memberRequestPath). A URL path is split on `/` and each segment is
// percent-decoded exactly once; a segment is refused when any server or gateway between
// Panoptes and a member could read it as something other than one segment:
//   - kube's path segment names (k8s.io/apimachinery/pkg/api/validation/path
//     IsValidPathSegmentName): not `.` or `..`, no `/` or `%` (so nothing encoded twice);
//   - beyond kube, for the gateways in front of members (Rancher, a Karmada proxy, nginx):
//     no `\` (a `/` to the WHATWG URL parser and to many proxies), no `;` (path parameters:
//     `..;` is `..` to some servlet containers), no `?` or `#` (a gateway that decodes would
//     end the path there), no control characters (NUL ends a C string), and none of these
//     spelled in Unicode that normalizes to them (NFKC: fullwidth dots and solidi, dot
//     leaders; and the ideographic full stops URL and IDNA mappings read as a dot).
// An empty segment (`//`, a trailing `/`) is a 404, as a path nothing serves; a malformed
// escape or a refused segment a 400 that names the segment and says why.
// Where kube has a rule for what a segment names, it applies too (resourcePathProblems): a
// namespace is a DNS-1123 label.
import { dnsLabelProblem, dnsSubdomainProblem } from './names.ts';
import { StatusError } from './status.ts';

/** 404 for a path nothing serves, as kube-apiserver words it. */
export const pathNotFound = () => new StatusError('NotFound', 'the server could not find the requested resource', {});

const refusedCharacters = ['/', '%', '\\', ';', '?', '#'];
// eslint-disable-next-line no-control-regex
const controlCharacter = /[\u0000-\u001f\u007f]/;
/** Half a UTF-16 pair: no URL spells it (what decodes is UTF-8), and it cannot be encoded back. */
const loneSurrogate = /\p{Cs}/u;
/** Full stops NFKC leaves alone but URL and IDNA processing read as `.`: ideographic (U+3002) and its halfwidth form (U+FF61, NFKC → U+3002). */
const ideographicStops = /[\u3002\uff61]/g;

/** Why `segment` (decoded) may not be a path segment, or undefined (kube's words where kube has the rule). */
export function pathSegmentProblem(segment: string): string | undefined {
  if (segment === '') return 'may not be empty';
  if (controlCharacter.test(segment)) return 'may not contain control characters';
  if (loneSurrogate.test(segment)) return 'may not contain lone surrogates';
  const forms = [segment, segment.normalize('NFKC').replace(ideographicStops, '.')];
  for (const [i, form] of forms.entries()) {
    const read = i === 0 ? '' : ' (or characters read as it)';
    if (form === '.' || form === '..') return `may not be '${form}'${read}`;
    for (const c of refusedCharacters) if (form.includes(c)) return `may not contain '${c}'${read}`;
  }
  return undefined;
}

function checked(segment: string, shown: string): string {
  const problem = pathSegmentProblem(segment);
  if (problem) throw new StatusError('BadRequest', `invalid path segment ${JSON.stringify(shown)}: ${problem}`);
  return segment;
}

/** The segments of a URL path (as received, percent-encoded), each decoded once and checked: 404 for an empty one, 400 for a malformed or refused one. */
export function pathSegments(path: string): string[] {
  if (path === '' || path === '/') return [];
  if (!path.startsWith('/')) throw new StatusError('BadRequest', `invalid request path ${JSON.stringify(path)}: must start with '/'`);
  return path
    .slice(1)
    .split('/')
    .map((raw) => {
      if (raw === '') throw pathNotFound();
      let decoded: string;
      try {
        decoded = decodeURIComponent(raw);
      } catch {
        throw new StatusError('BadRequest', `invalid path segment ${JSON.stringify(raw)}: malformed percent-encoding`);
      }
      return checked(decoded, raw);
    });
}

/** RFC 3986 pchar less `;`: what stays unescaped in a segment Panoptes sends (as Go's url.PathEscape keeps `:` and `@`). */
const unescaped = /^[A-Za-z0-9\-._~!$&'()*+,=:@]$/;

/** `segments` (decoded) as a path below a base: each checked again and percent-encoded, joined by `/`, with a leading `/`. */
export function encodePath(segments: readonly string[]): string {
  let out = '';
  for (const s of segments) {
    checked(s, s);
    out += '/';
    for (const ch of s) out += unescaped.test(ch) ? ch : encodeURIComponent(ch);
  }
  return out;
}

/** What a Kubernetes resource path names, as kube's RequestInfo reads it: the namespace and the object's name, when present. */
export interface ResourceNames {
  namespace?: string;
  name?: string;
}

/** Why what a resource path names cannot be (beyond the segment rule: a namespace is a DNS-1123 label; `pod` names a pod, a DNS-1123 subdomain), or undefined. */
export function resourceNamesProblem(r: ResourceNames, kind?: 'pod'): string | undefined {
  if (r.namespace !== undefined) {
    const p = dnsLabelProblem(r.namespace);
    if (p) return `invalid namespace ${JSON.stringify(r.namespace)}: ${p}`;
  }
  if (kind === 'pod' && r.name !== undefined) {
    const p = dnsSubdomainProblem(r.name);
    if (p) return `invalid pod name ${JSON.stringify(r.name)}: ${p}`;
  }
  return undefined;
}

/** 400 when what a resource path names cannot be (resourceNamesProblem). */
export function checkResourceNames(r: ResourceNames, kind?: 'pod'): void {
  const p = resourceNamesProblem(r, kind);
  if (p) throw new StatusError('BadRequest', p);
}
