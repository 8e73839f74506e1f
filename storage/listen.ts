// Commit notifications from other processes: PostgreSQL LISTEN on the channel writers NOTIFY
// at commit (dialect.publishChanges). Each carries a committed change, or an rv
// (storage/notify-payload.ts). The apiserver's poller delivers a change it was told in order
// without a query, and reads the log for anything else; it still polls, so a lost notification
// (or a dropped connection) delays delivery by one poll interval at most.
// SQLite has one writing process; its in-process Store.onCommit is the wake-up there.
import pg from 'pg';
import { logger } from '../lib/log.ts';
import type { Connection } from './connect.ts';
import { notifyChannel } from './dialect.ts';
import { parsePayload, type Notified } from './notify-payload.ts';

const log = logger('storage.listen');

export interface CommitSubscription {
  close(): Promise<void>;
}

export interface ListenOptions {
  /** Wait before reconnecting after the connection is lost (default 1 s, doubling to 30 s). */
  reconnectMs?: number;
}

type PgConfig = string | pg.ClientConfig;

function connectionConfig(conn: Connection): PgConfig {
  const client = conn.knex.client as { config?: { connection?: unknown } };
  const c = client.config?.connection;
  if (typeof c === 'string') return c;
  if (c && typeof c === 'object') return { ...(c as pg.ClientConfig), application_name: 'panoptes-listen' };
  throw new Error('storage.listen: no PostgreSQL connection settings');
}

/**
 * Calls `onCommit(rv, change)` when another process (or this one) commits changes, on a
 * dedicated connection that reconnects by itself, in commit order. `rv` is an rv the writer
 * committed (with the `change` itself when the notification carried it), or NaN after a
 * reconnect (something may have been committed meanwhile) or from a payload not understood.
 * No-op on SQLite.
 */
export function listenForCommits(conn: Connection, onCommit: (rv: number, change?: Notified['change']) => void, opts: ListenOptions = {}): CommitSubscription {
  if (conn.dialect.name !== 'postgres') return { close: async () => {} };
  const config = connectionConfig(conn);
  const baseDelay = opts.reconnectMs ?? 1000;
  let client: pg.Client | undefined;
  let closed = false;
  let delay = baseDelay;
  let timer: NodeJS.Timeout | undefined;
  let connecting: Promise<void> | undefined;

  const schedule = () => {
    if (closed || timer) return;
    timer = setTimeout(() => {
      timer = undefined;
      connecting = open().finally(() => (connecting = undefined));
    }, delay);
    timer.unref?.();
    delay = Math.min(delay * 2, 30_000);
  };

  const open = async () => {
    const c = new pg.Client(config);
    client = c;
    let failed = false;
    const fail = (err?: Error) => {
      if (failed) return;
      failed = true;
      if (client === c) client = undefined;
      c.end().catch(() => {});
      if (!closed) {
        log.warn('LISTEN connection lost; polling still delivers', { err: err ?? 'ended' });
        schedule();
      }
    };
    c.on('error', fail);
    c.on('end', () => fail());
    c.on('notification', (msg) => {
      if (msg.channel !== notifyChannel) return;
      const { rv, change } = parsePayload(msg.payload);
      onCommit(rv, change);
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${notifyChannel}`);
      if (closed) {
        await c.end().catch(() => {});
        return;
      }
      delay = baseDelay;
      onCommit(Number.NaN);
    } catch (err) {
      fail(err as Error);
    }
  };

  connecting = open().finally(() => (connecting = undefined));
  return {
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
      await connecting?.catch(() => {});
      const c = client;
      client = undefined;
      if (c) await c.end().catch(() => {});
    },
  };
}
