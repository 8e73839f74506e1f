// The real kubectl in tests: one bounded run (stdin given, exit code, output) or a
// long-running one (logs -f, port-forward) whose output accumulates, against a --server URL
// or a kubeconfig, with a private cache dir.
import { spawn, type ChildProcess } from 'node:child_process';
import { createConnection } from 'node:net';

export interface KubectlTarget {
  /** --server URL (plain HTTP, no credentials), or ... */
  server?: string;
  /** ... a kubeconfig file. */
  kubeconfig?: string;
  cacheDir: string;
}

export interface KubectlRun {
  code: number;
  stdout: string;
  stderr: string;
  /** Raw stdout (binary output: tar, port-forward bytes). */
  out: Buffer;
}

function argv(target: KubectlTarget, args: string[]): string[] {
  const where = target.kubeconfig ? ['--kubeconfig', target.kubeconfig] : ['--server', target.server ?? '', '--kubeconfig', '/dev/null'];
  return [...where, '--cache-dir', target.cacheDir, ...args];
}

/** Starts kubectl; stdout and stderr accumulate. */
export function startKubectl(target: KubectlTarget, args: string[], opts: { env?: NodeJS.ProcessEnv; stdin?: 'pipe' | 'ignore' } = {}) {
  const p: ChildProcess = spawn('kubectl', argv(target, args), { stdio: [opts.stdin ?? 'ignore', 'pipe', 'pipe'], env: { ...process.env, ...opts.env } });
  const out: Buffer[] = [];
  let stderr = '';
  p.stdout!.on('data', (d: Buffer) => out.push(d));
  p.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number>((resolve) => p.on('close', (code, signal) => resolve(code ?? (signal ? 128 : -1))));
  return {
    process: p,
    exited,
    stdout: () => Buffer.concat(out).toString('utf8'),
    raw: () => Buffer.concat(out),
    stderr: () => stderr,
    /** Waits (bounded) until stdout+stderr satisfy pred. */
    async waitFor(pred: (text: string) => boolean, timeoutMs = 15_000): Promise<boolean> {
      const deadline = Date.now() + timeoutMs;
      const text = () => Buffer.concat(out).toString('utf8') + stderr;
      while (!pred(text()) && Date.now() < deadline && p.exitCode === null) await new Promise((r) => setTimeout(r, 50));
      return pred(text());
    },
    kill: (signal: NodeJS.Signals = 'SIGTERM') => p.kill(signal),
  };
}

/** Runs kubectl to its end (killed after timeoutMs: code 128 + signal); `stdin` is written and closed. */
export async function runKubectl(target: KubectlTarget, args: string[], opts: { stdin?: string | Buffer; timeoutMs?: number; env?: NodeJS.ProcessEnv } = {}): Promise<KubectlRun> {
  const k = startKubectl(target, args, { env: opts.env, stdin: 'pipe' });
  k.process.stdin!.on('error', () => undefined);
  k.process.stdin!.end(opts.stdin ?? '');
  const timer = setTimeout(() => k.kill('SIGKILL'), opts.timeoutMs ?? 30_000);
  const code = await k.exited;
  clearTimeout(timer);
  return { code, stdout: k.stdout(), stderr: k.stderr(), out: k.raw() };
}

/** Sends `data` through 127.0.0.1:port (a kubectl port-forward), half-closes, and resolves with all that comes back (bounded). */
export function echoThrough(port: number, data: string, timeoutMs = 5000): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = createConnection({ host: '127.0.0.1', port }, () => s.end(data));
    let got = '';
    const timer = setTimeout(() => (s.destroy(), reject(new Error(`no end within ${timeoutMs} ms; got ${JSON.stringify(got)}`))), timeoutMs);
    s.on('data', (d: Buffer) => (got += d.toString()));
    s.on('end', () => (clearTimeout(timer), resolve(got)));
    s.on('error', (err) => (clearTimeout(timer), reject(err)));
  });
}


/** The local port a `kubectl port-forward ... :<remote>` chose, once it says so (bounded); throws if it never does. */
export async function forwardedPort(pf: ReturnType<typeof startKubectl>, timeoutMs = 15_000): Promise<number> {
  const said = /Forwarding from 127\.0\.0\.1:(\d+)/;
  if (!(await pf.waitFor((s) => said.test(s), timeoutMs))) throw new Error(`port-forward did not start: ${pf.stderr()}`);
  return Number(said.exec(pf.stdout())![1]);
}
