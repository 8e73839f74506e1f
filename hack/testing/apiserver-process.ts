// Test helpers: a `panoptes apiserver` process on a free loopback port (plain HTTP), started
// and waited for (bounded), and a bounded wait for a condition.
import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from '../../storage/testing/postgres.ts';
import { get } from '../sim/testutil.ts';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Resolves once `fn` is true (errors count as false); rejects after timeoutMs. */
export async function until(what: string, fn: () => boolean | Promise<boolean>, timeoutMs = 30_000, stepMs = 100): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await Promise.resolve(fn()).catch(() => false)) return;
    await sleep(stepMs);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

export interface ApiserverProcess {
  base: string;
  proc: ChildProcess;
  exited: Promise<number | null>;
  stderr(): string;
  /** SIGTERM, then SIGKILL after 10 s; resolves once it exited. */
  stop(): Promise<void>;
}

/** `panoptes apiserver ARGS --insecure-listen 127.0.0.1:PORT`; resolves once it serves `readyPath` (200). */
export async function startApiserverProcess(args: string[], readyPath: string, logLevel = 'warn'): Promise<ApiserverProcess> {
  const port = await freePort();
  const proc = spawn(process.execPath, ['bin/panoptes.mjs', 'apiserver', ...args, '--insecure-listen', `127.0.0.1:${port}`, '--log-level', logLevel], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  proc.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-10_000)));
  const exited = new Promise<number | null>((r) => proc.on('exit', (code) => r(code)));
  const base = `http://127.0.0.1:${port}`;
  await until(`apiserver on ${port} serving ${readyPath}`, async () => (await get(`${base}${readyPath}`)).status === 200).catch((err: Error) => {
    proc.kill('SIGKILL');
    throw new Error(`${err.message}: ${stderr}`);
  });
  return {
    base,
    proc,
    exited,
    stderr: () => stderr,
    async stop() {
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
