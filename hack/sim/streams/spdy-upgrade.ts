// The SPDY/3.1 upgrade answer of kube's streaming endpoints (k8s.io/apimachinery/pkg/util/httpstream:
// Handshake picks the first protocol of the client's X-Stream-Protocol-Version list the server
// serves; spdy.NewResponseUpgrader answers 101 with Connection: Upgrade, Upgrade: SPDY/3.1).
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { StatusError } from '../../../kube/status.ts';
import { SpdySession } from './spdy.ts';

export function isSpdyUpgrade(req: IncomingMessage): boolean {
  return (req.headers.upgrade ?? '').toLowerCase() === 'spdy/3.1';
}

/** The X-Stream-Protocol-Version values a client offered, in its order. */
function offered(req: IncomingMessage): string[] {
  const raw = req.headers['x-stream-protocol-version'];
  return (Array.isArray(raw) ? raw : raw ? [raw] : []).flatMap((v) => v.split(',')).map((v) => v.trim()).filter(Boolean);
}

/**
 * Answers 101 and starts a SPDY session; the protocol chosen with it. Throws a 400 StatusError
 * (before anything is written) when the request is no SPDY upgrade or offers none of `supported`.
 */
export function acceptSpdy(req: IncomingMessage, socket: Duplex, head: Buffer, supported: readonly string[]): { session: SpdySession; protocol: string } {
  if (!isSpdyUpgrade(req)) throw new StatusError('BadRequest', 'unable to upgrade: missing upgrade headers in request');
  const client = offered(req);
  const protocol = client.find((p) => supported.includes(p));
  if (protocol === undefined) {
    throw new StatusError('Forbidden', `unable to upgrade: unable to negotiate protocol: client supports ${JSON.stringify(client)}, server supports ${JSON.stringify(supported)}`);
  }
  socket.write(`HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: ${protocol}\r\n\r\n`);
  return { session: new SpdySession(socket, head), protocol };
}
