// The answer to a connection upgrade that is refused (exec, attach, port-forward before the
// 101): an HTTP/1.1 response written on the raw socket with the Status as its body, as
// kube-apiserver answers them (and Retry-After when the Status carries retryAfterSeconds,
// or for 429/503), then the connection's end.
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { StatusError } from './status.ts';

export function refuseUpgrade(socket: Duplex, err: unknown): void {
  const e = err instanceof StatusError ? err : new StatusError('InternalError', `Internal error occurred: ${(err as Error)?.message ?? String(err)}`);
  const body = JSON.stringify(e.toStatus());
  const retry = e.details?.retryAfterSeconds ?? (e.code === 503 || e.code === 429 ? 1 : undefined);
  const head = [
    `HTTP/1.1 ${e.code} ${STATUS_CODES[e.code] ?? 'Error'}`,
    'Content-Type: application/json',
    'Cache-Control: no-cache, private',
    ...(retry !== undefined && retry > 0 ? [`Retry-After: ${retry}`] : []),
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
  ];
  if (socket.destroyed) return;
  socket.end(`${head.join('\r\n')}\r\n\r\n${body}`);
  setTimeout(() => socket.destroy(), 5000).unref();
}
