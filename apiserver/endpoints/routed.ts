// What routing a request yields, and what the metrics middleware labels it with: the types
// the router (routes.ts) and the handlers it dispatches to share.
import type { Context } from 'koa';
import type { Reply } from './reply.ts';
import type { MetricVerb } from './metrics.ts';

/** What the metrics middleware labels a request with. */
export interface MetricLabels {
  verb: MetricVerb;
  group: string;
  resource: string;
}

/** A routed request: a reply to write, a watch that streams by itself, or a request forwarded to a member (apiserver/proxy/). */
export type Routed = { reply: Reply } | { watch: () => Promise<void> } | { proxy: () => Promise<void> };

/** Labels a request for the metrics middleware. */
export function label(ctx: Context, m: MetricLabels): void {
  (ctx.state as { metric?: MetricLabels }).metric = m;
}
