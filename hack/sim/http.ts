// HTTP plumbing of the simulator: bodies, JSON and Status answers (Accept negotiation:
// output.ts and apiserver/endpoints/negotiate.ts).
import { stringifyJson } from '../../kube/json-text.ts';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parse as parseYaml } from 'yaml';
import { decodeProtobuf, protobufType } from './protobuf.ts';
import { StatusError } from '../../kube/status.ts';

const MAX_BODY = 3 * 1024 * 1024;

/** Reads and parses a JSON (or YAML) request body; undefined when empty. */
export async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new StatusError('RequestEntityTooLarge', 'Request entity too large: limit is 3145728');
    chunks.push(chunk as Buffer);
  }
  const ct = req.headers['content-type'] ?? '';
  if (ct.split(';')[0].trim() === protobufType) return decodeProtobuf(Buffer.concat(chunks));
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return undefined;
  try {
    return ct.includes('yaml') ? parseYaml(text) : JSON.parse(text);
  } catch (err) {
    throw new StatusError('BadRequest', `the body of the request could not be decoded: ${(err as Error).message}`);
  }
}

/** Transfer-Encoding: chunked for a streamed answer over HTTP/1.1; HTTP/2 has its own framing (and forbids the header). */
export const chunked = (res: ServerResponse): Record<string, string> => ('stream' in res ? {} : { 'Transfer-Encoding': 'chunked' });

export function sendJson(res: ServerResponse, code: number, body: unknown, contentType = 'application/json', headers: Record<string, string> = {}): void {
  const text = typeof body === 'string' ? body : stringifyJson(body);
  res.writeHead(code, { 'Content-Type': contentType, 'Cache-Control': 'no-cache, private', ...headers, 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

export function sendText(res: ServerResponse, code: number, text: string): void {
  res.writeHead(code, { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

export function sendError(res: ServerResponse, err: unknown): void {
  const e = err instanceof StatusError ? err : new StatusError('InternalError', `Internal error occurred: ${(err as Error)?.message ?? String(err)}`);
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (e.code === 429 || e.code === 504) res.setHeader('Retry-After', '1');
  sendJson(res, e.code, e.toStatus());
}

/** Parses `500ms`, `10s`, `2m` or a plain number of milliseconds. */
export function parseDuration(text: string): number | undefined {
  const m = /^(\d+)(ms|s|m|h)?$/.exec(text.trim());
  if (!m) return undefined;
  return Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? 'ms') as 'ms' | 's' | 'm' | 'h'];
}
