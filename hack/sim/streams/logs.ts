// pods/log of a simulated container: deterministic lines, one every `intervalMs` since the
// container started (`<container> <n>: GET /healthz 200 <pod>`), the last 1000 kept (the
// kubelet's log rotation, simplified). Query parameters as kube-apiserver takes them
// (PodLogOptions): container, previous (the instance before the last restart: 400 when
// restartCount is 0), follow (new lines until the client goes away), tailLines, sinceSeconds,
// timestamps (RFC 3339 with nanoseconds before each line), limitBytes.
// Ref: k8s.io/api/core/v1 PodLogOptions; pkg/apis/core/validation ValidatePodLogOptions.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { StatusError } from '../../../kube/status.ts';
import { chunked } from '../http.ts';
import type { SimContext } from '../server.ts';
import { resolveContainer } from './pod.ts';

/** Lines kept per container instance. */
export const keptLines = 1000;

export interface LogOptions {
  /** A new line every this many ms (default 1000). */
  intervalMs: number;
}

function intParam(url: URL, name: string, min: number): number | undefined {
  const v = url.searchParams.get(name);
  if (v === null || v === '') return undefined;
  if (!/^-?\d+$/.test(v)) throw new StatusError('BadRequest', `couldn't parse ${name}: strconv.ParseInt: parsing ${JSON.stringify(v)}: invalid syntax`);
  const n = Number(v);
  if (n < min) {
    const what = name === 'tailLines' ? 'tailLines' : name;
    throw new StatusError('Invalid', `PodLogOptions "" is invalid: ${what}: Invalid value: ${n}: must be greater than or equal to ${min}`);
  }
  return n;
}

const boolParam = (url: URL, name: string) => ['true', '1'].includes(url.searchParams.get(name) ?? '');

/** RFC 3339 with 9 fractional digits, as the kubelet writes timestamps. */
export function nanoTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000000Z');
}

export function logLine(pod: string, container: string, n: number, instance: number): string {
  return `${container} ${n}: GET /healthz 200 ${pod}${instance ? ` (instance ${instance})` : ''}`;
}

export async function serveLog(ctx: SimContext, req: IncomingMessage, res: ServerResponse, url: URL, namespace: string, name: string, opts: LogOptions): Promise<void> {
  const tail = intParam(url, 'tailLines', 0);
  const since = intParam(url, 'sinceSeconds', 1);
  const limitBytes = intParam(url, 'limitBytes', 1);
  if (url.searchParams.get('sinceTime') && since !== undefined) throw new StatusError('Invalid', 'PodLogOptions "" is invalid: : Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified');
  const previous = boolParam(url, 'previous');
  const follow = boolParam(url, 'follow');
  const timestamps = boolParam(url, 'timestamps');
  const ref = resolveContainer(ctx, namespace, name, url.searchParams.get('container'), 'log');
  const restarts = Number(ref.status?.restartCount ?? 0);
  if (previous && restarts === 0) throw new StatusError('BadRequest', `previous terminated container "${ref.container}" in pod "${name}" not found`);
  const state = (ref.status?.state ?? {}) as { running?: { startedAt?: string }; terminated?: { startedAt?: string; finishedAt?: string } };
  const last = (ref.status?.lastState ?? {}) as { terminated?: { startedAt?: string; finishedAt?: string } };
  const created = Date.parse(ref.pod.metadata.creationTimestamp ?? '') || Date.now();
  const instance = previous ? restarts - 1 : restarts;
  const startedAt = Date.parse((previous ? last.terminated?.startedAt : state.running?.startedAt ?? state.terminated?.startedAt) ?? '') || created;
  const endedAt = previous ? Date.parse(last.terminated?.finishedAt ?? '') || Date.now() : state.terminated ? Date.parse(state.terminated.finishedAt ?? '') || Date.now() : undefined;
  const step = Math.max(1, opts.intervalMs);
  const lineAt = (n: number) => startedAt + n * step;
  const now = Date.now();
  const upTo = (t: number) => Math.floor((t - startedAt) / step); // the last line written by time t
  let next = Math.max(0, upTo(endedAt ?? now) - keptLines + 1);
  const lastNow = upTo(endedAt ?? now);
  if (since !== undefined) next = Math.max(next, Math.ceil((now - since * 1000 - startedAt) / step));
  if (tail !== undefined) next = Math.max(next, lastNow - tail + 1);

  res.writeHead(200, { 'Content-Type': 'text/plain', 'Cache-Control': 'no-cache, private', ...chunked(res) });
  let budget = limitBytes ?? Infinity;
  const write = (n: number): boolean => {
    const text = `${timestamps ? `${nanoTime(lineAt(n))} ` : ''}${logLine(name, ref.container, n, instance)}\n`;
    const b = Buffer.from(text);
    if (b.length >= budget) {
      res.end(b.subarray(0, budget));
      budget = 0;
      return false;
    }
    budget -= b.length;
    res.write(b);
    return true;
  };
  for (; next <= lastNow; next++) if (!write(next)) return;
  if (!follow || endedAt !== undefined) {
    res.end();
    return;
  }
  // follow: a line at each step until the client goes away (or the pod is deleted).
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      const upto = upTo(Date.now());
      for (; next <= upto; next++) {
        if (!write(next)) return stop();
      }
      if (res.writableLength > 1 << 20) stop(); // a client that does not read: cut off as the kubelet's writer would block
    }, Math.min(step, 1000));
    const stop = () => {
      clearInterval(timer);
      if (!res.writableEnded) res.end();
      resolve();
    };
    req.on('close', stop);
    res.on('close', stop);
  });
}
