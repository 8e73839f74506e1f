// Connection upgrades of a simulated cluster: pods/exec, pods/attach (and pods/portforward,
// portforward.ts) on /api/v1/namespaces/<ns>/pods/<name>/<subresource>. Authenticated and
// authorized as any request (verb `create` on the subresource: kube-apiserver asks for create
// on a WebSocket GET of exec/attach/portforward too, AuthorizePodWebsocketUpgradeCreatePermission);
// a refusal is the HTTP answer with a Status, as kube-apiserver answers before upgrading.
import type { EventEmitter } from 'node:events';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { StatusError } from '../../../kube/status.ts';
import { refuseUpgrade } from '../../../kube/upgrade-refusal.ts';
import type { SimContext } from '../server.ts';
import { channelStreams, remoteCommandProtocols } from './channels.ts';
import { Containers, runAttach, runCommand } from './exec.ts';
import { resolveContainer, type ContainerRef } from './pod.ts';
import { EchoServers } from './echo-servers.ts';
import { handlePortForward } from './portforward.ts';
import { handleSpdyCommand } from './spdy-command.ts';
import { acceptWebSocket, isWebSocketUpgrade } from './websocket.ts';

export interface StreamSession {
  kind: 'exec' | 'attach' | 'portforward';
  /** WebSocket (channel protocol), SPDY/3.1, or SPDY carried in WebSocket (port-forward of kubectl 1.31+). */
  transport: 'websocket' | 'spdy' | 'spdy-in-websocket';
  namespace: string;
  pod: string;
  /** Resolves when the session's connection closed. */
  closed: Promise<void>;
}

/** What a simulated cluster keeps of its streaming sessions: container state, and the sessions open (tests assert on them). */
export class SimStreams {
  readonly containers = new Containers();
  /** The pods' listening ports (port-forward's targets). */
  readonly echo = new EchoServers();
  readonly open = new Set<StreamSession>();
  /** Every session started, in order (the last 1000). */
  readonly started: StreamSession[] = [];
  /** A new log line every this many ms. */
  logIntervalMs = 1000;

  track(s: Omit<StreamSession, 'closed'>, conn: Pick<EventEmitter, 'once'>): StreamSession {
    let done!: () => void;
    const session: StreamSession = { ...s, closed: new Promise<void>((r) => (done = r)) };
    this.open.add(session);
    this.started.push(session);
    if (this.started.length > 1000) this.started.shift();
    conn.once('close', () => {
      this.open.delete(session);
      done();
    });
    return session;
  }
}

const bool = (url: URL, name: string) => ['true', '1'].includes(url.searchParams.get(name) ?? '');

export async function handleUpgrade(ctx: SimContext, streams: SimStreams, req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
  socket.on('error', () => socket.destroy());
  try {
    const url = new URL(req.url ?? '/', 'http://sim');
    const m = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/(exec|attach|portforward)\/?$/.exec(url.pathname);
    if (!m) throw new StatusError('NotFound', 'the server could not find the requested resource');
    const user = ctx.auth.check(req);
    if (ctx.faults.unavailable) throw new StatusError('ServiceUnavailable', 'the server is currently unable to handle the request (simulated outage)');
    const [namespace, name, sub] = [decodeURIComponent(m[1]), decodeURIComponent(m[2]), m[3] as 'exec' | 'attach' | 'portforward'];
    ctx.auth.authorize(user, { verb: 'create', group: '', resource: 'pods', subresource: sub, namespace, name });
    if (sub === 'portforward') return handlePortForward(ctx, streams, req, socket, head, namespace, name);
    const command = url.searchParams.getAll('command');
    if (sub === 'exec' && command.length === 0) throw new StatusError('BadRequest', 'you must specify at least 1 command');
    const o = { stdin: bool(url, 'stdin'), stdout: bool(url, 'stdout'), stderr: bool(url, 'stderr'), tty: bool(url, 'tty') };
    if (!o.stdin && !o.stdout && !o.stderr) throw new StatusError('BadRequest', 'you must specify at least one of stdin, stdout, stderr');
    const ref = resolveContainer(ctx, namespace, name, url.searchParams.get('container'), 'exec');
    if (!isWebSocketUpgrade(req)) return handleSpdyCommand(streams, req, socket, head, { kind: sub, ref, command, ...o });
    const conn = acceptWebSocket(req, socket, head, remoteCommandProtocols);
    if (!conn) return;
    streams.track({ kind: sub, transport: 'websocket', namespace, pod: name }, conn);
    const s = channelStreams(conn, o);
    // A container's first byte comes after the runtime's exec round trips, never with the
    // upgrade: client-go's WebSocket executor drops messages that arrive before it made its
    // streams ("Unknown stream id 1, discarding message"), which a command answering at once
    // could race.
    await new Promise((r) => setTimeout(r, execStartMs));
    if (sub === 'exec') await runCommand(streams.containers.get(ref), s, { command, tty: o.tty });
    else await runAttach(s, { tty: o.tty, podName: name, container: ref.container });
  } catch (err) {
    refuseUpgrade(socket, err);
  }
}

/**
 * How long after the upgrade a command starts: a runtime's exec (containerd and runc) takes about
 * a hundred milliseconds before the command's first byte. 20 ms lost that race to client-go's
 * stream setup under load (two proxies on the way, busy cores), as a real exec never does.
 */
const execStartMs = 150;

export interface CommandRequest {
  kind: 'exec' | 'attach';
  ref: ContainerRef;
  command: string[];
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
}

