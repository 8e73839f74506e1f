// A throwaway PostgreSQL server for tests and benchmarks: initdb into a temp dir, start on a
// loopback port, stop by PID. As root it runs the server binaries as the `postgres` user
// (they refuse to run as root). `PANOPTES_TEST_POSTGRES_URL` points at a server that is
// already running (.ci/run starts one); each caller then gets a database of its own.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

export interface PostgresServer {
  /** URL of the maintenance database `postgres`. */
  url: string;
  /** Stops the server (fast shutdown: every connection is cut) and starts it again on the same data and port. */
  restart(downMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/** The command line that runs `cmd` as the `postgres` user when this process is root (the server binaries refuse root). */
export function asPostgresUser(cmd: string, args: string[]): [string, string[]] {
  if (process.getuid?.() !== 0) return [cmd, args];
  return ['runuser', ['-u', 'postgres', '--', cmd, ...args]];
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Starts a fresh server; resolves once it accepts connections. `unref`: the server does not
 * keep this process alive (its owner stops it when nothing else is left: see storage/testing.ts).
 */
export async function startPostgres(opts: { unref?: boolean } = {}): Promise<PostgresServer> {
  const dir = mkdtempSync(join(tmpdir(), 'panoptes-pg-'));
  const data = join(dir, 'data');
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    chownSync(dir, uid, gid);
  }
  chmodSync(dir, 0o755);
  const port = await freePort();
  const [initCmd, initArgs] = asPostgresUser('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8', '--locale=C']);
  execFileSync(initCmd, initArgs, { stdio: 'ignore' });
  const [cmd, args] = asPostgresUser('postgres', [
    '-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1',
    '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off', '-c', 'max_connections=200',
  ]);
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  let child: ChildProcess;

  const launch = async () => {
    child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'], detached: false });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    if (opts.unref) {
      child.unref();
      (child.stderr as unknown as { unref(): void }).unref();
    }
    const deadline = Date.now() + 30_000;
    for (;;) {
      try {
        const c = new pg.Client({ connectionString: url });
        await c.connect();
        await c.end();
        return;
      } catch (err) {
        if (child.exitCode !== null || Date.now() > deadline) {
          child.kill('SIGKILL');
          throw new Error(`PostgreSQL did not start: ${(err as Error).message}\n${stderr}`);
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  };

  const shutdown = async () => {
    if (child.exitCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    // runuser does not pass signals on: ask the server itself to stop (fast shutdown).
    const [stopCmd, stopArgs] = asPostgresUser('pg_ctl', ['-D', data, '-m', 'fast', '-w', '-t', '20', 'stop']);
    try {
      execFileSync(stopCmd, stopArgs, { stdio: 'ignore' });
    } catch {
      try {
        process.kill(readPidFile(data), 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
    if (child.exitCode === null) child.kill('SIGKILL');
  };

  await launch();
  return {
    url,
    async restart(downMs = 0) {
      await shutdown();
      if (downMs > 0) await new Promise((r) => setTimeout(r, downMs));
      await launch();
    },
    async stop() {
      await shutdown();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Creates an empty database on the server at `serverUrl` and returns its URL. */
export async function createDatabase(serverUrl: string, name: string): Promise<string> {
  const c = new pg.Client({ connectionString: serverUrl });
  await c.connect();
  try {
    await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await c.query(`CREATE DATABASE "${name}"`);
  } finally {
    await c.end();
  }
  const u = new URL(serverUrl);
  u.pathname = `/${name}`;
  return u.toString();
}

export const readPidFile = (dataDir: string) => Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
