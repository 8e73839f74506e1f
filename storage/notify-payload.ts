// What a commit notification carries (PostgreSQL NOTIFY on dialect.notifyChannel, sent at
// commit, in commit order, which is rv order: storage/dialect.ts lockRv). One notification per
// change of a small batch: the change itself, so that a replica's poller delivers it without
// reading the change log (apiserver/watch/poller.ts offer). A change whose payload does not fit
// PostgreSQL's limit (8000 bytes: https://www.postgresql.org/docs/15/sql-notify.html), and
// every change of a large batch, is announced by its rv alone; a listener that sees an rv it
// cannot deliver in order reads the change log from its last rv, so nothing is skipped.
// Earlier releases sent the batch's watermark alone: a bare rv is still understood (and they
// read a change payload as "something was committed": Number() of it is NaN).
import { toChange, type ChangeRowValues } from './rows.ts';
import type { Change, EventType } from './types.ts';

/** PostgreSQL refuses a payload of 8000 bytes or more (in the server's encoding; the check is made in SQL). */
export const maxNotifyBytes = 7999;

/** Batches of more changes are announced by rv alone: their readers catch up by pages of the log, not change by change. */
export const maxNotifiedChanges = 100;

/** What one notification said: a committed change, or only that rv `rv` (or NaN: something) was committed. */
export type Notified = { rv: number; change?: Change };

const eventTypes = new Set<string>(['ADDED', 'MODIFIED', 'DELETED']);

/** The payload carrying `row` (its size is checked where it is sent: too long, the rv alone goes). */
export function changePayload(row: ChangeRowValues): string {
  return JSON.stringify(toChange(row));
}

const isStr = (v: unknown): v is string => typeof v === 'string';
const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v);

/** Reads a payload: a change (every field checked), an rv, or NaN for anything else (a wake-up without an rv). */
export function parsePayload(payload: string | undefined): Notified {
  if (!payload || payload[0] !== '{') return { rv: Number(payload) };
  let v: Record<string, unknown>;
  try {
    v = JSON.parse(payload) as Record<string, unknown>;
  } catch {
    return { rv: Number.NaN };
  }
  const strings = [v.cluster, v.group, v.version, v.resource, v.namespace, v.name, v.uid, v.object];
  const ok =
    isInt(v.rv) && v.rv > 0 && isStr(v.type) && eventTypes.has(v.type) && strings.every(isStr) && (v.prevObject === null || isStr(v.prevObject)) && isInt(v.ts) && (v.epoch === null || isInt(v.epoch));
  if (!ok) return { rv: isInt(v.rv) ? v.rv : Number.NaN };
  return {
    rv: v.rv as number,
    change: {
      rv: v.rv as number,
      type: v.type as EventType,
      cluster: v.cluster as string,
      group: v.group as string,
      version: v.version as string,
      resource: v.resource as string,
      namespace: v.namespace as string,
      name: v.name as string,
      uid: v.uid as string,
      object: v.object as string,
      prevObject: v.prevObject as string | null,
      ts: v.ts as number,
      epoch: v.epoch as number | null,
    },
  };
}
