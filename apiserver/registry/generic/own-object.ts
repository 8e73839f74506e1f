// What a create, update (also the result of a patch) or delete of one of Panoptes' own objects
// writes, decided against the stored object as kube-apiserver's registry decides it for a
// custom resource with a status subresource: system fields (uid, creationTimestamp,
// generation, resourceVersion, deletionTimestamp) are the server's, the namespace is the
// request's, status is synchro's (ignored in writes), generation grows when the spec (or what
// the kind stores beside the object) changes, an update that changes nothing writes nothing, a
// stale resourceVersion or uid is a 409, the kind's finalizer is set on create, and a delete of
// an object with finalizers marks it (deletionTimestamp) for synchro to finish. What differs
// between kinds is the kind's strategy (OwnKind): its known fields, the validation and the
// allowlist of its spec (also applied to kubectl's last-applied-configuration annotation and
// to the object a Strict 422 shows), what it stores beside the object, what it refuses, and
// where storage keeps it.
import { randomUUID } from 'node:crypto';
import { lastAppliedAnnotation } from '../../../kube/annotations.ts';
import { fieldForbidden, fieldInvalid, fieldRequired, fieldTooLong, invalidObject, type FieldError } from '../../../kube/field-errors.ts';
import type { Shape } from '../../../kube/known-fields.ts';
import { invalidLabelKey, invalidLabelValue } from '../../../kube/labels.ts';
import { dnsLabelProblem } from '../../../kube/names.ts';
import { canonicalJson } from '../../../kube/patch.ts';
import { StatusError } from '../../../kube/status.ts';
import type { MemberNetworks } from '../../../member/networks.ts';
import type { Store } from '../../../storage/store.ts';
import type { KubeObject } from '../../../storage/types.ts';
import type { ResourceAttributes } from '../../auth/attributes.ts';
import type { ResourceInfo } from '../../discovery/catalog.ts';
import { panoptesApiVersion } from '../../discovery/panoptes-group.ts';

export type Obj = Record<string, unknown>;
const isRecord = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A stored own object as a decision sees it. */
export interface StoredOwnObject {
  uid: string;
  /** The rv of its last change (= metadata.resourceVersion). */
  rv: number;
  /** The object as served. */
  object: KubeObject;
}

/** What a decision writes: nothing, the whole object (with what the kind stores beside it, `extra`), or a delete. */
export type OwnWrite<X> = { action: 'none' } | { action: 'put'; object: KubeObject; extra?: X } | { action: 'delete' };

/** What a write is checked against besides the object: the operator's network allowance. */
export interface WriteRules {
  networks?: MemberNetworks;
}

/** What a kind makes of a request's spec. */
export interface ShapedSpec<X> {
  /** The spec to store: what is served of it. */
  spec: Obj;
  /** Its problems, one per field (and the kind's own rules about the stored object). */
  errors: FieldError[];
  /** What is stored beside the object (the Cluster's inline credentials). */
  extra?: X;
  /** `extra` is to be written: it differs from what is stored (the generation grows). */
  extraChanged?: boolean;
  /** Values the metadata must not carry (write-only ones of the spec), and the cause's words. */
  hidden?: { values: string[]; why: string };
}

/** The strategy of one own kind: everything the registry and the write handler leave to the kind. */
export interface OwnKind<S extends StoredOwnObject, X> {
  info: ResourceInfo;
  /** Set on every object created through the API; synchro releases it. */
  finalizer: string;
  /** The fields of the kind, for strict decoding. */
  shape: Shape;
  /** The one allowlist of what is served of a spec. */
  servedSpec(spec: unknown): Obj;
  /** Why a new object may not have this name, or undefined. */
  nameProblem(name: string): string | undefined;
  /** The spec to store from a request's object, checked; `current` on updates. */
  shapeSpec(body: Obj, current: S | undefined, rules: WriteRules): ShapedSpec<X>;
  /** Throws (403) when the stored object may not be changed through the API. */
  refuse?(current: S, name: string, verb: 'update' | 'delete'): void;
  /** Values of a request body to keep out of every answer, Warning and log line while it is handled. */
  requestSecrets?(body: Buffer, contentType: string | undefined): string[];
  /**
   * The rights a write needs beyond its verb, from the stored object and the object it would
   * store (a Cluster or ClusterSource that grants multi-cluster Service roles needs `update` on
   * its `multiclusterservices` subresource): reviewed by the write handler before it writes.
   */
  privileges?(current: S | undefined, next: KubeObject, name: string): Privilege[];
  /** One read-decide-write of the object under the rv lock, without a lease (the apiserver's writes). */
  write(store: Store, namespace: string, name: string, decide: (current: S | undefined) => OwnWrite<X>): Promise<{ object?: string }>;
}

/** A right a write needs beyond its verb: what to review, and why (said in the 403). */
export interface Privilege {
  attrs: ResourceAttributes;
  why: string;
}

/** An own kind of any state and extra (the registry of kinds). */
export type AnyOwnKind = OwnKind<StoredOwnObject, unknown>;

const kindRef = (k: { info: ResourceInfo }) => ({ group: k.info.group, kind: k.info.kind });
const qualified = (k: { info: ResourceInfo }) => `${k.info.resource}.${k.info.group}`;
const details = (k: { info: ResourceInfo }, name: string) => ({ name, group: k.info.group, kind: k.info.resource });

export const notFound = (k: { info: ResourceInfo }, name: string) => new StatusError('NotFound', `${qualified(k)} ${JSON.stringify(name)} not found`, details(k, name));
const alreadyExists = (k: { info: ResourceInfo }, name: string) => new StatusError('AlreadyExists', `${qualified(k)} ${JSON.stringify(name)} already exists`, details(k, name));
const conflict = (k: { info: ResourceInfo }, name: string, why: string) => new StatusError('Conflict', `Operation cannot be fulfilled on ${qualified(k)} ${JSON.stringify(name)}: ${why}`, details(k, name));
const modified = (k: { info: ResourceInfo }, name: string) => conflict(k, name, 'the object has been modified; please apply your changes to the latest version and try again');

/** A kind's refusal of a change to a stored object: 403 with its name. */
export const forbiddenObject = (k: { info: ResourceInfo }, name: string, why: string) => new StatusError('Forbidden', `${qualified(k)} ${JSON.stringify(name)} is forbidden: ${why}`, details(k, name));

/** What is served of a kind's spec. */
type SpecAllowlist = { servedSpec(spec: unknown): Obj };

/** RFC 3339 at second precision, as metav1.Time serializes. */
const kubeTime = (d: Date): string => d.toISOString().replace(/\.\d{3}Z$/, 'Z');

/**
 * kubectl's last-applied-configuration with the served spec only (the allowlist): without
 * write-only values it recorded, nor the value of a mistyped key. Not JSON: dropped (kubectl
 * writes JSON; anything else there is not served unchecked).
 */
function sanitizeLastApplied(k: SpecAllowlist, text: string): string | undefined {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isRecord(doc)) return undefined;
  if (doc.spec === undefined) return text;
  return JSON.stringify({ ...doc, spec: k.servedSpec(doc.spec) }) + (text.endsWith('\n') ? '\n' : '');
}

function withSanitizedAnnotation(k: SpecAllowlist, md: Obj): Obj {
  if (!isRecord(md.annotations) || typeof md.annotations[lastAppliedAnnotation] !== 'string') return md;
  const { [lastAppliedAnnotation]: text, ...others } = md.annotations;
  const clean = sanitizeLastApplied(k, text as string);
  return { ...md, annotations: clean === undefined ? others : { ...others, [lastAppliedAnnotation]: clean } };
}

/** An object as it may be shown in an error: its spec from the allowlist, its last-applied annotation sanitized. */
export function shownObject(k: SpecAllowlist, obj: Obj): Obj {
  const md = isRecord(obj.metadata) ? withSanitizedAnnotation(k, obj.metadata) : obj.metadata;
  return { ...obj, ...(md !== undefined ? { metadata: md } : {}), ...(obj.spec !== undefined ? { spec: k.servedSpec(obj.spec) } : {}) };
}

function metadataErrors(md: Obj, hidden: ShapedSpec<unknown>['hidden']): FieldError[] {
  const errs: FieldError[] = [];
  const labels = md.labels;
  if (labels !== undefined) {
    if (!isRecord(labels)) errs.push(fieldInvalid('metadata.labels', labels, 'must be a map of strings'));
    else {
      for (const [k, v] of Object.entries(labels)) {
        const badKey = invalidLabelKey(k);
        if (badKey) errs.push(fieldInvalid('metadata.labels', k, badKey));
        if (typeof v !== 'string') errs.push(fieldInvalid(`metadata.labels`, v, 'values must be strings'));
        else {
          const badValue = invalidLabelValue(v);
          if (badValue) errs.push(fieldInvalid(`metadata.labels`, v, badValue));
        }
      }
    }
  }
  const annotations = md.annotations;
  if (annotations !== undefined) {
    if (!isRecord(annotations) || !Object.values(annotations).every((v) => typeof v === 'string')) errs.push(fieldInvalid('metadata.annotations', annotations, 'must be a map of strings'));
    else {
      for (const k of Object.keys(annotations)) {
        const badKey = invalidLabelKey(k.toLowerCase());
        if (badKey) errs.push(fieldInvalid('metadata.annotations', k, badKey));
      }
      const size = Object.entries(annotations).reduce((n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(String(v)), 0);
      if (size > 256 * 1024) errs.push(fieldTooLong('metadata.annotations', 256 * 1024));
    }
  }
  const finalizers = md.finalizers;
  if (finalizers !== undefined) {
    if (!Array.isArray(finalizers) || !finalizers.every((f) => typeof f === 'string')) errs.push(fieldInvalid('metadata.finalizers', finalizers, 'must be a list of strings'));
    else
      finalizers.forEach((f: string, i) => {
        const bad = invalidLabelKey(f);
        if (bad) errs.push(fieldInvalid(`metadata.finalizers[${i}]`, f, bad));
      });
  }
  if (md.ownerReferences !== undefined && !Array.isArray(md.ownerReferences)) errs.push(fieldInvalid('metadata.ownerReferences', md.ownerReferences, 'must be a list'));
  // Write-only values must not reach the served object through its metadata.
  const values = (hidden?.values ?? []).filter((v) => v.length >= 6);
  if (values.length) {
    const text = JSON.stringify({ labels: md.labels, annotations: md.annotations });
    if (values.some((v) => text.includes(v))) errs.push(fieldForbidden('metadata', hidden!.why));
  }
  return errs;
}

/** The request's object checked for what it says about itself: apiVersion and kind. */
function checkTypeMeta(k: { info: ResourceInfo }, body: Obj): void {
  if (body.apiVersion !== undefined && body.apiVersion !== panoptesApiVersion) {
    throw new StatusError('BadRequest', `the API version in the data (${String(body.apiVersion)}) does not match the expected API version (${panoptesApiVersion})`);
  }
  const kind = k.info.kind;
  if (body.kind !== undefined && body.kind !== kind) {
    throw new StatusError('BadRequest', `${String(body.kind)} in version "${k.info.version}" cannot be handled as a ${kind}: the kind in the data (${String(body.kind)}) is not ${kind}`);
  }
}

/** What a stored object becomes from a request's object: metadata kept (annotation sanitized), spec and extra from the kind. */
interface Shaped<X> {
  metadata: Obj;
  spec: Obj;
  extra?: X;
  extraChanged: boolean;
}

function shape<S extends StoredOwnObject, X>(k: OwnKind<S, X>, body: Obj, namespace: string, name: string, current: S | undefined, rules: WriteRules): Shaped<X> {
  const md: Obj = isRecord(body.metadata) ? withSanitizedAnnotation(k, { ...body.metadata }) : {};
  const s = k.shapeSpec(body, current, rules);
  const errs: FieldError[] = [...s.errors, ...metadataErrors(md, s.hidden)];
  if (!current) {
    const why = k.nameProblem(name);
    if (why) errs.push(fieldInvalid('metadata.name', name, why));
    if (k.info.namespaced) {
      const bad = namespace === '' ? 'a namespaced object needs a namespace' : dnsLabelProblem(namespace);
      if (bad) errs.push(fieldInvalid('metadata.namespace', namespace, bad));
    }
  }
  if (errs.length) throw invalidObject(kindRef(k), name, errs);
  return { metadata: md, spec: s.spec, ...(s.extra !== undefined ? { extra: s.extra } : {}), extraChanged: s.extraChanged === true };
}

/** The name a create gets: metadata.name, or metadata.generateName and 5 random characters. */
export function createName(k: { info: ResourceInfo }, body: Obj): string {
  const md = isRecord(body.metadata) ? body.metadata : {};
  if (typeof md.name === 'string' && md.name !== '') return md.name;
  if (typeof md.generateName === 'string' && md.generateName !== '') {
    const alphabet = 'bcdfghjklmnpqrstvwxz2456789';
    let suffix = '';
    for (let i = 0; i < 5; i++) suffix += alphabet[Math.floor(Math.random() * alphabet.length)];
    return md.generateName.slice(0, 63 - 5) + suffix;
  }
  throw invalidObject(kindRef(k), '', [fieldRequired('metadata.name', 'name or generateName is required')]);
}

/** The system fields a request may not set (the server's, or kept from the stored object). */
const systemFields = ['selfLink', 'resourceVersion', 'managedFields', 'deletionTimestamp', 'deletionGracePeriodSeconds'];

/** metadata.namespace as the request's: set for a namespaced kind, dropped for a cluster-scoped one. */
function placeNamespace(k: { info: ResourceInfo }, md: Obj, namespace: string): void {
  if (k.info.namespaced) md.namespace = namespace;
  else delete md.namespace;
}

/** POST: a new object (uid, creationTimestamp, generation 1, the kind's finalizer), 409 when the name is taken. */
export function decideCreate<S extends StoredOwnObject, X>(k: OwnKind<S, X>, current: S | undefined, body: Obj, namespace: string, name: string, now: Date, rules: WriteRules = {}): OwnWrite<X> {
  checkTypeMeta(k, body);
  const md0 = isRecord(body.metadata) ? body.metadata : {};
  if (typeof md0.resourceVersion === 'string' && md0.resourceVersion !== '') throw new StatusError('BadRequest', 'resourceVersion should not be set on objects to be created');
  // rest.EnsureObjectNamespaceMatchesRequestNamespace (k8s.io/apiserver handlers/create.go).
  if (k.info.namespaced && typeof md0.namespace === 'string' && md0.namespace !== '' && md0.namespace !== namespace) {
    throw new StatusError('BadRequest', 'the namespace of the provided object does not match the namespace sent on the request');
  }
  const s = shape(k, body, namespace, name, undefined, rules);
  if (current) throw alreadyExists(k, name);
  const md: Obj = { ...s.metadata, name, uid: randomUUID(), generation: 1, creationTimestamp: kubeTime(now) };
  for (const f of systemFields) delete md[f];
  placeNamespace(k, md, namespace);
  const finalizers = Array.isArray(md.finalizers) ? (md.finalizers as string[]) : [];
  md.finalizers = finalizers.includes(k.finalizer) ? finalizers : [...finalizers, k.finalizer];
  const object: KubeObject = { apiVersion: panoptesApiVersion, kind: k.info.kind, metadata: md, spec: s.spec };
  return { action: 'put', object, ...(s.extraChanged ? { extra: s.extra } : {}) };
}

/**
 * PUT (and a patch's result): the request's metadata and spec over the stored object's system
 * fields and status. `requireRv`: an update must say which version it replaces (a custom
 * resource allows no unconditional update); a patch need not.
 */
export function decideUpdate<S extends StoredOwnObject, X>(k: OwnKind<S, X>, current: S | undefined, body: Obj, namespace: string, name: string, requireRv: boolean, rules: WriteRules = {}): OwnWrite<X> {
  checkTypeMeta(k, body);
  const md0 = isRecord(body.metadata) ? body.metadata : {};
  // checkName (k8s.io/apiserver handlers/rest.go).
  if (md0.name !== undefined && md0.name !== name) throw new StatusError('BadRequest', `the name of the object (${String(md0.name)}) does not match the name on the URL (${name})`);
  if (k.info.namespaced && typeof md0.namespace === 'string' && md0.namespace !== '' && md0.namespace !== namespace) {
    throw new StatusError('BadRequest', `the namespace of the object (${md0.namespace}) does not match the namespace on the request (${namespace})`);
  }
  if (!current) throw notFound(k, name);
  k.refuse?.(current, name, 'update');
  const rv = typeof md0.resourceVersion === 'string' ? md0.resourceVersion : '';
  if (rv === '' && requireRv) throw invalidObject(kindRef(k), name, [fieldInvalid('metadata.resourceVersion', '', 'must be specified for an update')]);
  if (rv !== '' && rv !== String(current.rv)) throw modified(k, name);
  if (typeof md0.uid === 'string' && md0.uid !== '' && md0.uid !== current.uid) throw conflict(k, name, `Precondition failed: UID in precondition: ${md0.uid}, UID in object meta: ${current.uid}`);

  const s = shape(k, body, namespace, name, current, rules);
  const old = current.object;
  const oldMd = (old.metadata ?? {}) as Obj;
  const md: Obj = { ...s.metadata, name, uid: current.uid, creationTimestamp: oldMd.creationTimestamp, generation: oldMd.generation ?? 1 };
  for (const f of systemFields) delete md[f];
  placeNamespace(k, md, namespace);
  if (oldMd.deletionTimestamp) {
    md.deletionTimestamp = oldMd.deletionTimestamp;
    md.deletionGracePeriodSeconds = oldMd.deletionGracePeriodSeconds ?? 0;
    const before = Array.isArray(oldMd.finalizers) ? (oldMd.finalizers as string[]) : [];
    const added = (Array.isArray(md.finalizers) ? (md.finalizers as string[]) : []).filter((f) => !before.includes(f));
    if (added.length) throw invalidObject(kindRef(k), name, [fieldForbidden('metadata.finalizers', `no new finalizers can be added if the object is being deleted, found new finalizers []string{${added.map((f) => JSON.stringify(f)).join(', ')}}`)]);
  }
  if (Array.isArray(md.finalizers) && md.finalizers.length === 0) delete md.finalizers;

  if (canonicalJson(s.spec) !== canonicalJson(old.spec) || s.extraChanged) md.generation = Number(oldMd.generation ?? 1) + 1;
  const object: KubeObject = { apiVersion: panoptesApiVersion, kind: k.info.kind, metadata: md, spec: s.spec, ...(old.status !== undefined ? { status: old.status } : {}) };

  // A deleted object whose last finalizer goes is gone.
  if (md.deletionTimestamp && !(Array.isArray(md.finalizers) && md.finalizers.length)) return { action: 'delete' };
  const unchanged = canonicalJson({ ...object, metadata: { ...md, resourceVersion: undefined } }) === canonicalJson({ ...old, metadata: { ...oldMd, resourceVersion: undefined } });
  if (unchanged && !s.extraChanged) return { action: 'none' };
  return { action: 'put', object, ...(s.extraChanged ? { extra: s.extra } : {}) };
}

export interface DeleteOptions {
  preconditions?: { uid?: string; resourceVersion?: string };
}

/** DELETE: marks an object with finalizers (deletionTimestamp; synchro finishes), deletes one without. */
export function decideDelete<S extends StoredOwnObject, X>(k: OwnKind<S, X>, current: S | undefined, name: string, opts: DeleteOptions, now: Date): OwnWrite<X> {
  if (!current) throw notFound(k, name);
  k.refuse?.(current, name, 'delete');
  const p = opts.preconditions ?? {};
  if (p.uid && p.uid !== current.uid) throw conflict(k, name, `Precondition failed: UID in precondition: ${p.uid}, UID in object meta: ${current.uid}`);
  if (p.resourceVersion && p.resourceVersion !== String(current.rv)) {
    throw conflict(k, name, `Precondition failed: ResourceVersion in precondition: ${p.resourceVersion}, ResourceVersion in object meta: ${current.rv}`);
  }
  const md = (current.object.metadata ?? {}) as Obj;
  const finalizers = Array.isArray(md.finalizers) ? md.finalizers : [];
  if (finalizers.length === 0) return { action: 'delete' };
  if (md.deletionTimestamp) return { action: 'none' };
  const generation = typeof md.generation === 'number' && md.generation > 0 ? md.generation + 1 : md.generation;
  return {
    action: 'put',
    object: { ...current.object, metadata: { ...md, generation, deletionTimestamp: kubeTime(now), deletionGracePeriodSeconds: 0 } },
  };
}
