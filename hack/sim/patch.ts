// The three PATCH formats kube-apiserver accepts from kubectl: JSON merge patch (RFC 7386),
// JSON patch (RFC 6902) and strategic merge patch (for built-in kinds: lists of known fields
// merge by key, `$patch`, `$retainKeys`, `$deleteFromPrimitiveList` and `$setElementOrder`
// directives). Server-side apply (application/apply-patch+yaml) is simulated without field
// ownership: the applied configuration is created, or merged into the live object (strategic
// merge for built-in kinds, JSON merge for custom resources); fields another manager owns
// are neither protected nor reported as conflicts.
import { StatusError } from '../../kube/status.ts';
import { cloneJson, isObject, type JsonObject } from './types.ts';

export type PatchType = 'merge' | 'strategic' | 'json' | 'apply';

export function patchTypeOf(contentType: string | undefined): PatchType | undefined {
  const ct = (contentType ?? '').split(';')[0].trim().toLowerCase();
  if (ct === 'application/merge-patch+json') return 'merge';
  if (ct === 'application/strategic-merge-patch+json') return 'strategic';
  if (ct === 'application/json-patch+json') return 'json';
  if (ct === 'application/apply-patch+yaml') return 'apply';
  return undefined;
}

/** RFC 7386: objects merge recursively, null deletes, anything else replaces. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return cloneJson(patch);
  const out: JsonObject = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

/** List fields that strategic merge patch merges by a key (patchMergeKey in the Go types). */
const mergeKeys: Record<string, string | ((el: JsonObject) => string)> = {
  containers: 'name',
  initContainers: 'name',
  ephemeralContainers: 'name',
  volumes: 'name',
  env: 'name',
  volumeMounts: 'mountPath',
  volumeDevices: 'devicePath',
  imagePullSecrets: 'name',
  ownerReferences: 'uid',
  conditions: 'type',
  hostAliases: 'ip',
  // Container ports merge by containerPort, Service ports by port.
  ports: (el) => ('containerPort' in el ? 'containerPort' : 'port'),
};
/** Lists of scalars that strategic merge patch merges as sets. */
const mergeSets = new Set(['finalizers']);

function badPatch(message: string): StatusError {
  return new StatusError('BadRequest', message);
}

/** Strategic merge patch of a built-in object. */
export function strategicMergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return cloneJson(patch);
  if (patch.$patch === 'delete') return undefined;
  const base: JsonObject = isObject(target) ? target : {};
  if (patch.$patch === 'replace') {
    const { $patch: _, ...rest } = patch;
    return cloneJson(rest);
  }
  const out: JsonObject = { ...base };
  const retain = patch.$retainKeys;
  for (const [k, v] of Object.entries(patch)) {
    if (k === '$patch' || k === '$retainKeys' || k.startsWith('$setElementOrder/')) continue;
    if (k.startsWith('$deleteFromPrimitiveList/')) {
      const field = k.slice('$deleteFromPrimitiveList/'.length);
      const drop = Array.isArray(v) ? v : [];
      const cur = Array.isArray(out[field]) ? (out[field] as unknown[]) : [];
      out[field] = cur.filter((x) => !drop.includes(x));
      continue;
    }
    if (v === null) {
      delete out[k];
    } else if (Array.isArray(v)) {
      out[k] = mergeList(k, out[k], v);
    } else if (isObject(v)) {
      const merged = strategicMergePatch(out[k], v);
      if (merged === undefined) delete out[k];
      else out[k] = merged;
    } else {
      out[k] = v;
    }
  }
  if (Array.isArray(retain)) {
    for (const k of Object.keys(out)) if (!retain.includes(k)) delete out[k];
  }
  return out;
}

function mergeList(field: string, current: unknown, patch: unknown[]): unknown[] {
  if (patch.some((el) => isObject(el) && el.$patch === 'replace')) {
    return cloneJson(patch.filter((el) => !(isObject(el) && el.$patch === 'replace')));
  }
  const cur = Array.isArray(current) ? current : [];
  if (mergeSets.has(field)) {
    const out = [...cur];
    for (const v of patch) if (!out.includes(v)) out.push(v);
    return out;
  }
  const keyOf = mergeKeys[field];
  if (!keyOf || !patch.every(isObject)) return cloneJson(patch);
  const out = [...cur];
  for (const el of patch as JsonObject[]) {
    const key = typeof keyOf === 'string' ? keyOf : keyOf(el);
    if (!(key in el)) throw badPatch(`map: ${JSON.stringify(el)} does not contain declared merge key: ${key}`);
    const i = out.findIndex((x) => isObject(x) && x[key] === el[key]);
    if (el.$patch === 'delete') {
      if (i >= 0) out.splice(i, 1);
    } else if (i >= 0) {
      out[i] = strategicMergePatch(out[i], el);
    } else {
      out.push(strategicMergePatch({}, el));
    }
  }
  return out;
}

function pointer(path: string): string[] {
  if (path === '') return [];
  if (!path.startsWith('/')) throw badPatch(`json patch: invalid path ${JSON.stringify(path)}`);
  return path.slice(1).split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function parentOf(doc: unknown, tokens: string[], path: string): { parent: JsonObject | unknown[]; last: string } {
  let cur: unknown = doc;
  for (const t of tokens.slice(0, -1)) {
    if (Array.isArray(cur)) cur = cur[Number(t)];
    else if (isObject(cur)) cur = cur[t];
    else cur = undefined;
    if (cur === undefined) throw new StatusError('Invalid', `the server rejected our request due to an error in our request: doc is missing path: ${JSON.stringify(path)}`);
  }
  if (!Array.isArray(cur) && !isObject(cur)) throw new StatusError('Invalid', `doc is missing path: ${JSON.stringify(path)}`);
  return { parent: cur, last: tokens[tokens.length - 1] };
}

function getAt(doc: unknown, path: string): unknown {
  let cur = doc;
  for (const t of pointer(path)) {
    if (Array.isArray(cur)) cur = cur[Number(t)];
    else if (isObject(cur)) cur = cur[t];
    else return undefined;
  }
  return cur;
}

function removeAt(doc: unknown, path: string): unknown {
  const { parent, last } = parentOf(doc, pointer(path), path);
  if (Array.isArray(parent)) {
    const i = Number(last);
    if (!(i >= 0 && i < parent.length)) throw new StatusError('Invalid', `unable to remove nonexistent key: ${path}`);
    return parent.splice(i, 1)[0];
  }
  if (!(last in parent)) throw new StatusError('Invalid', `unable to remove nonexistent key: ${last}: missing value`);
  const v = parent[last];
  delete parent[last];
  return v;
}

function addAt(doc: unknown, path: string, value: unknown, replace: boolean): unknown {
  const tokens = pointer(path);
  if (tokens.length === 0) return cloneJson(value);
  const { parent, last } = parentOf(doc, tokens, path);
  if (Array.isArray(parent)) {
    const i = last === '-' ? parent.length : Number(last);
    if (!(i >= 0 && i <= parent.length) || (replace && i >= parent.length)) throw new StatusError('Invalid', `json patch: index out of range: ${path}`);
    parent.splice(i, replace ? 1 : 0, cloneJson(value));
  } else {
    if (replace && !(last in parent)) throw new StatusError('Invalid', `json patch: replace operation does not apply: doc is missing key: ${path}`);
    parent[last] = cloneJson(value);
  }
  return doc;
}

/** RFC 6902 on a copy of `target`. */
export function jsonPatch(target: unknown, ops: unknown): unknown {
  if (!Array.isArray(ops)) throw badPatch('json patch must be an array of operations');
  let doc = cloneJson(target);
  for (const op of ops) {
    if (!isObject(op) || typeof op.op !== 'string' || typeof op.path !== 'string') throw badPatch(`json patch: invalid operation ${JSON.stringify(op)}`);
    const path = op.path;
    switch (op.op) {
      case 'add':
        doc = addAt(doc, path, op.value, false);
        break;
      case 'replace':
        doc = addAt(doc, path, op.value, true);
        break;
      case 'remove':
        removeAt(doc, path);
        break;
      case 'move': {
        const v = removeAt(doc, String(op.from));
        doc = addAt(doc, path, v, false);
        break;
      }
      case 'copy':
        doc = addAt(doc, path, getAt(doc, String(op.from)), false);
        break;
      case 'test':
        if (JSON.stringify(getAt(doc, path)) !== JSON.stringify(op.value)) throw new StatusError('Invalid', `json patch: testing value ${path} failed`);
        break;
      default:
        throw badPatch(`json patch: unknown operation ${JSON.stringify(op.op)}`);
    }
  }
  return doc;
}

/** Applies a patch of the given type to an object (a copy; the target is not changed). */
export function applyPatch(type: PatchType, target: JsonObject, patch: unknown): JsonObject {
  if (type === 'apply') throw new Error('server-side apply is Crud.patch\'s (it may create)');
  const result = type === 'merge' ? mergePatch(target, patch) : type === 'strategic' ? strategicMergePatch(target, patch) : jsonPatch(target, patch);
  if (!isObject(result)) throw badPatch('the patch does not result in an object');
  return result;
}
