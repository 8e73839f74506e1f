// Koa middleware: authenticate, then authorize, every request but the health paths
// (/healthz, /livez, /readyz and their checks: kubelet probes carry no credentials).
// Failures are thrown as StatusErrors (401 Unauthorized, 403 Forbidden), which the server's
// error middleware writes as Status objects.
import type { Middleware } from 'koa';
import type { Logger } from '../../lib/log.ts';
import { requestAttributes } from './attributes.ts';
import type { Authenticator, UserInfo } from './authn.ts';
import type { Authorizer } from './authz.ts';

export interface AuthState {
  user?: UserInfo;
}

const healthPaths = new Set(['healthz', 'livez', 'readyz']);

export function isHealthPath(path: string): boolean {
  return healthPaths.has(path.split('/')[1] ?? '');
}

export function authMiddleware(authenticator: Authenticator, authorizer: Authorizer, log: Logger): Middleware {
  return async (ctx, next) => {
    if (isHealthPath(ctx.path)) return next();
    const user = await authenticator.authenticate(ctx.req);
    (ctx.state as AuthState).user = user;
    const attrs = requestAttributes(ctx.method, ctx.path, ctx.querystring);
    try {
      await authorizer.authorize(user, attrs);
    } catch (err) {
      log.debug('request denied', { user: user.name, method: ctx.method, url: ctx.url });
      throw err;
    }
    return next();
  };
}
