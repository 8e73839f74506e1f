// HTTP plumbing of the simulator: bodies, JSON and Status answers, Accept negotiation.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parse as parseYaml } from 'yaml';
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
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return undefined;
  const ct = req.headers['content-type'] ?? '';
  try {
    return ct.includes('yaml') ? parseYaml(text) : JSON.parse(text);
  } catch (err) {
    throw new StatusError('BadRequest', `the body of the request could not be decoded: ${(err as Error).message}`);
  }
}

export function sendJson(res: ServerResponse, code: number, body: unknown, contentType = 'application/json'): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(code, { 'Content-Type': contentType, 'Cache-Control': 'no-cache, private', 'Content-Length': Buffer.byteLength(text) });
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

/** What the client accepts, among what the simulator produces. */
export type Negotiated = { kind: 'json' } | { kind: 'aggregated'; version: 'v2' | 'v2beta1'; contentType: string };

interface MediaRange {
  type: string;
  params: Record<string, string>;
  raw: string;
}

function parseAccept(accept: string): MediaRange[] {
  return accept
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)
    .map((raw) => {
      const [type, ...ps] = raw.split(';').map((s) => s.trim());
      const params: Record<string, string> = {};
      for (const p of ps) {
        const i = p.indexOf('=');
        if (i > 0) params[p.slice(0, i).trim().toLowerCase()] = p.slice(i + 1).trim();
      }
      return { type: type.toLowerCase(), params, raw };
    })
    .filter((m) => m.params.q !== '0');
}

/**
 * Picks the answer format. JSON whenever offered (also after protobuf, Table or partial
 * metadata, which the simulator does not produce); aggregated discovery where allowed;
 * undefined (406) when nothing fits.
 */
export function negotiate(accept: string | undefined, allowAggregated: boolean): Negotiated | undefined {
  if (!accept || accept.trim() === '') return { kind: 'json' };
  for (const m of parseAccept(accept)) {
    if (m.type !== 'application/json' && m.type !== 'application/*' && m.type !== '*/*') continue;
    const as = m.params.as;
    if (as === undefined) return { kind: 'json' };
    if (as === 'APIGroupDiscoveryList' && allowAggregated && m.params.g === 'apidiscovery.k8s.io' && (m.params.v === 'v2' || m.params.v === 'v2beta1')) {
      return { kind: 'aggregated', version: m.params.v, contentType: `application/json;g=apidiscovery.k8s.io;v=${m.params.v};as=APIGroupDiscoveryList` };
    }
  }
  return undefined;
}

export function notAcceptable(): StatusError {
  return new StatusError('NotAcceptable', 'only the following media types are accepted: application/json');
}

/** Parses `500ms`, `10s`, `2m` or a plain number of milliseconds. */
export function parseDuration(text: string): number | undefined {
  const m = /^(\d+)(ms|s|m|h)?$/.exec(text.trim());
  if (!m) return undefined;
  return Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? 'ms') as 'ms' | 's' | 'm' | 'h'];
}
