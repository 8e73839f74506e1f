// Loaded into every test process (package.json, tap's node-arg). A test file that still runs
// after its last test (a timer, a socket, a server or a child process nobody stopped) would
// sit until tap's timeout and fail without a word; instead, some seconds after the root test
// ended, this names what keeps the process alive and fails the file at once.
import timers from 'node:timers';
import { isMainThread } from 'node:worker_threads';

const graceMs = Number(process.env.PANOPTES_TEST_LINGER_MS ?? 30_000);

interface Handle {
  constructor?: { name?: string };
  remoteAddress?: string;
  remotePort?: number;
  localPort?: number;
  address?: () => unknown;
  pid?: number;
  spawnfile?: string;
  _idleTimeout?: number;
  _onTimeout?: unknown;
}

function describe(h: Handle): string {
  const kind = h.constructor?.name ?? 'unknown';
  if (kind === 'Socket' || kind === 'TLSSocket') return `${kind} local :${h.localPort ?? '?'} -> ${h.remoteAddress ?? '?'}:${h.remotePort ?? '?'}`;
  if (kind === 'Server') return `Server ${JSON.stringify(h.address?.())}`;
  if (kind === 'ChildProcess') return `ChildProcess pid ${h.pid} ${h.spawnfile ?? ''}`;
  if (kind === 'Timeout') return `Timeout every/after ${h._idleTimeout} ms: ${String(h._onTimeout).replace(/\s+/g, ' ').slice(0, 160)}`;
  return kind;
}

// Timers are not among the active handles Node lists: to name a timer that keeps the process
// alive, each one carries where it was made (an Error, formatted only if it is ever printed) and
// the live ones are kept until they fire or are cleared.
const born = new Map<object, Error>();
function track(): void {
  const g = globalThis as unknown as Record<string, unknown>;
  const wrap = (name: 'setTimeout' | 'setInterval', clear: 'clearTimeout' | 'clearInterval') => {
    const make = g[name] as (fn: (...a: unknown[]) => void, ms?: number, ...args: unknown[]) => object;
    const unmake = g[clear] as (t: unknown) => void;
    const made = function (this: unknown, fn: (...a: unknown[]) => void, ms?: number, ...args: unknown[]) {
      if (typeof fn !== 'function') return make.call(this, fn, ms, ...args);
      const limit = Error.stackTraceLimit;
      Error.stackTraceLimit = 30;
      const where = new Error('made');
      Error.stackTraceLimit = limit;
      let t: object;
      const run = (...a: unknown[]) => {
        if (name === 'setTimeout') born.delete(t);
        fn(...a);
      };
      t = make.call(this, run, ms, ...args);
      born.set(t, where);
      return t;
    };
    const cleared = function (this: unknown, t: unknown) {
      if (t && typeof t === 'object') born.delete(t);
      return unmake.call(this, t);
    };
    Object.assign(made, make);
    g[name] = made;
    g[clear] = cleared;
    (timers as unknown as Record<string, unknown>)[name] = made;
    (timers as unknown as Record<string, unknown>)[clear] = cleared;
  };
  wrap('setTimeout', 'clearTimeout');
  wrap('setInterval', 'clearInterval');
}

function liveTimers(): string[] {
  const out: string[] = [];
  for (const [t, where] of born) {
    const timer = t as { hasRef?: () => boolean; _destroyed?: boolean; _idleTimeout?: number };
    if (timer._destroyed || timer.hasRef?.() === false) continue;
    const frames = (where.stack ?? '').split('\n').slice(2).filter((l) => !l.includes('lingering.ts') && !l.includes('node:internal'));
    // A library's frames say little: the first two, then the project's own.
    const shown = [...frames.slice(0, 2), ...frames.slice(2).filter((l) => !l.includes('node_modules') && !l.includes('(<anonymous>)'))].slice(0, 10);
    out.push(`Timeout after ${timer._idleTimeout} ms, made\n${shown.map((f) => `      ${f.trim()}`).join('\n')}`);
  }
  return out;
}

// Only the test file's own thread: worker threads and forked helpers inherit the node arguments,
// and a tap of their own would write a stray TAP stream into the file's output.
if (isMainThread && /\.test\.[cm]?[jt]s$/.test(process.argv[1] ?? '')) {
  track();
  const { default: t } = await import('tap');
  t.teardown(() => {
    const timer = setTimeout(() => {
      const resources = new Map<string, number>();
      for (const r of process.getActiveResourcesInfo()) resources.set(r, (resources.get(r) ?? 0) + 1);
      const handles = (process as unknown as { _getActiveHandles(): Handle[] })._getActiveHandles().filter((h) => h.remoteAddress || h.constructor?.name !== 'Socket').map(describe);
      const lines = [...[...resources].map(([r, n]) => `${n} × ${r}`), ...handles, ...liveTimers()];
      process.stderr.write(`this test file still runs ${graceMs / 1000} s after its last test; what keeps it alive:\n${lines.map((l) => `  ${l}`).join('\n')}\n`);
      process.exit(1);
    }, graceMs);
    timer.unref();
  });
}
