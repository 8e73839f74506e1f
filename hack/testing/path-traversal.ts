// Path segments that try to climb out of where a request was authorized to go: every spelling
// a server or gateway between Panoptes and a member may read as a separator or a dot segment.
// Each is one path segment as sent on the wire (already percent-encoded where it says so), to
// put where a namespace or a name goes. The proxy's path tests send each through every route
// to a member whose URL has a path prefix; the hostile-data suite sends them too.

/** A segment that, read by a lenient gateway, leaves `/k8s/clusters/a/api/v1/namespaces/` for cluster b's prefix. */
const climb = (sep: string, dots = '..') => `${[dots, dots, dots, dots, 'b', 'api', 'v1', 'namespaces', 'default'].join(sep)}`;

export interface TraversalSpelling {
  name: string;
  /** The segment as sent, raw. */
  segment: string;
}

export const traversalSpellings: TraversalSpelling[] = [
  { name: 'backslashes', segment: climb('\\') },
  { name: 'backslashes, percent-encoded', segment: climb('%5C') },
  { name: 'backslashes, percent-encoded in lowercase', segment: climb('%5c') },
  { name: 'dot-dot', segment: '..' },
  { name: 'dot', segment: '.' },
  { name: 'dot-dot, percent-encoded', segment: '%2e%2e' },
  { name: 'dot-dot, half percent-encoded', segment: '.%2E' },
  { name: 'dot-dot, percent-encoded, slashes percent-encoded', segment: climb('%2F', '%2e%2e') },
  { name: 'slashes, percent-encoded', segment: climb('%2F') },
  { name: 'slashes, percent-encoded twice', segment: climb('%252F') },
  { name: 'dot-dot, percent-encoded twice', segment: '%252e%252e' },
  { name: 'dot-dot with a path parameter', segment: '..;' },
  { name: 'a path parameter', segment: 'default;x=..' },
  { name: 'a path parameter, percent-encoded', segment: 'default%3B..' },
  { name: 'an empty segment (//)', segment: '' },
  { name: 'fullwidth dots (U+FF0E)', segment: '%EF%BC%8E%EF%BC%8E' },
  { name: 'the two dot leader (U+2025)', segment: '%E2%80%A5' },
  { name: 'one dot leaders (U+2024)', segment: '%E2%80%A4%E2%80%A4' },
  { name: 'ideographic full stops (U+3002)', segment: '%E3%80%82%E3%80%82' },
  { name: 'halfwidth ideographic full stops (U+FF61)', segment: '%EF%BD%A1%EF%BD%A1' },
  { name: 'small full stops (U+FE52)', segment: '%EF%B9%92%EF%B9%92' },
  { name: 'overlong UTF-8 dots', segment: '%C0%AE%C0%AE' },
  { name: 'fullwidth solidus (U+FF0F)', segment: climb('%EF%BC%8F') },
  { name: 'fullwidth reverse solidus (U+FF3C)', segment: climb('%EF%BC%BC') },
  { name: 'small reverse solidus (U+FE68)', segment: climb('%EF%B9%A8') },
  { name: 'NUL', segment: 'default%00' },
  { name: 'a question mark, percent-encoded', segment: 'default%3F..' },
  { name: 'a hash, percent-encoded', segment: 'default%23..' },
  { name: 'a malformed escape', segment: 'default%E2%80' },
];

/**
 * The path a lenient gateway in front of a member reaches for a raw request path: it decodes
 * percent-escapes once, then resolves the path as a WHATWG URL parser does (a `\` is a `/`,
 * `.` and `..` segments are resolved, `%2e` is a dot). Whatever a request carries, this must
 * stay below the prefix its cluster's credentials were given for.
 */
export function gatewayView(rawPath: string): string {
  let decoded = rawPath;
  try {
    decoded = decodeURIComponent(rawPath);
  } catch {
    // kept as sent
  }
  return new URL(decoded.replace(/[?#]/g, '%3F'), 'http://gateway.invalid').pathname;
}
