// The synchro members (`synchro_members`): one row per identity, written by the one process
// instance that holds it. A heartbeat keeps the row alive until its expiry on the database's
// clock; rendezvous hashing counts the members whose row is alive. Each process writes a
// random instance token with its heartbeat, so that a second process started with the same
// identity finds the first one's row instead of silently sharing it, and the machine it runs
// on (boot id and pid namespace), so that another member can prove that the process is gone
// from this machine before its heartbeat expires.
import type { Knex } from 'knex';
import type { Dialect } from './dialect.ts';
import { dbNow } from './leases.ts';
import { rowsOf } from './rows.ts';

export interface Member {
  id: string;
  host: string;
  pid: number;
  /** The kernel's boot id of the member's machine (/proc/sys/kernel/random/boot_id); null when unknown (another OS, an older release). */
  bootId: string | null;
  /** The member's pid namespace (/proc/self/ns/pid); null when unknown. */
  pidNamespace: string | null;
  /** The process instance writing the row (random per process start); null for rows of an older release. */
  instance: string | null;
  startedAt: number;
  heartbeatAt: number;
  expiresAt: number;
  /** The member's configuration problem as it last reported it (null: none, or an older release). */
  configError: string | null;
}

/**
 * A member row's state against the database's `now`: live (counted in the membership), out (a
 * process reporting that it cannot work: its row written already expired, within the last
 * minute) or expired (no heartbeat since its TTL).
 */
export type MemberState = 'live' | 'out' | 'expired';

/** How long a row written expired (a process reporting itself out) counts as out rather than expired. */
export const reportedOutForMs = 60_000;

export function memberState(m: Pick<Member, 'heartbeatAt' | 'expiresAt'>, now: number): MemberState {
  if (m.expiresAt > now) return 'live';
  return m.heartbeatAt === m.expiresAt && now - m.heartbeatAt < reportedOutForMs ? 'out' : 'expired';
}

/** What a member writes with each heartbeat. */
export type MemberRecord = Pick<Member, 'id' | 'host' | 'pid'> & { bootId?: string | null; pidNamespace?: string | null; instance: string; configError?: string | null };

export interface HeartbeatResult {
  /** The database's clock when the heartbeat was written (or refused). */
  now: number;
  /** Refused: the row of this identity belongs to another instance whose heartbeat has not expired. */
  heldBy?: Member;
}

interface MemberRow {
  id: string;
  host: string;
  pid: number | string;
  boot_id: string | null;
  pid_namespace: string | null;
  instance: string | null;
  started_at: number | string;
  heartbeat_at: number | string;
  expires_at: number | string;
  config_error?: string | null;
}

const toMember = (r: MemberRow): Member => ({
  id: r.id,
  host: r.host,
  pid: Number(r.pid),
  bootId: r.boot_id ?? null,
  pidNamespace: r.pid_namespace ?? null,
  instance: r.instance ?? null,
  startedAt: Number(r.started_at),
  heartbeatAt: Number(r.heartbeat_at),
  expiresAt: Number(r.expires_at),
  configError: r.config_error ?? null,
});

/**
 * Records that instance `m.instance` of member `m.id` is alive until now + ttl (0: seen, not
 * live: a process that cannot work reports itself and its configError so). The row is
 * written when it is new, already this instance's, expired, or the instance `replacing`'s
 * (known to be gone); while another instance's heartbeat is unexpired nothing is written and
 * that instance is returned.
 * One statement, so two processes starting with one identity cannot both win.
 */
export async function heartbeat(knex: Knex, dialect: Dialect, m: MemberRecord, ttlMs: number, replacing?: string): Promise<HeartbeatResult> {
  const now = await dbNow(knex, dialect);
  const result = await knex.raw(
    'INSERT INTO synchro_members (id, host, pid, boot_id, pid_namespace, instance, started_at, heartbeat_at, expires_at, config_error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ' +
      'ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid, boot_id = excluded.boot_id, pid_namespace = excluded.pid_namespace, instance = excluded.instance, config_error = excluded.config_error, ' +
      'started_at = CASE WHEN synchro_members.instance = excluded.instance THEN synchro_members.started_at ELSE excluded.started_at END, ' +
      'heartbeat_at = excluded.heartbeat_at, expires_at = excluded.expires_at ' +
      'WHERE synchro_members.instance = excluded.instance OR synchro_members.expires_at <= ? OR synchro_members.instance = ? ' +
      'RETURNING id',
    [m.id, m.host, m.pid, m.bootId ?? null, m.pidNamespace ?? null, m.instance, now, now, now + ttlMs, m.configError ?? null, now, replacing ?? m.instance],
  );
  if (rowsOf<{ id: string }>(result).length > 0) return { now };
  const row: MemberRow | undefined = await knex('synchro_members').where({ id: m.id }).first();
  // Gone between the two statements (its holder left): the next heartbeat writes it.
  return row ? { now, heldBy: toMember(row) } : { now };
}

/**
 * How long a member row stays after its heartbeat expired. Every process start is a new
 * identity by default, so rows of crashed processes would pile up; past this, nothing (a
 * lease, a proof of a dead process) needs them any more.
 */
export const forgetMembersAfterMs = 60 * 60_000;

/**
 * Every member row, live or not (expiresAt against the returned now). Rows expired for more
 * than `forgetAfterMs` are deleted (only when there are some: no write on a quiet pass).
 */
export async function members(knex: Knex, dialect: Dialect, forgetAfterMs = forgetMembersAfterMs): Promise<{ now: number; members: Member[] }> {
  // The rows first, the clock after: a heartbeat's expiry is its writer's clock plus its TTL,
  // read before it wrote, so a row written out (TTL 0: a member reporting itself out) is never
  // later than this now. The other order let a heartbeat that came between the two reads look
  // live for a moment.
  const rows: MemberRow[] = await knex('synchro_members').select('*').orderBy('id');
  const now = await dbNow(knex, dialect);
  const all = rows.map(toMember);
  const cutoff = now - forgetAfterMs;
  const forgotten = all.filter((m) => m.expiresAt < cutoff).map((m) => m.id);
  // The expiry is checked again in the statement: a member that came back meanwhile stays.
  if (forgotten.length) await knex('synchro_members').whereIn('id', forgotten).andWhere('expires_at', '<', cutoff).delete();
  return { now, members: all.filter((m) => m.expiresAt >= cutoff) };
}

/** Removes a member row (a graceful stop); with `instance`, only while that instance holds it. */
export async function removeMember(knex: Knex, id: string, instance?: string): Promise<void> {
  const q = knex('synchro_members').where({ id });
  if (instance !== undefined) q.andWhere({ instance });
  await q.delete();
}
