// A churn generator: creates, updates and deletes objects at a steady rate across namespaces,
// through the same write path as HTTP clients. The sequence of operations depends only on the
// seed (and on the generator's own objects), so a run can be replayed; `step(n)` runs n
// operations at once for tests that must not depend on timers.
import { StatusError } from '../../kube/status.ts';
import type { Crud } from './crud.ts';
import { Random } from './random.ts';
import type { ResourceInfo } from './resources.ts';
import type { KObject } from './types.ts';

export type ChurnResource = 'configmaps' | 'pods' | 'secrets';

export interface ChurnOptions {
  /** Operations per second (create, update or delete one object each). */
  ratePerSecond: number;
  /** PRNG seed (default 1). */
  seed?: number;
  /** Namespaces to spread objects over, created when missing (default churn-1..3). */
  namespaces?: string[];
  /** Kinds of objects to churn (default configmaps and pods). */
  resources?: ChurnResource[];
  /** Upper bound of live churn objects (default 500). */
  maxObjects?: number;
  /** Name prefix of churn objects (default "churn"). */
  prefix?: string;
}

export interface ChurnStats {
  running: boolean;
  ratePerSecond: number;
  creates: number;
  updates: number;
  deletes: number;
  errors: number;
  live: number;
}

interface Owned {
  info: ResourceInfo;
  namespace: string;
  name: string;
}

const churnResources: readonly string[] = ['configmaps', 'pods', 'secrets'];
const colors = ['red', 'green', 'blue'];
const phases = ['Pending', 'Running', 'Running', 'Succeeded'];
const TICK_MS = 20;

export class Churn {
  private opts: Required<ChurnOptions> = { ratePerSecond: 0, seed: 1, namespaces: [], resources: [], maxObjects: 500, prefix: 'churn' };
  private rng = new Random(1);
  private pool: Owned[] = [];
  private counter = 0;
  private timer?: NodeJS.Timeout;
  private credit = 0;
  private last = 0;
  private readonly stats = { creates: 0, updates: 0, deletes: 0, errors: 0 };

  constructor(private readonly crud: Crud) {}

  /** (Re)configures the generator; the PRNG restarts from the seed. Does not start it. */
  configure(opts: ChurnOptions): void {
    this.opts = {
      ratePerSecond: Math.max(0, opts.ratePerSecond),
      seed: opts.seed ?? 1,
      namespaces: opts.namespaces?.length ? opts.namespaces : ['churn-1', 'churn-2', 'churn-3'],
      resources: opts.resources?.length ? opts.resources : ['configmaps', 'pods'],
      maxObjects: opts.maxObjects ?? 500,
      prefix: opts.prefix ?? 'churn',
    };
    for (const r of this.opts.resources) {
      if (!churnResources.includes(r)) throw new StatusError('BadRequest', `churn resources must be among ${churnResources.join(', ')}, got ${JSON.stringify(r)}`);
    }
    this.rng = new Random(this.opts.seed);
    for (const ns of this.opts.namespaces) {
      if (!this.crud.store.get('/namespaces', undefined, ns)) {
        this.crud.create(this.info('namespaces'), 'v1', undefined, { metadata: { name: ns, labels: { 'sim.panoptes.io/churn': 'true' } } });
      }
    }
  }

  /** Configures and starts generating `ratePerSecond` operations per second. */
  start(opts: ChurnOptions): void {
    this.stop();
    this.configure(opts);
    this.last = Date.now();
    this.credit = 0;
    this.timer = setInterval(() => this.tick(), TICK_MS);
    this.timer.unref?.();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  get running(): boolean {
    return this.timer !== undefined;
  }

  status(): ChurnStats {
    return { running: this.running, ratePerSecond: this.running ? this.opts.ratePerSecond : 0, ...this.stats, live: this.pool.length };
  }

  private tick(): void {
    const now = Date.now();
    this.credit += ((now - this.last) / 1000) * this.opts.ratePerSecond;
    this.last = now;
    // After a stall, catch up at most half a second's worth.
    this.credit = Math.min(this.credit, Math.max(1, this.opts.ratePerSecond / 2));
    const n = Math.floor(this.credit);
    this.credit -= n;
    if (n > 0) this.step(n);
  }

  private info(resource: string): ResourceInfo {
    return this.crud.registry.lookup('', 'v1', resource)!;
  }

  /** Runs `n` operations now; returns how many succeeded. Configure first (or start). */
  step(n: number): number {
    if (this.opts.resources.length === 0) this.configure({ ratePerSecond: 0 });
    let ok = 0;
    for (let i = 0; i < n; i++) {
      const r = this.rng.next();
      const full = this.pool.length >= this.opts.maxObjects;
      try {
        if (this.pool.length === 0 || (!full && r < 0.4)) this.create();
        else if (r < 0.8 || (full && r < 0.6)) this.update();
        else this.remove();
        ok++;
      } catch {
        this.stats.errors++;
      }
    }
    return ok;
  }

  private create(): void {
    const resource = this.rng.pick(this.opts.resources);
    const namespace = this.rng.pick(this.opts.namespaces);
    const name = `${this.opts.prefix}-${(this.counter++).toString(36).padStart(4, '0')}`;
    const info = this.info(resource);
    const labels = { 'app.kubernetes.io/managed-by': 'sim-churn', 'sim.panoptes.io/color': this.rng.pick(colors) };
    let body: KObject;
    if (resource === 'pods') {
      body = {
        metadata: { name, namespace, labels },
        spec: { nodeName: `node-${this.rng.int(3)}`, containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.9' }] },
        status: { phase: 'Pending' },
      };
    } else if (resource === 'secrets') {
      body = { metadata: { name, namespace, labels }, type: 'Opaque', data: { token: Buffer.from(this.rng.hex(16)).toString('base64') } };
    } else {
      body = { metadata: { name, namespace, labels }, data: { value: this.rng.hex(8) } };
    }
    this.pool.push({ info, namespace, name });
    try {
      this.crud.create(info, 'v1', namespace, body, { keepStatus: true, fieldManager: 'sim-churn' });
    } catch (err) {
      this.pool.pop();
      throw err;
    }
    this.stats.creates++;
  }

  private update(): void {
    const i = this.rng.int(this.pool.length);
    const o = this.pool[i];
    const color = this.rng.pick(colors);
    const value = this.rng.hex(8);
    const phase = this.rng.pick(phases);
    try {
      // One write per operation: pods alternate between metadata and status changes.
      if (o.info.resource === 'pods' && this.rng.next() < 0.5) {
        this.crud.patch(o.info, 'v1', o.namespace, o.name, 'merge', { status: { phase } }, { subresource: 'status', fieldManager: 'sim-churn' });
      } else {
        const patch = { metadata: { labels: { 'sim.panoptes.io/color': color }, annotations: { 'sim.panoptes.io/value': value } } };
        this.crud.patch(o.info, 'v1', o.namespace, o.name, 'merge', patch, { fieldManager: 'sim-churn' });
      }
    } catch (err) {
      this.pool.splice(i, 1);
      throw err;
    }
    this.stats.updates++;
  }

  private remove(): void {
    const i = this.rng.int(this.pool.length);
    const [o] = this.pool.splice(i, 1);
    this.crud.delete(o.info, o.namespace, o.name);
    this.stats.deletes++;
  }
}
