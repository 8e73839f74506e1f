// A PostgreSQL primary and a streaming hot standby on loopback, for tests and benchmarks of
// apiserver reads from standbys. Both servers are started here as the `postgres` user (the
// server binaries refuse root): initdb for the primary, `pg_basebackup -R` (which writes
// primary_conninfo and standby.signal) for the standby, then `pg_ctl`. Temporary data dirs,
// free ports, every wait bounded. CI runs no PostgreSQL that could stream to a standby of
// ours, so this never uses PANOPTES_TEST_POSTGRES_URL.
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { asPostgresUser, freePort } from '../storage/testing/postgres.ts';

export interface PgNode {
  /** URL of the `postgres` database on this server. */
  url: string;
  port: number;
  dataDir: string;
  /** pg_ctl start (waits until it accepts connections). */
  start(): Promise<void>;
  /** pg_ctl stop -m fast. */
  stop(): Promise<void>;
  /** One query on a fresh connection. */
  query<T extends pg.QueryResultRow = pg.QueryResultRow>(sql: string, params?: unknown[], database?: string): Promise<T[]>;
}

export interface StandbyPair {
  primary: PgNode;
  standby: PgNode;
  /** Creates a database on the primary (the standby replays it) and returns its URL on each server. */
  createDatabase(name: string): Promise<{ primary: string; standby: string }>;
  /** Stops applying WAL on the standby (pg_wal_replay_pause), until resumeReplay. */
  pauseReplay(): Promise<void>;
  resumeReplay(): Promise<void>;
  /** Resolves once the standby has replayed everything the primary has written so far (bounded). */
  caughtUp(timeoutMs?: number): Promise<void>;
  /** Promotes the standby to a primary (pg_promote, waited for). */
  promote(): Promise<void>;
  /** Stops both servers and removes their data. */
  close(): Promise<void>;
}

// synchronous_commit stays on (PostgreSQL's default): with it off, a commit's WAL is flushed
// by the WAL writer up to wal_writer_delay (200 ms) later, and a walsender streams only
// flushed WAL, so every change would reach the standby 0-200 ms late. fsync=off keeps the
// flush cheap on a test machine.
const serverOptions = [
  '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off', '-c', 'full_page_writes=on',
  '-c', 'max_connections=200', '-c', 'wal_level=replica', '-c', 'max_wal_senders=5', '-c', 'hot_standby=on',
  // The standby answers reads while replaying: a long read does not cancel replay for long, and
  // replay does not cancel reads that the tests make (the defaults cancel after 30 s).
  '-c', 'hot_standby_feedback=on', '-c', 'wal_receiver_status_interval=1s',
];

function run(cmd: string, args: string[], timeoutMs = 60_000): string {
  const [c, a] = asPostgresUser(cmd, args);
  return execFileSync(c, a, { timeout: timeoutMs, stdio: ['ignore', 'pipe', 'pipe'] }).toString();
}

async function query<T extends pg.QueryResultRow>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  await c.connect();
  try {
    return (await c.query<T>(sql, params)).rows;
  } finally {
    await c.end().catch(() => {});
  }
}

async function until(what: string, timeoutMs: number, test: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      if (await test()) return;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms${last ? ` (${(last as Error).message})` : ''}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function node(dir: string, name: string, port: number): PgNode {
  const dataDir = join(dir, name);
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const dbUrl = (database?: string) => {
    if (!database) return url;
    const u = new URL(url);
    u.pathname = `/${database}`;
    return u.toString();
  };
  return {
    url,
    port,
    dataDir,
    async start() {
      const opts = ['-p', String(port), '-k', dir, ...serverOptions].join(' ');
      run('pg_ctl', ['-D', dataDir, '-l', join(dir, `${name}.log`), '-w', '-t', '60', '-o', opts, 'start']);
      await until(`${name} accepts connections`, 30_000, async () => (await query(url, 'select 1')).length === 1);
    },
    async stop() {
      try {
        run('pg_ctl', ['-D', dataDir, '-m', 'fast', '-w', '-t', '30', 'stop']);
      } catch {
        // not running
      }
    },
    query: (sql, params, database) => query(dbUrl(database), sql, params),
  };
}

/** Starts a primary and a standby streaming from it; resolves once the standby replays. */
export async function startStandbyPair(): Promise<StandbyPair> {
  const dir = mkdtempSync(join(tmpdir(), 'panoptes-pgsb-'));
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    chownSync(dir, uid, gid);
  }
  chmodSync(dir, 0o755);
  const primary = node(dir, 'primary', await freePort());
  const standby = node(dir, 'standby', await freePort());
  const close = async () => {
    await standby.stop();
    await primary.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    run('initdb', ['-D', primary.dataDir, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8', '--locale=C']);
    await primary.start();
    // -R: standby.signal and primary_conninfo; -X stream: the WAL needed to start comes along.
    run('pg_basebackup', ['-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres', '-D', standby.dataDir, '-R', '-X', 'stream', '--no-sync', '-c', 'fast']);
    await standby.start();
    await until('standby streams', 30_000, async () => (await primary.query('select 1 from pg_stat_replication')).length === 1);
  } catch (err) {
    await close();
    throw err;
  }

  const caughtUp = async (timeoutMs = 15_000) => {
    const [{ lsn }] = await primary.query<{ lsn: string }>('select pg_current_wal_lsn()::text as lsn');
    await until('standby replays the primary', timeoutMs, async () => {
      const [r] = await standby.query<{ behind: string | null }>('select pg_wal_lsn_diff($1::pg_lsn, pg_last_wal_replay_lsn())::text as behind', [lsn]);
      return r.behind !== null && Number(r.behind) <= 0;
    });
  };

  return {
    primary,
    standby,
    async createDatabase(name) {
      await primary.query(`CREATE DATABASE "${name}"`);
      await caughtUp();
      const at = (base: string) => {
        const u = new URL(base);
        u.pathname = `/${name}`;
        return u.toString();
      };
      return { primary: at(primary.url), standby: at(standby.url) };
    },
    async pauseReplay() {
      await standby.query('select pg_wal_replay_pause()');
      await until('replay paused', 10_000, async () => (await standby.query<{ s: string }>('select pg_get_wal_replay_pause_state() as s'))[0].s === 'paused');
    },
    async resumeReplay() {
      await standby.query('select pg_wal_replay_resume()');
    },
    caughtUp,
    async promote() {
      await standby.query('select pg_promote(true, 30)');
      await until('standby promoted', 30_000, async () => !(await standby.query<{ r: boolean }>('select pg_is_in_recovery() as r'))[0].r);
    },
    close,
  };
}
