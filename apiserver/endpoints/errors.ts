// Every failure is a Kubernetes Status: StatusErrors keep their reason and code, anything
// else is a 500 InternalError (logged, details withheld).
import type { Context } from 'koa';
import type { Logger } from '../../lib/log.ts';
import { StatusError, type Status } from '../../kube/status.ts';

/** Writes a Status body (and Retry-After when the Status carries retryAfterSeconds). */
export function writeStatus(ctx: Context, status: Status): void {
  ctx.status = status.code;
  const retry = status.details?.retryAfterSeconds;
  if (retry !== undefined && retry > 0) ctx.set('Retry-After', String(retry));
  ctx.body = JSON.stringify(status);
  ctx.set('Content-Type', 'application/json');
}

/** The Status of any thrown value. */
export function toStatus(err: unknown, log?: Logger): Status {
  if (err instanceof StatusError) return err.toStatus();
  log?.error('internal error', { err: err instanceof Error ? err : String(err), stack: err instanceof Error ? err.stack : undefined });
  return new StatusError('InternalError', 'Internal error occurred: the request could not be served (see the server log)').toStatus();
}

/** 404 for a path nothing serves, as kube-apiserver words it. */
export { pathNotFound } from '../../kube/path-segments.ts';

/** 405 for anything but GET/HEAD outside Panoptes' own kinds: synced resources are read-only. */
export const readOnly = (method: string) =>
  new StatusError(
    'MethodNotAllowed',
    `the server does not allow this method on the requested resource: ${method} (Panoptes serves get, list and watch of synced resources; Clusters are registered at /apis/panoptes.io/v1alpha1/clusters, MultiClusterServices at /apis/panoptes.io/v1alpha1/namespaces/<namespace>/multiclusterservices)`,
    {},
  );
