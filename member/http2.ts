// HTTP/2 to one member endpoint, as client-go speaks to a kube-apiserver: over TLS the
// connection offers ALPN `h2` and `http/1.1` (Go's net/http transport does so by default;
// client-go turns it off only with DISABLE_HTTP2); when the member picks h2, every request
// of the endpoint (JSON GETs, writes, streaming watches, the proxy's requests) is a stream of
// one shared session instead of a TCP+TLS connection each. A member that picks http/1.1 (or
// no protocol) is remembered and gets HTTP/1.1 from then on.
//
// - The connection is opened with the endpoint's own TLS options and the network guard's
//   lookup (member/networks.ts), exactly as the HTTP/1.1 agent opens its sockets.
// - SETTINGS_MAX_CONCURRENT_STREAMS is respected: a session whose streams are all in use
//   gets a sibling session (as Go's transport does without StrictMaxConcurrentStreams). The
//   generic apiserver's recommended options advertise 1000 streams per connection
//   (k8s.io/apiserver RecommendedOptions: HTTP2MaxStreamsPerConnection = 1000).
// - A dead connection is found with PING, as client-go's transport does
//   (k8s.io/apimachinery util/net: ReadIdleTimeout 30 s, PingTimeout 15 s): a session idle
//   that long is pinged, and destroyed when the ack does not come in time; its streams fail
//   and the next request opens a new session.
// - retire(): sessions take no new streams and close once their streams end (credentials
//   rotated); close(): destroyed now.
import http2, { type ClientHttp2Session, type ClientHttp2Stream, type IncomingHttpHeaders as H2Headers } from 'node:http2';
import type { IncomingHttpHeaders } from 'node:http';
import type { LookupFunction } from 'node:net';
import type { Readable } from 'node:stream';
import tls, { type ConnectionOptions, type TLSSocket } from 'node:tls';

/** A member's answer, over HTTP/1.1 (an IncomingMessage) or HTTP/2 (the stream): status, headers, the body to read. */
export type MemberResponse = Readable & { statusCode?: number; headers: IncomingHttpHeaders };

export interface Http2Options {
  /** A session that read nothing for this long is pinged (client-go: 30 s). */
  readIdleMs?: number;
  /** A ping not acknowledged within this long ends the session (client-go: 15 s). */
  pingTimeoutMs?: number;
}

export const defaultReadIdleMs = 30_000;
export const defaultPingTimeoutMs = 15_000;
/** A session without streams this long is closed (Go's http.DefaultTransport IdleConnTimeout, which client-go keeps). */
const idleCloseMs = 90_000;
/**
 * Flow-control windows as Go's HTTP/2 transport (golang.org/x/net/http2: transportDefaultStreamFlow
 * 4 MiB, transportDefaultConnFlow 1 GiB): a large list is not throttled by the 64 KiB default,
 * a reader that stops reading still stops its stream.
 */
const streamWindow = 4 << 20;
const connectionWindow = 1 << 30;

/** Request headers HTTP/2 forbids (RFC 9113 8.2.2) or carries otherwise (host: :authority). */
const connectionHeaders = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'host', 'http2-settings']);

interface Session {
  session: ClientHttp2Session;
  /** Closes the session when it has had no stream for idleCloseMs. */
  idle?: NodeJS.Timeout;
  /** Streams open on it (ours, counted here: Node does not expose the count). */
  active: number;
  /** The member's SETTINGS_MAX_CONCURRENT_STREAMS (unlimited until its SETTINGS arrive). */
  max: number;
}

const reserve = (s: Session): Session => {
  s.active++;
  clearTimeout(s.idle);
  s.session.ref();
  return s;
};

/** A stream of the session ended (or was never opened): an idle session lets the process exit, and closes after a while. */
const release = (s: Session): void => {
  s.active--;
  if (s.active > 0 || s.session.destroyed) return;
  s.session.unref();
  clearTimeout(s.idle);
  s.idle = setTimeout(() => s.session.close(), idleCloseMs);
  s.idle.unref();
};

export interface H2Request {
  method: string;
  /** The path with its query. */
  path: string;
  headers: Record<string, string | string[] | number>;
}

/** The sessions of one member endpoint (one credential set). */
export class Http2Sessions {
  private readonly sessions = new Set<Session>();
  /** Sessions being opened: later requests wait for them rather than opening their own. */
  private opening: Promise<Session | undefined> | undefined;
  /** The member chose HTTP/1.1 in ALPN: no more h2 attempts. */
  private http1 = false;
  private closed = false;

  constructor(
    private readonly server: URL,
    private readonly tlsOptions: ConnectionOptions,
    private readonly lookup: LookupFunction | undefined,
    private readonly opts: Http2Options = {},
  ) {}

  /** Whether the member speaks only HTTP/1.1 (known after the first connection). */
  get onlyHttp1(): boolean {
    return this.http1 || this.closed;
  }

  /** The number of sessions open now (tests, metrics). */
  get size(): number {
    return this.sessions.size;
  }

  /**
   * A session with a stream reserved for the caller (counted at once, so that concurrent
   * callers do not all pick the same last free stream), or undefined when the member does not
   * speak h2 (the caller uses HTTP/1.1). Rejects when the connection cannot be made.
   */
  async session(): Promise<Session | undefined> {
    // Bounded: a member that accepts TLS and closes at once fails the request, not a loop.
    for (let opened = 0; ; ) {
      if (this.onlyHttp1) return undefined;
      for (const s of this.sessions) if (s.active < s.max && !s.session.closed && !s.session.destroyed) return reserve(s);
      if (this.opening) {
        await this.opening;
        continue;
      }
      if (opened++ === 3) throw new Error('the member closed its HTTP/2 connections as they opened');
      this.opening = this.open().finally(() => (this.opening = undefined));
      const s = await this.opening;
      if (!s) return undefined;
      if (s.active < s.max && !s.session.destroyed) return reserve(s);
    }
  }

  /**
   * Opens a stream for the request on a session; undefined: use HTTP/1.1. A session that
   * closed between being chosen and the stream (the member's GOAWAY) is passed over once.
   */
  async request(r: H2Request, retry = true): Promise<ClientHttp2Stream | undefined> {
    const s = await this.session();
    if (!s) return undefined;
    const headers: http2.OutgoingHttpHeaders = { ':method': r.method, ':path': r.path };
    for (const [k, v] of Object.entries(r.headers)) {
      const n = k.toLowerCase();
      if (connectionHeaders.has(n) || (n === 'te' && v !== 'trailers')) continue;
      headers[n] = v;
    }
    let stream: ClientHttp2Stream;
    try {
      stream = s.session.request(headers, { endStream: false });
    } catch (err) {
      release(s);
      if (retry && (s.session.closed || s.session.destroyed)) return this.request(r, false);
      throw err;
    }
    // As an IncomingMessage whose connection breaks: no listener, no crash; readers see the error.
    stream.on('error', () => undefined);
    stream.once('close', () => release(s));
    return stream;
  }

  private open(): Promise<Session | undefined> {
    return new Promise((resolve, reject) => {
      const host = this.server.hostname.replace(/^\[|\]$/g, '');
      const socket = tls.connect({
        ...this.tlsOptions,
        host,
        port: Number(this.server.port || 443),
        ALPNProtocols: ['h2', 'http/1.1'],
        ...(this.tlsOptions.servername === undefined && !/^[\d.]+$|:/.test(host) ? { servername: host } : {}),
        ...(this.lookup ? { lookup: this.lookup } : {}),
      });
      // Go's transport: 30 s to dial, 10 s for the TLS handshake (apimachinery util/net SetTransportDefaults).
      const connectTimer = setTimeout(() => fail(new Error('no TLS connection to the member within 40 s')), 40_000);
      const fail = (err: Error) => {
        clearTimeout(connectTimer);
        socket.destroy();
        reject(err);
      };
      socket.once('error', fail);
      socket.once('secureConnect', () => {
        clearTimeout(connectTimer);
        socket.off('error', fail);
        if (socket.alpnProtocol !== 'h2') {
          this.http1 = true;
          socket.destroy();
          return resolve(undefined);
        }
        if (this.closed) {
          socket.destroy();
          return resolve(undefined);
        }
        const session = http2.connect(this.server.origin, { createConnection: () => socket, settings: { initialWindowSize: streamWindow } });
        session.once('connect', () => session.setLocalWindowSize(connectionWindow));
        const s: Session = { session, active: 0, max: Infinity };
        this.sessions.add(s);
        session.on('error', () => undefined); // its streams get the error; the session is dropped on close
        session.once('close', () => {
          this.sessions.delete(s);
          clearTimeout(s.idle);
        });
        session.on('remoteSettings', (settings) => {
          s.max = settings.maxConcurrentStreams ?? Infinity;
        });
        this.watchHealth(session, socket);
        // Wait for the member's SETTINGS (its stream limit) before the first stream.
        const timer = setTimeout(() => resolve(s), 5_000);
        session.once('remoteSettings', () => {
          clearTimeout(timer);
          resolve(s);
        });
        session.once('close', () => {
          clearTimeout(timer);
          resolve(s);
        });
      });
    });
  }

  /**
   * PING after read-idle; destroy when the ack is late (client-go's ReadIdleTimeout /
   * PingTimeout). Reads are seen in the TLS socket's byte count, checked every read-idle
   * period (so a silent connection is found within two periods and the ping timeout).
   */
  private watchHealth(session: ClientHttp2Session, socket: TLSSocket): void {
    const idle = this.opts.readIdleMs ?? defaultReadIdleMs;
    const pingTimeout = this.opts.pingTimeoutMs ?? defaultPingTimeoutMs;
    let seen = socket.bytesRead;
    let timer: NodeJS.Timeout | undefined;
    const schedule = (fn: () => void, ms: number) => {
      timer = setTimeout(fn, ms);
      timer.unref();
    };
    const check = () => {
      if (session.destroyed) return;
      if (socket.bytesRead !== seen) {
        seen = socket.bytesRead;
        return schedule(check, idle);
      }
      schedule(() => session.destroy(new Error(`member connection lost: no HTTP/2 PING answer within ${pingTimeout} ms`)), pingTimeout);
      const sent = session.ping((err) => {
        clearTimeout(timer);
        if (err) return void (session.destroyed || session.destroy(err));
        seen = socket.bytesRead;
        schedule(check, idle);
      });
      if (!sent) clearTimeout(timer);
    };
    schedule(check, idle);
    session.once('close', () => clearTimeout(timer));
  }

  /** No new streams; every session closes once its streams end. */
  retire(): void {
    this.closed = true;
    for (const s of this.sessions) s.session.close();
  }

  /** Every session ends now. */
  destroy(): void {
    this.closed = true;
    for (const s of this.sessions) s.session.destroy();
    this.sessions.clear();
  }
}

/**
 * The answer of an h2 stream as a MemberResponse: resolves with the stream once its response
 * headers arrive (status and headers set on it), rejects on a stream error before that.
 */
export function h2Response(stream: ClientHttp2Stream): Promise<MemberResponse> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error) => reject(err);
    stream.once('error', onError);
    stream.once('close', () => reject(new Error(`the member closed the stream (code ${stream.rstCode ?? 0})`)));
    stream.once('response', (h: H2Headers) => {
      stream.off('error', onError);
      const headers: IncomingHttpHeaders = {};
      for (const [k, v] of Object.entries(h)) if (!k.startsWith(':') && v !== undefined) headers[k] = v as string | string[];
      resolve(Object.assign(stream, { statusCode: Number(h[':status']), headers }));
    });
  });
}
