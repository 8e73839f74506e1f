// The watch-specific query parameters, validated as kube-apiserver validates them
// (apimachinery validateWatchOptions): errors are Status 400 BadRequest or 422 Invalid and are
// meant to be answered before the 200 of the stream. Selectors and search parameters are the
// read path's (they make the ListQuery).
import { queryBool, queryFlag } from '../../kube/query.ts';
import { StatusError } from '../../kube/status.ts';
import type { WatchOptions } from './watcher.ts';

/** Whether a query asks for a watch (`watch=1`, `watch=true`, `watch=yes`…: anything but 0/false). */
export function isWatch(params: URLSearchParams): boolean {
  return queryFlag(params, 'watch');
}

const invalid = (field: string, detail: string) =>
  new StatusError('Invalid', `ListOptions.meta.k8s.io "" is invalid: ${field}: ${detail}`, {
    kind: 'ListOptions',
    group: 'meta.k8s.io',
    causes: [{ reason: 'FieldValueForbidden', message: detail, field }],
  });

/** The watch options of a request's query parameters, or a Status error. */
export function parseWatchOptions(params: URLSearchParams): WatchOptions {
  const opts: WatchOptions = {};
  const rv = params.get('resourceVersion');
  if (rv !== null && rv !== '') {
    if (!/^\d{1,15}$/.test(rv)) throw new StatusError('BadRequest', `invalid resource version: ${JSON.stringify(rv)}`);
    opts.resourceVersion = Number(rv);
  }
  const bookmarks = params.get('allowWatchBookmarks');
  opts.allowWatchBookmarks = bookmarks !== null && queryBool(bookmarks);
  const timeout = params.get('timeoutSeconds');
  if (timeout !== null && timeout !== '') {
    if (!/^\d{1,9}$/.test(timeout)) throw new StatusError('BadRequest', `invalid value for timeoutSeconds: ${JSON.stringify(timeout)}`);
    opts.timeoutSeconds = Number(timeout);
  }
  const match = params.get('resourceVersionMatch') ?? '';
  const initial = params.get('sendInitialEvents');
  if (initial !== null) {
    opts.sendInitialEvents = queryBool(initial);
    if (match !== 'NotOlderThan') throw invalid('resourceVersionMatch', 'Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan');
    if (opts.sendInitialEvents && !opts.allowWatchBookmarks) {
      throw invalid('allowWatchBookmarks', 'Forbidden: sendInitialEvents requires setting allowWatchBookmarks to true');
    }
  } else if (match !== '') {
    throw invalid('resourceVersionMatch', 'Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided');
  }
  if (match !== '' && match !== 'NotOlderThan') {
    throw invalid('resourceVersionMatch', `Unsupported value: ${JSON.stringify(match)}: supported values: "NotOlderThan"`);
  }
  if (match !== '' && (params.get('continue') ?? '') !== '') {
    throw invalid('resourceVersionMatch', 'Forbidden: resourceVersionMatch is forbidden when continue is provided');
  }
  return opts;
}
