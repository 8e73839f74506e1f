// The parts of a write request kube-apiserver checks before it touches an object: the query
// (CreateOptions, UpdateOptions, PatchOptions, DeleteOptions: dryRun, fieldManager,
// fieldValidation, force), the body (read within the size limit and the request's deadline; JSON or YAML objects, a
// DeleteOptions, all decoded by kube/json-limits.ts, which bounds their depth and YAML's
// expansion), the PATCH content type (415 listing the accepted ones) and unknown fields
// under fieldValidation (Strict: an error; Warn, the default: a Warning header; Ignore).
import http2, { type ServerHttp2Stream } from 'node:http2';
import type { Context, Middleware } from 'koa';
import { decodeJson, decodeYaml, requestEntityTooLarge } from '../../kube/json-limits.ts';
import { fieldInvalid, fieldNotSupported, invalidObject, type FieldError } from '../../kube/field-errors.ts';
import { jsonPatchType, mergePatchType, type PatchType } from '../../kube/patch.ts';
import { StatusError } from '../../kube/status.ts';
import { allottedTimeout, requestDeadline } from './request-deadline.ts';

export type WriteVerb = 'create' | 'update' | 'patch' | 'delete';
export type FieldValidation = 'Ignore' | 'Warn' | 'Strict';

export interface WriteOptions {
  dryRun: boolean;
  /** kube's default is Warn. */
  fieldValidation: FieldValidation;
  fieldManager?: string;
}

const common = ['dryRun', 'pretty', 'timeout'];
const allowed: Record<WriteVerb, string[]> = {
  create: [...common, 'fieldManager', 'fieldValidation'],
  update: [...common, 'fieldManager', 'fieldValidation'],
  patch: [...common, 'fieldManager', 'fieldValidation', 'force'],
  delete: [...common, 'gracePeriodSeconds', 'propagationPolicy', 'orphanDependents'],
};
const optionsKind: Record<WriteVerb, string> = { create: 'CreateOptions', update: 'UpdateOptions', patch: 'PatchOptions', delete: 'DeleteOptions' };

/** The query of a write, validated as kube-apiserver validates its options (422 `CreateOptions.meta.k8s.io "" is invalid`). */
export function parseWriteOptions(qs: URLSearchParams, verb: WriteVerb): WriteOptions {
  for (const k of qs.keys()) if (!allowed[verb].includes(k)) throw new StatusError('BadRequest', `unknown query parameter ${JSON.stringify(k)} for ${verb}`);
  const errs: FieldError[] = [];
  const dryRun = qs.getAll('dryRun');
  if (dryRun.some((v) => v !== 'All')) errs.push(fieldNotSupported('dryRun', dryRun, ['All']));
  const fv = qs.get('fieldValidation') ?? '';
  if (verb !== 'delete' && !['', 'Ignore', 'Warn', 'Strict'].includes(fv)) errs.push(fieldNotSupported('fieldValidation', fv, ['', 'Ignore', 'Strict', 'Warn']));
  const fm = qs.get('fieldManager') ?? undefined;
  if (fm !== undefined && (fm.length > 128 || !/^[\x20-\x7e]*$/.test(fm))) errs.push(fieldInvalid('fieldManager', fm, 'must be no more than 128 printable characters'));
  if (verb === 'patch' && qs.has('force')) errs.push({ type: 'Forbidden', field: 'force', detail: 'may not be specified for non-apply patch' });
  const pp = qs.get('propagationPolicy');
  if (pp !== null && !['Orphan', 'Background', 'Foreground'].includes(pp)) errs.push(fieldNotSupported('propagationPolicy', pp, ['Background', 'Foreground', 'Orphan']));
  if (errs.length) throw invalidObject({ group: 'meta.k8s.io', kind: optionsKind[verb] }, '', errs);
  return { dryRun: dryRun.length > 0, fieldValidation: (fv || 'Warn') as FieldValidation, ...(fm !== undefined ? { fieldManager: fm } : {}) };
}

/**
 * At most `max` writes (anything but GET and HEAD) served at once; beyond them 429 with
 * Retry-After 1, as kube-apiserver's max-in-flight filter answers (`Too many requests, please
 * try again later.`). Reads are not counted (watches are long). A write's slot goes back when
 * it is served, when its client goes away, or when its deadline passes (request-deadline.ts),
 * whichever comes first, as kube's filter sits outside its timeout filter: a write that waits
 * on a client or a member past its deadline holds no slot.
 */
export function limitWritesInFlight(max: number): Middleware {
  let inFlight = 0;
  return async (ctx, next) => {
    if (ctx.method === 'GET' || ctx.method === 'HEAD') return next();
    if (inFlight >= max) throw new StatusError('TooManyRequests', 'Too many requests, please try again later.', { retryAfterSeconds: 1 });
    inFlight++;
    const deadline = requestDeadline(ctx);
    let held = true;
    const release = () => {
      if (!held) return;
      held = false;
      inFlight--;
      deadline.signal.removeEventListener('abort', release);
      ctx.res.off('close', release);
    };
    deadline.signal.addEventListener('abort', release, { once: true });
    ctx.res.once('close', release);
    try {
      await next();
    } finally {
      release();
    }
  };
}

/** After the answer, the connection (HTTP/1.1: `Connection: close`) or the stream (HTTP/2) ends: what is left of a body is not waited for. */
function endAfterAnswer(ctx: Context): void {
  const stream = (ctx.req as { stream?: ServerHttp2Stream }).stream;
  if (stream) stream.once('finish', () => stream.close(http2.constants.NGHTTP2_NO_ERROR));
  else ctx.set('Connection', 'close');
}

/**
 * 413 for a body over `limit`, as kube's limitedReadBody answers. What is left of the body
 * is read and dropped, so that the answer reaches the client (closing a socket with unread
 * data resets it) and a keep-alive connection stays usable; a client that goes on sending
 * more than twice `limit` further bytes loses the connection (HTTP/2: the stream).
 */
export function bodyTooLarge(ctx: Context, limit: number): StatusError {
  const req = ctx.req;
  let dropped = 0;
  req.on('data', (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped <= 2 * limit) return;
    const stream = (req as { stream?: { close(): void } }).stream;
    if (stream) stream.close();
    else req.socket.destroy();
  });
  req.resume();
  return requestEntityTooLarge(limit);
}

/**
 * The request body, at most `limit` bytes: 413 also without a Content-Length (chunked), as soon
 * as the limit is passed. Every write's body is read here, within the request's deadline
 * (request-deadline.ts): a body that has not come by then is a 504 `Timeout`, as kube's timeout
 * filter answers, and the connection (HTTP/1.1) or stream (HTTP/2) ends after the answer. A
 * client that goes away mid-body ends the read at once.
 */
export function readBody(ctx: Context, limit: number): Promise<Buffer> {
  const req = ctx.req;
  const deadline = requestDeadline(ctx);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const settle = (fn: () => void) => {
      req.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose).off('aborted', onClose);
      deadline.signal.removeEventListener('abort', onDeadline);
      fn();
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) settle(() => reject(bodyTooLarge(ctx, limit)));
      else chunks.push(chunk);
    };
    const onEnd = () => settle(() => resolve(Buffer.concat(chunks)));
    const onError = (err: Error) => settle(() => reject(err));
    const onClose = () => settle(() => reject(new StatusError('BadRequest', 'the request body ended early (the client went away)')));
    const onDeadline = () =>
      settle(() => {
        endAfterAnswer(ctx);
        reject(allottedTimeout());
      });
    if (req.destroyed) return onClose();
    if (deadline.signal.aborted) return onDeadline();
    req.on('data', onData).on('end', onEnd).on('error', onError).on('close', onClose).on('aborted', onClose);
    deadline.signal.addEventListener('abort', onDeadline, { once: true });
  });
}

/** The media type of a Content-Type, lowercased, without parameters. */
export const mediaType = (contentType: string | undefined) => (contentType ?? '').split(';')[0].trim().toLowerCase();

/** The object of a POST or PUT body: JSON or YAML (a 415 for anything else, a 400 when it does not parse). */
export function decodeObject(body: Buffer, contentType: string | undefined, kind: string): Record<string, unknown> {
  const type = mediaType(contentType);
  let doc: unknown;
  if (type === 'application/json' || type === '') {
    try {
      doc = decodeJson(body.toString('utf8'));
    } catch (err) {
      throw new StatusError('BadRequest', `the object provided is unrecognized (must be of type ${kind}): couldn't get version/kind; json parse error: ${(err as Error).message}`);
    }
  } else if (type === 'application/yaml') {
    try {
      doc = decodeYaml(body.toString('utf8'));
    } catch (err) {
      if (err instanceof StatusError) throw err; // 413: larger than a YAML body may be, or expands beyond a JSON one
      throw new StatusError('BadRequest', `the object provided is unrecognized (must be of type ${kind}): error converting YAML to JSON: ${(err as Error).message.split('\n')[0]}`);
    }
  } else {
    throw new StatusError('UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: application/json, application/yaml`);
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
    throw new StatusError('BadRequest', `the object provided is unrecognized (must be of type ${kind}): couldn't get version/kind; json parse error: the body is not a JSON object`);
  }
  return doc as Record<string, unknown>;
}

/** The patch type of a PATCH's Content-Type: 415 with the accepted types for anything else (strategic merge patch, server-side apply). */
export function patchTypeOf(contentType: string | undefined, accepted: string[]): PatchType {
  const type = mediaType(contentType);
  if (accepted.includes(type) && type === mergePatchType) return 'merge';
  if (accepted.includes(type) && type === jsonPatchType) return 'json';
  throw new StatusError('UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: ${accepted.join(', ')}`);
}

/** A DELETE body (DeleteOptions), if any. */
export function decodeDeleteOptions(body: Buffer): { preconditions?: { uid?: string; resourceVersion?: string }; dryRun?: boolean } {
  if (body.length === 0) return {};
  let doc: unknown;
  try {
    doc = decodeJson(body.toString('utf8'));
  } catch (err) {
    throw new StatusError('BadRequest', `the body of the request could not be decoded as DeleteOptions: ${(err as Error).message}`);
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new StatusError('BadRequest', 'the body of the request must be a DeleteOptions object');
  const o = doc as { preconditions?: { uid?: unknown; resourceVersion?: unknown }; dryRun?: unknown; propagationPolicy?: unknown };
  const errs: FieldError[] = [];
  if (o.dryRun !== undefined && !(Array.isArray(o.dryRun) && o.dryRun.every((v) => v === 'All'))) errs.push(fieldNotSupported('dryRun', o.dryRun, ['All']));
  if (o.propagationPolicy !== undefined && !['Orphan', 'Background', 'Foreground'].includes(String(o.propagationPolicy))) errs.push(fieldNotSupported('propagationPolicy', o.propagationPolicy, ['Background', 'Foreground', 'Orphan']));
  if (errs.length) throw invalidObject({ group: 'meta.k8s.io', kind: 'DeleteOptions' }, '', errs);
  const p = o.preconditions;
  const preconditions = p ? { ...(typeof p.uid === 'string' ? { uid: p.uid } : {}), ...(typeof p.resourceVersion === 'string' ? { resourceVersion: p.resourceVersion } : {}) } : undefined;
  return { ...(preconditions ? { preconditions } : {}), ...(Array.isArray(o.dryRun) && o.dryRun.length ? { dryRun: true } : {}) };
}

/** kube's strict decoding error text: `strict decoding error: unknown field "spec.foo", ...`. */
export const strictDecodingError = (unknown: string[]): string => `strict decoding error: ${unknown.map((f) => `unknown field ${JSON.stringify(f)}`).join(', ')}`;

/** Warning header values (`299 - "unknown field \"spec.foo\""`) for the unknown fields dropped under Warn. */
export function unknownFieldWarnings(unknown: string[]): string[] {
  return unknown.map((f) => `299 - ${JSON.stringify(`unknown field ${JSON.stringify(f)}`)}`);
}
