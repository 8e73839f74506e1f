// Remote commands (exec, attach) over SPDY/3.1: the client opens one stream per kind, named
// by its `streamType` header (error, stdin, stdout, stderr, resize); the command starts once
// every stream it asked for is there (kubelet waits up to 30 s), stdin ends with the
// stream's FIN, and the end is the Status on the error stream, then every stream's FIN and
// the connection's end. Protocols v4.channel.k8s.io (Status JSON on the error stream) and
// v3/v2/channel.k8s.io (the error's text). Ref: k8s.io/kubelet/pkg/cri/streaming/remotecommand/httpstream.go.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { CommandStreams } from './exec.ts';
import { runAttach, runCommand } from './exec.ts';
import { Input } from './input.ts';
import { acceptSpdy } from './spdy-upgrade.ts';
import type { SpdyStream } from './spdy.ts';
import type { CommandRequest, SimStreams } from './upgrade.ts';

export const spdyCommandProtocols = ['v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io', 'channel.k8s.io'] as const;
const streamWaitMs = 30_000;

export function handleSpdyCommand(streams: SimStreams, req: IncomingMessage, socket: Duplex, head: Buffer, o: CommandRequest): void {
  const { session, protocol } = acceptSpdy(req, socket, head, spdyCommandProtocols);
  streams.track({ kind: o.kind, transport: 'spdy', namespace: o.ref.namespace, pod: o.ref.podName }, session);
  const expected = new Set(['error', ...(o.stdin ? ['stdin'] : []), ...(o.stdout ? ['stdout'] : []), ...(o.stderr && !o.tty ? ['stderr'] : []), ...(o.tty && protocol !== 'channel.k8s.io' ? ['resize'] : [])]);
  const got = new Map<string, SpdyStream>();
  const aborter = new AbortController();
  session.once('close', () => aborter.abort());
  const timer = setTimeout(() => session.close(), streamWaitMs);
  const stdin = o.stdin ? new Input() : undefined;
  session.on('stream', (s: SpdyStream) => {
    const type = s.header('streamType') ?? '';
    got.set(type, s);
    if (type === 'stdin') {
      s.on('data', (d: Buffer) => stdin?.push(d));
      s.on('end', () => stdin?.end());
    }
    if ([...expected].every((t) => got.has(t))) {
      clearTimeout(timer);
      void start();
    }
  });
  session.once('close', () => stdin?.end());
  const start = async () => {
    const out = (t: string) => (got.has(t) ? (d: Buffer) => got.get(t)!.write(d) : undefined);
    const cs: CommandStreams = {
      stdin,
      stdout: out('stdout'),
      stderr: out('stderr'),
      finish(status) {
        const error = got.get('error');
        // v4: the Status, whatever the outcome; before v4: the error's text, nothing on success.
        if (error && protocol === 'v4.channel.k8s.io') error.write(Buffer.from(JSON.stringify(status)));
        else if (error && status.status !== 'Success') error.write(Buffer.from(String(status.message ?? '')));
        for (const s of got.values()) s.end();
        setImmediate(() => session.close());
      },
      signal: aborter.signal,
    };
    if (o.kind === 'exec') await runCommand(streams.containers.get(o.ref), cs, { command: o.command, tty: o.tty });
    else await runAttach(cs, { tty: o.tty, podName: o.ref.podName, container: o.ref.container });
  };
}
