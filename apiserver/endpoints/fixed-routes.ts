// The server's fixed paths, kube-apiserver's non-resource URLs: /healthz, /livez and /readyz
// (and each check below them), /metrics, /version and /openapi/*, a table of routes for
// @koa/router. The resource URL space (the two views, the groups and their resources, the own
// kinds, the proxy) is not a fixed table: it is resolved segment by segment, as
// kube-apiserver's request-info resolver does (routes.ts), and what no fixed route matches goes
// there (a percent-encoded fixed path included, as before: routes.ts decodes segments).
import Router from '@koa/router';
import type { Context } from 'koa';
import type { Deps } from './deps.ts';
import { serveHealth, type HealthCheck } from './health.ts';
import type { ApiserverMetrics } from './metrics.ts';
import { label, type Routed } from './routed.ts';
import { serveRootOpenAPI, serveVersion } from './routes.ts';

export type HealthEndpoint = 'healthz' | 'livez' | 'readyz';

export interface FixedRoutes {
  deps: Deps;
  checks: Record<HealthEndpoint, HealthCheck[]>;
  metrics: ApiserverMetrics;
  /** Writes a routed answer (within the request's deadline), as for every resource request. */
  answer(ctx: Context, routed: Routed | Promise<Routed>): Promise<void>;
}

/** The middleware of the fixed routes (GET and HEAD; other methods are refused before): what it does not match goes on to the resource routes. */
export function fixedRoutes(o: FixedRoutes): ReturnType<Router['routes']> {
  // Case-sensitive and strict about a trailing slash, as the paths were matched by hand before.
  const router = new Router({ sensitive: true, strict: true });
  for (const endpoint of ['healthz', 'livez', 'readyz'] as const) {
    router.get([`/${endpoint}`, `/${endpoint}/`, `/${endpoint}/*check`], async (ctx) => {
      label(ctx, { verb: 'health', group: '', resource: '' });
      await serveHealth(ctx, endpoint, o.checks[endpoint]);
    });
  }
  router.get('/metrics', async (ctx) => {
    label(ctx, { verb: 'metrics', group: '', resource: '' });
    ctx.type = o.metrics.registry.contentType;
    ctx.body = await o.metrics.registry.metrics();
  });
  router.get('/version', (ctx) => o.answer(ctx, serveVersion(ctx)));
  router.get(['/openapi', '/openapi/*document'], (ctx) => o.answer(ctx, serveRootOpenAPI(ctx, o.deps)));
  return router.routes();
}
