// pods/portforward of a simulated pod, to its echo servers (echo-servers.ts): SPDY/3.1 with
// protocol `portforward.k8s.io` (kubectl before 1.31, and its fallback), or that same SPDY
// carried in binary WebSocket messages with subprotocol `SPDY/3.1+portforward.k8s.io`
// (kubectl 1.31+, KUBECTL_PORT_FORWARD_WEBSOCKETS; client-go tools/portforward/tunneling_dialer.go).
// Per forwarded connection the client opens an error stream and a data stream with the same
// `port` and `requestID` headers; the data stream is piped to a connection to the port, and
// both streams end when that connection ends. A port the pod does not declare is refused
// with the kubelet's message on the error stream.
// Ref: k8s.io/kubelet/pkg/cri/streaming/portforward/httpstream.go.
import type { IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { Duplex } from 'node:stream';
import { StatusError } from '../../../kube/status.ts';
import type { SimContext } from '../server.ts';
import { isObject } from '../types.ts';
import { podInfo } from './pod.ts';
import { acceptSpdy } from './spdy-upgrade.ts';
import { SpdySession, type SpdyStream } from './spdy.ts';
import type { SimStreams } from './upgrade.ts';
import { acceptWebSocket, isWebSocketUpgrade, type WebSocketConn } from './websocket.ts';

export const portForwardProtocol = 'portforward.k8s.io';
export const tunneledPortForwardProtocol = 'SPDY/3.1+portforward.k8s.io';

/** A WebSocket's binary messages as one byte stream (the tunnel of SPDY in WebSocket). */
function tunnel(conn: WebSocketConn): Duplex {
  const d = new Duplex({
    read() {},
    write(chunk: Buffer, _enc, cb) {
      conn.send(chunk);
      cb();
    },
    final(cb) {
      conn.close(1000);
      cb();
    },
  });
  conn.on('message', (m: Buffer) => d.push(m));
  conn.on('close', () => {
    d.push(null);
    d.destroy();
  });
  return d;
}

export function handlePortForward(ctx: SimContext, streams: SimStreams, req: IncomingMessage, socket: Duplex, head: Buffer, namespace: string, name: string): void {
  const pod = ctx.crud.get(podInfo(ctx), namespace, name);
  const status = isObject(pod.status) ? pod.status : {};
  if (status.phase !== 'Running') throw new StatusError('BadRequest', `pod ${name} is not running: ${String(status.phase ?? 'Pending')}`);
  const spec = isObject(pod.spec) ? pod.spec : {};
  const declared = new Set<number>();
  for (const c of Array.isArray(spec.containers) ? spec.containers.filter(isObject) : []) {
    for (const p of Array.isArray(c.ports) ? c.ports.filter(isObject) : []) if (typeof p.containerPort === 'number') declared.add(p.containerPort);
  }
  let session: SpdySession;
  const ws = isWebSocketUpgrade(req);
  if (ws) {
    const conn = acceptWebSocket(req, socket, head, [tunneledPortForwardProtocol]);
    if (!conn) return;
    session = new SpdySession(tunnel(conn));
  } else {
    session = acceptSpdy(req, socket, head, [portForwardProtocol]).session;
  }
  streams.track({ kind: 'portforward', transport: ws ? 'spdy-in-websocket' : 'spdy', namespace, pod: name }, session);
  const pairs = new Map<string, { error?: SpdyStream; data?: SpdyStream }>();
  session.on('stream', (s: SpdyStream) => {
    const id = s.header('requestID') ?? s.header('port') ?? '';
    const pair = pairs.get(id) ?? {};
    pairs.set(id, pair);
    if (s.header('streamType') === 'error') pair.error = s;
    else if (s.header('streamType') === 'data') pair.data = s;
    else return s.end();
    if (!pair.error || !pair.data) return;
    pairs.delete(id);
    void forward(pair.error, pair.data);
  });

  const forward = async (error: SpdyStream, data: SpdyStream) => {
    const port = Number(data.header('port'));
    const fail = (msg: string) => {
      error.end(Buffer.from(msg));
      data.end();
    };
    if (!Number.isInteger(port) || port < 1 || port > 65535) return fail(`invalid port: ${data.header('port') ?? ''}`);
    if (!declared.has(port)) {
      return fail(`error forwarding port ${port} to pod ${pod.metadata.uid ?? ''}, uid : failed to execute portforward in network namespace "/var/run/netns/cni-sim": failed to connect to localhost:${port} inside namespace "${name}", IPv4: dial tcp4 127.0.0.1:${port}: connect: connection refused IPv6 dial tcp6 [::1]:${port}: connect: connection refused `);
    }
    const local = await streams.echo.portOf(`${namespace}/${name}`, port);
    const target = connect({ host: '127.0.0.1', port: local, allowHalfOpen: true });
    target.on('data', (d: Buffer) => data.write(d));
    target.on('end', () => {
      data.end();
      error.end();
    });
    target.on('error', (err) => fail(`error forwarding port ${port}: ${err.message}`));
    data.on('data', (d: Buffer) => target.write(d));
    data.on('end', () => target.end());
    data.on('close', () => target.destroy());
    session.once('close', () => target.destroy());
  };
}
