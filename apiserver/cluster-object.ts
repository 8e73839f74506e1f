// What a create, update (also the result of a patch) or delete of a Cluster object writes,
// decided against the stored object as kube-apiserver's registry decides it for a custom
// resource with a status subresource: system fields (uid, creationTimestamp, generation,
// resourceVersion, deletionTimestamp) are the server's, status is synchro's (ignored in
// writes), generation grows when the spec (or the inline credentials) change, an update
// that changes nothing writes nothing, a stale resourceVersion is a 409, and a delete of an
// object with finalizers marks it (deletionTimestamp) for synchro to finish. Inline
// credentials are split off for storage apart, with the endpoint they were given for, and
// stripped from what is served (the spec is served from api/cluster.ts's allowlist, also in
// kubectl's last-applied-configuration annotation); a change of that endpoint without new
// inline credentials is refused (422). Objects of clusters.yaml are refused (403).
import { randomUUID } from 'node:crypto';
import { fieldForbidden, fieldInvalid, fieldRequired, fieldTooLong, invalidObject, type FieldError } from '../kube/field-errors.ts';
import { invalidLabelKey, invalidLabelValue } from '../kube/labels.ts';
import { canonicalJson } from '../kube/patch.ts';
import { StatusError } from '../kube/status.ts';
import { credentialsDigest, type ClusterCredentials, type ClusterObjectState, type ClusterObjectWrite } from '../storage/cluster-objects.ts';
import type { KubeObject } from '../storage/types.ts';
import {
  clusterEndpoint,
  clusterFinalizer,
  dnsLabelProblem,
  endpointBindingRule,
  endpointChanges,
  servedSpec,
  splitCredentials,
  validateClusterSpec,
  type ValidationContext,
} from '../api/cluster.ts';
import { lastAppliedAnnotation } from '../kube/annotations.ts';
import { panoptesApiVersion, panoptesGroupName } from './clusters.ts';

const kind = { group: panoptesGroupName, kind: 'Cluster' };
const qualified = `clusters.${panoptesGroupName}`;
const details = (name: string) => ({ name, group: panoptesGroupName, kind: 'clusters' });

type Obj = Record<string, unknown>;
const isRecord = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

export const notFound = (name: string) => new StatusError('NotFound', `${qualified} ${JSON.stringify(name)} not found`, details(name));
const alreadyExists = (name: string) => new StatusError('AlreadyExists', `${qualified} ${JSON.stringify(name)} already exists`, details(name));
const conflict = (name: string, why: string) => new StatusError('Conflict', `Operation cannot be fulfilled on ${qualified} ${JSON.stringify(name)}: ${why}`, details(name));
const modified = (name: string) => conflict(name, 'the object has been modified; please apply your changes to the latest version and try again');

/** A Cluster from clusters.yaml: the API leaves it alone. */
function refuseFileCluster(current: ClusterObjectState, verb: string): void {
  const spec = isRecord(current.object.spec) ? current.object.spec : {};
  if (spec.source !== 'file') return;
  throw new StatusError(
    'Forbidden',
    `${qualified} ${JSON.stringify(current.name)} is forbidden: it is defined in the clusters file of synchro (spec.source: file), which the API cannot ${verb}: change the file instead`,
    details(current.name),
  );
}

/** RFC 3339 at second precision, as metav1.Time serializes. */
const kubeTime = (d: Date): string => d.toISOString().replace(/\.\d{3}Z$/, 'Z');

/**
 * kubectl's last-applied-configuration with the served spec only (the allowlist): without the
 * inline credentials it recorded, nor the value of a mistyped key. Not JSON: dropped (kubectl
 * writes JSON; anything else there is not served unchecked).
 */
function sanitizeLastApplied(text: string): string | undefined {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isRecord(doc)) return undefined;
  if (doc.spec === undefined) return text;
  return JSON.stringify({ ...doc, spec: servedSpec(doc.spec) }) + (text.endsWith('\n') ? '\n' : '');
}

/** An object as it may be shown in an error: its spec from the allowlist, its last-applied annotation sanitized. */
export function shownObject(obj: Obj): Obj {
  const md = isRecord(obj.metadata) ? withSanitizedAnnotation(obj.metadata) : obj.metadata;
  return { ...obj, ...(md !== undefined ? { metadata: md } : {}), ...(obj.spec !== undefined ? { spec: servedSpec(obj.spec) } : {}) };
}

function withSanitizedAnnotation(md: Obj): Obj {
  if (!isRecord(md.annotations) || typeof md.annotations[lastAppliedAnnotation] !== 'string') return md;
  const { [lastAppliedAnnotation]: text, ...others } = md.annotations;
  const clean = sanitizeLastApplied(text as string);
  return { ...md, annotations: clean === undefined ? others : { ...others, [lastAppliedAnnotation]: clean } };
}

function metadataErrors(md: Obj, creds: ClusterCredentials | undefined): FieldError[] {
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
  // Credentials are write-only: they must not reach the served object through its metadata.
  const values = Object.values(creds ?? {}).filter((v): v is string => typeof v === 'string' && v.length >= 6);
  if (values.length) {
    const text = JSON.stringify({ labels: md.labels, annotations: md.annotations });
    if (values.some((v) => text.includes(v))) errs.push(fieldForbidden('metadata', 'the metadata carries the inline credentials of spec.credentials, which are write-only and never served'));
  }
  return errs;
}

/** The request's object checked for what it says about itself: apiVersion, kind, namespace. */
function checkTypeMeta(body: Obj): void {
  if (body.apiVersion !== undefined && body.apiVersion !== panoptesApiVersion) {
    throw new StatusError('BadRequest', `the API version in the data (${String(body.apiVersion)}) does not match the expected API version (${panoptesApiVersion})`);
  }
  if (body.kind !== undefined && body.kind !== 'Cluster') {
    throw new StatusError('BadRequest', `${String(body.kind)} in version "v1alpha1" cannot be handled as a Cluster: the kind in the data (${String(body.kind)}) is not Cluster`);
  }
}

/** What a served object and its credentials become from a request's object (spec split, metadata kept). */
interface Shaped {
  metadata: Obj;
  spec: Obj;
  /** New inline credentials; null: remove (the spec names a Secret instead); undefined: keep what is stored. */
  credentials?: ClusterCredentials | null;
}

/**
 * Stored inline credentials go only where they were given for: a change of endpoint (server,
 * caData, insecureSkipTLSVerify, tlsServerName) needs new inline credentials (or a Secret
 * instead) in the same request.
 */
function bindingErrors(current: ClusterObjectState, spec: unknown): FieldError[] {
  if (current.credentialsDigest === undefined) return [];
  const { inline, secretRef } = splitCredentials(isRecord(spec) ? spec : {});
  if (inline || secretRef) return [];
  return endpointChanges(clusterEndpoint(current.object.spec), clusterEndpoint(spec)).map((f) => fieldForbidden(`spec.${f}`, endpointBindingRule));
}

function shape(body: Obj, name: string, forCreate: boolean, ctx: ValidationContext, extra: FieldError[] = []): Shaped {
  const md: Obj = isRecord(body.metadata) ? withSanitizedAnnotation({ ...body.metadata }) : {};
  const errs: FieldError[] = [...extra];
  const rawSpec = isRecord(body.spec) ? body.spec : {};
  const { served, inline, secretRef } = splitCredentials(rawSpec);
  // Stored credentials stay only while the request gives neither new ones nor a Secret.
  const specErrs = validateClusterSpec(body.spec, { ...ctx, storedCredentials: ctx.storedCredentials === true && !inline && !secretRef });
  errs.push(...specErrs);
  const spec: Obj = { ...served, source: 'api' };
  // New inline credentials are bound to the endpoint of the spec they come with.
  const credentials: ClusterCredentials | null | undefined = secretRef ? null : inline ? { ...inline, endpoint: clusterEndpoint(spec) } : undefined;
  errs.push(...metadataErrors(md, inline));
  if (forCreate) {
    const why = dnsLabelProblem(name);
    if (why) errs.push(fieldInvalid('metadata.name', name, `a Cluster name is the member cluster's name in URLs: ${why}`));
  }
  if (errs.length) throw invalidObject(kind, name, errs);
  return { metadata: md, spec, ...(credentials !== undefined ? { credentials } : {}) };
}

/** The name a create gets: metadata.name, or metadata.generateName and 5 random characters. */
export function createName(body: Obj): string {
  const md = isRecord(body.metadata) ? body.metadata : {};
  if (typeof md.name === 'string' && md.name !== '') return md.name;
  if (typeof md.generateName === 'string' && md.generateName !== '') {
    const alphabet = 'bcdfghjklmnpqrstvwxz2456789';
    let suffix = '';
    for (let i = 0; i < 5; i++) suffix += alphabet[Math.floor(Math.random() * alphabet.length)];
    return md.generateName.slice(0, 63 - 5) + suffix;
  }
  throw invalidObject(kind, '', [fieldRequired('metadata.name', 'name or generateName is required')]);
}

/** What a write is checked against besides the object: the operator's network allowance. */
export interface WriteRules {
  networks?: ValidationContext['networks'];
}

/** POST: a new Cluster (uid, creationTimestamp, generation 1, the finalizer), 409 when the name is taken. */
export function decideCreate(current: ClusterObjectState | undefined, body: Obj, name: string, now: Date, rules: WriteRules = {}): ClusterObjectWrite {
  checkTypeMeta(body);
  const md0 = isRecord(body.metadata) ? body.metadata : {};
  if (typeof md0.resourceVersion === 'string' && md0.resourceVersion !== '') throw new StatusError('BadRequest', 'resourceVersion should not be set on objects to be created');
  const s = shape(body, name, true, { networks: rules.networks });
  if (current) throw alreadyExists(name);
  const md: Obj = { ...s.metadata, name, uid: randomUUID(), generation: 1, creationTimestamp: kubeTime(now) };
  for (const k of ['namespace', 'selfLink', 'resourceVersion', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'managedFields']) delete md[k];
  const finalizers = Array.isArray(md.finalizers) ? (md.finalizers as string[]) : [];
  md.finalizers = finalizers.includes(clusterFinalizer) ? finalizers : [...finalizers, clusterFinalizer];
  const object: KubeObject = { apiVersion: panoptesApiVersion, kind: 'Cluster', metadata: md, spec: s.spec };
  return { action: 'put', object, ...(s.credentials ? { credentials: s.credentials } : {}) };
}

/**
 * PUT (and a patch's result): the request's metadata and spec over the stored object's system
 * fields and status. `requireRv`: an update must say which version it replaces (a custom
 * resource allows no unconditional update); a patch need not.
 */
export function decideUpdate(current: ClusterObjectState | undefined, body: Obj, name: string, requireRv: boolean, rules: WriteRules = {}): ClusterObjectWrite {
  checkTypeMeta(body);
  const md0 = isRecord(body.metadata) ? body.metadata : {};
  if (md0.name !== undefined && md0.name !== name) throw new StatusError('BadRequest', `the name of the object (${String(md0.name)}) does not match the name on the URL (${name})`);
  if (!current) throw notFound(name);
  refuseFileCluster(current, 'update');
  const rv = typeof md0.resourceVersion === 'string' ? md0.resourceVersion : '';
  if (rv === '' && requireRv) throw invalidObject(kind, name, [fieldInvalid('metadata.resourceVersion', '', 'must be specified for an update')]);
  if (rv !== '' && rv !== String(current.rv)) throw modified(name);
  if (typeof md0.uid === 'string' && md0.uid !== '' && md0.uid !== current.uid) throw conflict(name, `Precondition failed: UID in precondition: ${md0.uid}, UID in object meta: ${current.uid}`);

  const s = shape(body, name, false, { networks: rules.networks, storedCredentials: current.credentialsDigest !== undefined }, bindingErrors(current, body.spec));
  const old = current.object;
  const oldMd = (old.metadata ?? {}) as Obj;
  const md: Obj = { ...s.metadata, name, uid: current.uid, creationTimestamp: oldMd.creationTimestamp, generation: oldMd.generation ?? 1 };
  for (const k of ['namespace', 'selfLink', 'resourceVersion', 'managedFields', 'deletionTimestamp', 'deletionGracePeriodSeconds']) delete md[k];
  if (oldMd.deletionTimestamp) {
    md.deletionTimestamp = oldMd.deletionTimestamp;
    md.deletionGracePeriodSeconds = oldMd.deletionGracePeriodSeconds ?? 0;
    const before = Array.isArray(oldMd.finalizers) ? (oldMd.finalizers as string[]) : [];
    const added = (Array.isArray(md.finalizers) ? (md.finalizers as string[]) : []).filter((f) => !before.includes(f));
    if (added.length) throw invalidObject(kind, name, [fieldForbidden('metadata.finalizers', `no new finalizers can be added if the object is being deleted, found new finalizers []string{${added.map((f) => JSON.stringify(f)).join(', ')}}`)]);
  }
  if (Array.isArray(md.finalizers) && md.finalizers.length === 0) delete md.finalizers;

  const credentialsChanged =
    s.credentials === null ? current.credentialsDigest !== undefined : s.credentials !== undefined && credentialsDigest(s.credentials) !== current.credentialsDigest;
  if (canonicalJson(s.spec) !== canonicalJson(old.spec) || credentialsChanged) md.generation = Number(oldMd.generation ?? 1) + 1;
  const object: KubeObject = { apiVersion: panoptesApiVersion, kind: 'Cluster', metadata: md, spec: s.spec, ...(old.status !== undefined ? { status: old.status } : {}) };

  // A deleted object whose last finalizer goes is gone.
  if (md.deletionTimestamp && !(Array.isArray(md.finalizers) && md.finalizers.length)) return { action: 'delete' };
  const unchanged = canonicalJson({ ...object, metadata: { ...md, resourceVersion: undefined } }) === canonicalJson({ ...old, metadata: { ...oldMd, resourceVersion: undefined } });
  if (unchanged && !credentialsChanged) return { action: 'none' };
  return { action: 'put', object, ...(s.credentials !== undefined && credentialsChanged ? { credentials: s.credentials } : {}) };
}

export interface DeleteOptions {
  preconditions?: { uid?: string; resourceVersion?: string };
}

/** DELETE: marks an object with finalizers (deletionTimestamp; synchro finishes), deletes one without. */
export function decideDelete(current: ClusterObjectState | undefined, name: string, opts: DeleteOptions, now: Date): ClusterObjectWrite {
  if (!current) throw notFound(name);
  refuseFileCluster(current, 'delete');
  const p = opts.preconditions ?? {};
  if (p.uid && p.uid !== current.uid) throw conflict(name, `Precondition failed: UID in precondition: ${p.uid}, UID in object meta: ${current.uid}`);
  if (p.resourceVersion && p.resourceVersion !== String(current.rv)) {
    throw conflict(name, `Precondition failed: ResourceVersion in precondition: ${p.resourceVersion}, ResourceVersion in object meta: ${current.rv}`);
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
