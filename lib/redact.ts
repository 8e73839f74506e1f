// The one redactor: every text Panoptes lets out of the process — Status messages and
// causes (kube/status.ts), log lines (lib/log.ts), the Cluster status synchro writes,
// Warning headers — goes through redact() or redactDeep(). It knows secrets two ways:
//  - values: the credentials handled right now are registered where they are handled
//    (rememberSecrets: those synchro loaded for a member; withSecrets: those of the
//    request being served), and every occurrence of one is replaced;
//  - structure: PEM private key blocks (also base64), `Bearer ...`/`Basic ...`, JWT-shaped
//    strings, user:password@ in URLs, the value after a credential-named key in JSON, YAML
//    or a query string (token, clientKeyData, client-key-data, password, ...), and the
//    input V8 quotes in a JSON parse error.
// What is replaced becomes `(redacted)`; the rest of the text stays readable.
import { AsyncLocalStorage } from 'node:async_hooks';

export const redactedText = '(redacted)';

/** Values shorter than this are not matched as values (they would garble text); structure still applies. */
const minLength = 6;
/** Values remembered process-wide, least recently registered forgotten first (synchro registers its clusters' on every pass). */
const maxRemembered = 16_384;

/**
 * A set of values found in a text in one pass: indexed by their first `minLength`
 * characters, so a text is scanned once whatever the number of values (a synchro process
 * remembers the credentials of all its clusters; every status and log line is checked).
 */
class Values {
  private readonly byPrefix = new Map<string, string[]>();

  constructor(values: Iterable<string>) {
    for (const v of values) {
      const key = v.slice(0, minLength);
      const list = this.byPrefix.get(key);
      if (list) list.push(v);
      else this.byPrefix.set(key, [v]);
    }
    for (const list of this.byPrefix.values()) list.sort((a, b) => b.length - a.length);
  }

  replace(text: string): string {
    if (this.byPrefix.size === 0 || text.length < minLength) return text;
    let out = '';
    let from = 0;
    for (let i = 0; i + minLength <= text.length; i++) {
      const candidates = this.byPrefix.get(text.slice(i, i + minLength));
      const hit = candidates?.find((v) => text.startsWith(v, i));
      if (!hit) continue;
      out += text.slice(from, i) + redactedText;
      from = i + hit.length;
      i = from - 1;
    }
    return from === 0 ? text : out + text.slice(from);
  }
}

const remembered = new Map<string, true>();
let rememberedValues: Values | undefined;
const scope = new AsyncLocalStorage<{ values: string[]; index: Values }>();

/** The forms a value may show up in: as is, URL-encoded, base64 (a Secret's data), JSON-escaped. */
function forms(value: string): string[] {
  const out = new Set([value, value.trim()]);
  for (const v of [...out]) {
    out.add(encodeURIComponent(v));
    out.add(Buffer.from(v, 'utf8').toString('base64').replace(/=+$/, ''));
    out.add(JSON.stringify(v).slice(1, -1));
  }
  return [...out].filter((v) => v.length >= minLength);
}

/** Secret values to redact from now on in this process (credentials synchro loaded). */
export function rememberSecrets(...values: Array<string | undefined>): void {
  let added = false;
  for (const value of values) {
    if (typeof value !== 'string' || value.trim().length < minLength) continue;
    for (const v of forms(value)) {
      if (remembered.has(v)) remembered.delete(v);
      else added = true;
      remembered.set(v, true);
    }
  }
  while (remembered.size > maxRemembered) remembered.delete(remembered.keys().next().value as string);
  if (added) rememberedValues = undefined;
}

/** Runs `fn` with `values` redacted from everything it produces (a request's own credentials). */
export function withSecrets<T>(values: Array<string | undefined>, fn: () => T): T {
  const outer = scope.getStore()?.values ?? [];
  const mine = values.filter((v): v is string => typeof v === 'string' && v.trim().length >= minLength).flatMap(forms);
  const all = [...new Set([...outer, ...mine])];
  return scope.run({ values: all, index: new Values(all) }, fn);
}

/**
 * Names of keys whose value is a credential (matched case-insensitively, as the whole key).
 * A bare `secret` is not one: a Cluster's status names its Secret (`secret: ns/name`).
 */
const secretKeyName =
  '[A-Za-z0-9_-]*(?:token|password|passwd|key-?data|key_data|api-?key|api_key|private-?key|private_key)|[A-Za-z0-9_-]+secret|tls\\.key|ssh-privatekey|credentials?';
const secretKeyNames = new RegExp(`^(?:${secretKeyName})$`, 'i');

/** Whether a key (of JSON, YAML, a Secret's data) names a credential. */
export const isSecretKey = (key: string): boolean => secretKeyNames.test(key);

type Replacer = (match: string, ...groups: string[]) => string;
const structure: Array<[RegExp, string | Replacer]> = [
  // PEM private keys (a truncated block up to the end of the text).
  [/-----BEGIN ([A-Z0-9]+ )*PRIVATE KEY-----[\s\S]*?(?:-----END ([A-Z0-9]+ )*PRIVATE KEY-----|$)/g, `${redactedText}`],
  // The same, base64 encoded (client-key-data, tls.key of a Secret's data).
  [/LS0tLS1CRUdJTi[A-Za-z0-9+/]{8,}={0,2}/g, (m: string) => (Buffer.from(m, 'base64').toString('latin1').includes('PRIVATE KEY') ? redactedText : m)],
  // JWTs (service account tokens, OIDC id tokens).
  [/\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g, redactedText],
  // Authorization header values.
  [/\b(Bearer|Basic)(\s+)[A-Za-z0-9._~+/=-]{8,}/g, (_m: string, scheme: string, space: string) => `${scheme}${space}${redactedText}`],
  // user:password@ in URLs.
  [/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@:]+:[^\s/@]*@/gi, (_m: string, scheme: string) => `${scheme}${redactedText}@`],
  // The value of a credential-named key: JSON ("token":"x", also escaped inside a JSON string),
  // YAML (token: x), query strings and flags (token=x). A value that is an object or a list is
  // left to its own keys.
  [
    new RegExp(
      `(^|[\\s{,;?&(\\[]|\\\\*["'])(${secretKeyName})(\\\\*["']?[ \\t]*[:=][ \\t]*)(?:(\\\\*")(?:[^"\\\\\\n]|\\\\[^"\\\\\\n])*(\\\\*"?)|'[^'\\n]*'|(?![{\\[])[^\\s"',;&{}\\[\\]\\\\]+)`,
      'gi',
    ),
    (_m: string, before: string, key: string, sep: string, open?: string, close?: string) => `${before}${key}${sep}${open !== undefined ? `${open}${redactedText}${close}` : redactedText}`,
  ],
];

/**
 * V8 quotes the input of JSON.parse in its error (`Unexpected token 'x', "{"a":...}" is not
 * valid JSON`, at most a few dozen characters); only looked for in a text that has the words.
 */
const v8JsonSnippet = /, (?:\.\.\.)?"[\s\S]{0,120}?"(?:\.\.\.)? is not valid JSON/g;

/** `text` with every known secret value and every credential-shaped part replaced by `(redacted)`. */
export function redact(text: string): string {
  if (text === '') return text;
  let out = scope.getStore()?.index.replace(text) ?? text;
  rememberedValues ??= new Values(remembered.keys());
  out = rememberedValues.replace(out);
  for (const [pattern, replacement] of structure) out = typeof replacement === 'string' ? out.replace(pattern, replacement) : out.replace(pattern, replacement);
  if (out.includes(' is not valid JSON')) out = out.replace(v8JsonSnippet, ', (the input) is not valid JSON');
  return out;
}

/**
 * A copy of `value` with every string redacted, and the string values of credential-named
 * keys replaced (a status, a log line's fields). Errors become { name, message, stack? }.
 */
export function redactDeep<T>(value: T, depth = 0): T {
  if (typeof value === 'string') return redact(value) as T;
  if (depth > 32 || value === null || typeof value !== 'object') return value;
  if (value instanceof Error) {
    const e: Record<string, unknown> = { name: value.name, message: redact(value.message) };
    const code = (value as NodeJS.ErrnoException).code;
    if (code !== undefined) e.code = code;
    return e as T;
  }
  if (Array.isArray(value)) return value.map((v) => redactDeep(v, depth + 1)) as T;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    out[k] = typeof v === 'string' && isSecretKey(k) && v !== '' ? redactedText : redactDeep(v, depth + 1);
  }
  return out as T;
}

/**
 * The string values under credential-named keys of a decoded document, also inside JSON
 * strings it carries (kubectl's last-applied-configuration annotation): what a request
 * registers with withSecrets before it is handled.
 */
export function secretValuesIn(doc: unknown, depth = 0): string[] {
  if (depth > 32) return [];
  if (typeof doc === 'string') {
    const t = doc.trim();
    if (!(t.startsWith('{') && t.endsWith('}'))) return [];
    try {
      return secretValuesIn(JSON.parse(t), depth + 1);
    } catch {
      return [];
    }
  }
  if (doc === null || typeof doc !== 'object') return [];
  const out: string[] = [];
  const o = doc as Record<string, unknown>;
  // A JSON patch operation: {op, path: "/spec/credentials/token", value}.
  if (typeof o.path === 'string' && 'value' in o && isSecretKey(o.path.split('/').pop() ?? '') && typeof o.value === 'string') out.push(o.value);
  for (const [k, v] of Object.entries(o)) {
    if (typeof v === 'string' && isSecretKey(k)) out.push(v);
    else out.push(...secretValuesIn(v, depth + 1));
  }
  return out;
}
