// Bounded decoding of what a client sends: the one place a request body becomes a value
// (create, update, every patch type, DeleteOptions), and the measures the patchers use, all
// without recursion, so no body can overflow the stack or grow the heap past a known bound.
//
// The numbers are kube-apiserver's (k8s.io/apiserver pkg/server/config.go): a request body
// is at most MaxRequestBodyBytes (3 MiB: "1.5MB is the recommended client request size in
// byte the etcd server should accept ... we allow 2x as the largest request body size"),
// answered 413 `Request entity too large: limit is 3145728` (handlers' limitedReadBody);
// the "copy" operations of one JSON patch add at most JSONPatchMaxCopyBytes (3 MiB, set as
// evanphx/json-patch's AccumulatedCopySizeLimit).
//
// Nesting depth: Go's encoding/json, which kube decodes with, stops at 10,000 levels
// (scanner.go maxNestingDepth) with the syntax error `invalid character '{' exceeded max
// depth`, a 400 wherever a body does not decode. Node cannot go that deep: its own
// JSON.stringify overflows the default stack near 4,000 levels, structuredClone near 2,000,
// the yaml package's composer near 800, SQLite's JSON functions stop at 1,000. Panoptes
// stops at 500 levels, far below all of them, with Go's words.
//
// YAML (`application/yaml` bodies) is parsed by the yaml package at roughly a second per MiB
// on the one event loop; YAML bodies are held to 128 KiB (a Cluster is a few KiB; kubectl
// sends JSON), aliases to the package's bound (a billion laughs is refused), and the value
// they expand to to the JSON body limit.
import { parse as parseYamlText } from 'yaml';
import { StatusError } from './status.ts';

/** kube-apiserver's MaxRequestBodyBytes. */
export const maxRequestBodyBytes = 3 * 1024 * 1024;
/** kube-apiserver's JSONPatchMaxCopyBytes: what the copies of one JSON patch may add. */
export const jsonPatchMaxCopyBytes = 3 * 1024 * 1024;
/** Objects and arrays nested deeper than this are refused (kube: 10,000; see above). */
export const maxJsonDepth = 500;
/** Largest `application/yaml` body. */
export const maxYamlBodyBytes = 128 * 1024;
/** The yaml package's maxAliasCount (its default, set so that a new default cannot widen it). */
export const maxYamlAliasCount = 100;

/** errors.NewRequestEntityTooLargeError, as limitedReadBody words it. */
export const requestEntityTooLarge = (limit: number): StatusError => new StatusError('RequestEntityTooLarge', `Request entity too large: limit is ${limit}`);

/** Nesting beyond the bound: in Go's encoding/json words for JSON, go-yaml's for YAML. */
export class DepthError extends Error {
  override name = 'DepthError';
}

const jsonDepthError = (open: number) => new DepthError(`invalid character '${open === OPEN_OBJECT ? '{' : '['}' exceeded max depth`);

const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Throws DepthError when the JSON text nests objects and arrays deeper than `max`: a scan of the text, before any parse. */
export function checkJsonDepth(text: string, max = maxJsonDepth): void {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > max) throw jsonDepthError(c);
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) depth--;
  }
}

/** JSON text to a value: the depth bound first, then JSON.parse (its SyntaxError as is). */
export function decodeJson(text: string, max = maxJsonDepth): unknown {
  checkJsonDepth(text, max);
  return JSON.parse(text) as unknown;
}

type Container = Record<string, unknown> | unknown[];
const isContainer = (v: unknown): v is Container => typeof v === 'object' && v !== null;

/** True when `v` nests objects and arrays deeper than `max` (an explicit stack, not recursion). */
export function deeperThan(v: unknown, max = maxJsonDepth): boolean {
  const stack: Array<[unknown, number]> = [[v, 0]];
  while (stack.length) {
    const [x, d] = stack.pop()!;
    if (!isContainer(x)) continue;
    if (d + 1 > max) return true;
    for (const child of Array.isArray(x) ? x : Object.values(x)) if (isContainer(child)) stack.push([child, d + 1]);
  }
  return false;
}

const scalarBytes = (v: unknown): number => Buffer.byteLength(JSON.stringify(v) ?? 'null');

/** obj[key] = value as an own property, also for "__proto__" (which assignment would take as the prototype). */
export function setOwn(obj: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  else obj[key] = value;
}

/**
 * The size of `v` as compact JSON, in bytes, without building the text; stops counting
 * once past `budget` (the result is then some number above it). Shared subtrees (YAML
 * aliases) count each time they appear, as they would be written.
 */
export function jsonBytes(v: unknown, budget = Infinity): number {
  let total = 0;
  const stack: unknown[] = [v];
  while (stack.length && total <= budget) {
    const x = stack.pop();
    if (!isContainer(x)) {
      total += scalarBytes(x);
      continue;
    }
    if (Array.isArray(x)) {
      total += 2 + Math.max(0, x.length - 1);
      for (let i = x.length - 1; i >= 0; i--) stack.push(x[i]);
    } else {
      const keys = Object.keys(x);
      total += 2 + Math.max(0, keys.length - 1);
      for (const k of keys) {
        total += Buffer.byteLength(JSON.stringify(k)) + 1;
        stack.push(x[k]);
      }
    }
  }
  return total;
}

/** A deep copy of a JSON value (an explicit stack, not recursion). */
export function cloneJson<T>(v: T): T {
  if (!isContainer(v)) return v;
  const root: Container = Array.isArray(v) ? new Array<unknown>(v.length) : {};
  const stack: Array<[Container, Container]> = [[v, root]];
  while (stack.length) {
    const [from, to] = stack.pop()!;
    const copy = (x: unknown): unknown => {
      if (!isContainer(x)) return x;
      const y: Container = Array.isArray(x) ? new Array<unknown>(x.length) : {};
      stack.push([x, y]);
      return y;
    };
    if (Array.isArray(from)) for (let i = 0; i < from.length; i++) (to as unknown[])[i] = copy(from[i]);
    else for (const k of Object.keys(from)) setOwn(to as Record<string, unknown>, k, copy(from[k]));
  }
  return root as T;
}

/** Whether two JSON values are equal (object key order aside); stops at the first difference. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  const stack: Array<[unknown, unknown]> = [[a, b]];
  while (stack.length) {
    const [x, y] = stack.pop()!;
    if (!isContainer(x) || !isContainer(y)) {
      if (x !== y) return false;
      continue;
    }
    if (Array.isArray(x) !== Array.isArray(y)) return false;
    if (Array.isArray(x)) {
      const ya = y as unknown[];
      if (x.length !== ya.length) return false;
      for (let i = 0; i < x.length; i++) stack.push([x[i], ya[i]]);
    } else {
      const xo = x as Record<string, unknown>;
      const yo = y as Record<string, unknown>;
      const keys = Object.keys(xo);
      if (keys.length !== Object.keys(yo).length) return false;
      for (const k of keys) {
        if (!Object.prototype.hasOwnProperty.call(yo, k)) return false;
        stack.push([xo[k], yo[k]]);
      }
    }
  }
  return true;
}

/**
 * A YAML document to a value: at most maxYamlBodyBytes of text (413), aliases bounded,
 * the value no deeper than `max` (DepthError) and no larger as JSON than a JSON body may
 * be (413). Returns a tree: aliased parts are copied, not shared. Other errors are the
 * yaml package's (the caller words them).
 */
export function decodeYaml(text: string, max = maxJsonDepth): unknown {
  const bytes = Buffer.byteLength(text);
  if (bytes > maxYamlBodyBytes) throw requestEntityTooLarge(maxYamlBodyBytes);
  // uniqueKeys off: the package checks each key against every other (quadratic); a later
  // duplicate wins, as in JSON.parse.
  const value = parseYamlText(text, { maxAliasCount: maxYamlAliasCount, uniqueKeys: false }) as unknown;
  if (deeperThan(value, max)) throw new DepthError(`exceeded max depth of ${max}`);
  if (jsonBytes(value, maxRequestBodyBytes) > maxRequestBodyBytes) throw requestEntityTooLarge(maxRequestBodyBytes);
  return cloneJson(value);
}
