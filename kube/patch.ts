// The PATCH bodies kube-apiserver applies to custom resources: JSON merge patch (RFC 7386)
// and JSON patch (RFC 6902), with the answers kube-apiserver gives for bad ones
// (handlers/patch.go over evanphx/json-patch): a body that does not parse is a 400, an
// operation that does not apply a 422, more than 10,000 operations a 413.
import { StatusError } from './status.ts';

export type JsonValue = null | boolean | number | string | JsonValue[] | { [k: string]: JsonValue };
type JsonObject = { [k: string]: JsonValue };

export type PatchType = 'merge' | 'json';

export const mergePatchType = 'application/merge-patch+json';
export const jsonPatchType = 'application/json-patch+json';

/** The maximum operations of one JSON patch (handlers/patch.go maxJSONPatchOperations). */
export const maxJSONPatchOperations = 10_000;

const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/** kube's answer when an operation does not apply: NewGenericServerResponse(422, ...), whose text is generic. */
const doesNotApply = () => new StatusError('Invalid', 'the server rejected our request due to an error in our request', {});

const parse = (text: string): JsonValue => JSON.parse(text) as JsonValue;

/** RFC 7386: objects merge recursively, null removes a member, anything else replaces. */
function merge(target: JsonValue | undefined, patch: JsonValue): JsonValue {
  if (!isObject(patch)) return patch;
  const out: JsonObject = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = merge(out[k], v);
  }
  return out;
}

/** Drops nulls inside objects of an array patch, as jsonpatch.MergePatch does for a patch that replaces the document. */
function pruneNulls(v: JsonValue): JsonValue {
  if (Array.isArray(v)) return v.map(pruneNulls);
  if (isObject(v)) return Object.fromEntries(Object.entries(v).filter(([, x]) => x !== null).map(([k, x]) => [k, pruneNulls(x)]));
  return v;
}

/**
 * A JSON merge patch applied to `doc` (not changed). The result is whatever the patch makes
 * of the document: an array patch replaces it (the caller rejects a non-object result).
 */
export function applyMergePatch(doc: JsonValue, patchText: string): JsonValue {
  let patch: JsonValue;
  try {
    patch = parse(patchText);
  } catch {
    throw new StatusError('BadRequest', 'Invalid JSON Patch');
  }
  if (patch === null || (!isObject(patch) && !Array.isArray(patch))) throw new StatusError('BadRequest', 'Invalid JSON Patch');
  if (Array.isArray(patch)) return pruneNulls(patch);
  return merge(structuredClone(doc), patch);
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
  let ops: JsonValue;
  try {
    ops = parse(text);
  } catch {
    throw new StatusError('BadRequest', 'invalid character in JSON patch: the body is not JSON');
  }
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

function add(doc: JsonValue, path: string, value: JsonValue): JsonValue {
  if (path === '') return structuredClone(value);
  const { parent, key } = parentOf(doc, path);
  if (Array.isArray(parent)) {
    const i = index(key, parent.length, true);
    if (i === undefined) throw doesNotApply();
    parent.splice(i, 0, structuredClone(value));
  } else parent[key] = structuredClone(value);
  return doc;
}

function remove(doc: JsonValue, path: string): JsonValue {
  const { parent, key } = parentOf(doc, path);
  if (Array.isArray(parent)) {
    const i = index(key, parent.length, false);
    if (i === undefined) throw doesNotApply();
    return parent.splice(i, 1)[0];
  }
  if (!Object.prototype.hasOwnProperty.call(parent, key)) throw doesNotApply();
  const v = parent[key];
  delete parent[key];
  return v;
}

function replace(doc: JsonValue, path: string, value: JsonValue): JsonValue {
  if (path === '') return structuredClone(value);
  const { parent, key } = parentOf(doc, path);
  if (Array.isArray(parent)) {
    const i = index(key, parent.length, false);
    if (i === undefined) throw doesNotApply();
    parent[i] = structuredClone(value);
  } else {
    if (!Object.prototype.hasOwnProperty.call(parent, key)) throw doesNotApply();
    parent[key] = structuredClone(value);
  }
  return doc;
}

/** JSON text with the keys of every object sorted: documents equal as JSON give the same text. */
export function canonicalJson(v: unknown): string {
  const sort = (x: unknown): unknown => (Array.isArray(x) ? x.map(sort) : isObject(x) ? Object.fromEntries(Object.keys(x).sort().map((k) => [k, sort(x[k])])) : x);
  return JSON.stringify(sort(v));
}

const jsonEqual = (a: JsonValue, b: JsonValue): boolean => canonicalJson(a) === canonicalJson(b);

/** RFC 6902 applied to a copy of `doc`: every operation or none. */
export function applyJsonPatch(doc: JsonValue, patchText: string): JsonValue {
  const ops = decodeOperations(patchText);
  let out = structuredClone(doc);
  for (const op of ops) {
    const needsValue = op.op === 'add' || op.op === 'replace' || op.op === 'test';
    if (needsValue && !op.hasValue) throw doesNotApply();
    switch (op.op) {
      case 'add':
        out = add(out, op.path, op.value as JsonValue);
        break;
      case 'remove':
        remove(out, op.path);
        break;
      case 'replace':
        out = replace(out, op.path, op.value as JsonValue);
        break;
      case 'move': {
        if (op.from === undefined) throw doesNotApply();
        if (op.path !== op.from && op.path.startsWith(op.from + '/')) throw doesNotApply();
        const v = remove(out, op.from);
        out = add(out, op.path, v);
        break;
      }
      case 'copy':
        if (op.from === undefined) throw doesNotApply();
        out = add(out, op.path, valueAt(out, op.from));
        break;
      case 'test':
        if (!jsonEqual(valueAt(out, op.path), op.value as JsonValue)) throw doesNotApply();
        break;
      default:
        throw doesNotApply();
    }
  }
  return out;
}

/** Applies a patch of either type. */
export function applyPatch(type: PatchType, doc: JsonValue, patchText: string): JsonValue {
  return type === 'merge' ? applyMergePatch(doc, patchText) : applyJsonPatch(doc, patchText);
}
