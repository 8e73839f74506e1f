// The PATCH bodies kube-apiserver applies to custom resources: JSON merge patch (RFC 7386)
// and JSON patch (RFC 6902), with the answers kube-apiserver gives for bad ones
// (handlers/patch.go over evanphx/json-patch): a body that does not parse is a 400, an
// operation that does not apply a 422, more than 10,000 operations a 413.
//
// Bounded as kube bounds them, and so that no patch can exhaust the heap or the stack: the
// body is decoded by kube/json-limits.ts (depth); the "copy" operations of one JSON patch add
// at most JSONPatchMaxCopyBytes (3 MiB, kube's AccumulatedCopySizeLimit), counted before
// anything is copied (422 as kube answers); the patched object is at most 3 MiB as JSON (413;
// kube leaves that to etcd's request limit) and no deeper than the decoding bound (422, as
// kube's decoding of the patched object answers). Every walk over a value is iterative:
// copies and moves can build values far deeper than a body can nest.
import { fieldInvalid, invalidObject } from './field-errors.ts';
import { cloneJson, decodeJson, deeperThan, DepthError, jsonBytes, jsonEqual, jsonPatchMaxCopyBytes, maxJsonDepth, maxRequestBodyBytes, setOwn } from './json-limits.ts';
import { StatusError } from './status.ts';

export type JsonValue = null | boolean | number | string | JsonValue[] | { [k: string]: JsonValue };
type JsonObject = { [k: string]: JsonValue };

export type PatchType = 'merge' | 'json';

export const mergePatchType = 'application/merge-patch+json';
export const jsonPatchType = 'application/json-patch+json';

/** The maximum operations of one JSON patch (handlers/patch.go maxJSONPatchOperations). */
export const maxJSONPatchOperations = 10_000;

export interface PatchLimits {
  /** What the "copy" operations of one JSON patch may add, as JSON bytes (kube's JSONPatchMaxCopyBytes). */
  maxCopyBytes: number;
  /** The largest patched object, as JSON bytes (413 beyond). */
  maxResultBytes: number;
  /** The deepest patched object (422 beyond). */
  maxDepth: number;
  /**
   * Array elements the operations of one JSON patch may shift (an insert or removal before
   * the end of an array moves every element after it): the one cost of a patch that grows
   * faster than its size (10,000 inserts at the front of a million-element array). kube has
   * no such bound; Panoptes serves every request from one event loop.
   */
  maxShiftedElements: number;
}

export const defaultPatchLimits: PatchLimits = { maxCopyBytes: jsonPatchMaxCopyBytes, maxResultBytes: maxRequestBodyBytes, maxDepth: maxJsonDepth, maxShiftedElements: 200_000_000 };

const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/** kube's answer when an operation does not apply: NewGenericServerResponse(422, ...), whose text is generic. */
const doesNotApply = () => new StatusError('Invalid', 'the server rejected our request due to an error in our request', {});

/**
 * The patch body as a value (kube/json-limits.ts bounds its depth). Too deep: 400 as kube
 * words a patch that does not decode (`error decoding patch: ...`); other syntax errors:
 * `orElse`.
 */
function decodePatch(text: string, orElse: () => StatusError): JsonValue {
  try {
    return decodeJson(text) as JsonValue;
  } catch (err) {
    if (err instanceof DepthError) throw new StatusError('BadRequest', `error decoding patch: ${err.message}`);
    throw orElse();
  }
}

const own = (o: JsonObject, k: string): JsonValue | undefined => (Object.prototype.hasOwnProperty.call(o, k) ? o[k] : undefined);

/** RFC 7386 applied to `target` in place: objects merge, null removes a member, anything else replaces. */
function merge(target: JsonValue, patch: JsonValue): JsonValue {
  if (!isObject(patch)) return patch;
  const root: JsonObject = isObject(target) ? target : {};
  const stack: Array<[JsonObject, JsonObject]> = [[root, patch]];
  while (stack.length) {
    const [out, p] = stack.pop()!;
    for (const k of Object.keys(p)) {
      const v = p[k];
      if (v === null) delete out[k];
      else if (isObject(v)) {
        const cur = own(out, k);
        const next: JsonObject = isObject(cur) ? cur : {};
        setOwn(out, k, next);
        stack.push([next, v]);
      } else setOwn(out, k, v);
    }
  }
  return root;
}

/** Drops nulls inside the objects of an array patch (in place), as jsonpatch.MergePatch does for a patch that replaces the document. */
function pruneNulls(v: JsonValue): JsonValue {
  const stack: JsonValue[] = [v];
  while (stack.length) {
    const x = stack.pop()!;
    if (Array.isArray(x)) {
      for (const e of x) if (typeof e === 'object' && e !== null) stack.push(e);
    }
    else if (isObject(x)) {
      for (const k of Object.keys(x)) {
        if (x[k] === null) delete x[k];
        else if (typeof x[k] === 'object') stack.push(x[k]);
      }
    }
  }
  return v;
}

/**
 * A JSON merge patch applied to `doc` (not changed). The result is whatever the patch makes
 * of the document: an array patch replaces it (the caller rejects a non-object result).
 */
export function applyMergePatch(doc: JsonValue, patchText: string, limits: PatchLimits = defaultPatchLimits): JsonValue {
  const invalidPatch = () => new StatusError('BadRequest', 'Invalid JSON Patch');
  const patch = decodePatch(patchText, invalidPatch);
  if (patch === null || (!isObject(patch) && !Array.isArray(patch))) throw invalidPatch();
  return checkResult(Array.isArray(patch) ? pruneNulls(patch) : merge(cloneJson(doc), patch), limits);
}

interface Operation {
  op: string;
  path: string;
  from?: string;
  value?: JsonValue;
  hasValue: boolean;
}

/** jsonpatch.DecodePatch: a JSON array of operation objects; anything else is a 400. */
function decodeOperations(text: string): Operation[] {
  const ops = decodePatch(text, () => new StatusError('BadRequest', 'invalid character in JSON patch: the body is not JSON'));
  if (!Array.isArray(ops)) throw new StatusError('BadRequest', `json: cannot unmarshal ${ops === null ? 'null' : typeof ops === 'object' ? 'object' : typeof ops} into Go value of type jsonpatch.Patch`);
  if (ops.length > maxJSONPatchOperations) {
    throw new StatusError('RequestEntityTooLarge', `Request entity too large: The allowed maximum operations in a JSON patch is ${maxJSONPatchOperations}, got ${ops.length}`);
  }
  return ops.map((o) => {
    if (!isObject(o)) throw new StatusError('BadRequest', `json: cannot unmarshal ${Array.isArray(o) ? 'array' : typeof o} into Go value of type jsonpatch.Operation`);
    return {
      op: typeof o.op === 'string' ? o.op : '',
      path: typeof o.path === 'string' ? o.path : '\u0000',
      from: typeof o.from === 'string' ? o.from : undefined,
      value: o.value,
      hasValue: Object.prototype.hasOwnProperty.call(o, 'value'),
    };
  });
}

/** RFC 6901 reference tokens of a pointer; undefined when it is not a pointer. */
function tokens(pointer: string): string[] | undefined {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) return undefined;
  return pointer
    .slice(1)
    .split('/')
    .map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** An array index token: digits without a leading zero (or "-" where allowed). */
function index(token: string, length: number, allowEnd: boolean): number | undefined {
  if (allowEnd && token === '-') return length;
  if (!/^(0|[1-9][0-9]*)$/.test(token)) return undefined;
  const i = Number(token);
  return i <= (allowEnd ? length : length - 1) ? i : undefined;
}

/** The container that holds the last token of `path`, and that token. */
function parentOf(doc: JsonValue, path: string): { parent: JsonObject | JsonValue[]; key: string } {
  const t = tokens(path);
  if (!t || t.length === 0) throw doesNotApply();
  let cur: JsonValue | undefined = doc;
  for (const k of t.slice(0, -1)) {
    if (Array.isArray(cur)) {
      const i = index(k, cur.length, false);
      cur = i === undefined ? undefined : cur[i];
    } else if (isObject(cur)) cur = Object.prototype.hasOwnProperty.call(cur, k) ? cur[k] : undefined;
    else cur = undefined;
    if (cur === undefined) throw doesNotApply();
  }
  if (!Array.isArray(cur) && !isObject(cur)) throw doesNotApply();
  return { parent: cur, key: t[t.length - 1] };
}

function valueAt(doc: JsonValue, path: string): JsonValue {
  const t = tokens(path);
  if (!t) throw doesNotApply();
  let cur: JsonValue | undefined = doc;
  for (const k of t) {
    if (Array.isArray(cur)) {
      const i = index(k, cur.length, false);
      cur = i === undefined ? undefined : cur[i];
    } else if (isObject(cur)) cur = Object.prototype.hasOwnProperty.call(cur, k) ? cur[k] : undefined;
    else cur = undefined;
    if (cur === undefined) throw doesNotApply();
  }
  return cur;
}

/** Array elements shifted so far by one patch, against its bound. */
interface Shifts {
  count: number;
  max: number;
}

function shift(s: Shifts, n: number): void {
  s.count += n;
  if (s.count > s.max) {
    throw new StatusError('Invalid', 'the server rejected our request due to an error in our request', {
      causes: [{ message: `the operations shift more than ${s.max} array elements (inserts and removals before the end of large arrays)` }],
    });
  }
}

/** Adds `value` (not copied: each operation's value is its own, and copy passes a copy). */
function add(doc: JsonValue, path: string, value: JsonValue, shifts: Shifts): JsonValue {
  if (path === '') return value;
  const { parent, key } = parentOf(doc, path);
  if (Array.isArray(parent)) {
    const i = index(key, parent.length, true);
    if (i === undefined) throw doesNotApply();
    shift(shifts, parent.length - i);
    parent.splice(i, 0, value);
  } else setOwn(parent, key, value);
  return doc;
}

function remove(doc: JsonValue, path: string, shifts: Shifts): JsonValue {
  const { parent, key } = parentOf(doc, path);
  if (Array.isArray(parent)) {
    const i = index(key, parent.length, false);
    if (i === undefined) throw doesNotApply();
    shift(shifts, parent.length - i - 1);
    return parent.splice(i, 1)[0];
  }
  if (!Object.prototype.hasOwnProperty.call(parent, key)) throw doesNotApply();
  const v = parent[key];
  delete parent[key];
  return v;
}

function replace(doc: JsonValue, path: string, value: JsonValue): JsonValue {
  if (path === '') return value;
  const { parent, key } = parentOf(doc, path);
  if (Array.isArray(parent)) {
    const i = index(key, parent.length, false);
    if (i === undefined) throw doesNotApply();
    parent[i] = value;
  } else {
    if (!Object.prototype.hasOwnProperty.call(parent, key)) throw doesNotApply();
    setOwn(parent, key, value);
  }
  return doc;
}

/** JSON text with the keys of every object sorted: documents equal as JSON give the same text. */
export function canonicalJson(v: unknown): string {
  const sort = (x: unknown): unknown => (Array.isArray(x) ? x.map(sort) : isObject(x) ? Object.fromEntries(Object.keys(x).sort().map((k) => [k, sort(x[k])])) : x);
  return JSON.stringify(sort(v));
}

/**
 * evanphx/json-patch's AccumulatedCopySizeError, answered as kube answers every error of
 * Apply (the generic 422); its words go in a cause. `copied` is a lower bound: counting
 * stopped past the limit.
 */
const copiesTooLarge = (copied: number, limit: number) =>
  new StatusError('Invalid', 'the server rejected our request due to an error in our request', {
    causes: [{ message: `Unable to complete the copy, the accumulated size increase of copy is at least ${copied}, exceeding the limit ${limit}` }],
  });

/** The patched object within the limits: no deeper (422, as kube's decoding of it answers), no larger (413). */
function checkResult(result: JsonValue, limits: PatchLimits): JsonValue {
  if (deeperThan(result, limits.maxDepth)) {
    throw invalidObject({ group: '', kind: '' }, '', [fieldInvalid('patch', `<the patched object, nested deeper than ${limits.maxDepth} levels>`, `exceeded max depth of ${limits.maxDepth}`)]);
  }
  if (jsonBytes(result, limits.maxResultBytes) > limits.maxResultBytes) {
    throw new StatusError('RequestEntityTooLarge', `Request entity too large: the patched object is larger than the limit of ${limits.maxResultBytes} bytes`);
  }
  return result;
}

/** RFC 6902 applied to a copy of `doc`: every operation or none. */
export function applyJsonPatch(doc: JsonValue, patchText: string, limits: PatchLimits = defaultPatchLimits): JsonValue {
  const ops = decodeOperations(patchText);
  let out = cloneJson(doc);
  let copied = 0;
  const shifts: Shifts = { count: 0, max: limits.maxShiftedElements };
  for (const op of ops) {
    const needsValue = op.op === 'add' || op.op === 'replace' || op.op === 'test';
    if (needsValue && !op.hasValue) throw doesNotApply();
    switch (op.op) {
      case 'add':
        out = add(out, op.path, op.value as JsonValue, shifts);
        break;
      case 'remove':
        remove(out, op.path, shifts);
        break;
      case 'replace':
        out = replace(out, op.path, op.value as JsonValue);
        break;
      case 'move': {
        if (op.from === undefined) throw doesNotApply();
        if (op.path !== op.from && op.path.startsWith(op.from + '/')) throw doesNotApply();
        const v = remove(out, op.from, shifts);
        out = add(out, op.path, v, shifts);
        break;
      }
      case 'copy': {
        if (op.from === undefined) throw doesNotApply();
        const v = valueAt(out, op.from);
        // Counted before anything is copied: a copy past the budget allocates nothing.
        copied += jsonBytes(v, limits.maxCopyBytes - copied);
        if (copied > limits.maxCopyBytes) throw copiesTooLarge(copied, limits.maxCopyBytes);
        out = add(out, op.path, cloneJson(v), shifts);
        break;
      }
      case 'test':
        if (!jsonEqual(valueAt(out, op.path), op.value as JsonValue)) throw doesNotApply();
        break;
      default:
        throw doesNotApply();
    }
  }
  return checkResult(out, limits);
}

/** Applies a patch of either type. */
export function applyPatch(type: PatchType, doc: JsonValue, patchText: string, limits: PatchLimits = defaultPatchLimits): JsonValue {
  return type === 'merge' ? applyMergePatch(doc, patchText, limits) : applyJsonPatch(doc, patchText, limits);
}
