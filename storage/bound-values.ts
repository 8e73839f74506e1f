// Every value bound into SQL passes one check, on both engines, before the driver sees it:
// a string must be text both engines hold as is (storage/sql-values.ts isSqlSafe: no NUL, no
// lone UTF-16 surrogate). PostgreSQL's text cannot hold NUL (its driver fails the statement:
// a 500 for a forged continue token or a `%00` in a name) and turns a lone surrogate into
// U+FFFD on the way in, where SQLite binds both: so neither is ever bound, and a request
// that carries one is a 400 on either engine. Stored keys hold neither (storage refuses
// them, UnstorableError), and what SQL searches of member content is mapped through sqlText
// before it is bound, so such a value could name nothing anyway.
//
// The check is installed on the knex instance (connect.ts), where every statement of every
// transaction is bound (knex emits `query` with the statement's bindings before it runs it;
// a listener that throws fails the statement unsent), so a new query cannot forget it. The
// SQLite insert and lookup fast paths that bind on the driver directly (storage/dialect.ts)
// call checkBindings themselves.
//
// And no SQL error carries its statement: knex prefixes a failed statement's text, with its
// bound values written in, to the driver's message, and that message reaches logs. Here it
// keeps the driver's message alone.
import type { Knex } from 'knex';
import { StatusError } from '../kube/status.ts';
import { hasLoneSurrogate, isSqlSafe } from './sql-values.ts';

/** A 400: a value of the request that SQL cannot bind on both engines alike (never quoted: it may be anything). */
export class UnboundValueError extends StatusError {
  override name = 'UnboundValueError';
  constructor(why: string) {
    super('BadRequest', `a value of this request ${why}: no stored key holds one, and storage binds no such value (a name, namespace, cluster, search value or continue token given with one is invalid)`, {
      causes: [{ reason: 'FieldValueInvalid', message: why }],
    });
  }
}

/** Why `s` cannot be bound, or undefined. */
export function unboundReason(s: string): string | undefined {
  if (isSqlSafe(s)) return undefined;
  return s.includes('\u0000') ? 'holds a NUL character' : hasLoneSurrogate(s) ? 'holds an unpaired UTF-16 surrogate' : undefined;
}

/** Throws UnboundValueError for the first binding (or element of an array binding) SQL cannot hold. */
export function checkBindings(bindings: ReadonlyArray<unknown> | undefined): void {
  for (const b of bindings ?? []) {
    if (typeof b === 'string') {
      const why = unboundReason(b);
      if (why) throw new UnboundValueError(why);
    } else if (Array.isArray(b)) checkBindings(b);
  }
}

/** Installs the check on every statement of `knex`, and keeps statements out of SQL errors' messages. */
export function guardStatements(knex: Knex): void {
  knex.client.on('query', (q: { bindings?: unknown[] }) => checkBindings(q.bindings));
  knex.client.on('query-error', (err: unknown, q: { sql?: string }) => {
    // With compileSqlOnError false (connect.ts) knex wrote `<sql> - <message>`: the values are
    // not in it, and the statement goes too.
    const e = err as { message?: unknown };
    if (typeof e?.message === 'string' && q?.sql && e.message.startsWith(`${q.sql} - `)) e.message = e.message.slice(q.sql.length + 3);
  });
}
