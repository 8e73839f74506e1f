// Loaded into every test process (package.json, tap's node-arg). A test file that still runs
// after its last test (a timer, a socket, a server or a child process nobody stopped) would
// sit until tap's timeout and fail without a word; instead, some seconds after the root test
// ended, this names what keeps the process alive and fails the file at once.
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

// Only the test file's own thread: worker threads and forked helpers inherit the node arguments,
// and a tap of their own would write a stray TAP stream into the file's output.
if (isMainThread && /\.test\.[cm]?[jt]s$/.test(process.argv[1] ?? '')) {
  const { default: t } = await import('tap');
  t.teardown(() => {
    const timer = setTimeout(() => {
      const resources = new Map<string, number>();
      for (const r of process.getActiveResourcesInfo()) resources.set(r, (resources.get(r) ?? 0) + 1);
      const handles = (process as unknown as { _getActiveHandles(): Handle[] })._getActiveHandles().filter((h) => h.remoteAddress || h.constructor?.name !== 'Socket').map(describe);
      const lines = [...[...resources].map(([r, n]) => `${n} × ${r}`), ...handles];
      process.stderr.write(`this test file still runs ${graceMs / 1000} s after its last test; what keeps it alive:\n${lines.map((l) => `  ${l}`).join('\n')}\n`);
      process.exit(1);
    }, graceMs);
    timer.unref();
  });
}
