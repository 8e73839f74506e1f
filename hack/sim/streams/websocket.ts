// The server side of RFC 6455 WebSocket, as much as kube's streaming protocols use: the
// handshake (Sec-WebSocket-Accept, one subprotocol chosen from the client's offer), binary
// messages (fragmented or not; client frames are masked, server frames are not), ping/pong
// (client-go pings every 5 s and gives up after 61 s without a pong) and the close handshake.
import { createHash } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';

const magic = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
/** The largest message accepted from a client (client-go writes at most 32 KiB per message). */
const maxMessage = 16 * 1024 * 1024;

export const opcodes = { continuation: 0, text: 1, binary: 2, close: 8, ping: 9, pong: 10 } as const;

/** The subprotocols a client offered (Sec-WebSocket-Protocol, comma separated, possibly repeated). */
export function offeredProtocols(req: IncomingMessage): string[] {
  const raw = req.headers['sec-websocket-protocol'];
  return (Array.isArray(raw) ? raw.join(',') : raw ?? '').split(',').map((p) => p.trim()).filter(Boolean);
}

export function isWebSocketUpgrade(req: IncomingMessage): boolean {
  return (req.headers.upgrade ?? '').toLowerCase() === 'websocket';
}

/** Encodes one unfragmented frame (server to client: unmasked). `mask` for client frames (tests). */
export function encodeFrame(opcode: number, payload: Buffer, mask?: Buffer): Buffer {
  const len = payload.length;
  const headLen = len < 126 ? 2 : len < 65536 ? 4 : 10;
  const head = Buffer.alloc(headLen + (mask ? 4 : 0));
  head[0] = 0x80 | opcode;
  const m = mask ? 0x80 : 0;
  if (len < 126) head[1] = m | len;
  else if (len < 65536) {
    head[1] = m | 126;
    head.writeUInt16BE(len, 2);
  } else {
    head[1] = m | 127;
    head.writeBigUInt64BE(BigInt(len), 2);
  }
  if (!mask) return Buffer.concat([head, payload]);
  mask.copy(head, headLen);
  const body = Buffer.from(payload);
  for (let i = 0; i < body.length; i++) body[i] ^= mask[i & 3];
  return Buffer.concat([head, body]);
}

export interface Frame {
  fin: boolean;
  opcode: number;
  payload: Buffer;
}

/** Takes whole frames off the front of `buf`; returns them and what is left. */
export function decodeFrames(buf: Buffer): { frames: Frame[]; rest: Buffer } {
  const frames: Frame[] = [];
  let off = 0;
  for (;;) {
    if (buf.length - off < 2) break;
    const b0 = buf[off];
    const b1 = buf[off + 1];
    let len = b1 & 0x7f;
    let p = off + 2;
    if (len === 126) {
      if (buf.length - p < 2) break;
      len = buf.readUInt16BE(p);
      p += 2;
    } else if (len === 127) {
      if (buf.length - p < 8) break;
      const big = buf.readBigUInt64BE(p);
      if (big > BigInt(maxMessage)) throw new Error('websocket frame too large');
      len = Number(big);
      p += 8;
    }
    if (len > maxMessage) throw new Error('websocket frame too large');
    const masked = (b1 & 0x80) !== 0;
    const mask = masked ? buf.subarray(p, p + 4) : undefined;
    if (masked) p += 4;
    if (buf.length - p < len) break;
    const payload = Buffer.from(buf.subarray(p, p + len));
    if (mask) for (let i = 0; i < payload.length; i++) payload[i] ^= mask[i & 3];
    frames.push({ fin: (b0 & 0x80) !== 0, opcode: b0 & 0x0f, payload });
    off = p + len;
  }
  return { frames, rest: buf.subarray(off) };
}

/**
 * One accepted WebSocket connection. Emits 'message' (Buffer, binary or text) and 'close'
 * once, when the connection ends for whatever reason.
 */
export class WebSocketConn extends EventEmitter {
  private buf: Buffer = Buffer.alloc(0);
  private parts: Buffer[] = [];
  private closed = false;

  constructor(
    readonly socket: Duplex,
    readonly protocol: string,
    head: Buffer = Buffer.alloc(0),
  ) {
    super();
    // Bytes that came with the upgrade request: handled once the caller has its listeners on.
    if (head.length) process.nextTick(() => this.onData(head));
    socket.on('data', (d: Buffer) => this.onData(d));
    socket.on('error', () => this.end());
    // An upgraded HTTP server socket is half-open: the client's end does not close it by itself.
    socket.on('end', () => this.end());
    socket.on('close', () => this.end());
  }

  private onData(d: Buffer): void {
    this.buf = this.buf.length ? Buffer.concat([this.buf, d]) : d;
    let decoded: { frames: Frame[]; rest: Buffer };
    try {
      decoded = decodeFrames(this.buf);
    } catch {
      this.close(1009);
      return;
    }
    this.buf = decoded.rest;
    for (const f of decoded.frames) {
      switch (f.opcode) {
        case opcodes.ping:
          this.write(opcodes.pong, f.payload);
          break;
        case opcodes.pong:
          break;
        case opcodes.close:
          this.close(f.payload.length >= 2 ? f.payload.readUInt16BE(0) : 1000);
          break;
        default:
          this.parts.push(f.payload);
          if (this.parts.reduce((n, p) => n + p.length, 0) > maxMessage) return this.close(1009);
          if (f.fin) {
            const msg = Buffer.concat(this.parts);
            this.parts = [];
            this.emit('message', msg);
          }
      }
    }
  }

  private write(opcode: number, payload: Buffer): void {
    if (this.closed || this.socket.destroyed) return;
    this.socket.write(encodeFrame(opcode, payload));
  }

  /** Sends one binary message. */
  send(data: Buffer): void {
    this.write(opcodes.binary, data);
  }

  /** Sends a close frame (1000: normal closure) and ends the connection. */
  close(code = 1000): void {
    if (this.closed) return;
    const payload = Buffer.alloc(2);
    payload.writeUInt16BE(code, 0);
    this.write(opcodes.close, payload);
    this.closed = true;
    this.socket.end();
    setTimeout(() => this.socket.destroy(), 1000).unref();
    this.end();
  }

  private emitted = false;

  private end(): void {
    if (!this.closed) {
      this.closed = true;
      this.socket.destroy();
    }
    if (!this.emitted) {
      this.emitted = true;
      this.emit('close');
    }
  }

  get isClosed(): boolean {
    return this.closed;
  }
}

/**
 * Answers the upgrade with 101 and the first protocol of `supported` the client offered
 * (the server's preference, as kube's wsstream does); undefined (and a 400 written) when the
 * client offered none of them.
 */
export function acceptWebSocket(req: IncomingMessage, socket: Duplex, head: Buffer, supported: readonly string[]): WebSocketConn | undefined {
  const key = req.headers['sec-websocket-key'];
  const offered = offeredProtocols(req);
  const protocol = supported.find((p) => offered.includes(p));
  if (typeof key !== 'string' || protocol === undefined) {
    const body = JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: `unable to upgrade: no supported protocol offered (want one of ${supported.join(', ')})`, reason: 'BadRequest', code: 400 });
    socket.end(`HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    return undefined;
  }
  const accept = createHash('sha1').update(key + magic).digest('base64');
  socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\nSec-WebSocket-Protocol: ${protocol}\r\n\r\n`);
  return new WebSocketConn(socket, protocol, head);
}
