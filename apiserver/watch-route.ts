// PLACEHOLDER — the watch module (issue 6, apiserver/watch/) replaces this function.
// Every `watch=1` request (and the legacy /watch/ paths) of a synced resource arrives here,
// already parsed and validated as a ResourceRequest (verb 'watch'); see apiserver/request.ts
// for its shape and apiserver/table.ts for the per-object Table and PartialObjectMetadata
// rendering to reuse per event.
import type { Context } from 'koa';
import { StatusError } from '../kube/status.ts';
import type { Deps } from './deps.ts';
import type { ResourceRequest } from './request.ts';

export async function serveWatch(_ctx: Context, _request: ResourceRequest, _deps: Deps): Promise<void> {
  throw new StatusError('MethodNotAllowed', 'watch is served by the watch module', {});
}
