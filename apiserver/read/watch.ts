// Watch over HTTP: every `watch=1|true` request of a synced resource (and the legacy
// /watch/ paths) arrives here already routed, parsed and validated as a ResourceRequest.
// The watch parameters are checked before the 200 (400/422 Status); then the process's
// WatchHub streams the events (apiserver/watch/), encoded as the request's output format,
// one JSON document per line, chunked, never pretty-printed, written to the response outside
// Koa (apiserver/endpoints/watch-response.ts).
import type { Context } from 'koa';
import { checkTermBudget } from '../../storage/term-budget.ts';
import type { Deps } from '../endpoints/deps.ts';
import { clustersRead, toListQuery } from './list-query.ts';
import { apiVersionOf, type ResourceRequest } from '../endpoints/request.ts';
import { staleWarnings } from '../endpoints/warnings.ts';
import { parseWatchOptions } from '../watch/index.ts';
import { watchContentType, watchEncoders } from './watch-encoders.ts';
import { pipeWatchResponse } from '../endpoints/watch-response.ts';

/** `query`: what the watch selects, the request's own unless given (a collection's names its kinds). */
export async function serveWatch(ctx: Context, request: ResourceRequest, deps: Deps, query = toListQuery(request)): Promise<void> {
  const options = parseWatchOptions(new URLSearchParams(ctx.querystring));
  // Past its budget of terms and values, a 400 before the 200, as a list's (storage/term-budget.ts).
  checkTermBudget(query);
  const { encoder, firstEncoder } = watchEncoders(request);
  if (ctx.method === 'HEAD') {
    ctx.status = 200;
    ctx.set('Content-Type', watchContentType);
    return;
  }
  const stream = deps.watch.watch({
    query,
    kind: request.info.kind,
    apiVersion: apiVersionOf(request.info),
    options,
    encoder,
    firstEncoder,
  });
  ctx.status = 200;
  ctx.set('Content-Type', watchContentType);
  ctx.set('Cache-Control', 'no-cache, private');
  const warnings = staleWarnings(deps.catalog, clustersRead(request, request.info.clusters));
  if (warnings.length) ctx.set('Warning', warnings);
  // From here the watch leaves Koa: its stream is written to the response directly, and
  // destroyed when the client goes (the watcher unregisters). See apiserver/endpoints/watch-response.ts.
  ctx.respond = false;
  // Send the 200 and headers now: a client waits for them before it reads any event, also
  // when nothing happens for a while.
  ctx.res.flushHeaders();
  pipeWatchResponse(stream, ctx.res, (err) => deps.log.warn('watch stream failed', { err }));
}
