// How much of a member's answer Panoptes holds in memory. A member cluster is not trusted to
// be well behaved: a compromised or broken one (or a server a Cluster merely points at) could
// answer a list with an endless body, or a watch with an endless line, and take with it the
// synchro process that syncs every other cluster of its shard. kube's objects are small
// (etcd refuses a value over 1.5 MiB by default), so the bounds below are far above anything
// a real kube-apiserver sends, yet keep memory bounded: a JSON answer (a list page, an
// OpenAPI document) at most maxAnswerBytes, a watch event at most maxEventBytes, the body of
// an error at most maxErrorBodyBytes (only its Status reason and message are used).

export const maxAnswerBytes = 256 * 1024 * 1024;
export const maxEventBytes = 64 * 1024 * 1024;
export const maxErrorBodyBytes = 64 * 1024;

const mib = (n: number) => `${Math.round(n / 1024 / 1024)} MiB`;

/** A member's answer larger than Panoptes holds; a list retries with smaller pages (synchro/cluster/reflector.ts). */
export class AnswerTooLargeError extends Error {
  override name = 'AnswerTooLargeError';
  constructor(
    readonly limit: number,
    what = 'answer',
  ) {
    super(`the member's ${what} is larger than ${limit >= 1024 * 1024 ? mib(limit) : `${limit} bytes`}, more than Panoptes reads of one`);
  }
}

/**
 * The body of `stream`, at most `limit` bytes: past it, the stream is destroyed and
 * AnswerTooLargeError thrown, or with `truncate` the first `limit` bytes are returned.
 */
export async function readBounded(stream: AsyncIterable<Buffer | string> & { destroy(err?: Error): void }, limit: number, opts: { truncate?: boolean } = {}): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of stream) {
    const chunk = typeof c === 'string' ? Buffer.from(c) : c;
    if (size + chunk.length > limit) {
      chunks.push(chunk.subarray(0, limit - size));
      stream.destroy();
      if (opts.truncate) return Buffer.concat(chunks);
      throw new AnswerTooLargeError(limit);
    }
    size += chunk.length;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/**
 * The newline-delimited lines of `stream` (a watch), each at most `maxLineBytes` (else
 * AnswerTooLargeError). Each chunk is searched once for its newlines, however long a line
 * grows across chunks; `onChunk` runs on every chunk received. A last line without its
 * newline (a connection cut mid-event) is not a line.
 */
export async function* lines(stream: AsyncIterable<Buffer | string>, maxLineBytes: number, onChunk?: () => void): AsyncGenerator<string> {
  let pieces: Buffer[] = [];
  let size = 0;
  for await (const c of stream) {
    onChunk?.();
    const chunk = typeof c === 'string' ? Buffer.from(c) : c;
    let start = 0;
    for (let nl = chunk.indexOf(10); nl >= 0; nl = chunk.indexOf(10, start)) {
      const part = chunk.subarray(start, nl);
      if (size + part.length > maxLineBytes) throw new AnswerTooLargeError(maxLineBytes, 'watch event');
      const line = pieces.length > 0 ? Buffer.concat([...pieces, part]).toString('utf8') : part.toString('utf8');
      pieces = [];
      size = 0;
      start = nl + 1;
      yield line;
    }
    const rest = chunk.subarray(start);
    size += rest.length;
    if (size > maxLineBytes) throw new AnswerTooLargeError(maxLineBytes, 'watch event');
    if (rest.length > 0) pieces.push(rest);
  }
}
