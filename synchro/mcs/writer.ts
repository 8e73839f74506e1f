// The writes of one consumer cluster, one object at a time, through its member connection
// (the same connection, TLS, credentials and network guard as its reads). Each write reads the
// live object first: nothing without Panoptes' managed-by mark is updated or deleted (a
// conflict is reported instead), an object already as the plan says is not written again, and
// the write itself is conditional on what was read (PUT with its resourceVersion, DELETE with
// uid and resourceVersion preconditions), so nobody's change in between is overwritten. Before
// every write the lease is checked: this member must still hold the consumer's lease, at the
// epoch it started with, long enough for the write's timeout.
import { dispatchFieldManager, mcsApi } from '../../api/multicluster-service.ts';
import { HttpError, type WritableClusterClient } from '../../member/client.ts';
import type { KubeObject } from '../../storage/types.ts';
import { isManaged } from './desired.ts';
import { sameImportSpec, sameImportStatus, sameService, sameSlice, type Kind, type Op, type Verb } from './diff.ts';

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
  constructor(
    private readonly client: WritableClusterClient,
    private readonly lease: LeaseCheck,
    private readonly timeoutMs: number,
  ) {}

  private opts(): { timeoutMs: number; signal: AbortSignal; fieldManager: string } {
    return { timeoutMs: Math.min(this.timeoutMs, this.lease.remainingMs()), signal: this.lease.signal, fieldManager: dispatchFieldManager };
  }

  private async live(kind: Kind, namespace: string, name: string): Promise<KubeObject | undefined> {
    try {
      return await this.client.get<KubeObject>(`${collectionPath(kind, namespace)}/${encodeURIComponent(name)}`, { timeoutMs: this.timeoutMs, signal: this.lease.signal });
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /**
   * Applies one op (read, then at most the writes it needs), once more from a fresh read if the
   * object changed or went in between (409, or 404 on a write to the object itself).
   */
  async apply(op: Op, namespace: string): Promise<Applied> {
    try {
      return await this.once(op, namespace);
    } catch (err) {
      if (!isConflict(err) && !(err instanceof Moved)) throw err;
      return this.once(op, namespace).catch((again: unknown) => {
        throw again instanceof Moved ? again.cause : again;
      });
    }
  }

  private async once(op: Op, namespace: string): Promise<Applied> {
    const path = `${collectionPath(op.kind, namespace)}/${encodeURIComponent(op.name)}`;
    const live = await this.live(op.kind, namespace, op.name);
    const writes: Verb[] = [];
    if (live && !isManaged(live)) return { op, writes, object: live, rv: live.metadata?.resourceVersion, conflict: `${op.kind} ${namespace}/${op.name} exists without Panoptes' mark: left alone` };

    if (op.verb === 'delete') {
      if (!live) return { op, writes };
      try {
        await this.client.delete(path, { ...this.opts(), preconditions: { uid: live.metadata?.uid, resourceVersion: live.metadata?.resourceVersion } });
      } catch (err) {
        if (!isNotFound(err)) throw err; // gone meanwhile: as wanted
        return { op, writes, rv: live.metadata?.resourceVersion };
      }
      writes.push('delete');
      return { op, writes, rv: live.metadata?.resourceVersion };
    }

    const desired = op.desired!;
    let current: KubeObject;
    if (!live) {
      current = await this.client.create<KubeObject>(collectionPath(op.kind, namespace), fresh(desired), this.opts());
      writes.push('create');
    } else if (op.kind === 'EndpointSlice' && live.addressType !== desired.addressType) {
      // addressType is immutable: the slice is replaced.
      await this.client.delete(path, { ...this.opts(), preconditions: { uid: live.metadata?.uid, resourceVersion: live.metadata?.resourceVersion } });
      writes.push('delete');
      current = await this.client.create<KubeObject>(collectionPath(op.kind, namespace), fresh(desired), this.opts());
      writes.push('create');
    } else {
      current = live;
      const body = this.updated(op.kind, live, desired);
      if (body) {
        current = await this.client.update<KubeObject>(path, body, this.opts()).catch((err: unknown) => {
          throw isNotFound(err) ? new Moved(err) : err; // deleted since it was read: read again
        });
        writes.push('update');
      }
    }
    if (op.kind === 'ServiceImport' && !sameImportStatus(current, desired)) {
      current = await this.client.update<KubeObject>(`${path}/status`, { ...current, status: { ...(isRecord(current.status) ? current.status : {}), ...(desired.status as Obj) } }, this.opts());
      writes.push('update');
    }
    return { op, writes, object: current, rv: current.metadata?.resourceVersion };
  }

  /** The PUT body that makes `live` (Panoptes') what the plan says, or undefined when it already is. */
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
