// kube's channel protocol over WebSocket (k8s.io/apimachinery/pkg/util/httpstream/wsstream,
// the `v4.channel.k8s.io` and `v5.channel.k8s.io` subprotocols): every binary message starts
// with its channel, 0 stdin, 1 stdout, 2 stderr, 3 error (a Status JSON), 4 resize (terminal
// size JSON); v5 adds 255, the close signal: [255, channel] ends that channel's input (kubectl
// sends [255, 0] at the end of stdin). The server closes the WebSocket after the error
// channel's Status (client-go's readers see EOF on a normal closure).
// Ref: k8s.io/apimachinery/pkg/util/remotecommand/constants.go, k8s.io/client-go/tools/remotecommand/websocket.go.
import type { CommandStreams } from './exec.ts';
import { Input } from './input.ts';
import type { WebSocketConn } from './websocket.ts';

export const channel = { stdin: 0, stdout: 1, stderr: 2, error: 3, resize: 4, close: 255 } as const;
/** The subprotocols served, in the server's order of preference. */
export const remoteCommandProtocols = ['v5.channel.k8s.io', 'v4.channel.k8s.io'] as const;

export interface ChannelOptions {
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
  /** Terminal sizes the client sent (tests). */
  onResize?: (size: { Width?: number; Height?: number }) => void;
}

export function channelStreams(conn: WebSocketConn, o: ChannelOptions): CommandStreams {
  const aborter = new AbortController();
  const stdin = o.stdin ? new Input() : undefined;
  let finished = false;
  conn.on('message', (m: Buffer) => {
    if (m.length === 0) return;
    const ch = m[0];
    const data = m.subarray(1);
    if (ch === channel.stdin) stdin?.push(Buffer.from(data));
    else if (ch === channel.resize) {
      try {
        o.onResize?.(JSON.parse(data.toString('utf8')) as { Width?: number; Height?: number });
      } catch {
        // a malformed size is ignored, as the kubelet logs and drops it
      }
    } else if (ch === channel.close && conn.protocol === 'v5.channel.k8s.io' && data[0] === channel.stdin) stdin?.end();
  });
  conn.on('close', () => {
    stdin?.end();
    aborter.abort();
  });
  const send = (ch: number) => (d: Buffer) => {
    if (!finished && d.length) conn.send(Buffer.concat([Buffer.from([ch]), d]));
  };
  return {
    stdin,
    stdout: o.stdout ? send(channel.stdout) : undefined,
    // In a tty stderr is merged into stdout (kubectl does not ask for stderr then).
    stderr: o.stderr && !o.tty ? send(channel.stderr) : undefined,
    finish(status) {
      if (finished) return;
      send(channel.error)(Buffer.from(JSON.stringify(status)));
      finished = true;
      conn.close(1000);
    },
    signal: aborter.signal,
  };
}
