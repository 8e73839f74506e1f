// Writes as kube-apiserver's registries do them: create, update, patch, delete and the scale
// subresource, with uid, creationTimestamp, generation, resourceVersion preconditions,
// finalizers, namespace and CRD lifecycles and the Status errors kubectl expects.
// Also the small part of the garbage collector a demo needs: deleting an owner deletes its
// dependents (background propagation), unless propagationPolicy=Orphan.
import { randomBytes, randomUUID } from 'node:crypto';
import { StatusError, type StatusDetails } from '../../kube/status.ts';
import { invalidObject } from '../../kube/field-errors.ts';
import { decodeObject, validateCustomResource, type FieldValidation } from './decode.ts';
import { applyPatch, type PatchType } from './patch.ts';
import { invalidCRD, type Registry, type ResourceInfo } from './resources.ts';
import { allocateService, defaultEndpointSlice, defaultService } from './service-defaults.ts';
import type { Store } from './store.ts';
import { cloneJson, isObject, kubeTime, stable, type JsonObject, type KObject, type ObjectMeta } from './types.ts';
import { validateMetadata, validateObject } from './validation.ts';

export interface WriteOptions {
  /** dryRun=All: validate and answer, store nothing. */
  dryRun?: boolean;
  /** ?fieldValidation= (default Warn): what happens to fields the schema does not know. */
  fieldValidation?: FieldValidation;
  /** Where the warnings of the write go (unknown fields under Warn), for the Warning header. */
  warnings?: string[];
  /** Recorded in managedFields; from ?fieldManager= or the User-Agent. */
  fieldManager?: string;
  /** For the simulator's own writers (workload, churn): keep `status` on create. */
  keepStatus?: boolean;
}

export interface DeleteOptions extends WriteOptions {
  preconditions?: { uid?: string; resourceVersion?: string };
  propagationPolicy?: 'Orphan' | 'Background' | 'Foreground';
}

export interface DeleteResult {
  /** The object as deleted (or as marked for deletion while finalizers remain). */
  object: KObject;
  /** False while finalizers hold the object. */
  deleted: boolean;
}

/** Dependents the garbage collector deletes with their owner (by the owner's kind). */
const dependents: Record<string, string[]> = {
  Deployment: ['apps/replicasets'],
  ReplicaSet: ['/pods'],
  StatefulSet: ['/pods', 'apps/controllerrevisions'],
  DaemonSet: ['/pods', 'apps/controllerrevisions'],
  Job: ['/pods'],
  CronJob: ['batch/jobs'],
  // The EndpointSlices kube's controller made for it (and any other slice that names the Service as its owner).
  Service: ['discovery.k8s.io/endpointslices'],
};

function getPath(obj: unknown, path: string): unknown {
  let cur = obj;
  for (const k of path.replace(/^\./, '').split('.')) {
    if (!isObject(cur)) return undefined;
    cur = cur[k];
  }
  return cur;
}

function setPath(obj: JsonObject, path: string, value: unknown): JsonObject {
  const [k, ...rest] = path.replace(/^\./, '').split('.');
  if (rest.length === 0) return { ...obj, [k]: value };
  return { ...obj, [k]: setPath(isObject(obj[k]) ? obj[k] : {}, rest.join('.'), value) };
}

export class Crud {
  /** Where the next clusterIP is looked for (kube-dns gets 10.96.0.10 in a new demo cluster, as in kind). */
  private readonly serviceIPs = { next: 10 };

  constructor(readonly store: Store, readonly registry: Registry) {}

  details(info: ResourceInfo, name: string, uid?: string): StatusDetails {
    const d: StatusDetails = { name, group: info.group, kind: info.resource };
    if (uid) d.uid = uid;
    return d;
  }

  notFound(info: ResourceInfo, name: string): StatusError {
    const what = info.group ? `${info.resource}.${info.group}` : info.resource;
    return new StatusError('NotFound', `${what} "${name}" not found`, this.details(info, name));
  }

  private conflict(info: ResourceInfo, name: string, why = 'the object has been modified; please apply your changes to the latest version and try again'): StatusError {
    const what = info.group ? `${info.resource}.${info.group}` : info.resource;
    return new StatusError('Conflict', `Operation cannot be fulfilled on ${what} "${name}": ${why}`, this.details(info, name));
  }

  private invalid(info: ResourceInfo, name: string, field: string, message: string): StatusError {
    return new StatusError('Invalid', `${info.kind} "${name}" is invalid: ${field}: ${message}`, {
      ...this.details(info, name),
      kind: info.kind,
      causes: [{ reason: 'FieldValueInvalid', message, field }],
    });
  }

  get(info: ResourceInfo, namespace: string | undefined, name: string): KObject {
    const o = this.store.get(info.id, info.namespaced ? namespace : undefined, name);
    if (!o) throw this.notFound(info, name);
    return o;
  }

  private checkBody(info: ResourceInfo, version: string, body: unknown): KObject {
    if (!isObject(body)) throw new StatusError('BadRequest', 'the body of the request is not a JSON object');
    const apiVersion = info.group ? `${info.group}/${version}` : version;
    if (body.kind !== undefined && body.kind !== info.kind) {
      throw new StatusError('BadRequest', `the kind in the data (${String(body.kind)}) does not match the expected kind (${info.kind})`);
    }
    if (body.apiVersion !== undefined && body.apiVersion !== apiVersion && !(typeof body.apiVersion === 'string' && body.apiVersion.startsWith(`${info.group}/`) && info.group)) {
      throw new StatusError('BadRequest', `the API version in the data (${String(body.apiVersion)}) does not match the expected API version (${apiVersion})`);
    }
    const { apiVersion: _v, kind: _k, metadata, ...rest } = cloneJson(body);
    // A Secret's stringData is written into data (base64) and never stored, as kube-apiserver's conversion does.
    if (info.id === '/secrets' && isObject(rest.stringData)) {
      const data: JsonObject = isObject(rest.data) ? { ...rest.data } : {};
      for (const [k, v] of Object.entries(rest.stringData)) data[k] = Buffer.from(String(v), 'utf8').toString('base64');
      rest.data = data;
      delete rest.stringData;
    }
    return { apiVersion, kind: info.kind, metadata: isObject(metadata) ? (metadata as ObjectMeta) : {}, ...rest };
  }

  private checkNamespace(info: ResourceInfo, obj: KObject, namespace: string | undefined): void {
    if (!info.namespaced) {
      delete obj.metadata.namespace;
      return;
    }
    if (obj.metadata.namespace && namespace && obj.metadata.namespace !== namespace) {
      throw new StatusError('BadRequest', 'the namespace of the provided object does not match the namespace sent on the request');
    }
    obj.metadata.namespace = namespace ?? obj.metadata.namespace ?? 'default';
  }

  private crdOf(info: ResourceInfo): KObject | undefined {
    return info.crd ? this.store.get('apiextensions.k8s.io/customresourcedefinitions', undefined, info.crd) : undefined;
  }

  /** The object as kube-apiserver decodes it against its schema (decode.ts): types checked, unknown fields dropped and reported. */
  private decode(info: ResourceInfo, version: string, obj: KObject, opts: WriteOptions): KObject {
    const { object, warnings } = decodeObject(info, version, obj, { fieldValidation: opts.fieldValidation, crd: this.crdOf(info) });
    opts.warnings?.push(...warnings);
    return object;
  }

  /** kube-apiserver's validation of the object (validation.ts): 422 Invalid with every field error. */
  private validate(info: ResourceInfo, version: string, obj: KObject, old?: KObject, statusOnly = false): void {
    const errs = statusOnly ? validateMetadata(info, obj) : validateObject(info, obj, old);
    if (info.crd) errs.push(...validateCustomResource(version, obj, this.crdOf(info)));
    if (errs.length) throw invalidObject({ group: info.group, kind: info.kind }, obj.metadata.name ?? '', errs);
  }

  private managed(meta: ObjectMeta, info: ResourceInfo, version: string, opts: WriteOptions): void {
    if (!opts.fieldManager) return;
    const apiVersion = info.group ? `${info.group}/${version}` : version;
    const entry = { manager: opts.fieldManager, operation: 'Update', apiVersion, time: kubeTime(), fieldsType: 'FieldsV1', fieldsV1: { 'f:metadata': {} } };
    const old = Array.isArray(meta.managedFields) ? (meta.managedFields as { manager?: string }[]) : [];
    meta.managedFields = [...old.filter((m) => m.manager !== opts.fieldManager), entry];
  }

  /** POST: creates an object; 409 AlreadyExists, 404 when its namespace does not exist. */
  create(info: ResourceInfo, version: string, namespace: string | undefined, body: unknown, opts: WriteOptions = {}): KObject {
    const obj = this.decode(info, version, this.checkBody(info, version, body), opts);
    this.checkNamespace(info, obj, namespace);
    const meta = obj.metadata;
    if (!meta.name && meta.generateName) {
      const alphabet = 'bcdfghjklmnpqrstvwxz2456789';
      meta.name = meta.generateName + [...randomBytes(5)].map((b) => alphabet[b % alphabet.length]).join('');
    }
    const name = meta.name ?? '';
    if (info.namespaced && !this.store.get('/namespaces', undefined, meta.namespace!)) {
      throw new StatusError('NotFound', `namespaces "${meta.namespace}" not found`, { name: meta.namespace, kind: 'namespaces' });
    }
    if (info.namespaced) {
      const ns = this.store.get('/namespaces', undefined, meta.namespace!)!;
      if (ns.metadata.deletionTimestamp) {
        throw new StatusError('Forbidden', `${info.resource} "${name}" is forbidden: unable to create new content in namespace ${meta.namespace} because it is being terminated`, this.details(info, name));
      }
    }
    meta.uid = randomUUID();
    meta.creationTimestamp = kubeTime();
    delete meta.resourceVersion;
    delete meta.deletionTimestamp;
    delete meta.deletionGracePeriodSeconds;
    if (info.generation) meta.generation = 1;
    else delete meta.generation;
    if (info.status && !opts.keepStatus) delete obj.status;
    this.managed(meta, info, version, opts);
    this.defaults(info, obj);
    this.validate(info, version, obj);
    if (this.store.get(info.id, meta.namespace, name)) {
      const what = info.group ? `${info.resource}.${info.group}` : info.resource;
      throw new StatusError('AlreadyExists', `${what} "${name}" already exists`, this.details(info, name));
    }
    if (info.id === '/services') obj.spec = allocateService(this.store, obj, this.serviceIPs);
    if (info.id === 'apiextensions.k8s.io/customresourcedefinitions') {
      const why = invalidCRD(obj);
      if (why) throw this.invalid(info, name, 'spec', why);
      obj.status = crdStatus(obj);
    }
    if (opts.dryRun) return obj;
    const stored = this.store.put(info.id, obj).object;
    if (info.id === 'apiextensions.k8s.io/customresourcedefinitions') this.registry.addCRD(stored);
    return stored;
  }

  /** Kind-specific defaults kube-apiserver applies on create. */
  private defaults(info: ResourceInfo, obj: KObject): void {
    const spec = isObject(obj.spec) ? obj.spec : undefined;
    switch (info.id) {
      case '/namespaces':
        obj.metadata.labels = { ...obj.metadata.labels, 'kubernetes.io/metadata.name': obj.metadata.name! };
        obj.spec = { finalizers: ['kubernetes'], ...spec };
        obj.status = { phase: 'Active' };
        break;
      case '/pods':
        if (!isObject(obj.status)) obj.status = { phase: 'Pending', qosClass: 'BestEffort' };
        break;
      case '/services':
        obj.spec = defaultService(obj);
        obj.status ??= { loadBalancer: {} };
        break;
      case 'discovery.k8s.io/endpointslices':
        defaultEndpointSlice(obj);
        break;
    }
  }

  /**
   * PUT: replaces an object. A resourceVersion in the body must be current (409 Conflict);
   * without one the update is unconditional. With `subresource: 'status'` only the status
   * changes; otherwise, for kinds with a status subresource, the status is kept.
   */
  update(info: ResourceInfo, version: string, namespace: string | undefined, name: string, body: unknown, opts: WriteOptions & { subresource?: 'status' } = {}): KObject {
    const obj = this.decode(info, version, this.checkBody(info, version, body), opts);
    this.checkNamespace(info, obj, namespace);
    if (obj.metadata.name !== undefined && obj.metadata.name !== name) {
      throw new StatusError('BadRequest', `the name of the object (${obj.metadata.name}) does not match the name on the URL (${name})`);
    }
    const old = this.get(info, namespace, name);
    const rv = obj.metadata.resourceVersion;
    if (rv !== undefined && rv !== '' && rv !== old.metadata.resourceVersion) throw this.conflict(info, name);
    if (obj.metadata.uid !== undefined && obj.metadata.uid !== old.metadata.uid) {
      throw this.conflict(info, name, `Precondition failed: UID in precondition: ${obj.metadata.uid}, UID in object meta: ${old.metadata.uid}`);
    }
    let next: KObject;
    if (opts.subresource === 'status') {
      next = { ...old, metadata: { ...old.metadata }, status: obj.status };
    } else {
      next = { ...obj, metadata: { ...obj.metadata } };
      if (info.status) {
        if (old.status === undefined) delete next.status;
        else next.status = old.status;
      }
    }
    const statusOnly = opts.subresource === 'status';
    if (info.id === '/services' && !statusOnly) next.spec = defaultService(next, old);
    if (info.id === 'discovery.k8s.io/endpointslices') defaultEndpointSlice(next);
    const meta = next.metadata;
    meta.name = name;
    meta.uid = old.metadata.uid;
    meta.creationTimestamp = old.metadata.creationTimestamp;
    if (old.metadata.deletionTimestamp) {
      meta.deletionTimestamp = old.metadata.deletionTimestamp;
      meta.deletionGracePeriodSeconds = old.metadata.deletionGracePeriodSeconds;
    } else {
      delete meta.deletionTimestamp;
      delete meta.deletionGracePeriodSeconds;
    }
    meta.resourceVersion = old.metadata.resourceVersion;
    if (info.generation) {
      meta.generation = (old.metadata.generation ?? 1) + (this.specChanged(info, old, next) ? 1 : 0);
    } else {
      delete meta.generation;
    }
    if (info.id === '/namespaces') meta.labels = { ...meta.labels, 'kubernetes.io/metadata.name': name };
    this.validate(info, version, next, old, statusOnly);
    if (info.id === '/services' && !statusOnly) next.spec = allocateService(this.store, next, this.serviceIPs);
    if (info.id === 'apiextensions.k8s.io/customresourcedefinitions') {
      const why = invalidCRD(next);
      if (why) throw this.invalid(info, name, 'spec', why);
      if (opts.subresource !== 'status') next.status = crdStatus(next);
    }
    const changed = stable({ ...next, metadata: { ...meta, managedFields: undefined } }) !== stable({ ...old, metadata: { ...old.metadata, managedFields: undefined } });
    if (!changed) return old;
    this.managed(meta, info, version, opts);
    if (opts.dryRun) return next;
    if (meta.deletionTimestamp && (meta.finalizers ?? []).length === 0) {
      // The last finalizer is gone: the update completes the deletion.
      return this.finishDelete(info, next, 'Background').object;
    }
    const stored = this.store.put(info.id, next).object;
    if (info.id === 'apiextensions.k8s.io/customresourcedefinitions') this.registry.addCRD(stored);
    return stored;
  }

  private specChanged(info: ResourceInfo, a: KObject, b: KObject): boolean {
    // An EndpointSlice's generation follows everything but metadata, and its labels (the strategy's PrepareForUpdate).
    if (info.id === 'discovery.k8s.io/endpointslices') {
      const strip = (o: KObject) => stable({ ...o, metadata: { labels: o.metadata.labels ?? {} } });
      return strip(a) !== strip(b);
    }
    if (info.crd || info.id === 'apiextensions.k8s.io/customresourcedefinitions') {
      const strip = (o: KObject) => stable({ ...o, metadata: undefined, status: undefined });
      return strip(a) !== strip(b);
    }
    return stable(a.spec) !== stable(b.spec);
  }

  /** PATCH: applies a merge, strategic merge or JSON patch, then updates as PUT does. */
  patch(info: ResourceInfo, version: string, namespace: string | undefined, name: string, type: PatchType, patch: unknown, opts: WriteOptions & { subresource?: 'status' } = {}): KObject {
    if (type === 'strategic' && info.crd) {
      throw new StatusError('UnsupportedMediaType', 'the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml');
    }
    const apiVersion = info.group ? `${info.group}/${version}` : version;
    if (type === 'apply') return this.serverSideApply(info, version, namespace, name, patch, opts);
    const old = this.get(info, namespace, name);
    const patched = applyPatch(type, { ...old, apiVersion }, patch);
    return this.update(info, version, namespace, name, patched, opts);
  }

  /**
   * Server-side apply, simplified (hack/sim/patch.ts): kube's checks of the request (a field
   * manager, the body's name), then a create or a merge of the applied configuration.
   */
  private serverSideApply(info: ResourceInfo, version: string, namespace: string | undefined, name: string, patch: unknown, opts: WriteOptions & { subresource?: 'status' }): KObject {
    if (!opts.fieldManager) throw new StatusError('Invalid', 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch');
    if (!isObject(patch)) throw new StatusError('BadRequest', 'the body of the request could not be decoded: an apply patch is an object');
    const md = isObject(patch.metadata) ? patch.metadata : {};
    if (md.name !== undefined && md.name !== name) throw new StatusError('BadRequest', `the name of the object (${String(md.name)}) does not match the name on the URL (${name})`);
    const apiVersion = info.group ? `${info.group}/${version}` : version;
    const current = this.store.get(info.id, namespace, name);
    if (!current) {
      if (opts.subresource) throw this.notFound(info, name);
      return this.create(info, version, namespace, { ...patch, metadata: { ...md, name } }, opts);
    }
    // A resourceVersion in the applied configuration is checked as an update's; without one, the live object's.
    return this.update(info, version, namespace, name, applyPatch(info.crd ? 'merge' : 'strategic', { ...current, apiVersion }, patch), opts);
  }

  /**
   * DELETE. Objects with finalizers get a deletionTimestamp and stay until the last one is
   * removed; namespaces and CRDs take their contents with them; owners their dependents.
   */
  delete(info: ResourceInfo, namespace: string | undefined, name: string, opts: DeleteOptions = {}): DeleteResult {
    const old = this.get(info, namespace, name);
    const pre = opts.preconditions;
    if (pre?.uid && pre.uid !== old.metadata.uid) {
      throw this.conflict(info, name, `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${old.metadata.uid}`);
    }
    if (pre?.resourceVersion && pre.resourceVersion !== old.metadata.resourceVersion) {
      throw this.conflict(info, name, `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${old.metadata.resourceVersion}`);
    }
    if (opts.dryRun) return { object: old, deleted: true };
    const finalizers = (old.metadata.finalizers ?? []).filter((f) => !(info.id === '/namespaces' && f === 'kubernetes'));
    if (finalizers.length > 0) {
      if (old.metadata.deletionTimestamp) return { object: old, deleted: false };
      const marked: KObject = { ...old, metadata: { ...old.metadata, deletionTimestamp: kubeTime(), deletionGracePeriodSeconds: 0 } };
      return { object: this.store.put(info.id, marked).object, deleted: false };
    }
    return this.finishDelete(info, old, opts.propagationPolicy ?? 'Background');
  }

  private finishDelete(info: ResourceInfo, obj: KObject, policy: DeleteOptions['propagationPolicy']): DeleteResult {
    const name = obj.metadata.name!;
    if (info.id === '/namespaces') {
      // Terminating, then empty (as the namespace controller does), then gone.
      const terminating: KObject = { ...obj, metadata: { ...obj.metadata, deletionTimestamp: obj.metadata.deletionTimestamp ?? kubeTime() }, status: { phase: 'Terminating' } };
      this.store.put(info.id, terminating);
      for (const other of this.registry.all()) {
        if (!other.namespaced) continue;
        for (const o of this.store.list(other.id, { namespace: name }).items) this.store.remove(other.id, name, o.metadata.name!);
      }
    }
    if (info.id === 'apiextensions.k8s.io/customresourcedefinitions') {
      const id = this.registry.removeCRD(name);
      if (id) for (const o of this.store.list(id).items) this.store.remove(id, o.metadata.namespace, o.metadata.name!);
    }
    const event = this.store.remove(info.id, obj.metadata.namespace, name);
    const deleted = event ? event.object : obj;
    if (policy !== 'Orphan') this.collectDependents(info, obj);
    return { object: deleted, deleted: true };
  }

  private collectDependents(info: ResourceInfo, owner: KObject): void {
    const ids = dependents[info.kind];
    if (!ids || info.crd) return;
    const uid = owner.metadata.uid;
    for (const id of ids) {
      const dep = this.registry.byId(id);
      if (!dep) continue;
      for (const o of this.store.list(id, { namespace: owner.metadata.namespace }).items) {
        if ((o.metadata.ownerReferences ?? []).some((r) => r.uid === uid)) {
          this.delete(dep, o.metadata.namespace, o.metadata.name!, {});
        }
      }
    }
  }

  /** The autoscaling/v1 Scale of a deployment, replicaset, statefulset or scalable custom resource. */
  getScale(info: ResourceInfo, namespace: string | undefined, name: string): KObject {
    return this.toScale(info, this.get(info, namespace, name));
  }

  private toScale(info: ResourceInfo, o: KObject): KObject {
    const sc = info.scale!;
    let selector = getPath(o, sc.labelSelectorPath ?? '');
    if (!info.crd) {
      const sel = getPath(o, '.spec.selector');
      const ml = isObject(sel) && isObject(sel.matchLabels) ? sel.matchLabels : {};
      selector = Object.entries(ml).map(([k, v]) => `${k}=${String(v)}`).join(',');
    }
    const status: JsonObject = { replicas: Number(getPath(o, sc.statusReplicasPath) ?? 0) };
    if (typeof selector === 'string' && selector !== '') status.selector = selector;
    const replicas = getPath(o, sc.specReplicasPath);
    return {
      kind: 'Scale',
      apiVersion: 'autoscaling/v1',
      metadata: {
        name: o.metadata.name, namespace: o.metadata.namespace, uid: o.metadata.uid,
        resourceVersion: o.metadata.resourceVersion, creationTimestamp: o.metadata.creationTimestamp,
      },
      spec: { replicas: typeof replicas === 'number' ? replicas : 1 },
      status,
    };
  }

  /** PUT .../scale: sets spec.replicas of the parent (409 on a stale resourceVersion). */
  updateScale(info: ResourceInfo, version: string, namespace: string | undefined, name: string, body: unknown, opts: WriteOptions = {}): KObject {
    if (!isObject(body) || !isObject(body.spec)) throw new StatusError('BadRequest', 'the body of the request is not a Scale object');
    const old = this.get(info, namespace, name);
    const meta = isObject(body.metadata) ? body.metadata : {};
    if (typeof meta.resourceVersion === 'string' && meta.resourceVersion !== '' && meta.resourceVersion !== old.metadata.resourceVersion) {
      throw this.conflict(info, name);
    }
    const replicas = body.spec.replicas;
    if (typeof replicas !== 'number' || !Number.isInteger(replicas) || replicas < 0) {
      throw new StatusError('Invalid', `Scale.autoscaling "${name}" is invalid: spec.replicas: Invalid value: ${JSON.stringify(replicas)}: must be greater than or equal to 0`, {
        name, group: 'autoscaling', kind: 'Scale', causes: [{ reason: 'FieldValueInvalid', field: 'spec.replicas', message: 'must be greater than or equal to 0' }],
      });
    }
    const next = setPath(old, info.scale!.specReplicasPath, replicas) as KObject;
    const stored = this.update(info, version, namespace, name, { ...next, metadata: { ...next.metadata, resourceVersion: undefined } }, opts);
    return this.toScale(info, stored);
  }

  /** PATCH .../scale, as kubectl scale sends it. */
  patchScale(info: ResourceInfo, version: string, namespace: string | undefined, name: string, type: PatchType, patch: unknown, opts: WriteOptions = {}): KObject {
    const scale = this.getScale(info, namespace, name);
    const patched = applyPatch(type, scale, patch);
    return this.updateScale(info, version, namespace, name, patched, opts);
  }
}

function crdStatus(crd: KObject): JsonObject {
  const spec = crd.spec as JsonObject;
  const now = kubeTime();
  const versions = (spec.versions as JsonObject[]).filter((v) => v.storage === true).map((v) => v.name);
  const cond = (type: string, reason: string, message: string) => ({ type, status: 'True', lastTransitionTime: now, reason, message });
  return {
    conditions: [cond('NamesAccepted', 'NoConflicts', 'no conflicts found'), cond('Established', 'InitialNamesAccepted', 'the initial names have been accepted')],
    acceptedNames: spec.names,
    storedVersions: versions,
  };
}
