// The watch fan-out benchmarks' workload (hack/bench/watch-fanout.ts in process,
// hack/bench/watch-connections.ts over real connections): pods of about 1.5 KB spread over
// namespaces, each write stamped with the time it was made (annotation bench/sent) so that a
// consumer can measure delivery latency, and a latency histogram in 0.1 ms buckets.
import type { Store } from '../../storage/store.ts';
import type { UpstreamEvent } from '../../storage/types.ts';
import { realisticPod } from '../fixtures.ts';

export const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Writes the workload's changes into cluster c1 of `store` at `rate` events/s, as synchro
 * would: a batch every 20 ms (at most 500 events), from start() until stop().
 */
export class RateWriter {
  /** Events written so far. */
  written = 0;
  private writing = false;
  private done: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: Store,
    private readonly workload: PodWorkload,
    private readonly rate: number,
  ) {}

  start(): void {
    this.writing = true;
    this.done = this.loop();
  }

  async stop(): Promise<void> {
    this.writing = false;
    await this.done;
  }

  private async loop(): Promise<void> {
    const start = now();
    while (this.writing) {
      const due = Math.floor(((now() - start) / 1000) * this.rate);
      const n = Math.min(500, due - this.written);
      if (n > 0) {
        const events: UpstreamEvent[] = [];
        for (let k = 0; k < n; k++) events.push(this.workload.next(this.written + k));
        await this.store.applyBatch('c1', events);
        this.written += n;
      }
      await sleep(20);
    }
  }
}

/** Pods over `namespaces` namespaces: the initial ones, then a stream of changes (80% MODIFIED, 10% ADDED, 10% DELETED). */
export class PodWorkload {
  private readonly upstream = new Map<string, number>();
  private readonly extra = new Map<number, number>(); // namespace → extra pods created
  private seq = 0;

  constructor(
    readonly namespaces: number,
    readonly podsPerNamespace = 5,
  ) {}

  pod(type: UpstreamEvent['type'], ns: string, name: string): UpstreamEvent {
    const key = `${ns}/${name}`;
    const urv = (this.upstream.get(key) ?? 0) + 1;
    this.upstream.set(key, urv);
    const seq = ++this.seq;
    return {
      type,
      group: '',
      version: 'v1',
      resource: 'pods',
      object: realisticPod({
        namespace: ns,
        name,
        uid: `uid-${ns}-${name}`,
        upstreamRv: String(urv),
        labels: { app: name.replace(/-\d+$/, ''), 'pod-template-hash': '7d9f8c6b5', tier: 'web' },
        annotations: { 'bench/sent': String(now()), 'bench/seq': String(seq) },
        ownerName: `${name}-rs`,
        ownerUid: `rs-${ns}`,
        nodeName: `node-${seq % 50}`,
        podIP: `10.1.${seq % 250}.${seq % 200}`,
        restartCount: seq % 3,
      }),
    };
  }

  /** The initial pods, in batches of 100 namespaces. */
  *initial(): Generator<UpstreamEvent[]> {
    for (let ns = 0; ns < this.namespaces; ns += 100) {
      const events: UpstreamEvent[] = [];
      for (let n = ns; n < Math.min(this.namespaces, ns + 100); n++) for (let p = 0; p < this.podsPerNamespace; p++) events.push(this.pod('ADDED', `ns${n}`, `app-${p}`));
      yield events;
    }
  }

  /** The i-th change of the stream. */
  next(i: number): UpstreamEvent {
    const n = (i * 7919) % this.namespaces;
    const ns = `ns${n}`;
    const r = i % 10;
    if (r === 8) {
      const k = (this.extra.get(n) ?? 0) + 1;
      this.extra.set(n, k);
      return this.pod('ADDED', ns, `job-${k}`);
    }
    if (r === 9 && (this.extra.get(n) ?? 0) > 0) {
      const k = this.extra.get(n)!;
      this.extra.set(n, k - 1);
      return this.pod('DELETED', ns, `job-${k}`);
    }
    return this.pod('MODIFIED', ns, `app-${i % this.podsPerNamespace}`);
  }
}

/** Delivery latencies in 0.1 ms buckets up to 10 s (mergeable across processes). */
export class LatencyHistogram {
  readonly buckets = new Uint32Array(100_001);
  count = 0;
  max = 0;

  add(ms: number): void {
    this.buckets[Math.min(100_000, Math.max(0, Math.round(ms * 10)))]++;
    this.count++;
    if (ms > this.max) this.max = ms;
  }

  reset(): void {
    this.buckets.fill(0);
    this.count = 0;
    this.max = 0;
  }

  /** Non-empty buckets as [bucket, count] pairs (for IPC). */
  toPairs(): Array<[number, number]> {
    const out: Array<[number, number]> = [];
    for (let i = 0; i < this.buckets.length; i++) if (this.buckets[i]) out.push([i, this.buckets[i]]);
    return out;
  }

  merge(pairs: Array<[number, number]>, max: number): void {
    for (const [i, n] of pairs) {
      this.buckets[i] += n;
      this.count += n;
    }
    if (max > this.max) this.max = max;
  }

  quantile(q: number): number {
    let acc = 0;
    for (let i = 0; i < this.buckets.length; i++) {
      acc += this.buckets[i];
      if (acc >= q * this.count) return i / 10;
    }
    return Infinity;
  }
}
