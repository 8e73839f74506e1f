// Each request's deadline, set once when it arrives (as kube's WithRequestDeadline and
// timeout filter): the server's --request-timeout, shortened by the client's `timeout=`. What
// may wait on a client or a member waits against it: a write's body (write-request.ts
// readBody), a write's slot among those in flight (limitWritesInFlight), the routed handler
// and a proxied request to its member. Long-running requests (watches, logs, exec, attach,
// port-forward) stream past it; their body, if any, is still read within it.
import type { Context, Middleware } from 'koa';
import { StatusError } from '../../kube/status.ts';

export interface RequestDeadline {
  /** When it passes (Date.now() clock). */
  readonly at: number;
  /** Aborted when it passes. */
  readonly signal: AbortSignal;
  /** Milliseconds left (at least 1). */
  remaining(): number;
}

/** The handler did not finish in time (kube's finisher: `context deadline exceeded`). */
export const requestTimeout = () => new StatusError('Timeout', 'Timeout: request did not complete within requested timeout - context deadline exceeded', {});

/** Nothing (a body, a slot) came in time: kube's timeout filter's answer to a request it cut. */
export const allottedTimeout = () => new StatusError('Timeout', 'Timeout: request did not complete within the allotted timeout', {});

/** The request timeout of a request: `serverMs`, shortened by a valid `timeout=` (client-go's, e.g. `30s`). */
export function requestTimeoutMs(querystring: string, serverMs: number): number {
  const t = new URLSearchParams(querystring).get('timeout');
  if (!t || !/^\d+(\.\d+)?(ms|s|m|h)$/.test(t)) return serverMs;
  const n = parseFloat(t);
  const unit = t.endsWith('ms') ? 1 : t.endsWith('s') ? 1000 : t.endsWith('m') ? 60_000 : 3_600_000;
  return n > 0 ? Math.min(serverMs, n * unit) : serverMs;
}

interface DeadlineState {
  deadline?: RequestDeadline;
}

/** Sets each request's deadline (its timer ends with the request). */
export function withRequestDeadline(serverMs: number): Middleware {
  return async (ctx, next) => {
    const ms = requestTimeoutMs(ctx.querystring, serverMs);
    const at = Date.now() + ms;
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), ms);
    timer.unref();
    (ctx.state as DeadlineState).deadline = { at, signal: abort.signal, remaining: () => Math.max(1, at - Date.now()) };
    try {
      await next();
    } finally {
      clearTimeout(timer);
    }
  };
}

/** The request's deadline (withRequestDeadline); a request outside it gets one of `fallbackMs` from now. */
export function requestDeadline(ctx: Context, fallbackMs = 60_000): RequestDeadline {
  const state = ctx.state as DeadlineState;
  if (!state.deadline) {
    const at = Date.now() + fallbackMs;
    const timer = AbortSignal.timeout(fallbackMs);
    state.deadline = { at, signal: timer, remaining: () => Math.max(1, at - Date.now()) };
  }
  return state.deadline;
}

/**
 * `p`, or a rejection with `error()` when the deadline passes first. What `p` answers to the
 * deadline itself (a body that did not come: readBody's 504) wins: the cut comes a turn later.
 */
export function beforeDeadline<T>(p: Promise<T>, deadline: RequestDeadline, error = requestTimeout): Promise<T> {
  p.catch(() => undefined); // a late failure after the deadline is not unhandled
  if (deadline.signal.aborted) return Promise.reject(error());
  let onAbort = () => undefined as void;
  const cut = new Promise<never>((_, reject) => {
    onAbort = () => void setImmediate(() => reject(error()));
    deadline.signal.addEventListener('abort', onAbort, { once: true });
  });
  return Promise.race([p, cut]).finally(() => deadline.signal.removeEventListener('abort', onAbort));
}
