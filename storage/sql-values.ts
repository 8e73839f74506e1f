// Member strings as SQL holds them. Kubernetes bounds little: an annotation value, a
// ConfigMap's data or an ownerReference uid may hold any Unicode, NUL included, and a
// non-validating aggregated API server may put anything anywhere. Both engines must store
// and answer the same, so:
// - Identity (group, version, resource, namespace, name, uid, upstream rv) is stored
//   exactly or not at all: a value that PostgreSQL's text cannot hold (NUL; a lone UTF-16
//   surrogate, which becomes U+FFFD on the way in) or a key past the btree's row limit is
//   refused alike on both engines (UnstorableError), and the committer quarantines the event.
// - What SQL only searches (owner uid, label index rows, selectable fields, the JSON
//   document that JSON paths read) is stored through sqlText: NUL and lone surrogates become
//   U+FFFD, and search values go through the same map, so both engines compare the same text.
//   The object as served is its JSON text, in which both are escapes: it is kept byte for byte.
import { createHash } from 'node:crypto';
import { jsonDepth, writeJson } from '../kube/json-text.ts';
import { invalidLabelKey, invalidLabelValue } from '../kube/labels.ts';

/** A member value that storage cannot hold exactly; names the field, never the value. */
export class UnstorableError extends Error {
  override name = 'UnstorableError';
  constructor(readonly field: string, why: string) {
    super(`${field} cannot be stored: ${why}`);
  }
}

const unsafe = /[\u0000\ud800-\udfff]/;
const lone = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const unsafeChars = new RegExp(`\u0000|${lone.source}`, 'g');

/** Whether `s` has a UTF-16 surrogate without its pair (UTF-8 cannot encode it). */
export const hasLoneSurrogate = (s: string): boolean => lone.test(s);

/** Whether `s` is text both engines hold as is: no NUL, no lone surrogate. */
export function isSqlSafe(s: string): boolean {
  return !unsafe.test(s) || (!s.includes('\u0000') && !hasLoneSurrogate(s));
}

/** `s` with NUL and lone surrogates replaced by U+FFFD: the text SQL searches. */
export function sqlText(s: string): string {
  return isSqlSafe(s) ? s : s.replace(unsafeChars, '\ufffd');
}

/**
 * The key columns' bytes at most. PostgreSQL's btree refuses an index row over 2,704 bytes
 * (a third of a page); objects_list_order holds group, resource, namespace, name and cluster.
 * Kubernetes names are at most 253 characters for every kind but a few path-segment-named
 * ones (RBAC roles and bindings), which only etcd's request limit bounds.
 */
export const maxKeyBytes = 2400;

/** An event's identity, as write.ts stores it. */
export interface Identity {
  cluster: string;
  group: string;
  version: string;
  resource: string;
  namespace: string;
  name: string;
  uid: string;
  upstreamRv: string;
}

/** Where each identity value comes from, as the refusal names it. */
const identityFields: Record<keyof Identity, string> = {
  cluster: 'cluster',
  group: 'group',
  version: 'version',
  resource: 'resource',
  namespace: 'metadata.namespace',
  name: 'metadata.name',
  uid: 'metadata.uid',
  upstreamRv: 'metadata.resourceVersion',
};

/**
 * Throws UnstorableError unless the event's identity can be stored exactly on both engines.
 * A delete stores no key (and may remove a row an older release stored): only the characters
 * are checked, which no lookup could bind on PostgreSQL.
 */
export function checkIdentity(id: Identity, opts: { stores: boolean }): void {
  for (const k of Object.keys(identityFields) as Array<keyof Identity>) {
    const value = id[k];
    if (!unsafe.test(value)) continue;
    if (value.includes('\u0000')) throw new UnstorableError(identityFields[k], 'it contains a NUL character');
    if (hasLoneSurrogate(value)) throw new UnstorableError(identityFields[k], 'it contains a lone UTF-16 surrogate');
  }
  if (!opts.stores) return;
  const bytes = Buffer.byteLength(id.group) + Buffer.byteLength(id.resource) + Buffer.byteLength(id.namespace) + Buffer.byteLength(id.name) + Buffer.byteLength(id.cluster);
  if (bytes > maxKeyBytes) throw new UnstorableError('metadata.name', `group, resource, namespace, name and cluster take ${bytes} bytes, more than the ${maxKeyBytes} an index row holds`);
}

const digest = (s: string) => createHash('sha256').update(s).digest('hex');

/**
 * A label key as the label index holds it: itself when it is a valid label key (every key a
 * selector can name, kube/labels.ts), otherwise `#` and its digest, which no selector names
 * (`#` is not allowed in keys) and which keeps the index row small and distinct per key.
 */
export function labelIndexKey(key: string): string {
  return invalidLabelKey(key) === undefined ? key : `#${digest(key)}`;
}

/** A label value as the label index holds it: itself when valid, otherwise `#` and its digest (no selector value has `#`). */
export function labelIndexValue(value: string): string {
  return invalidLabelValue(value) === undefined ? value : `#${digest(value)}`;
}

/**
 * Containers deeper than this are cut from the document SQL reads: SQLite's JSON functions
 * refuse documents nested deeper than 1,000 levels (JSON_MAX_DEPTH), so both engines read the
 * same cut document; a JSON path shorter than this reads the same value either way.
 */
export const maxSqlDepth = 900;

/**
 * The document SQL's JSON functions read for an object, when it differs from the object's
 * JSON text `json`: with NUL and lone surrogates as U+FFFD (PostgreSQL's jsonb refuses the
 * \u0000 escape and unpaired surrogate escapes) and containers past maxSqlDepth cut. null when
 * the object's own text does (the common case: checked with two substring searches).
 */
export function sqlDocument(object: unknown, json: string): string | null {
  // JSON.stringify writes NUL as \u0000 and a lone surrogate as \udXXX (lowercase); a pair
  // it writes as is. An escaped backslash followed by such text only costs the slow path.
  const escapes = json.includes('\\u0000') || json.includes('\\ud');
  const deep = json.length > 2 * maxSqlDepth && jsonDepth(object, maxSqlDepth) > maxSqlDepth;
  if (!escapes && !deep) return null;
  return writeJson(object, { mapString: escapes ? sqlText : undefined, maxDepth: maxSqlDepth });
}
