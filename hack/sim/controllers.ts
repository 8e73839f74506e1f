// The controllers of a simulated cluster (what kube-controller-manager does for Deployments,
// ReplicaSets and EndpointSlices), driven by the cluster's own store events: a change
// queues the keys it concerns, and a worker syncs them on a later turn of the event loop
// (never inside the write that triggered it, so every watcher sees events in rv order), until
// nothing is left to do. Each sync is level-triggered and writes only what differs, so a
// resync of a settled cluster writes nothing.
import type { Crud } from './crud.ts';
import { controllerOf, syncDeployment, syncReplicaSet } from './deployment-controller.ts';
import { defaultMaxEndpointsPerSlice, managedSliceService, serviceSelects, syncService } from './endpointslice-controller.ts';
import type { StoreEvent } from './store.ts';
import type { KObject } from './types.ts';

export interface ControllerOptions {
  /** kube-controller-manager's --max-endpoints-per-slice (default 100). */
  maxEndpointsPerSlice?: number;
}

type Kind = 'deployment' | 'replicaset' | 'service';

/** Syncs run per turn of the event loop before the worker yields to I/O. */
const syncsPerTurn = 2000;

export interface ControllerStats {
  running: boolean;
  queued: number;
  syncs: number;
  errors: number;
  /** The last sync error (a controller that cannot write retries on the next change, as kube's would after backoff). */
  lastError?: string;
}

export class Controllers {
  private readonly queue = new Map<string, { kind: Kind; namespace: string; name: string }>();
  private readonly unsubscribe: (() => void)[] = [];
  private scheduled?: NodeJS.Immediate;
  private idle: (() => void)[] = [];
  private readonly maxEndpointsPerSlice: number;
  private syncs = 0;
  private errors = 0;
  private lastError?: string;

  constructor(private readonly crud: Crud, opts: ControllerOptions = {}) {
    this.maxEndpointsPerSlice = opts.maxEndpointsPerSlice ?? defaultMaxEndpointsPerSlice;
  }

  get running(): boolean {
    return this.unsubscribe.length > 0;
  }

  /** Watches the store and syncs everything once (as controllers do after their informers sync). */
  start(): void {
    if (this.running) return;
    this.unsubscribe.push(...this.watch());
    this.queueAll();
    this.schedule();
  }

  stop(): void {
    for (const u of this.unsubscribe.splice(0)) u();
    if (this.scheduled) clearImmediate(this.scheduled);
    this.scheduled = undefined;
    this.queue.clear();
    this.wakeIdle();
  }

  /** Syncs every Deployment, ReplicaSet and Service now, synchronously, until nothing changes (a static cluster's one pass, the demo workload's finish). */
  reconcileAll(): void {
    const watching = this.running;
    const offs = watching ? [] : this.watch();
    try {
      this.queueAll();
      for (let round = 0; this.queue.size > 0 && round < 1000; round++) this.drain(Infinity);
    } finally {
      for (const off of offs) off();
      if (!watching) this.queue.clear();
    }
  }

  /** Resolves true once the queue is empty (false after timeoutMs): every change so far has been acted on. */
  settle(timeoutMs = 10_000): Promise<boolean> {
    if (this.queue.size === 0 && !this.scheduled) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.idle = this.idle.filter((f) => f !== done);
        resolve(false);
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        resolve(true);
      };
      this.idle.push(done);
    });
  }

  stats(): ControllerStats {
    return { running: this.running, queued: this.queue.size, syncs: this.syncs, errors: this.errors, ...(this.lastError ? { lastError: this.lastError } : {}) };
  }

  /** Subscribes to the collections the controllers act on; returns the unsubscribers. */
  private watch(): (() => void)[] {
    const store = this.crud.store;
    return [
      store.subscribe('apps/deployments', (e) => this.add('deployment', e.object)),
      store.subscribe('apps/replicasets', (e) => this.onReplicaSet(e)),
      store.subscribe('/pods', (e) => this.onPod(e)),
      store.subscribe('/services', (e) => this.add('service', e.object)),
      store.subscribe('discovery.k8s.io/endpointslices', (e) => this.onSlice(e)),
    ];
  }

  private queueAll(): void {
    const store = this.crud.store;
    for (const d of store.list('apps/deployments').items) this.add('deployment', d);
    for (const rs of store.list('apps/replicasets').items) this.add('replicaset', rs);
    for (const s of store.list('/services').items) this.add('service', s);
  }

  private add(kind: Kind, o: { metadata: { namespace?: string; name?: string } } | undefined, name = o?.metadata.name): void {
    const namespace = o?.metadata.namespace;
    if (!namespace || !name) return;
    this.queue.set(`${kind}/${namespace}/${name}`, { kind, namespace, name });
    if (this.running) this.schedule();
  }

  private onReplicaSet(e: StoreEvent): void {
    this.add('replicaset', e.object);
    for (const o of [e.prev, e.object]) {
      const owner = o && controllerOf(o);
      if (owner?.kind === 'Deployment') this.add('deployment', o, owner.name);
    }
  }

  private onPod(e: StoreEvent): void {
    for (const o of [e.prev, e.object]) {
      const owner = o && controllerOf(o);
      if (owner?.kind === 'ReplicaSet') this.add('replicaset', o, owner.name);
    }
    const namespace = e.object.metadata.namespace;
    for (const svc of this.crud.store.list('/services', { namespace }).items) {
      if (serviceSelects(svc, e.object) || serviceSelects(svc, e.prev)) this.add('service', svc);
    }
  }

  private onSlice(e: StoreEvent): void {
    for (const o of [e.prev, e.object] as (KObject | undefined)[]) {
      const svc = managedSliceService(o);
      if (svc) this.add('service', o, svc);
    }
  }

  private schedule(): void {
    if (this.scheduled || this.queue.size === 0) return;
    this.scheduled = setImmediate(() => {
      this.scheduled = undefined;
      this.drain(syncsPerTurn);
      if (this.queue.size > 0) this.schedule();
      else this.wakeIdle();
    });
  }

  private wakeIdle(): void {
    const waiting = this.idle;
    this.idle = [];
    for (const f of waiting) f();
  }

  /** Syncs queued keys, oldest first; changes made meanwhile queue more. */
  private drain(limit: number): void {
    for (let n = 0; n < limit && this.queue.size > 0; n++) {
      const [key, item] = this.queue.entries().next().value as [string, { kind: Kind; namespace: string; name: string }];
      this.queue.delete(key);
      this.syncs++;
      try {
        if (item.kind === 'deployment') syncDeployment(this.crud, item.namespace, item.name);
        else if (item.kind === 'replicaset') syncReplicaSet(this.crud, item.namespace, item.name);
        else syncService(this.crud, item.namespace, item.name, this.maxEndpointsPerSlice);
      } catch (err) {
        this.errors++;
        this.lastError = `${key}: ${err instanceof Error ? err.message : String(err)}`;
      }
    }
  }
}
