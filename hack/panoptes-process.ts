// The benchmarks' `panoptes` processes, started as the image starts them: `node
// bin/panoptes.mjs` with the NODE_OPTIONS of the Dockerfile's `ENV` (dist/ when built, see
// bin/panoptes.mjs), the soft limit of open files raised to the hard one when a process
// needs many sockets, stderr kept for errors.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const repoRoot = new URL('..', import.meta.url).pathname.replace(/\/$/, '');

/** The NODE_OPTIONS the image sets (`ENV NODE_OPTIONS=...` in the checkout's Dockerfile), or ''. */
export function imageNodeOptions(root = repoRoot): string {
  const file = join(root, 'Dockerfile');
  if (!existsSync(file)) return '';
  const m = /^ENV\s+NODE_OPTIONS=("([^"]*)"|(\S+))/m.exec(readFileSync(file, 'utf8'));
  return m ? (m[2] ?? m[3]) : '';
}

/** The soft and hard limits of open files (`ulimit -n`) a child of this process gets. */
export function openFileLimits(): { soft: number; hard: number } {
  const r = spawnSync('/bin/sh', ['-c', 'ulimit -Sn; ulimit -Hn'], { encoding: 'utf8' });
  const [soft, hard] = r.stdout.trim().split('\n').map((v) => (v === 'unlimited' ? Infinity : Number(v)));
  return { soft, hard };
}

export interface PanoptesProcess {
  name: string;
  proc: ChildProcess;
  stderr(): string;
  stop(): Promise<void>;
}

export interface SpawnOptions {
  /** A checkout (default this one). */
  root?: string;
  /** Default: the image's. */
  nodeOptions?: string;
  /** Extra node flags (before the script). */
  execArgv?: string[];
  /** Raise the soft open-files limit to the hard one (a server holding thousands of sockets). */
  raiseFileLimit?: boolean;
  cwd?: string;
}

const children = new Set<ChildProcess>();
/** SIGKILL to every process started here that is still running (also done at exit). */
export function killChildren(): void {
  for (const c of children) c.kill('SIGKILL');
}
process.on('exit', killChildren);

/** Spawns a node script with the given argv; the sh wrapper (when asked) raises `ulimit -n` first. */
export function spawnNode(name: string, script: string, argv: string[], o: SpawnOptions & { ipc?: boolean } = {}): PanoptesProcess {
  const env = { ...process.env, NODE_OPTIONS: o.nodeOptions ?? imageNodeOptions(o.root) };
  // PANOPTES_BENCH_NODE_ARGS: node flags for every child (a CPU profile, say), beside what the image sets.
  const extra = (process.env.PANOPTES_BENCH_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
  const node = [process.execPath, ...extra, ...(o.execArgv ?? []), script, ...argv];
  const [cmd, args] = o.raiseFileLimit ? ['/bin/sh', ['-c', 'ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec "$@"', 'sh', ...node]] : [node[0], node.slice(1)];
  const proc = spawn(cmd, args, { cwd: o.cwd, env, stdio: ['ignore', 'ignore', 'pipe', ...(o.ipc ? (['ipc'] as const) : [])] });
  children.add(proc);
  let stderr = '';
  proc.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-5000)));
  const exited = new Promise<void>((r) => proc.on('exit', () => r()));
  return {
    name,
    proc,
    stderr: () => stderr,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGTERM');
        const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }
      children.delete(proc);
    },
  };
}

/** `panoptes <argv> --log-level warn` from a checkout, as the image runs it. */
export function spawnPanoptes(name: string, argv: string[], o: SpawnOptions = {}): PanoptesProcess {
  return spawnNode(name, join(o.root ?? repoRoot, 'bin/panoptes.mjs'), [...argv, '--log-level', 'warn'], o);
}

/** VmRSS, RssAnon and RssFile of a process (bytes), and its CPU time (user + system, seconds). */
export function procMemory(pid: number): { rss: number; anon: number; file: number; cpu: number } {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN) * 1024;
  // /proc/<pid>/stat: utime and stime are fields 14 and 15, in clock ticks (100 per second on Linux).
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { rss: kb('VmRSS'), anon: kb('RssAnon'), file: kb('RssFile'), cpu: (Number(fields[11]) + Number(fields[12])) / 100 };
}
