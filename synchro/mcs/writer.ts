// The writes of one consumer cluster for one key, one object at a time, through its member
// connection (the same connection, TLS, credentials and network guard as its reads). Each
// write reads the live object first and asks ownership.ts whether this installation may write
// it: never another installation's object nor one without Panoptes' mark, never a slice of
// another Service or source, and no slice or ServiceImport unless the key's Service there is
// this installation's (read live, once per batch, before one is created; for an update of one
// already there, as storage's copy says). A refusal is a conflict, reported. An object
// already as the plan says is not written again, and the write itself is conditional on what
// was read (PUT with its resourceVersion, DELETE with uid and resourceVersion preconditions),
// so nobody's change in between is overwritten. Before every write the lease is checked: this
// member must still hold the consumer's lease, at the epoch it started with, long enough for
// the write's timeout. A failed request is thrown as a MemberRequestError naming its verb and
// object, for the dispatcher's failure policy (failures.ts).
import { dispatchFieldManager, mcsApi } from '../../api/multicluster-service.ts';
import { HttpError, type WritableClusterClient } from '../../member/client.ts';
import type { KubeObject } from '../../storage/types.ts';
import { sameImportStatus, sameService, sameSlice, sameImportSpec, type Kind, type Op, type Verb } from './diff.ts';
import { ownerOf, refusal, type ServiceOwner } from './ownership.ts';

/** The consumer's lease is gone (or too close to its end for a write): nothing more is written. */
export class LeaseGoneError extends Error {
  override name = 'LeaseGoneError';
}

/** How a writer proves, before each write, that its member still holds the consumer's lease. */
export interface LeaseCheck {
  /** The ms a write may still take under the lease; throws LeaseGoneError when it is lost or about to end. */
  remainingMs(): number;
  /** Aborted when the lease is lost or the consumer handed over: requests in flight are cut. */
  signal: AbortSignal;
}

/** What one op did. */
export interface Applied {
  op: Op;
  /** Member writes made (0: already in place, or a conflict), by verb. */
  writes: Verb[];
  /** The object as the member holds it now (undefined: gone). */
  object?: KubeObject;
  /** Its resourceVersion now, or before it went. */
  rv?: string;
  /** The live object is not Panoptes': left alone. */
  conflict?: string;
}

/** A request to the member that failed: which, and the member's error (`cause`). */
export class MemberRequestError extends Error {
  override name = 'MemberRequestError';
  constructor(
    /** The request's verb, as RBAC names it. */
    readonly verb: 'get' | 'create' | 'update' | 'delete',
    readonly kind: Kind,
    readonly objectName: string,
    readonly subresource: string | undefined,
    override readonly cause: unknown,
  ) {
    super(cause instanceof Error ? cause.message : String(cause));
  }
}

/** The key a writer writes for, and whose it writes as. */
export interface WriterKey {
  namespace: string;
  /** The Service name. */
  name: string;
  installation: string;
  /**
   * The key's Service in the consumer is this installation's as far as storage's copy (and
   * this dispatcher's own writes) say: enough to update or delete a slice already there (the
   * Service's replacement would hold it already); a slice or ServiceImport that is created is
   * checked against the live Service.
   */
  serviceMine?: boolean;
}

type Obj = Record<string, unknown>;
const isRecord = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The REST path of a kind's collection in a namespace. */
export function collectionPath(kind: Kind, namespace: string): string {
  const ns = encodeURIComponent(namespace);
  if (kind === 'Service') return `/api/v1/namespaces/${ns}/services`;
  if (kind === 'EndpointSlice') return `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices`;
  return `/apis/${mcsApi.group}/${mcsApi.version}/namespaces/${ns}/${mcsApi.serviceImports}`;
}

const isNotFound = (err: unknown): boolean => err instanceof HttpError && err.status === 404;

/** The object went between the read and the write: read again. */
class Moved extends Error {
  constructor(override readonly cause: unknown) {
    super('the object went since it was read');
  }
}
const isConflict = (err: unknown) => err instanceof HttpError && err.status === 409;

/** The metadata a write carries: the live object's (uid, owner references, others' labels) with the plan's labels and annotations. */
function mergedMeta(live: KubeObject, desired: KubeObject): KubeObject['metadata'] {
  const { managedFields: _mf, ...meta } = live.metadata ?? {};
  return {
    ...meta,
    labels: { ...live.metadata?.labels, ...desired.metadata?.labels },
    annotations: { ...live.metadata?.annotations, ...desired.metadata?.annotations },
  };
}

/** The object to create: the plan's, without status (a subresource: written after). */
function fresh(desired: KubeObject): KubeObject {
  const { status: _s, ...rest } = desired;
  return rest;
}

export class MemberWriter {
  /** Whose the key's Service is in the consumer, once read (or written) in this batch. */
  private service?: ServiceOwner;

  constructor(
    private readonly client: WritableClusterClient,
    private readonly lease: LeaseCheck,
    private readonly timeoutMs: number,
    private readonly key: WriterKey,
  ) {}

  private opts(): { timeoutMs: number; signal: AbortSignal; fieldManager: string } {
    return { timeoutMs: Math.min(this.timeoutMs, this.lease.remainingMs()), signal: this.lease.signal, fieldManager: dispatchFieldManager };
  }

  /** One request, its failure named (MemberRequestError) for the failure policy. */
  private async request<T>(verb: MemberRequestError['verb'], kind: Kind, name: string, run: () => Promise<T>, subresource?: string): Promise<T> {
    try {
      return await run();
    } catch (err) {
      if (err instanceof MemberRequestError || !(err instanceof HttpError) || err.status === 404 || err.status === 409) throw err;
      throw new MemberRequestError(verb, kind, name, subresource, err);
    }
  }

  private async live(kind: Kind, name: string): Promise<KubeObject | undefined> {
    try {
      return await this.request('get', kind, name, () => this.client.get<KubeObject>(`${collectionPath(kind, this.key.namespace)}/${encodeURIComponent(name)}`, { timeoutMs: this.timeoutMs, signal: this.lease.signal }));
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /**
   * Whose the key's Service is in the consumer now: read live once per batch (then followed
   * through this writer's own writes) when an object is to be created, or when storage's copy
   * does not say it is this installation's.
   */
  private async serviceOwner(creating: boolean): Promise<ServiceOwner> {
    if (this.service === undefined && !creating && this.key.serviceMine) return 'mine';
    if (this.service === undefined) {
      const svc = await this.live('Service', this.key.name);
      this.service = svc ? ownerOf(svc, this.key.installation) : 'absent';
    }
    return this.service;
  }

  /**
   * Applies one op (read, then at most the writes it needs), once more from a fresh read if the
   * object changed or went in between (409, or 404 on a write to the object itself).
   */
  async apply(op: Op): Promise<Applied> {
    try {
      return await this.once(op);
    } catch (err) {
      if (!isConflict(err) && !(err instanceof Moved)) throw this.named(op, err);
      return this.once(op).catch((again: unknown) => {
        throw this.named(op, again instanceof Moved ? again.cause : again);
      });
    }
  }

  /** A failure as the failure policy reads it: a MemberRequestError (a 409 met twice is the op's own). */
  private named(op: Op, err: unknown): unknown {
    if (err instanceof MemberRequestError || !(err instanceof HttpError)) return err;
    return new MemberRequestError(op.verb === 'delete' ? 'delete' : op.verb === 'create' ? 'create' : 'update', op.kind, op.name, undefined, err);
  }

  private async once(op: Op): Promise<Applied> {
    const { namespace } = this.key;
    const path = `${collectionPath(op.kind, namespace)}/${encodeURIComponent(op.name)}`;
    const anchored = op.kind !== 'Service';
    const live = await this.live(op.kind, op.name);
    const writes: Verb[] = [];
    const verb: Verb = op.verb === 'delete' ? 'delete' : live ? 'update' : 'create';
    const serviceOwner = anchored ? await this.serviceOwner(verb === 'create') : undefined;
    const conflict = refusal({ kind: op.kind, verb, namespace, service: this.key.name, installation: this.key.installation, live, desired: op.desired, ...(serviceOwner ? { serviceOwner } : {}) });
    if (conflict) return { op, writes, ...(live ? { object: live, rv: live.metadata?.resourceVersion } : {}), conflict };

    const del = (o: KubeObject) => this.request('delete', op.kind, op.name, () => this.client.delete(path, { ...this.opts(), preconditions: { uid: o.metadata?.uid, resourceVersion: o.metadata?.resourceVersion } }));
    const create = (desired: KubeObject) => this.request('create', op.kind, op.name, () => this.client.create<KubeObject>(collectionPath(op.kind, namespace), fresh(desired), this.opts()));
    if (op.verb === 'delete') {
      if (!live) return { op, writes };
      try {
        await del(live);
      } catch (err) {
        if (!isNotFound(err)) throw err; // gone meanwhile: as wanted
        return { op, writes, rv: live.metadata?.resourceVersion };
      }
      writes.push('delete');
      if (op.kind === 'Service') this.service = 'absent';
      return { op, writes, rv: live.metadata?.resourceVersion };
    }

    const desired = op.desired!;
    let current: KubeObject;
    if (!live) {
      current = await create(desired);
      writes.push('create');
    } else if (op.kind === 'EndpointSlice' && live.addressType !== desired.addressType) {
      // addressType is immutable: the slice is replaced.
      await del(live);
      writes.push('delete');
      current = await create(desired);
      writes.push('create');
    } else {
      current = live;
      const body = this.updated(op.kind, live, desired);
      if (body) {
        current = await this.request('update', op.kind, op.name, () => this.client.update<KubeObject>(path, body, this.opts())).catch((err: unknown) => {
          throw isNotFound(err) ? new Moved(err) : err; // deleted since it was read: read again
        });
        writes.push('update');
      }
    }
    if (op.kind === 'Service') this.service = ownerOf(current, this.key.installation);
    if (op.kind === 'ServiceImport' && !sameImportStatus(current, desired)) {
      const status = { ...current, status: { ...(isRecord(current.status) ? current.status : {}), ...(desired.status as Obj) } };
      current = await this.request('update', op.kind, op.name, () => this.client.update<KubeObject>(`${path}/status`, status, this.opts()), 'status');
      writes.push('update');
    }
    return { op, writes, object: current, rv: current.metadata?.resourceVersion };
  }

  /** The PUT body that makes `live` (this installation's, or one it adopts) what the plan says, or undefined when it already is. */
  private updated(kind: Kind, live: KubeObject, desired: KubeObject): KubeObject | undefined {
    const metadata = mergedMeta(live, desired);
    if (kind === 'EndpointSlice') {
      if (sameSlice(live, desired)) return undefined;
      return { ...live, metadata, addressType: desired.addressType, endpoints: desired.endpoints, ports: desired.ports };
    }
    const liveSpec = isRecord(live.spec) ? live.spec : {};
    const desiredSpec = isRecord(desired.spec) ? desired.spec : {};
    if (kind === 'Service') {
      if (sameService(live, desired)) return undefined;
      // The live ports' targetPort is kept for a port of the same name (kube defaulted it).
      const livePorts = (Array.isArray(liveSpec.ports) ? liveSpec.ports : []).filter(isRecord);
      const ports = (Array.isArray(desiredSpec.ports) ? desiredSpec.ports : []).filter(isRecord).map((p) => {
        const same = livePorts.find((l) => (l.name ?? '') === (p.name ?? ''));
        return same?.targetPort !== undefined ? { ...p, targetPort: same.targetPort } : p;
      });
      const { selector: _sel, ...spec } = liveSpec;
      return { ...live, metadata, spec: { ...spec, ports } };
    }
    if (sameImportSpec(live, desired)) return undefined;
    return { ...live, metadata, spec: { ...liveSpec, type: desiredSpec.type, ports: desiredSpec.ports } };
  }
}
