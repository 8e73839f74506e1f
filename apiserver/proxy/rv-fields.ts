// The resourceVersions a write's body carries, and their rewriting: what the proxy of writes
// translates from Panoptes' rv space to a member's (apiserver/proxy/write-consistency.ts).
//
// Where kube-apiserver reads a resourceVersion in a write:
// - `metadata.resourceVersion` of the object of an update (PUT), and of the object a patch
//   produces: a merge or strategic merge patch that carries it, a JSON patch that sets it
//   (`add`/`replace` of `/metadata/resourceVersion`, of `/metadata`, or of the whole object),
//   and server-side apply's object (YAML or JSON). The update is then conditional on it.
// - A JSON patch `test` of it: the patch fails unless the object is at that version.
// - `preconditions.resourceVersion` of the DeleteOptions of a delete, and of the
//   `deleteOptions` of an Eviction (pods/eviction).
// Nothing else in a body names a version of the object, so nothing else is rewritten for it.
// Apart from rvs, withoutStamps drops the annotations storage stamps (panoptes.io/cluster and
// panoptes.io/upstream-resource-version) from the object of a create, update or patch: a
// client that got the object through Panoptes sends them back (`kubectl get -o yaml` then
// `replace -f`, an apply or a patch carrying the whole object), and they are Panoptes' alone. The body
// is rewritten in place where its text allows (the value's only occurrence), so the member
// gets the client's bytes with only the rv changed; otherwise it is written again from its
// parsed form. Protobuf bodies (typed clients' PUT, DELETE, evictions): rv-protobuf.ts.
import { isDocument, parseDocument } from 'yaml';
import { StatusError } from '../../kube/status.ts';
import { jsonEqual, maxYamlBodyBytes, requestEntityTooLarge } from '../../kube/json-limits.ts';
import { mediaType } from '../endpoints/write-request.ts';
import { stampedAnnotations } from '../../storage/write.ts';
import { dropProtobufAnnotations, protobufType, rewriteProtobufRv } from './rv-protobuf.ts';
import type { BodyShape, MapRv, RvPlace } from './rv-shapes.ts';

export type { BodyShape, MapRv, RvPlace } from './rv-shapes.ts';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);


const jsonTypes = new Set(['application/json', 'application/merge-patch+json', 'application/strategic-merge-patch+json', 'application/json-patch+json']);
const yamlTypes = new Set(['application/yaml', 'application/apply-patch+yaml']);

/** Whether rewriteRvs reads bodies of this media type: JSON, YAML and kube's protobuf. */
const readableBody = (type: string): boolean => jsonTypes.has(type) || yamlTypes.has(type) || type === protobufType;

/** One resourceVersion of a parsed body: where it is, and how to set it there. */
interface Found {
  rv: string;
  place: RvPlace;
  set(v: string): void;
}

function atKey(o: Obj, key: string, place: RvPlace): Found[] {
  const rv = o[key];
  return typeof rv === 'string' ? [{ rv, place, set: (v) => (o[key] = v) }] : [];
}

const preconditionsOf = (o: unknown): Found[] => (isObj(o) && isObj(o.preconditions) ? atKey(o.preconditions, 'resourceVersion', { kind: 'precondition' }) : []);
const metadataOf = (o: unknown, place: RvPlace): Found[] => (isObj(o) && isObj(o.metadata) ? atKey(o.metadata, 'resourceVersion', place) : []);

/** The resourceVersions of a JSON patch: in its add/replace/test operations on the object's version. */
function ofJsonPatch(ops: unknown[]): Found[] {
  const out: Found[] = [];
  for (const op of ops) {
    if (!isObj(op) || typeof op.path !== 'string' || !['add', 'replace', 'test'].includes(op.op as string)) continue;
    const place: RvPlace = op.op === 'test' ? { kind: 'test', path: op.path } : { kind: 'object' };
    if (op.path === '/metadata/resourceVersion') out.push(...atKey(op, 'value', place));
    else if (op.path === '/metadata' && isObj(op.value)) out.push(...atKey(op.value, 'resourceVersion', place));
    else if (op.path === '') out.push(...metadataOf(op.value, place));
  }
  return out;
}

function find(doc: unknown, shape: BodyShape, jsonPatch: boolean): Found[] {
  if (jsonPatch) return Array.isArray(doc) ? ofJsonPatch(doc) : [];
  if (shape === 'deleteOptions') return preconditionsOf(doc);
  if (shape === 'eviction') return isObj(doc) ? preconditionsOf(doc.deleteOptions) : [];
  return metadataOf(doc, { kind: 'object' });
}

/** Maps each found rv; returns whether any changed. */
async function mapAll(found: Found[], map: MapRv): Promise<Array<{ from: string; to: string }>> {
  const changed: Array<{ from: string; to: string }> = [];
  for (const f of found) {
    const to = await map(f.rv, f.place);
    if (to === f.rv) continue;
    f.set(to);
    changed.push({ from: f.rv, to });
  }
  return changed;
}

const occurrences = (text: string, s: string): number => text.split(s).length - 1;

/**
 * The body with every resourceVersion it carries mapped by `map` (for `shape` and the body's
 * media type). Bodies it cannot parse, and media types it does not read, are returned as they
 * are: the member rejects them as it would. A body without a resourceVersion is returned as is.
 */
export async function rewriteRvs(body: Buffer, contentType: string, shape: BodyShape, map: MapRv): Promise<Buffer> {
  const type = mediaType(contentType);
  if (body.length === 0 || !readableBody(type)) return body;
  if (type === protobufType) return rewriteProtobufRv(body, shape, map);
  const text = body.toString('utf8');
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    if (yamlTypes.has(type)) return rewriteYaml(text, shape, map, body);
    return body;
  }
  const changed = await mapAll(find(doc, shape, type === 'application/json-patch+json'), map);
  if (changed.length === 0) return body;
  // In place when the one rewritten value is the text's only such string: the rest of the body
  // stays byte for byte (numbers beyond 2^53 included, which a parse and write would round).
  if (changed.length === 1) {
    const from = JSON.stringify(changed[0].from);
    if (occurrences(text, from) === 1) {
      const spliced = text.replace(from, () => JSON.stringify(changed[0].to));
      // The one occurrence was the value itself (not an escaped spelling of it elsewhere).
      if (jsonEqual(JSON.parse(spliced), doc)) return Buffer.from(spliced, 'utf8');
    }
  }
  return Buffer.from(JSON.stringify(doc), 'utf8');
}

/** A YAML body (kubectl apply --server-side may send one): the rv set in its document, the rest of the text kept. */
async function rewriteYaml(text: string, shape: BodyShape, map: MapRv, body: Buffer): Promise<Buffer> {
  // kube-apiserver decodes at most this much YAML (kube/json-limits.ts); aliases are not expanded here.
  if (Buffer.byteLength(text) > maxYamlBodyBytes) throw requestEntityTooLarge(maxYamlBodyBytes);
  const doc = parseDocument(text, { uniqueKeys: false });
  if (doc.errors.length > 0 || !isDocument(doc)) return body;
  const path = shape === 'deleteOptions' ? ['preconditions', 'resourceVersion'] : shape === 'eviction' ? ['deleteOptions', 'preconditions', 'resourceVersion'] : ['metadata', 'resourceVersion'];
  const rv: unknown = doc.getIn(path);
  if (typeof rv !== 'string') return body;
  const to = await map(rv, shape === 'object' ? { kind: 'object' } : { kind: 'precondition' });
  if (to === rv) return body;
  doc.setIn(path, doc.createNode(to));
  return Buffer.from(doc.toString(), 'utf8');
}

/** deletecollection: a resourceVersion precondition names no one object, so it cannot be translated (400). */
export async function refuseCollectionPrecondition(body: Buffer, contentType: string): Promise<void> {
  await rewriteRvs(body, contentType, 'deleteOptions', async (rv) => {
    throw new StatusError('BadRequest', `preconditions.resourceVersion ${JSON.stringify(rv)} cannot be used in a deletecollection through Panoptes: a resourceVersion names one object's version; delete each object by name with its precondition`);
  });
}

/** Whether an object's annotations hold a stamp; drops them (in place). */
function dropStamps(o: unknown): boolean {
  if (!isObj(o)) return false;
  let dropped = false;
  for (const k of stampedAnnotations) {
    if (Object.hasOwn(o, k)) {
      delete o[k];
      dropped = true;
    }
  }
  return dropped;
}

const annotationsOf = (o: unknown): unknown => (isObj(o) && isObj(o.metadata) ? o.metadata.annotations : undefined);

/** The stamp an annotation path of a JSON patch names (RFC 6901: `~1` is `/`, `~0` is `~`), if any. */
const stampAt = (path: string): boolean =>
  path.startsWith('/metadata/annotations/') && stampedAnnotations.includes(path.slice('/metadata/annotations/'.length).replaceAll('~1', '/').replaceAll('~0', '~'));

/** A JSON patch without its add/replace operations that set a stamp (alone, or in the annotations, metadata or object they set). */
function stripJsonPatch(ops: unknown[]): boolean {
  let dropped = false;
  for (let i = ops.length - 1; i >= 0; i--) {
    const op = ops[i];
    if (!isObj(op) || typeof op.path !== 'string' || !['add', 'replace'].includes(op.op as string)) continue;
    if (stampAt(op.path)) {
      ops.splice(i, 1);
      dropped = true;
    } else if (op.path === '/metadata/annotations') dropped = dropStamps(op.value) || dropped;
    else if (op.path === '/metadata') dropped = (isObj(op.value) && dropStamps(op.value.annotations)) || dropped;
    else if (op.path === '') dropped = dropStamps(annotationsOf(op.value)) || dropped;
  }
  return dropped;
}

/**
 * The object body of a create, update or patch without the annotations storage stamps (JSON,
 * every patch type, YAML and protobuf); as it is when it has none, or cannot be parsed (the
 * member rejects it as it would). Removing a key from a merge or apply patch leaves the
 * member's value alone: a member object holds no stamps.
 */
export function withoutStamps(body: Buffer, contentType: string): Buffer {
  const type = mediaType(contentType);
  if (body.length === 0 || !readableBody(type)) return body;
  if (type === protobufType) return dropProtobufAnnotations(body, stampedAnnotations);
  const text = body.toString('utf8');
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return yamlTypes.has(type) ? stripYaml(text, body) : body;
  }
  const dropped = type === 'application/json-patch+json' ? Array.isArray(doc) && stripJsonPatch(doc) : dropStamps(annotationsOf(doc));
  return dropped ? Buffer.from(JSON.stringify(doc), 'utf8') : body;
}

function stripYaml(text: string, body: Buffer): Buffer {
  if (Buffer.byteLength(text) > maxYamlBodyBytes) throw requestEntityTooLarge(maxYamlBodyBytes);
  const doc = parseDocument(text, { uniqueKeys: false });
  if (doc.errors.length > 0 || !isDocument(doc)) return body;
  let dropped = false;
  for (const k of stampedAnnotations) {
    if (!doc.hasIn(['metadata', 'annotations', k])) continue;
    doc.deleteIn(['metadata', 'annotations', k]);
    dropped = true;
  }
  return dropped ? Buffer.from(doc.toString(), 'utf8') : body;
}
