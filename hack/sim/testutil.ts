// Helpers for the simulator's tests: a cluster torn down with the test, HTTP calls, bounded
// watch readers and a kubectl runner pointed at a simulated cluster.
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSimCluster, type SimCluster, type SimClusterOptions } from './cluster.ts';

interface Teardown {
  teardown(fn: () => unknown): void;
}

export async function simCluster(t: Teardown, opts: Partial<SimClusterOptions> = {}): Promise<SimCluster> {
  const c = await startSimCluster({ name: 'test', ...opts });
  t.teardown(() => c.close());
  return c;
}

export interface HttpResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
}

export function http(method: string, url: string, body?: unknown, headers: Record<string, string> = {}): Promise<HttpResult> {
  return request(method, url, undefined, body, headers);
}

/** As http(), with `path` (and query) sent exactly as given: no URL parsing resolves its `\`, `.` or `..` on the way. */
export function httpRawPath(method: string, base: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<HttpResult> {
  return request(method, base, path, body, headers);
}

function request(method: string, url: string, path: string | undefined, body: unknown, headers: Record<string, string>): Promise<HttpResult> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    const req = httpRequest(url, { method, ...(path !== undefined ? { path } : {}), headers: { ...(data ? { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(data)) } : {}), ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
      });
      res.on('error', reject);
    });
    req.setTimeout(15_000, () => req.destroy(new Error('request timed out')));
    req.on('error', reject);
    req.end(data);
  });
}

export const get = (url: string, headers?: Record<string, string>) => http('GET', url, undefined, headers);

export interface WatchEvent {
  type: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  object: any;
}

export interface OpenWatch {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  events: WatchEvent[];
  /** Resolves when the server ends the stream (true) or it was reset (false). */
  ended: Promise<boolean>;
  /** Resolves once `n` events arrived (or after timeoutMs, with what arrived). */
  waitFor(n: number, timeoutMs?: number): Promise<WatchEvent[]>;
  close(): void;
}

/** Opens a watch; events accumulate as they arrive. */
export function openWatch(url: string, headers: Record<string, string> = {}): Promise<OpenWatch> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers }, (res) => {
      const events: WatchEvent[] = [];
      let buf = '';
      let waiters: (() => void)[] = [];
      let endedResolve: (v: boolean) => void = () => undefined;
      const ended = new Promise<boolean>((r) => (endedResolve = r));
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buf += chunk;
        let i: number;
        while ((i = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, i);
          buf = buf.slice(i + 1);
          if (line.trim()) events.push(JSON.parse(line) as WatchEvent);
        }
        const w = waiters;
        waiters = [];
        for (const f of w) f();
      });
      res.on('end', () => {
        endedResolve(true);
        for (const f of waiters) f();
      });
      res.on('error', () => endedResolve(false));
      res.on('aborted', () => endedResolve(false));
      req.on('error', () => endedResolve(false));
      const waitFor = async (n: number, timeoutMs = 5000) => {
        const deadline = Date.now() + timeoutMs;
        while (events.length < n && Date.now() < deadline && !res.complete && !res.destroyed) {
          await new Promise<void>((r) => {
            const timer = setTimeout(r, Math.max(1, deadline - Date.now()));
            waiters.push(() => {
              clearTimeout(timer);
              r();
            });
          });
        }
        return events;
      };
      resolve({ status: res.statusCode ?? 0, headers: res.headers, events, ended, waitFor, close: () => req.destroy() });
    });
    req.on('error', reject);
    req.end();
  });
}

/** A temp dir removed with the test. */
export function tempDir(t: Teardown): string {
  const dir = mkdtempSync(join(tmpdir(), 'panoptes-sim-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs kubectl against a simulated cluster (no kubeconfig, a private cache dir), bounded in time. */
export function kubectl(c: SimCluster, cacheDir: string, args: string[], timeoutMs = 20_000): Promise<KubectlResult> {
  return new Promise((resolve) => {
    execFile('kubectl', ['--server', c.url, '--kubeconfig', '/dev/null', '--cache-dir', cacheDir, ...args], { timeout: timeoutMs }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? ((err as { code: number }).code) : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** Starts a long-running kubectl (e.g. get -w); lines of stdout accumulate. */
export function kubectlStream(c: SimCluster, cacheDir: string, args: string[]) {
  const p = spawn('kubectl', ['--server', c.url, '--kubeconfig', '/dev/null', '--cache-dir', cacheDir, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  let buf = '';
  let stderr = '';
  p.stdout.setEncoding('utf8');
  p.stdout.on('data', (d: string) => {
    buf += d;
    const parts = buf.split('\n');
    buf = parts.pop() ?? '';
    lines.push(...parts.filter((l) => l.trim() !== ''));
  });
  p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number>((resolve) => p.on('exit', (code) => resolve(code ?? -1)));
  return {
    lines,
    exited,
    stderr: () => stderr,
    async waitFor(pred: (lines: string[]) => boolean, timeoutMs = 10_000): Promise<boolean> {
      const deadline = Date.now() + timeoutMs;
      while (!pred(lines) && Date.now() < deadline) await sleep(50);
      return pred(lines);
    },
    kill: () => p.kill('SIGKILL'),
  };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls until pred() holds or timeoutMs passes. */
export async function until(pred: () => boolean, timeoutMs = 10_000, stepMs = 25): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!pred() && Date.now() < deadline) await sleep(stepMs);
  return pred();
}
