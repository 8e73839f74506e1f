// Response compression as kube-apiserver v1.28 does it (feature gate APIResponseCompression,
// beta and on by default since 1.16). Every reply that is not a watch goes through here
// (server.ts writeReply); what a reply is decides which of kube's two code paths applies:
//
// - 'api-object' (the default): lists, gets, Tables, PartialObjectMetadata, discovery (plain
//   and aggregated), external metrics, the own kinds' answers. kube-apiserver writes these
//   through responsewriters.SerializeObject (k8s.io/apiserver/pkg/endpoints/handlers/
//   responsewriters/writers.go, deferredResponseWriter): gzip only when the body is larger
//   than defaultGzipThresholdBytes (128 KiB) and the request's Accept-Encoding holds the
//   token `gzip` exactly (ContentEncodingSupported in compression.go: split on commas,
//   trimmed, compared to "gzip": `gzip;q=0.5`, `GZIP` and `*` do not count), at level 1
//   (gzipContentEncodingLevel; kubernetes/kubernetes#112296: level 1 costs the least CPU
//   for nearly the same ratio). `Content-Encoding: gzip` and `Vary: Accept-Encoding` are set
//   only on a compressed answer. The 128 KiB is "smaller than a 500 pod page but larger
//   than almost any single object" (kubernetes/kubernetes#77449).
// - 'openapi-v2': /openapi/v2 is served by kube-openapi's handler wrapped in
//   NYTimes/gziphandler (k8s.io/kube-openapi/pkg/handler/handler.go): `Vary: Accept-Encoding`
//   on every answer, gzip at its DefaultMinSize (1400 bytes) and above when Accept-Encoding
//   gives gzip a q above 0, at gzip.DefaultCompression (level 6).
// - 'never': /openapi/v3 and its documents (kube-openapi's handler3 has no compression).
//   (/version, WriteRawJSON in kube, is never compressed either; far below 128 KiB, it takes
//   the default path without difference.) Watch streams never come here: kube's WatchServer writes
//   events straight to the connection (handlers/watch.go), uncompressed, and so does
//   Panoptes. Status errors are written by errors.ts uncompressed; kube would compress one
//   only above 128 KiB, which no Status reaches.
//
// kube-aggregator proxies with the client's headers (Accept-Encoding included) through Go's
// transport, which asks for gzip itself when the client did not and inflates the answer for
// it: through the aggregator, large answers cross the aggregator-to-Panoptes hop compressed
// whatever the client sent.
import { promisify } from 'node:util';
import { gzip as gzipCb, constants } from 'node:zlib';

const gzip = promisify(gzipCb);

export type Compression = 'api-object' | 'openapi-v2' | 'never';

interface Policy {
  /** Whether Accept-Encoding allows gzip, as that code path reads it. */
  accepts(acceptEncoding: string): boolean;
  /** Whether a body of this many bytes is compressed. */
  largeEnough(bytes: number): boolean;
  level: number;
  /** Vary: Accept-Encoding on every answer (gziphandler), or only on compressed ones (SerializeObject). */
  varyAlways: boolean;
}

/** defaultGzipThresholdBytes of k8s.io/apiserver's responsewriters: a body must be larger than this. */
export const apiObjectThresholdBytes = 128 * 1024;
/** NYTimes/gziphandler's DefaultMinSize: a body of at least this many bytes is compressed. */
export const openapiV2MinBytes = 1400;

/** ContentEncodingSupported: a comma-separated token that is exactly `gzip` once trimmed. */
export const hasGzipToken = (acceptEncoding: string): boolean => acceptEncoding.split(',').some((t) => t.trim() === 'gzip');

/** gziphandler's acceptsGzip: `gzip` (any case) listed with a q-value above 0 (absent q is 1). */
export function gzipQualityAbove0(acceptEncoding: string): boolean {
  for (const part of acceptEncoding.split(',')) {
    const [coding, ...params] = part.split(';').map((s) => s.trim());
    if (coding.toLowerCase() !== 'gzip') continue;
    let q = 1;
    for (const p of params) {
      const m = /^q=([0-9.]+)$/.exec(p);
      if (m) q = Number(m[1]);
    }
    return q > 0;
  }
  return false;
}

const policies: Record<Exclude<Compression, 'never'>, Policy> = {
  'api-object': { accepts: hasGzipToken, largeEnough: (n) => n > apiObjectThresholdBytes, level: 1, varyAlways: false },
  'openapi-v2': { accepts: gzipQualityAbove0, largeEnough: (n) => n >= openapiV2MinBytes, level: constants.Z_DEFAULT_COMPRESSION, varyAlways: true },
};

export interface Encoded {
  body: string | Buffer;
  /** Headers to add: Content-Encoding, Vary. */
  contentEncoding?: 'gzip';
  vary: boolean;
}

/**
 * The body to send for a reply of kind `kind` to a request with this Accept-Encoding, and
 * the headers that go with it. Compression runs on libuv's thread pool, not the event loop.
 */
export async function encodeReply(kind: Compression, acceptEncoding: string | undefined, body: string | Buffer): Promise<Encoded> {
  if (kind === 'never') return { body, vary: false };
  const policy = policies[kind];
  const bytes = typeof body === 'string' ? Buffer.byteLength(body) : body.length;
  if (!acceptEncoding || !policy.accepts(acceptEncoding) || !policy.largeEnough(bytes)) return { body, vary: policy.varyAlways };
  return { body: await gzip(body, { level: policy.level }), contentEncoding: 'gzip', vary: true };
}
