// Request bodies in Kubernetes' protobuf encoding (application/vnd.kubernetes.protobuf), which
// kubectl's typed clients send (kubectl create configmap, kubectl auth can-i), decoded to
// JSON objects for the kinds those commands write: the "k8s\0" envelope around a
// runtime.Unknown (typeMeta, raw), then the message by its kind's field numbers
// (k8s.io/api/core/v1/generated.proto, authorization/v1/generated.proto,
// apimachinery/pkg/apis/meta/v1/generated.proto). Other kinds are a 415 naming what is
// decoded. Answers stay JSON, which those clients accept as well.
import { StatusError } from '../../kube/status.ts';
import type { JsonObject } from './types.ts';

export const protobufType = 'application/vnd.kubernetes.protobuf';

type Field = { no: number; wire: number; value: bigint | Buffer };

function varint(buf: Buffer, at: number): [bigint, number] {
  let v = 0n;
  let shift = 0n;
  for (let i = at; i < buf.length && i < at + 10; i++) {
    v |= BigInt(buf[i] & 0x7f) << shift;
    if ((buf[i] & 0x80) === 0) return [v, i + 1];
    shift += 7n;
  }
  throw bad('a truncated varint');
}

const bad = (what: string) => new StatusError('BadRequest', `the body of the request could not be decoded: protobuf: ${what}`);

function fields(buf: Buffer): Field[] {
  const out: Field[] = [];
  let at = 0;
  while (at < buf.length) {
    const [key, next] = varint(buf, at);
    at = next;
    const no = Number(key >> 3n);
    const wire = Number(key & 7n);
    if (wire === 0) {
      const [v, n] = varint(buf, at);
      out.push({ no, wire, value: v });
      at = n;
    } else if (wire === 2) {
      const [len, n] = varint(buf, at);
      const end = n + Number(len);
      if (end > buf.length) throw bad('a field runs past the end');
      out.push({ no, wire, value: buf.subarray(n, end) });
      at = end;
    } else if (wire === 1 || wire === 5) {
      at += wire === 1 ? 8 : 4;
    } else {
      throw bad(`wire type ${wire}`);
    }
  }
  return out;
}

const bytes = (f: Field) => (Buffer.isBuffer(f.value) ? f.value : Buffer.alloc(0));
const str = (f: Field) => bytes(f).toString('utf8');

type Schema = Record<number, [string, 'string' | 'bool' | 'map' | 'bytesMap' | Schema]>;

function decode(buf: Buffer, schema: Schema): JsonObject {
  const out: JsonObject = {};
  for (const f of fields(buf)) {
    const s = schema[f.no];
    if (!s) continue;
    const [name, type] = s;
    if (type === 'string') out[name] = str(f);
    else if (type === 'bool') out[name] = f.value !== 0n;
    else if (type === 'map' || type === 'bytesMap') {
      const entry = fields(bytes(f));
      const k = entry.find((e) => e.no === 1);
      const v = entry.find((e) => e.no === 2);
      const m = (out[name] ??= {}) as JsonObject;
      m[k ? str(k) : ''] = v ? (type === 'map' ? str(v) : bytes(v).toString('base64')) : '';
    } else out[name] = decode(bytes(f), type);
  }
  return out;
}

const objectMeta: Schema = { 1: ['name', 'string'], 2: ['generateName', 'string'], 3: ['namespace', 'string'], 5: ['uid', 'string'], 6: ['resourceVersion', 'string'], 11: ['labels', 'map'], 12: ['annotations', 'map'] };
const resourceAttributes: Schema = { 1: ['namespace', 'string'], 2: ['verb', 'string'], 3: ['group', 'string'], 4: ['version', 'string'], 5: ['resource', 'string'], 6: ['subresource', 'string'], 7: ['name', 'string'] };
const kinds: Record<string, Schema> = {
  ConfigMap: { 1: ['metadata', objectMeta], 2: ['data', 'map'], 3: ['binaryData', 'bytesMap'], 4: ['immutable', 'bool'] },
  SelfSubjectAccessReview: { 1: ['metadata', objectMeta], 2: ['spec', { 1: ['resourceAttributes', resourceAttributes], 2: ['nonResourceAttributes', { 1: ['path', 'string'], 2: ['verb', 'string'] }] }] },
  SelfSubjectRulesReview: { 1: ['metadata', objectMeta], 2: ['spec', { 1: ['namespace', 'string'] }] },
};

/** The JSON form of a protobuf request body. */
export function decodeProtobuf(body: Buffer): JsonObject {
  if (body.subarray(0, 4).toString('latin1') !== 'k8s\u0000') throw bad('no k8s envelope');
  const unknown = decode(body.subarray(4), { 1: ['typeMeta', { 1: ['apiVersion', 'string'], 2: ['kind', 'string'] }], 2: ['raw', 'string'] });
  const raw = fields(body.subarray(4)).find((f) => f.no === 2);
  const tm = (unknown.typeMeta ?? {}) as { apiVersion?: string; kind?: string };
  const schema = tm.kind ? kinds[tm.kind] : undefined;
  if (!schema) throw new StatusError('UnsupportedMediaType', `the simulated cluster decodes ${protobufType} for ${Object.keys(kinds).join(', ')} only, not ${tm.kind ?? 'an unnamed kind'}: send application/json`);
  return { apiVersion: tm.apiVersion ?? '', kind: tm.kind!, ...decode(raw ? bytes(raw) : Buffer.alloc(0), schema) };
}
