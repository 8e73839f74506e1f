// Parallel writes with one rv order on PostgreSQL: rvs allocated before the writes, commits in
// allocation order (storage/README.md "One rv order, written in parallel", where the argument
// of correctness is). This module holds the protocol's SQL: the functions schema migration 16
// creates, the statements a writer runs, the switch of an existing database, and which
// protocol a database uses.
import type { Knex } from 'knex';
import { hotQuery } from './prepared.ts';
import { gapType, leaseStates, postgres, postgresGapRows, type LeaseRow, type LeaseState } from './dialect.ts';
import type { Fence } from './leases.ts';
import { writeProtocolKey } from './meta.ts';
import { rowsOf } from './rows.ts';


export type WriteProtocol = 'serial' | 'parallel';

// Advisory lock keys (the two-int4 form, so pg_locks shows them as classid/objid, objsubid 2).
/** Tickets: (ticketClass, first rv mod 2^31), held exclusively by a writer from its allocation to its end. */
const ticketClass = 1_346_458_190;
/** (lockClass, 0): ALLOC, a session lock held for one allocation; (lockClass, 1): the world lock. */
const lockClass = 1_346_458_191;

export { gapType };

const gapRows = postgresGapRows;

/**
 * Step 3: n rvs and a ticket, under ALLOC, with the tickets held at that moment (the writers
 * that allocated before and have not ended). ALLOC is a session lock: it is released whatever
 * happens, or the next allocation would wait forever. From schema migration 17 (`v17`): it
 * returns how long it held ALLOC, and reads `pg_locks` (a copy of the whole lock table) only
 * when the watermark is not just below `first`: when it is, every rv below `first` is
 * published, so no writer that allocated before is in flight.
 */
const allocateFunction = (v17: boolean): string => `CREATE OR REPLACE FUNCTION panoptes_rv_allocate(n bigint, OUT first bigint, OUT waits integer[]${v17 ? ', OUT held_ms double precision' : ''}) LANGUAGE plpgsql AS $$
${v17 ? 'DECLARE\n  locked timestamptz;\n' : ''}BEGIN
  PERFORM pg_advisory_lock(${lockClass}, 0);
${v17 ? '  locked := clock_timestamp();\n' : ''}  BEGIN
    first := nextval('rv_allocator');
    IF n > 1 THEN PERFORM setval('rv_allocator', first + n - 1); END IF;
${v17 ? "    IF (SELECT value FROM meta WHERE key = 'rv') = first - 1 THEN\n      waits := '{}';\n    ELSE\n  " : ''}    SELECT coalesce(array_agg(l.objid::bigint::integer), '{}') INTO waits FROM pg_locks l
      WHERE l.locktype = 'advisory' AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND l.classid = ${ticketClass} AND l.objsubid = 2 AND l.mode = 'ExclusiveLock' AND l.granted;
${v17 ? '    END IF;\n' : ''}    PERFORM pg_advisory_xact_lock(${ticketClass}, (first % 2147483647)::integer);
  EXCEPTION WHEN OTHERS THEN
    PERFORM pg_advisory_unlock(${lockClass}, 0);
    RAISE;
  END;
${v17 ? '  held_ms := extract(epoch from clock_timestamp() - locked) * 1000;\n' : ''}  PERFORM pg_advisory_unlock(${lockClass}, 0);
END $$`;

/** Steps 1 and 3 in one statement (below); `v17`: with the allocation's time under ALLOC. */
const beginFunction = (v17: boolean): string => `CREATE OR REPLACE FUNCTION panoptes_rv_begin(n bigint, names text[], holders text[], epochs bigint[], OUT now bigint, OUT leases json, OUT first bigint, OUT waits integer[]${v17 ? ', OUT alloc_ms double precision' : ''}) LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock_shared(${lockClass}, 1);
  now := ${postgres.nowMs};
  SELECT coalesce(json_agg(json_build_object('name', l.name, 'holder', l.holder, 'epoch', l.epoch, 'expires_at', l.expires_at)), '[]') INTO leases
    FROM (SELECT * FROM leases WHERE name = ANY(names) FOR KEY SHARE) l;
  IF n > 0 AND (SELECT count(*) FROM unnest(names, holders, epochs) AS f(name, holder, epoch)
      JOIN leases l ON l.name = f.name AND l.holder = f.holder AND l.epoch = f.epoch AND l.expires_at > now) = cardinality(names) THEN
    SELECT ${v17 ? 'a.first, a.waits, a.held_ms INTO first, waits, alloc_ms' : 'a.first, a.waits INTO first, waits'} FROM panoptes_rv_allocate(n) a;
  END IF;
END $$`;

/** The SQL of schema migration 16 on PostgreSQL: the allocator sequence, starting after `rv`, and the protocol's functions. */
export function orderedCommitsSchema(rv: number): string[] {
  return [
    `CREATE SEQUENCE rv_allocator AS bigint MINVALUE 0 START WITH ${rv + 1}`,
    // Step 3: n rvs and a ticket, under ALLOC, with the tickets held at that moment (the
    // writers that allocated before and have not ended). ALLOC is a session lock: it is
    // released whatever happens, or the next allocation would wait forever.
    allocateFunction(false),
    // Steps 1 and 3 in one statement, once the writer knows n: the world lock shared, the
    // fences' leases locked FOR KEY SHARE and read with the clock, and, only when every fence
    // holds (the caller checks the same rows: storage/fenced.ts verifyFences), n rvs and a ticket.
    beginFunction(false),
    // Step 5: wait for those writers; fill the ranges of the ones that aborted; move the
    // watermark. Each statement of a plpgsql function reads a fresh snapshot, so the meta row
    // read after the waits is every earlier writer's. Returns the ms spent waiting.
    `CREATE OR REPLACE FUNCTION panoptes_rv_publish(waits integer[], first bigint, last bigint) RETURNS double precision LANGUAGE plpgsql AS $$
DECLARE
  started timestamptz := clock_timestamp();
  waited double precision;
  k integer;
  w bigint;
BEGIN
  FOREACH k IN ARRAY waits LOOP
    PERFORM pg_advisory_xact_lock_shared(${ticketClass}, k);
  END LOOP;
  waited := extract(epoch from clock_timestamp() - started) * 1000;
  SELECT value INTO w FROM meta WHERE key = 'rv' FOR UPDATE;
  IF w < first - 1 THEN
    ${gapRows('w + 1', 'first - 1')};
  END IF;
  UPDATE meta SET value = greatest(value, last) WHERE key = 'rv';
  RETURN waited;
END $$`,
    // A write that runs alone (the world lock exclusively): every parallel writer has ended, so
    // every rv allocated is final; the ones never committed become gap rows, and the write
    // allocates after the last, under the meta row's lock, as the serial protocol does.
    `CREATE OR REPLACE FUNCTION panoptes_rv_exclusive() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  w bigint;
  l bigint;
  called boolean;
BEGIN
  PERFORM pg_advisory_xact_lock(${lockClass}, 1);
  SELECT value INTO w FROM meta WHERE key = 'rv' FOR UPDATE;
  SELECT last_value, is_called INTO l, called FROM rv_allocator;
  IF NOT called THEN l := l - 1; END IF;
  IF l > w THEN
    ${gapRows('w + 1', 'l')};
    UPDATE meta SET value = l WHERE key = 'rv';
    RETURN l;
  END IF;
  RETURN w;
END $$`,
  ];
}

/**
 * The SQL of schema migration 17: the allocation says how long it held ALLOC, so a writer
 * reports its serialized section as the database measured it (ALLOC, then its publish after
 * the waits, to its commit), and it reads the tickets in flight only when some may be. Same
 * protocol, same locks; callers of the earlier functions read the columns they knew.
 */
export function allocationTimingSchema(): string[] {
  return [
    'DROP FUNCTION panoptes_rv_begin(bigint, text[], text[], bigint[])',
    'DROP FUNCTION panoptes_rv_allocate(bigint)',
    allocateFunction(true),
    beginFunction(true),
  ];
}

const protocols = new WeakMap<Knex, WriteProtocol>();

/**
 * The protocol of the database behind `knex`, as last known: parallel is remembered (a
 * database never goes back); serial is read again, and each serial write checks it under its
 * lock (lockRv), since `panoptes migrate --parallel-writes` may switch it at any time.
 */
export async function writeProtocol(knex: Knex): Promise<WriteProtocol> {
  const known = protocols.get(knex);
  if (known) return known;
  const row = (await knex('meta').where({ key: writeProtocolKey }).first('value')) as { value: number | string } | undefined;
  const protocol = row && Number(row.value) === 1 ? 'parallel' : 'serial';
  if (protocol === 'parallel') protocols.set(knex, protocol);
  return protocol;
}

/** Remembers that the database behind `knex` writes in parallel (a serial write found it switched). */
export function sawParallel(knex: Knex): void {
  protocols.set(knex, 'parallel');
}

/** Thrown by a serial write that found, under its lock, that the database was switched: it starts again, in parallel mode. */
export class SwitchedToParallel extends Error {
  constructor() {
    super('the database was switched to parallel writes: the write starts again');
  }
}

/**
 * Steps 1 and 3 of a parallel writer, one statement, once it knows n: the world lock, shared
 * (only writes that run alone take it exclusively), the fences' leases locked FOR KEY SHARE
 * (as lockLeases) and read with the database's clock, and, when every fence holds, rvs
 * `first..first+n-1` with the tickets to wait for before publishing (none when n is 0 or a
 * fence no longer holds: the caller throws FencedError, having taken no rv).
 */
export async function beginParallel(trx: Knex.Transaction, n: number, fences: readonly Fence[]): Promise<{ now: number; leases: LeaseState[]; allocated?: Allocation }> {
  const [row] = await hotQuery<{ now: number | string; leases: Array<Omit<LeaseRow, 'now'>>; first: number | string | null; waits: number[] | null; alloc_ms: number | null }>(
    trx,
    'SELECT now, leases, first, waits, alloc_ms FROM panoptes_rv_begin(?, ?::text[], ?::text[], ?::bigint[])',
    [n, fences.map((f) => f.lease), fences.map((f) => f.holder), fences.map((f) => f.epoch)],
  );
  const now = Number(row.now);
  const leases = leaseStates(row.leases.map((l) => ({ ...l, now })));
  return row.first === null ? { now, leases } : { now, leases, allocated: { first: Number(row.first), waits: (row.waits ?? []).map(Number), allocMs: Number(row.alloc_ms ?? 0) } };
}

/** rvs `first..first+n-1`, the tickets to wait for before publishing, and how long ALLOC was held (ms, the database's clock). */
export interface Allocation {
  first: number;
  waits: number[];
  allocMs: number;
}

/** Step 3 alone, for a writer that took its locks first (beginParallel with n = 0). */
export async function allocateRvs(trx: Knex.Transaction, n: number): Promise<Allocation> {
  const [row] = await hotQuery<{ first: number | string; waits: number[]; held_ms: number }>(trx, 'SELECT first, waits, held_ms FROM panoptes_rv_allocate(?)', [n]);
  return { first: Number(row.first), waits: row.waits.map(Number), allocMs: Number(row.held_ms) };
}

/**
 * Step 5 and the commit, in one message: waits for the earlier writers, fills what they left,
 * moves the watermark to `last`, and commits, with no round trip to this process in between.
 * The next writer waits for this commit, so a round trip here would put this process's event
 * loop in every later writer's path. COMMIT AND CHAIN opens an empty transaction that the
 * caller's own COMMIT ends. Returns how long it waited for the earlier writers and how long
 * its ordered part took, from the end of those waits to its commit, both on the database's
 * clock (the reads of the clock before and after are in the same message).
 */
export async function publishAndCommit(trx: Knex.Transaction, waits: number[], first: number, last: number): Promise<{ waitedMs: number; orderedMs: number }> {
  for (const n of [...waits, first, last]) if (!Number.isSafeInteger(n)) throw new Error(`publishAndCommit: ${n} is not an integer`);
  // The simple query protocol, for several statements in one message: integers only, written
  // out. A select list is evaluated in order: the clock is read before the publish.
  const clock = 'extract(epoch from clock_timestamp()) * 1000';
  const result: unknown = await trx.raw(
    `SELECT ${clock} AS started, panoptes_rv_publish(ARRAY[${waits.join(',')}]::integer[], ${first}, ${last}) AS waited; COMMIT AND CHAIN; SELECT ${clock} AS committed`,
  );
  const results = Array.isArray(result) ? result : [result];
  const [published] = rowsOf<{ started: number | string; waited: number | string }>(results[0]);
  const [ended] = rowsOf<{ committed: number | string }>(results[results.length - 1]);
  const waitedMs = Number(published.waited);
  return { waitedMs, orderedMs: Math.max(0, Number(ended.committed) - Number(published.started) - waitedMs) };
}

/**
 * A write that runs alone in a parallel database: waits for every parallel writer, turns the
 * rvs they left unused into gap rows, and locks the meta row. Returns the last allocated rv
 * and the database's clock.
 */
export async function runAlone(trx: Knex.Transaction): Promise<{ rv: number; now: number }> {
  const [row] = await hotQuery<{ rv: number | string; now: number | string }>(trx, `SELECT panoptes_rv_exclusive() AS rv, ${postgres.nowMs} AS now`, []);
  return { rv: Number(row.rv), now: Number(row.now) };
}

/** After a write that ran alone: the allocator continues from the watermark it left. */
export async function syncAllocator(trx: Knex.Transaction): Promise<void> {
  await hotQuery(trx, "SELECT setval('rv_allocator', value) FROM meta WHERE key = 'rv'", []);
}

/**
 * Switches a serial database to parallel writes: under the meta row's lock and the world lock,
 * the allocator continues from the watermark and the protocol is recorded. Serial writers
 * queued behind it read the switch under their lock and start again. Returns whether it
 * switched (false: it was parallel already).
 */
export async function enableParallelWrites(knex: Knex): Promise<boolean> {
  return knex.transaction(async (trx) => {
    await trx.raw(`SELECT pg_advisory_xact_lock(${lockClass}, 1)`);
    const rows = rowsOf<{ key: string; value: number | string }>(await trx.raw(`SELECT key, value FROM meta WHERE key IN ('rv', ?) ORDER BY key FOR UPDATE`, [writeProtocolKey]));
    const rv = Number(rows.find((r) => r.key === 'rv')!.value);
    if (Number(rows.find((r) => r.key === writeProtocolKey)?.value ?? 0) === 1) return false;
    await trx.raw("SELECT setval('rv_allocator', ?)", [rv]);
    await trx('meta').where({ key: writeProtocolKey }).update({ value: 1 });
    return true;
  });
}
