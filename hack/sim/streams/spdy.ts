// SPDY/3.1 framing, the server side as kube's streaming endpoints speak it (kubectl's
// transport for exec, attach and port-forward when WebSocket is not used; Go's
// github.com/moby/spdystream on the other end): control frames SYN_STREAM, SYN_REPLY,
// RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE, and data frames with FIN.
// Header blocks are zlib-compressed with the SPDY/3 dictionary, one compression context per
// direction for the whole connection (each block ends with a sync flush). spdystream does no
// flow control, so WINDOW_UPDATE is read and ignored.
// Ref: SPDY Protocol Draft 3.1 (frame layouts, section 2.6.10.1 dictionary).
import { EventEmitter } from 'node:events';
import type { Duplex } from 'node:stream';
import { constants, createDeflate, createInflate, type Deflate, type Inflate } from 'node:zlib';

export const frameTypes = { synStream: 1, synReply: 2, rstStream: 3, settings: 4, ping: 6, goAway: 7, headers: 8, windowUpdate: 9 } as const;
const flagFin = 0x01;
/** The largest frame accepted (spdystream writes data frames of at most 32 KiB). */
const maxFrame = 16 * 1024 * 1024;

const dictionaryWords =
  'options,head,post,put,delete,trace,accept,accept-charset,accept-encoding,accept-language,accept-ranges,age,allow,authorization,cache-control,connection,content-base,content-encoding,content-language,content-length,content-location,content-md5,content-range,content-type,date,etag,expect,expires,from,host,if-match,if-modified-since,if-none-match,if-range,if-unmodified-since,last-modified,location,max-forwards,pragma,proxy-authenticate,proxy-authorization,range,referer,retry-after,server,te,trailer,transfer-encoding,upgrade,user-agent,vary,via,warning,www-authenticate,method,get,status,200 OK,version,HTTP/1.1,url,public,set-cookie,keep-alive,origin';
const dictionaryTail =
  '100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.';

/** The SPDY/3 header compression dictionary (sha256 51d27341...): each word with a 32-bit length before it, then the tail as is. */
export const headerDictionary: Buffer = Buffer.concat([
  ...dictionaryWords.split(',').map((w) => {
    const b = Buffer.alloc(4 + w.length);
    b.writeUInt32BE(w.length, 0);
    b.write(w, 4, 'latin1');
    return b;
  }),
  Buffer.from(dictionaryTail, 'latin1'),
]);

/**
 * Runs blocks through one zlib stream, each ended by a sync flush: the flush's callback comes
 * after everything it produced was pushed, and the stream is read in paused mode, so each
 * block's output is exactly what read() gives then.
 */
class FlushedZlib {
  private chain: Promise<unknown> = Promise.resolve();

  constructor(private readonly z: Inflate | Deflate) {
    z.on('error', () => undefined); // surfaces as the rejection of run()
  }

  run(input: Buffer): Promise<Buffer> {
    const p = this.chain.then(
      () =>
        new Promise<Buffer>((resolve, reject) => {
          const onError = (err: Error) => reject(err);
          this.z.once('error', onError);
          this.z.write(input);
          this.z.flush(constants.Z_SYNC_FLUSH, () => {
            this.z.off('error', onError);
            const parts: Buffer[] = [];
            for (let c = this.z.read() as Buffer | null; c; c = this.z.read() as Buffer | null) parts.push(c);
            resolve(Buffer.concat(parts));
          });
        }),
    );
    this.chain = p.catch(() => undefined);
    return p;
  }

  close(): void {
    this.z.close();
  }
}

/** Both directions' header compression: a zlib stream each, kept for the connection. */
export class HeaderCodec {
  private readonly inflater = new FlushedZlib(createInflate({ dictionary: headerDictionary }));
  private readonly deflater = new FlushedZlib(createDeflate({ dictionary: headerDictionary }));

  async decode(block: Buffer): Promise<Map<string, string[]>> {
    const raw = await this.inflater.run(block);
    const headers = new Map<string, string[]>();
    let off = 4;
    const count = raw.readUInt32BE(0);
    for (let i = 0; i < count; i++) {
      const nl = raw.readUInt32BE(off);
      const name = raw.subarray(off + 4, off + 4 + nl).toString('utf8').toLowerCase();
      off += 4 + nl;
      const vl = raw.readUInt32BE(off);
      const value = raw.subarray(off + 4, off + 4 + vl).toString('utf8');
      off += 4 + vl;
      headers.set(name, value.split('\0'));
    }
    return headers;
  }

  encode(headers: Record<string, string | string[]>): Promise<Buffer> {
    const parts: Buffer[] = [];
    const entries = Object.entries(headers);
    const n = Buffer.alloc(4);
    n.writeUInt32BE(entries.length, 0);
    parts.push(n);
    for (const [k, v] of entries) {
      for (const s of [k.toLowerCase(), Array.isArray(v) ? v.join('\0') : v]) {
        const b = Buffer.from(s, 'utf8');
        const l = Buffer.alloc(4);
        l.writeUInt32BE(b.length, 0);
        parts.push(l, b);
      }
    }
    return this.deflater.run(Buffer.concat(parts));
  }

  close(): void {
    this.inflater.close();
    this.deflater.close();
  }
}

export function controlFrame(type: number, flags: number, payload: Buffer): Buffer {
  const h = Buffer.alloc(8);
  h.writeUInt16BE(0x8000 | 3, 0);
  h.writeUInt16BE(type, 2);
  h.writeUInt32BE(((flags & 0xff) << 24) | payload.length, 4);
  return Buffer.concat([h, payload]);
}

export function dataFrame(streamId: number, data: Buffer, fin: boolean): Buffer {
  const h = Buffer.alloc(8);
  h.writeUInt32BE(streamId & 0x7fffffff, 0);
  h.writeUInt32BE(((fin ? flagFin : 0) << 24) | data.length, 4);
  return Buffer.concat([h, data]);
}

/** One stream of a session: 'data' (Buffer), 'end' (the peer's FIN), 'close' (both ends done, or reset). */
export class SpdyStream extends EventEmitter {
  localEnded = false;
  remoteEnded = false;

  constructor(
    readonly session: SpdySession,
    readonly id: number,
    readonly headers: Map<string, string[]>,
  ) {
    super();
  }

  header(name: string): string | undefined {
    return this.headers.get(name.toLowerCase())?.[0];
  }

  /** Writes data (in frames of at most 32 KiB). */
  write(data: Buffer): void {
    if (this.localEnded) return;
    for (let off = 0; off < data.length; off += 32 * 1024) this.session.send(dataFrame(this.id, data.subarray(off, off + 32 * 1024), false));
  }

  /** Ends this side (a data frame with FIN). */
  end(data: Buffer = Buffer.alloc(0)): void {
    if (this.localEnded) return;
    this.write(data);
    this.localEnded = true;
    this.session.send(dataFrame(this.id, Buffer.alloc(0), true));
    this.maybeClose();
  }

  /** @internal */
  maybeClose(): void {
    if (this.localEnded && this.remoteEnded) this.emit('close');
  }
}

/**
 * The server side of a SPDY/3.1 connection. Emits 'stream' (SpdyStream) for each stream the
 * client opens, after answering it with SYN_REPLY (kube's client waits for the reply); 'close'
 * once when the connection ends.
 */
export class SpdySession extends EventEmitter {
  readonly streams = new Map<number, SpdyStream>();
  private readonly codec = new HeaderCodec();
  private buf: Buffer = Buffer.alloc(0);
  private closed = false;

  constructor(readonly socket: Duplex, head: Buffer = Buffer.alloc(0)) {
    super();
    socket.on('data', (d: Buffer) => this.onData(d));
    socket.on('error', () => this.close());
    // An upgraded HTTP server socket is half-open: the client's end does not close it by itself.
    socket.on('end', () => this.close());
    socket.on('close', () => this.close());
    if (head.length) process.nextTick(() => this.onData(head));
  }

  send(frame: Buffer): void {
    if (!this.closed && !this.socket.destroyed) this.socket.write(frame);
  }

  /** GOAWAY, then the end of the connection. */
  close(): void {
    if (this.closed) return;
    const goAway = Buffer.alloc(8);
    const last = Math.max(0, ...this.streams.keys());
    goAway.writeUInt32BE(last, 0);
    this.send(controlFrame(frameTypes.goAway, 0, goAway));
    this.closed = true;
    this.socket.end();
    setTimeout(() => this.socket.destroy(), 1000).unref();
    for (const s of this.streams.values()) {
      if (!s.remoteEnded) {
        s.remoteEnded = true;
        s.emit('end');
      }
      s.emit('close');
    }
    this.streams.clear();
    this.codec.close();
    this.emit('close');
  }

  get isClosed(): boolean {
    return this.closed;
  }

  private onData(d: Buffer): void {
    this.buf = this.buf.length ? Buffer.concat([this.buf, d]) : d;
    try {
      while (this.buf.length >= 8 && !this.closed) {
        const len = this.buf.readUInt32BE(4) & 0xffffff;
        if (len > maxFrame) throw new Error('frame too large');
        if (this.buf.length < 8 + len) break;
        const frame = this.buf.subarray(0, 8 + len);
        this.buf = this.buf.subarray(8 + len);
        // In order: a header block's decompression is asynchronous, and frames after it wait for it.
        this.chain = this.chain.then(() => (this.closed ? undefined : this.onFrame(frame))).catch(() => this.close());
      }
    } catch {
      this.close();
    }
  }

  private chain: Promise<void> = Promise.resolve();

  private async onFrame(f: Buffer): Promise<void> {
    const flags = f[4];
    const payload = f.subarray(8);
    if ((f[0] & 0x80) === 0) {
      const s = this.streams.get(f.readUInt32BE(0) & 0x7fffffff);
      if (!s) return;
      if (payload.length) s.emit('data', Buffer.from(payload));
      if (flags & flagFin) this.remoteEnd(s);
      return;
    }
    const type = f.readUInt16BE(2);
    switch (type) {
      case frameTypes.synStream: {
        const id = payload.readUInt32BE(0) & 0x7fffffff;
        const headers = await this.codec.decode(payload.subarray(10));
        const s = new SpdyStream(this, id, headers);
        this.streams.set(id, s);
        s.once('close', () => this.streams.delete(id));
        const reply = Buffer.alloc(4);
        reply.writeUInt32BE(id, 0);
        this.send(controlFrame(frameTypes.synReply, 0, Buffer.concat([reply, await this.codec.encode({})])));
        this.emit('stream', s);
        if (flags & flagFin) this.remoteEnd(s);
        break;
      }
      case frameTypes.rstStream: {
        const s = this.streams.get(payload.readUInt32BE(0) & 0x7fffffff);
        if (s) {
          s.localEnded = true;
          this.remoteEnd(s);
        }
        break;
      }
      case frameTypes.ping:
        this.send(controlFrame(frameTypes.ping, 0, Buffer.from(payload)));
        break;
      case frameTypes.goAway:
        this.close();
        break;
      case frameTypes.headers: {
        const s = this.streams.get(payload.readUInt32BE(0) & 0x7fffffff);
        await this.codec.decode(payload.subarray(4)); // keeps the decompression context in step
        if (s && flags & flagFin) this.remoteEnd(s);
        break;
      }
      default: // SETTINGS, WINDOW_UPDATE, SYN_REPLY (the server opens no streams): nothing to do
    }
  }

  private remoteEnd(s: SpdyStream): void {
    if (s.remoteEnded) return;
    s.remoteEnded = true;
    s.emit('end');
    s.maybeClose();
  }
}
