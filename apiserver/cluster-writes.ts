// Writes of clusters.panoptes.io over HTTP: POST (create, 201), PUT (update), PATCH (JSON
// merge patch or JSON patch; 415 for strategic merge patch and server-side apply, as for a
// custom resource without them), DELETE (200 with the object: marked with a
// deletionTimestamp while synchro removes the cluster's objects, then gone with a DELETED
// event). Each decision is made in storage's write transaction against the latest object
// (apiserver/cluster-object.ts); `dryRun=All` decides against the current object and writes
// nothing. `.../status` is synchro's: 405 for writes. The credentials a request carries are
// registered with the redactor (lib/redact.ts) while it is handled: no error, Warning or log
// line of it can echo them.
import type { Context } from 'koa';
import { fieldInvalid, invalidObject } from '../kube/field-errors.ts';
import { applyPatch, type JsonValue } from '../kube/patch.ts';
import { StatusError } from '../kube/status.ts';
import { toPartialObjectMetadata } from '../kube/table.ts';
import { clusterObjectsCluster, type ClusterObjectState, type ClusterObjectWrite } from '../storage/cluster-objects.ts';
import type { KubeObject } from '../storage/types.ts';
import { clusterShape } from '../api/cluster.ts';
import { pruneUnknownFields as pruneFields } from '../kube/known-fields.ts';

const pruneUnknownFields = (obj: unknown) => pruneFields(obj, clusterShape);
import { redact, secretValuesIn, withSecrets } from '../lib/redact.ts';
import { createName, decideCreate, decideDelete, decideUpdate, notFound, shownObject, type WriteRules } from './cluster-object.ts';
import { clusterInfo, clusterPatchTypes, panoptesGroupName } from './clusters.ts';
import type { Deps, Reply } from './deps.ts';
import { negotiateOutput } from './negotiate.ts';
import { tableJson, tableRenderer, tableRowJson } from './table.ts';
import {
  decodeDeleteOptions,
  decodeObject,
  parseWriteOptions,
  patchTypeOf,
  readBody,
  strictDecodingError,
  unknownFieldWarnings,
  type FieldValidation,
  type WriteVerb,
} from './write-request.ts';

type Obj = Record<string, unknown>;
const isRecord = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

const methodVerbs: Record<string, WriteVerb> = { POST: 'create', PUT: 'update', PATCH: 'patch', DELETE: 'delete' };

/** The verb a write method is authorized and counted as. */
export const writeVerbOf = (method: string): WriteVerb | undefined => methodVerbs[method];

function methodNotAllowed(method: string, what: string): StatusError {
  return new StatusError('MethodNotAllowed', `the server does not allow this method on the requested resource: ${method} ${what}`, { group: panoptesGroupName, kind: 'clusters' });
}

/** The object as the request asked for it back: JSON, a Table of one row, or PartialObjectMetadata. */
function render(json: string, accept: string | undefined): Reply {
  const out = negotiateOutput(accept, 'get');
  if (out.kind === 'json') return { type: out.contentType, body: json };
  const obj = JSON.parse(json) as KubeObject;
  if (out.kind === 'partial') return { type: out.contentType, body: JSON.stringify(toPartialObjectMetadata(obj, out.metaVersion)) };
  const r = tableRenderer(clusterInfo, { cluster: clusterObjectsCluster });
  return { type: out.contentType, body: tableJson(r, out.metaVersion, { resourceVersion: obj.metadata?.resourceVersion ?? '' }, [tableRowJson(r, clusterInfo, obj, json, clusterObjectsCluster, out, Date.now())]) };
}

/** The request's object without unknown fields; Strict refuses them (create/update: 400, as kube's decoder). */
function pruneForWrite(body: Obj, validation: FieldValidation, warnings: string[]): Obj {
  const { pruned, unknown } = pruneUnknownFields(body);
  if (unknown.length && validation === 'Strict') throw new StatusError('BadRequest', `Cluster in version "v1alpha1" cannot be handled as a Cluster: ${strictDecodingError(unknown)}`);
  if (unknown.length && validation === 'Warn') warnings.push(...unknownFieldWarnings(unknown));
  return pruned as Obj;
}

/** The patch applied to the current object, checked as kube checks a patch's result (422 `patch: Invalid value`). */
function patched(current: ClusterObjectState | undefined, name: string, type: 'merge' | 'json', text: string, validation: FieldValidation, warnings: string[]): Obj {
  if (!current) throw notFound(name);
  const result = applyPatch(type, current.object as JsonValue, text);
  if (!isRecord(result)) throw invalidObject({ group: '', kind: '' }, '', [fieldInvalid('patch', JSON.stringify(result), 'the patched object is not a JSON object')]);
  const { pruned, unknown } = pruneUnknownFields(result);
  if (unknown.length && validation === 'Strict') {
    // kube shows the patched object: shown with its served spec and sanitized last-applied annotation only.
    throw invalidObject({ group: '', kind: '' }, '', [fieldInvalid('patch', JSON.stringify(shownObject(result)), strictDecodingError(unknown))]);
  }
  if (unknown.length && validation === 'Warn') warnings.push(...unknownFieldWarnings(unknown));
  return pruned as Obj;
}

/** POST .../clusters, PUT|PATCH|DELETE .../clusters/NAME, and writes of .../clusters/NAME/status (405). */
export async function serveClusterWrite(ctx: Context, deps: Deps, name: string | undefined, subresource: string | undefined): Promise<Reply> {
  const method = ctx.method;
  const verb = writeVerbOf(method);
  if (!verb) throw methodNotAllowed(method, 'clusters.panoptes.io');
  if (subresource !== undefined) {
    if (subresource !== 'status') throw new StatusError('NotFound', 'the server could not find the requested resource', {});
    throw new StatusError('MethodNotAllowed', `${verb} is not supported on resources of kind "clusters/status.panoptes.io": the status of a Cluster is written by synchro alone`, { group: panoptesGroupName, kind: 'clusters' });
  }
  if (verb === 'create' && name !== undefined) throw methodNotAllowed(method, `clusters.panoptes.io/${name}: create a Cluster with POST .../clusters`);
  if (verb !== 'create' && name === undefined) throw methodNotAllowed(method, 'the clusters.panoptes.io collection: name the Cluster');

  // A PATCH's content type is checked first, as kube-apiserver does (415 before anything else).
  const patchType = verb === 'patch' ? patchTypeOf(ctx.get('Content-Type'), clusterPatchTypes) : undefined;
  const qs = new URLSearchParams(ctx.querystring);
  const opts = parseWriteOptions(qs, verb);
  const accept = ctx.get('Accept') || undefined;
  const body = await readBody(ctx, deps.limits.maxBodyBytes);
  return withSecrets(requestSecrets(body, ctx.get('Content-Type')), () => decideAndWrite(ctx, deps, { verb, name, patchType, opts, accept, body }));
}

/** The credentials a request body carries (JSON or YAML; nothing when it does not parse: the redactor's structure rules still apply). */
function requestSecrets(body: Buffer, contentType: string | undefined): string[] {
  try {
    return secretValuesIn(decodeObject(body, contentType?.includes('json') ? 'application/json' : contentType, 'Cluster'));
  } catch {
    try {
      return secretValuesIn(JSON.parse(body.toString('utf8')));
    } catch {
      return [];
    }
  }
}

interface WriteRequest {
  verb: WriteVerb;
  name: string | undefined;
  patchType: ReturnType<typeof patchTypeOf> | undefined;
  opts: ReturnType<typeof parseWriteOptions>;
  accept: string | undefined;
  body: Buffer;
}

async function decideAndWrite(ctx: Context, deps: Deps, req: WriteRequest): Promise<Reply> {
  const { verb, name, patchType, opts, accept, body } = req;
  const rules: WriteRules = { networks: deps.memberNetworks };
  const warnings: string[] = [];
  const now = new Date();
  const store = deps.store;

  let target: string;
  let decide: (current: ClusterObjectState | undefined) => ClusterObjectWrite;
  let dryRun = opts.dryRun;
  switch (verb) {
    case 'create': {
      const obj = pruneForWrite(decodeObject(body, ctx.get('Content-Type'), 'Cluster'), opts.fieldValidation, warnings);
      target = createName(obj);
      decide = (cur) => decideCreate(cur, obj, target, now, rules);
      break;
    }
    case 'update': {
      const obj = pruneForWrite(decodeObject(body, ctx.get('Content-Type'), 'Cluster'), opts.fieldValidation, warnings);
      target = name!;
      decide = (cur) => decideUpdate(cur, obj, target, true, rules);
      break;
    }
    case 'patch': {
      const type = patchType!;
      const text = body.toString('utf8');
      target = name!;
      decide = (cur) => {
        warnings.length = 0; // the decision may run again: keep one set
        return decideUpdate(cur, patched(cur, target, type, text, opts.fieldValidation, warnings), target, false, rules);
      };
      break;
    }
    case 'delete': {
      const d = decodeDeleteOptions(body);
      dryRun ||= d.dryRun === true;
      target = name!;
      decide = (cur) => decideDelete(cur, target, d, now);
      break;
    }
  }

  let json: string;
  if (dryRun) {
    // Decided as the write would be, against the same state (the stored credentials' digest
    // included), in the write transaction that then writes nothing.
    let decided: { current: ClusterObjectState | undefined; w: ClusterObjectWrite } | undefined;
    await store.writeClusterObjectWithoutLease(target, (cur) => {
      decided = { current: cur, w: decide(cur) };
      return { action: 'none' };
    });
    const { current, w } = decided!;
    if (w.action === 'put') json = JSON.stringify(verb === 'create' ? w.object : { ...w.object, metadata: { ...w.object.metadata, resourceVersion: String(current?.rv ?? '') } });
    else json = JSON.stringify(current!.object);
  } else {
    const result = await store.writeClusterObjectWithoutLease(target, decide);
    json = result.object!;
  }
  const reply = render(json, accept);
  reply.status = verb === 'create' ? 201 : 200;
  if (warnings.length) reply.headers = { Warning: warnings.map(redact) };
  return reply;
}
