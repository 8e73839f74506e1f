// A stand-in for kube-apiserver's aggregator in front of Panoptes, for benchmarks: clients
// speak plain HTTP/1.1 to it; it proxies each request as a stream of one HTTP/2 TLS
// connection to Panoptes with the front-proxy client certificate and X-Remote-User /
// X-Remote-Group, as kube-aggregator does (its handler_proxy uses apimachinery's
// UpgradeAwareHandler: httputil.ReverseProxy with the request's headers cloned, over
// client-go's HTTP/2 transport).
//
// Connection upgrades (exec, attach, port-forward) go as kube-aggregator's UpgradeAwareHandler
// sends them: a TLS connection of their own speaking HTTP/1.1, the request with the client's
// headers (identity headers replaced by X-Remote-*), then the bytes both ways as they come.
//
// Accept-Encoding, as Go's http.Transport treats it (DisableCompression false, client-go's
// default): a client's Accept-Encoding is passed through and the answer returned as it came
// (gzip stays gzip); without one, the transport asks for gzip itself and inflates a gzipped
// answer before the client sees it (Content-Encoding and Content-Length removed). So the
// aggregator-to-server hop is compressed whenever the server compresses, whatever the client
// asked. `hop: 'identity'` forwards without any Accept-Encoding instead: the hop a server
// that never compresses gives (the figures before compression).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, constants, type ClientHttp2Session, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { connect as tlsConnect } from 'node:tls';
import { createGunzip } from 'node:zlib';

export interface AggregatorProxyOptions {
  /** Panoptes' https:// base URL. */
  target: string;
  tls: { ca: string; cert: string; key: string };
  /** X-Remote-User / X-Remote-Group sent for every request. */
  user: { name: string; groups: string[] };
}

export type Hop = 'go-default' | 'identity';

export interface AggregatorProxy {
  /** http://127.0.0.1:port: the client side. */
  url: string;
  /** How the next requests treat Accept-Encoding on the hop to Panoptes. */
  hop: Hop;
  /** Body bytes received from Panoptes (as sent: compressed when compressed), since the start. */
  hopBytes: number;
  close(): Promise<void>;
}

// Hop-by-hop headers (RFC 9110 7.6.1) and HTTP/1.1-only ones HTTP/2 refuses.
const hopByHop = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer', 'host', 'http2-settings']);

export async function startAggregatorProxy(o: AggregatorProxyOptions): Promise<AggregatorProxy> {
  let session: ClientHttp2Session | undefined;
  const h2 = (): ClientHttp2Session => {
    if (!session || session.closed || session.destroyed) {
      session = connect(o.target, { ca: o.tls.ca, cert: o.tls.cert, key: o.tls.key });
      session.on('error', () => (session = undefined));
    }
    return session;
  };
  const proxy: AggregatorProxy = { url: '', hop: 'go-default', hopBytes: 0, close: async () => undefined };

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const headers: OutgoingHttpHeaders = { ':method': req.method ?? 'GET', ':path': req.url ?? '/' };
    for (const [k, v] of Object.entries(req.headers)) if (!hopByHop.has(k) && !k.startsWith('x-remote-') && v !== undefined) headers[k] = v;
    headers['x-remote-user'] = o.user.name;
    headers['x-remote-group'] = o.user.groups;
    // Go's transport: it asks for gzip itself only when the request has no Accept-Encoding (nor Range) and is not a HEAD.
    let transportAsked = false;
    if (proxy.hop === 'identity') delete headers['accept-encoding'];
    else if (req.headers['accept-encoding'] === undefined && req.headers.range === undefined && req.method !== 'HEAD') {
      headers['accept-encoding'] = 'gzip';
      transportAsked = true;
    }
    const stream = h2().request(headers, { endStream: req.method === 'GET' || req.method === 'HEAD' });
    if (req.method !== 'GET' && req.method !== 'HEAD') req.pipe(stream);
    stream.on('error', (err) => {
      if (!res.headersSent) res.writeHead(502, { 'Content-Type': 'text/plain' });
      res.end(`proxy: ${err.message}`);
    });
    stream.on('response', (h: IncomingHttpHeaders) => {
      const out: Record<string, string | string[]> = {};
      for (const [k, v] of Object.entries(h)) if (!k.startsWith(':') && !hopByHop.has(k) && v !== undefined) out[k] = v;
      const inflate = transportAsked && h['content-encoding'] === 'gzip';
      if (inflate) {
        delete out['content-encoding'];
        delete out['content-length'];
      }
      res.writeHead(Number(h[constants.HTTP2_HEADER_STATUS]), out);
      stream.on('data', (c: Buffer) => (proxy.hopBytes += c.length));
      if (inflate) stream.pipe(createGunzip()).pipe(res);
      else stream.pipe(res);
    });
    // The client went away (the response's close: a request's own close comes once its body is read, before any answer).
    res.on('close', () => {
      if (!res.writableFinished) stream.close(constants.NGHTTP2_CANCEL);
    });
  };

  const upgrade = (req: IncomingMessage, client: Duplex, head: Buffer) => {
    const target = new URL(o.target);
    const backend = tlsConnect({ host: target.hostname, port: Number(target.port), ca: o.tls.ca, cert: o.tls.cert, key: o.tls.key, ALPNProtocols: ['http/1.1'] });
    const lines = [`${req.method ?? 'GET'} ${req.url ?? '/'} HTTP/1.1`, `Host: ${target.host}`];
    for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
      const k = req.rawHeaders[i].toLowerCase();
      if (k !== 'host' && !k.startsWith('x-remote-')) lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
    }
    lines.push(`X-Remote-User: ${o.user.name}`, ...o.user.groups.map((g) => `X-Remote-Group: ${g}`));
    backend.on('secureConnect', () => {
      backend.write(`${lines.join('\r\n')}\r\n\r\n`);
      if (head.length) backend.write(head);
      backend.pipe(client);
      client.pipe(backend);
    });
    const end = () => {
      backend.destroy();
      client.destroy();
    };
    backend.on('error', end);
    client.on('error', end);
    backend.on('close', end);
    client.on('close', end);
  };

  const server: Server = createServer(handle);
  server.on('upgrade', upgrade);
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  proxy.close = async () => {
    session?.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return proxy;
}
