// The /_sim/ control endpoints of a simulated cluster (fault injection and churn over HTTP).
// They are never delayed nor refused by the faults they control. See hack/README.md.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { StatusError } from '../../kube/status.ts';
import type { SimUser } from './auth.ts';
import type { ChurnResource } from './churn.ts';
import type { DownMode } from './faults.ts';
import { parseDuration, readBody, sendJson } from './http.ts';
import type { SimContext } from './server.ts';
import { isObject } from './types.ts';

function status(ctx: SimContext): Record<string, unknown> {
  return {
    name: ctx.name,
    resourceVersion: String(ctx.store.resourceVersion),
    compactedResourceVersion: String(ctx.store.compactedRv),
    watches: ctx.hub.count,
    objects: Object.fromEntries(ctx.store.ids().map((id) => [id, ctx.store.count(id)])),
    faults: ctx.faults.state(),
    churn: ctx.churn.status(),
    controllers: ctx.controllers.stats(),
  };
}

function duration(url: URL, name: string): number | undefined {
  const v = url.searchParams.get(name);
  if (v === null) return undefined;
  const ms = parseDuration(v);
  if (ms === undefined) throw new StatusError('BadRequest', `${name} must be a duration like 500ms, 10s or 2m, got ${JSON.stringify(v)}`);
  return ms;
}

function intParam(url: URL, name: string, fallback: number): number {
  const v = url.searchParams.get(name);
  if (v === null) return fallback;
  if (!/^\d+$/.test(v)) throw new StatusError('BadRequest', `${name} must be a non-negative integer, got ${JSON.stringify(v)}`);
  return Number(v);
}

function list(url: URL, name: string): string[] | undefined {
  const v = url.searchParams.get(name);
  return v ? v.split(',').map((s) => s.trim()).filter(Boolean) : undefined;
}

export async function handleControl(ctx: SimContext, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  const action = url.pathname.slice('/_sim/'.length).replace(/\/+$/, '');
  const method = req.method ?? 'GET';
  if (action === 'status' && method === 'GET') return sendJson(res, 200, status(ctx));
  if (method !== 'POST' && !(method === 'DELETE' && action === 'churn')) {
    throw new StatusError('MethodNotAllowed', `use POST for /_sim/${action}`);
  }
  const f = ctx.faults;
  switch (action) {
    case 'drop-watches':
      return sendJson(res, 200, { dropped: f.dropWatches({ abrupt: url.searchParams.get('abrupt') === 'true' }) });
    case 'expire-history':
      return sendJson(res, 200, f.expireHistory());
    case 'latency': {
      f.setLatency(duration(url, 'ms') ?? duration(url, 'latency') ?? 0);
      return sendJson(res, 200, f.state());
    }
    case 'down': {
      const mode = (url.searchParams.get('mode') ?? 'refuse') as DownMode;
      if (mode !== 'refuse' && mode !== 'unavailable') throw new StatusError('BadRequest', 'mode must be refuse or unavailable');
      const forMs = duration(url, 'for');
      if (mode === 'refuse' && forMs === undefined) {
        throw new StatusError('BadRequest', 'mode=refuse needs for=<duration>: nothing could reach /_sim/up while the port is closed');
      }
      // Answer first: a refusing cluster resets every connection, this one included.
      res.on('finish', () => void f.down({ mode, forMs }).catch(() => undefined));
      return sendJson(res, 200, { state: mode, forMs });
    }
    case 'up':
      await f.up();
      return sendJson(res, 200, f.state());
    case 'churn':
      if (method === 'DELETE') {
        ctx.churn.stop();
        return sendJson(res, 200, ctx.churn.status());
      }
      ctx.churn.start({
        ratePerSecond: intParam(url, 'rate', 10),
        seed: intParam(url, 'seed', 1),
        namespaces: list(url, 'namespaces'),
        resources: list(url, 'resources') as ChurnResource[] | undefined,
        maxObjects: intParam(url, 'max', 500),
      });
      return sendJson(res, 200, ctx.churn.status());
    case 'churn/stop':
      ctx.churn.stop();
      return sendJson(res, 200, ctx.churn.status());
    case 'auth/grant': {
      // Body: {"token": "t", "user": {"name": "u", "rules": [{"verbs": ["get"]}]}} (no rules: everything).
      const body = await readBody(req);
      const token = isObject(body) && typeof body.token === 'string' ? body.token : '';
      const user = isObject(body) && isObject(body.user) ? body.user : undefined;
      if (!token || !user || typeof user.name !== 'string' || (user.rules !== undefined && !Array.isArray(user.rules))) {
        throw new StatusError('BadRequest', 'the body must be {"token": "...", "user": {"name": "...", "rules": [...]}}');
      }
      ctx.auth.grant(token, user as unknown as SimUser);
      return sendJson(res, 200, { granted: user.name });
    }
    case 'auth/revoke': {
      const token = url.searchParams.get('token') ?? '';
      return sendJson(res, 200, { revoked: ctx.auth.users.delete(token) });
    }
    case 'churn/step': {
      const n = intParam(url, 'n', 1);
      return sendJson(res, 200, { ok: ctx.churn.step(n), ...ctx.churn.status() });
    }
    default:
      throw new StatusError('NotFound', `unknown simulator control /_sim/${action}`);
  }
}
