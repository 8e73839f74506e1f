// resourceVersions in kube's protobuf bodies (application/vnd.kubernetes.protobuf), which
// client-go's typed clients send for built-in kinds (kubectl's `create <kind>`, `certificate
// approve`, `drain`'s evictions): rewritten in place, every other byte kept.
//
// The layout (k8s.io/apimachinery runtime/serializer/protobuf and the kinds' generated.proto):
// the 4 bytes "k8s\0", then a runtime.Unknown message whose field 2 (`raw`) is the object's own
// message. Every built-in kind has its ObjectMeta as field 1 (`metadata`), whose field 6 is
// `resourceVersion`; DeleteOptions has Preconditions as field 2, whose field 2 is
// `resourceVersion`; an Eviction has its DeleteOptions as field 2.
import { StatusError } from '../../kube/status.ts';
import type { BodyShape, MapRv, RvPlace } from './rv-shapes.ts';

export const protobufType = 'application/vnd.kubernetes.protobuf';

const magic = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

/** Field numbers from the envelope down to the resourceVersion string, by body shape. */
const paths: Record<BodyShape, number[]> = {
  object: [2, 1, 6],
  deleteOptions: [2, 2, 2],
  eviction: [2, 2, 2, 2],
};

const malformed = (why: string) => new StatusError('BadRequest', `the protobuf body could not be read for its resourceVersion: ${why}`);

/** One length-delimited field of a message: where its length prefix starts and its value lies. */
interface Field {
  field: number;
  tagAt: number;
  lengthAt: number;
  start: number;
  end: number;
}

function readVarint(b: Buffer, at: number): { value: number; next: number } {
  let value = 0;
  let scale = 1;
  for (let i = at; i < b.length && i < at + 10; i++) {
    value += (b[i] & 0x7f) * scale;
    scale *= 128;
    if ((b[i] & 0x80) === 0) return { value, next: i + 1 };
  }
  throw malformed('a truncated varint');
}

function varint(n: number): Buffer {
  const out: number[] = [];
  while (n >= 0x80) {
    out.push((n % 128) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return Buffer.from(out);
}

/** The length-delimited fields of a message, in order; the others are stepped over. */
function lengthDelimited(m: Buffer): Field[] {
  const out: Field[] = [];
  let at = 0;
  while (at < m.length) {
    const tagAt = at;
    const tag = readVarint(m, at);
    const field = Math.floor(tag.value / 8);
    const wire = tag.value % 8;
    at = tag.next;
    if (wire === 0) at = readVarint(m, at).next;
    else if (wire === 1) at += 8;
    else if (wire === 5) at += 4;
    else if (wire === 2) {
      const len = readVarint(m, at);
      const start = len.next;
      const end = start + len.value;
      if (end > m.length) throw malformed('a field longer than its message');
      out.push({ field, tagAt, lengthAt: at, start, end });
      at = end;
    } else throw malformed(`wire type ${wire}`);
    if (at > m.length) throw malformed('a field longer than its message');
  }
  return out;
}

/** `m` with the string at `path` mapped (the last occurrence, the one a decoder keeps); `m` itself when unchanged. */
async function rewrite(m: Buffer, path: number[], place: RvPlace, map: MapRv): Promise<Buffer> {
  const hits = lengthDelimited(m).filter((f) => f.field === path[0]);
  if (hits.length === 0) return m;
  // A message given twice is merged by a decoder: which part holds the rv is not one place.
  if (path.length > 1 && hits.length > 1) throw malformed(`field ${path[0]} given ${hits.length} times`);
  const f = hits[hits.length - 1];
  const value = m.subarray(f.start, f.end);
  let replaced: Buffer;
  if (path.length === 1) {
    const rv = value.toString('utf8');
    const to = await map(rv, place);
    if (to === rv) return m;
    replaced = Buffer.from(to, 'utf8');
  } else {
    replaced = await rewrite(value, path.slice(1), place, map);
    if (replaced === value) return m;
  }
  return Buffer.concat([m.subarray(0, f.lengthAt), varint(replaced.length), replaced, m.subarray(f.end)]);
}

/** The runtime.Unknown message of a kube protobuf body (after its magic), checked to be readable here. */
function envelopeOf(body: Buffer): Buffer {
  if (body.length < magic.length || !body.subarray(0, magic.length).equals(magic)) throw malformed('no k8s protobuf envelope');
  const unknown = body.subarray(magic.length);
  // runtime.Unknown field 3: contentEncoding of `raw`; kube leaves it empty (an encoded raw could not be read here).
  if (lengthDelimited(unknown).some((f) => f.field === 3 && f.end > f.start)) throw new StatusError('UnsupportedMediaType', 'a protobuf body with a content encoding is not supported through Panoptes');
  return unknown;
}

/** A protobuf body with its resourceVersion mapped; a body without one is returned as it is. */
export async function rewriteProtobufRv(body: Buffer, shape: BodyShape, map: MapRv): Promise<Buffer> {
  const unknown = envelopeOf(body);
  const out = await rewrite(unknown, paths[shape], shape === 'object' ? { kind: 'object' } : { kind: 'precondition' }, map);
  return out === unknown ? body : Buffer.concat([magic, out]);
}

/** `m` with the fields `path[last]` of the message at `path` (a single message per level) dropped where `drop` says; `m` itself when unchanged. */
function withoutFields(m: Buffer, path: number[], drop: (value: Buffer) => boolean): Buffer {
  const fields = lengthDelimited(m);
  if (path.length === 1) {
    const gone = fields.filter((f) => f.field === path[0] && drop(m.subarray(f.start, f.end)));
    if (gone.length === 0) return m;
    const parts: Buffer[] = [];
    let at = 0;
    for (const f of gone) {
      parts.push(m.subarray(at, f.tagAt));
      at = f.end;
    }
    parts.push(m.subarray(at));
    return Buffer.concat(parts);
  }
  const hits = fields.filter((f) => f.field === path[0]);
  if (hits.length === 0) return m;
  if (hits.length > 1) throw malformed(`field ${path[0]} given ${hits.length} times`);
  const f = hits[0];
  const value = m.subarray(f.start, f.end);
  const replaced = withoutFields(value, path.slice(1), drop);
  if (replaced === value) return m;
  return Buffer.concat([m.subarray(0, f.lengthAt), varint(replaced.length), replaced, m.subarray(f.end)]);
}

/**
 * A protobuf object body without the annotations named in `keys`: ObjectMeta (field 1 of the
 * object) keeps its annotations as field 12, one map entry { key: 1, value: 2 } each.
 */
export function dropProtobufAnnotations(body: Buffer, keys: readonly string[]): Buffer {
  const unknown = envelopeOf(body);
  const named = (entry: Buffer) => lengthDelimited(entry).some((f) => f.field === 1 && keys.includes(entry.subarray(f.start, f.end).toString('utf8')));
  const out = withoutFields(unknown, [2, 1, 12], named);
  return out === unknown ? body : Buffer.concat([magic, out]);
}
