// pods/exec and pods/attach of a simulated container: a process of the tiny shell (shell.ts)
// wired to the streams of kube's remote command protocol (stdin, stdout, stderr, the error
// stream that ends with a Status, resize), whatever the transport (channels.ts: WebSocket;
// spdy-streams.ts: SPDY). The exit code travels as kube's kubelet sends it: a Failure Status
// with reason NonZeroExitCode and a cause {reason: ExitCode, message: "<code>"}, which kubectl
// turns into its own exit code. Ref: k8s.io/kubelet/pkg/cri/streaming/remotecommand (v4
// writeStatus), k8s.io/client-go/tools/remotecommand/v4.go (errorDecoderV4).
import { PodFs } from './fs.ts';
import { Input } from './input.ts';
import type { ContainerRef } from './pod.ts';
import { Shell, type Container } from './shell.ts';

/** The streams of one remote command, as a transport gives them. */
export interface CommandStreams {
  stdin?: Input;
  stdout?: (data: Buffer) => void;
  stderr?: (data: Buffer) => void;
  /** The error stream's Status (the last thing sent), then the end of every stream. */
  finish(status: Record<string, unknown>): void;
  /** Aborted when the client went away. */
  signal: AbortSignal;
}

export interface CommandOptions {
  command: string[];
  tty: boolean;
}

/** A simulated container's state shared by its exec sessions: its filesystem and environment. */
export class Containers {
  private readonly byKey = new Map<string, Container>();

  get(ref: ContainerRef): Container {
    const key = `${ref.namespace}/${ref.podName}/${ref.container}`;
    let c = this.byKey.get(key);
    if (!c) {
      const env: Record<string, string> = { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', HOSTNAME: ref.podName, HOME: '/root' };
      for (const e of Array.isArray(ref.spec.env) ? ref.spec.env : []) {
        if (e && typeof e === 'object' && typeof (e as { name?: unknown }).name === 'string') env[(e as { name: string }).name] = String((e as { value?: unknown }).value ?? '');
      }
      env.KUBERNETES_SERVICE_HOST = '10.96.0.1';
      env.KUBERNETES_SERVICE_PORT = '443';
      c = { hostname: ref.podName, env, fs: new PodFs(ref.podName) };
      this.byKey.set(key, c);
    }
    return c;
  }
}

export const successStatus = { metadata: {}, status: 'Success' };

export function exitStatus(command: string[], code: number): Record<string, unknown> {
  return {
    metadata: {},
    status: 'Failure',
    message: `command terminated with non-zero exit code: error executing command [${command.join(' ')}], exit code ${code}`,
    reason: 'NonZeroExitCode',
    details: { causes: [{ reason: 'ExitCode', message: String(code) }] },
  };
}

/** In a tty, \n is written as \r\n (the terminal's onlcr). */
const ttyOut = (write: ((d: Buffer) => void) | undefined, tty: boolean) => (d: Buffer | string) => {
  if (!write) return;
  const b = Buffer.from(d);
  write(tty ? Buffer.from(b.toString('utf8').replace(/\r?\n/g, '\r\n')) : b);
};

/** Runs `command` in the container; the Status goes to the error stream at the end. */
export async function runCommand(container: Container, s: CommandStreams, o: CommandOptions): Promise<number> {
  const shell = new Shell(container);
  const stdin = s.stdin ?? endedInput();
  let code: number;
  try {
    code = await shell.run(o.command, { stdin, out: ttyOut(s.stdout, o.tty), err: ttyOut(s.stderr ?? s.stdout, o.tty), signal: s.signal });
  } catch (err) {
    ttyOut(s.stderr ?? s.stdout, o.tty)(`${(err as Error).message}\n`);
    code = 1;
  }
  s.finish(code === 0 ? successStatus : exitStatus(o.command, code));
  return code;
}

/**
 * Attach to the container's main process: the simulated one echoes what it reads on stdin
 * (line by line, as `cat` does) until stdin ends or the client goes away.
 */
export async function runAttach(s: CommandStreams, o: { tty: boolean; podName: string; container: string }): Promise<void> {
  const out = ttyOut(s.stdout, o.tty);
  if (s.stdin) {
    for (let line = await s.stdin.readLine(); line !== undefined && !s.signal.aborted; line = await s.stdin.readLine()) out(`${line}\n`);
  } else {
    out(`attached to ${o.podName}/${o.container}\n`);
    await new Promise<void>((r) => s.signal.addEventListener('abort', () => r(), { once: true }));
  }
  s.finish(successStatus);
}

function endedInput(): Input {
  const i = new Input();
  i.end();
  return i;
}
