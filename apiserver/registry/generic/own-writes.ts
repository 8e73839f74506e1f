// Writes of Panoptes' own kinds over HTTP (clusters.panoptes.io, multiclusterservices.panoptes.io):
// POST (create, 201), PUT (update), PATCH (JSON merge patch or JSON patch; 415 for strategic
// merge patch and server-side apply, as for a custom resource without them), DELETE (200 with
// the object: marked with a deletionTimestamp while synchro finishes, then gone with a DELETED
// event). Each decision is made in storage's write transaction against the latest object
// (apiserver/registry/generic/own-object.ts, with the kind's strategy); `dryRun=All` decides against the
// current object and writes nothing. `.../status` is synchro's: 405 for writes. The values a
// kind keeps secret (a Cluster's credentials) are registered with the redactor (lib/redact.ts)
// while the request is handled: no error, Warning or log line of it can echo them. A write
// that needs a right beyond its verb (OwnKind.privileges: granting a Cluster multi-cluster
// Service roles) is reviewed by SubjectAccessReview before anything is written: the decision
// that finds it unreviewed writes nothing and asks for the review, which is made and the
// decision taken again against the latest object (403 when refused, with what was asked).
import type { Context } from 'koa';
import { fieldInvalid, invalidObject } from '../../../kube/field-errors.ts';
import { pruneUnknownFields } from '../../../kube/known-fields.ts';
import { applyPatch, type JsonValue } from '../../../kube/patch.ts';
import { StatusError } from '../../../kube/status.ts';
import { toPartialObjectMetadata } from '../../../kube/table.ts';
import { redact, withSecrets } from '../../../lib/redact.ts';
import { ownObjectsCluster } from '../../../storage/own-objects.ts';
import type { KubeObject } from '../../../storage/types.ts';
import type { ResourceInfo } from '../../discovery/catalog.ts';
import type { Deps, Reply } from '../../endpoints/deps.ts';
import { negotiateOutput } from '../../endpoints/negotiate.ts';
import type { AuthState } from '../../auth/middleware.ts';
import { createName, decideCreate, decideDelete, decideUpdate, notFound, shownObject, type Obj, type OwnKind, type OwnWrite, type Privilege, type StoredOwnObject, type WriteRules } from './own-object.ts';
import { tableJson, tableRenderer, tableRowJson } from '../../read/table.ts';
import {
  decodeDeleteOptions,
  decodeObject,
  parseWriteOptions,
  patchTypeOf,
  readBody,
  strictDecodingError,
  unknownFieldWarnings,
  type FieldValidation,
  type WriteOptions,
  type WriteVerb,
} from '../../endpoints/write-request.ts';

const isRecord = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

const methodVerbs: Record<string, WriteVerb> = { POST: 'create', PUT: 'update', PATCH: 'patch', DELETE: 'delete' };

/** The verb a write method is authorized and counted as. */
export const writeVerbOf = (method: string): WriteVerb | undefined => methodVerbs[method];

type Kind<S extends StoredOwnObject, X> = OwnKind<S, X>;

function methodNotAllowed(k: { info: ResourceInfo }, method: string, what: string): StatusError {
  return new StatusError('MethodNotAllowed', `the server does not allow this method on the requested resource: ${method} ${what}`, { group: k.info.group, kind: k.info.resource });
}

/** The object as the request asked for it back: JSON, a Table of one row, or PartialObjectMetadata. */
function render<S extends StoredOwnObject, X>(k: Kind<S, X>, json: string, accept: string | undefined): Reply {
  const out = negotiateOutput(accept, 'get');
  if (out.kind === 'json') return { type: out.contentType, body: json };
  const obj = JSON.parse(json) as KubeObject;
  if (out.kind === 'partial') return { type: out.contentType, body: JSON.stringify(toPartialObjectMetadata(obj, out.metaVersion)) };
  const r = tableRenderer(k.info, { cluster: ownObjectsCluster });
  return { type: out.contentType, body: tableJson(r, out.metaVersion, { resourceVersion: obj.metadata?.resourceVersion ?? '' }, [tableRowJson(r, k.info, obj, json, ownObjectsCluster, out, Date.now())]) };
}

/** The request's object without unknown fields; Strict refuses them (create/update: 400, as kube's decoder). */
function pruneForWrite<S extends StoredOwnObject, X>(k: Kind<S, X>, body: Obj, validation: FieldValidation, warnings: string[]): Obj {
  const { pruned, unknown } = pruneUnknownFields(body, k.shape);
  const kind = k.info.kind;
  if (unknown.length && validation === 'Strict') throw new StatusError('BadRequest', `${kind} in version "${k.info.version}" cannot be handled as a ${kind}: ${strictDecodingError(unknown)}`);
  if (unknown.length && validation === 'Warn') warnings.push(...unknownFieldWarnings(unknown));
  return pruned as Obj;
}

/** The patch applied to the current object, checked as kube checks a patch's result (422 `patch: Invalid value`). */
function patched<S extends StoredOwnObject, X>(k: Kind<S, X>, current: S | undefined, name: string, type: 'merge' | 'json', text: string, validation: FieldValidation, warnings: string[]): Obj {
  if (!current) throw notFound(k, name);
  const result = applyPatch(type, current.object as JsonValue, text);
  if (!isRecord(result)) throw invalidObject({ group: '', kind: '' }, '', [fieldInvalid('patch', JSON.stringify(result), 'the patched object is not a JSON object')]);
  const { pruned, unknown } = pruneUnknownFields(result, k.shape);
  if (unknown.length && validation === 'Strict') {
    // kube shows the patched object: shown with its served spec and sanitized last-applied annotation only.
    throw invalidObject({ group: '', kind: '' }, '', [fieldInvalid('patch', JSON.stringify(shownObject(k, result)), strictDecodingError(unknown))]);
  }
  if (unknown.length && validation === 'Warn') warnings.push(...unknownFieldWarnings(unknown));
  return pruned as Obj;
}

/**
 * POST .../<resource>, PUT|PATCH|DELETE .../<resource>/NAME, and writes of .../NAME/status
 * (405). `namespace`: the path's, for a namespaced kind (undefined: the all-namespaces path,
 * which takes no writes).
 */
export async function serveOwnWrite<S extends StoredOwnObject, X>(ctx: Context, deps: Deps, k: Kind<S, X>, namespace: string | undefined, name: string | undefined, subresource: string | undefined): Promise<Reply> {
  const method = ctx.method;
  const verb = writeVerbOf(method);
  const { resource, group, kind } = k.info;
  const qualified = `${resource}.${group}`;
  if (!verb) throw methodNotAllowed(k, method, qualified);
  if (subresource !== undefined) {
    if (subresource !== 'status') throw new StatusError('NotFound', 'the server could not find the requested resource', {});
    throw new StatusError('MethodNotAllowed', `${verb} is not supported on resources of kind "${resource}/status.${group}": the status of a ${kind} is written by synchro alone`, { group, kind: resource });
  }
  if (k.info.namespaced && namespace === undefined) throw methodNotAllowed(k, method, `${qualified} of all namespaces: write a ${kind} in its namespace, at .../namespaces/<namespace>/${resource}`);
  if (verb === 'create' && name !== undefined) throw methodNotAllowed(k, method, `${qualified}/${name}: create a ${kind} with POST .../${resource}`);
  if (verb !== 'create' && name === undefined) throw methodNotAllowed(k, method, `the ${qualified} collection: name the ${kind}`);

  // A PATCH's content type is checked first, as kube-apiserver does (415 before anything else).
  const patchType = verb === 'patch' ? patchTypeOf(ctx.get('Content-Type'), k.info.patchTypes ?? []) : undefined;
  const qs = new URLSearchParams(ctx.querystring);
  const opts = parseWriteOptions(qs, verb);
  const accept = ctx.get('Accept') || undefined;
  const body = await readBody(ctx, deps.limits.maxBodyBytes);
  const req: WriteRequest = { verb, namespace: namespace ?? '', name, patchType, opts, accept, body };
  const secrets = k.requestSecrets?.(body, ctx.get('Content-Type')) ?? [];
  return withSecrets(secrets, () => decideAndWrite(ctx, deps, k, req));
}

interface WriteRequest {
  verb: WriteVerb;
  namespace: string;
  name: string | undefined;
  patchType: ReturnType<typeof patchTypeOf> | undefined;
  opts: WriteOptions;
  accept: string | undefined;
  body: Buffer;
}

async function decideAndWrite<S extends StoredOwnObject, X>(ctx: Context, deps: Deps, k: Kind<S, X>, req: WriteRequest): Promise<Reply> {
  const { verb, namespace, name, patchType, opts, accept, body } = req;
  const rules: WriteRules = { networks: deps.memberNetworks };
  const warnings: string[] = [];
  const now = new Date();
  const kind = k.info.kind;

  let target: string;
  let decide: (current: S | undefined) => OwnWrite<X>;
  let dryRun = opts.dryRun;
  /** The rights beyond the verb already reviewed for this request. */
  const reviewed = new Set<string>();
  switch (verb) {
    case 'create': {
      const obj = pruneForWrite(k, decodeObject(body, ctx.get('Content-Type'), kind), opts.fieldValidation, warnings);
      target = createName(k, obj);
      decide = (cur) => decideCreate(k, cur, obj, namespace, target, now, rules);
      break;
    }
    case 'update': {
      const obj = pruneForWrite(k, decodeObject(body, ctx.get('Content-Type'), kind), opts.fieldValidation, warnings);
      target = name!;
      decide = (cur) => decideUpdate(k, cur, obj, namespace, target, true, rules);
      break;
    }
    case 'patch': {
      const type = patchType!;
      const text = body.toString('utf8');
      target = name!;
      decide = (cur) => {
        warnings.length = 0; // the decision may run again: keep one set
        return decideUpdate(k, cur, patched(k, cur, target, type, text, opts.fieldValidation, warnings), namespace, target, false, rules);
      };
      break;
    }
    case 'delete': {
      const d = decodeDeleteOptions(body);
      dryRun ||= d.dryRun === true;
      target = name!;
      decide = (cur) => decideDelete(k, cur, target, d, now);
      break;
    }
  }

  decide = withPrivileges(k, target, decide, reviewed);
  let json: string;
  for (let attempt = 0; ; attempt++) {
    try {
      json = await writeDecided(deps, k, namespace, target, decide, dryRun, verb);
      break;
    } catch (err) {
      // Bounded: each round reviews what the latest object asks for; a fourth is a 409.
      if (!(err instanceof NeedsReview)) throw err;
      if (attempt >= 3) throw new StatusError('Conflict', `Operation cannot be fulfilled on ${k.info.resource}.${k.info.group} ${JSON.stringify(target)}: the object keeps changing; please apply your changes to the latest version and try again`);
      await review(ctx, deps, err.needed);
      for (const p of err.needed) reviewed.add(privilegeKey(p));
    }
  }
  const reply = render(k, json, accept);
  reply.status = verb === 'create' ? 201 : 200;
  if (warnings.length) reply.headers = { Warning: warnings.map(redact) };
  return reply;
}

/** A decision found rights it needs that are not reviewed yet: nothing is written; the handler reviews them and decides again. */
class NeedsReview extends Error {
  constructor(readonly needed: Privilege[]) {
    super('the write needs a review');
  }
}

const privilegeKey = (p: Privilege) => JSON.stringify(p.attrs);

/** `decide`, refusing to write what needs a right not reviewed yet (NeedsReview). */
function withPrivileges<S extends StoredOwnObject, X>(k: Kind<S, X>, name: string, decide: (current: S | undefined) => OwnWrite<X>, reviewed: Set<string>): (current: S | undefined) => OwnWrite<X> {
  if (!k.privileges) return decide;
  return (cur) => {
    const w = decide(cur);
    if (w.action !== 'put') return w;
    const needed = k.privileges!(cur, w.object, name).filter((p) => !reviewed.has(privilegeKey(p)));
    if (needed.length) throw new NeedsReview(needed);
    return w;
  };
}

/** Reviews the rights a write needs for the requesting user: 403 naming the right and why (nothing to review without authentication). */
async function review(ctx: Context, deps: Deps, needed: Privilege[]): Promise<void> {
  const user = (ctx.state as AuthState).user;
  if (!deps.authorizer || !user) return;
  for (const p of needed) {
    try {
      await deps.authorizer.authorize(user, { kind: 'resource', attrs: p.attrs });
    } catch (err) {
      if (err instanceof StatusError && err.reason === 'Forbidden') throw new StatusError('Forbidden', `${err.message}: ${p.why}`, err.details);
      throw err;
    }
  }
}

/** The write (or, for dryRun=All, the decision alone, against the same state): the object to answer. */
async function writeDecided<S extends StoredOwnObject, X>(deps: Deps, k: Kind<S, X>, namespace: string, target: string, decide: (current: S | undefined) => OwnWrite<X>, dryRun: boolean, verb: WriteVerb): Promise<string> {
  let json: string;
  if (dryRun) {
    // Decided as the write would be, against the same state (what the kind stores beside the
    // object included), in the write transaction that then writes nothing.
    let decided: { current: S | undefined; w: OwnWrite<X> } | undefined;
    await k.write(deps.store, namespace, target, (cur) => {
      decided = { current: cur, w: decide(cur) };
      return { action: 'none' };
    });
    const { current, w } = decided!;
    if (w.action === 'put') json = JSON.stringify(verb === 'create' ? w.object : { ...w.object, metadata: { ...w.object.metadata, resourceVersion: String(current?.rv ?? '') } });
    else json = JSON.stringify(current!.object);
  } else {
    const result = await k.write(deps.store, namespace, target, decide);
    json = result.object!;
  }
  return json;
}
