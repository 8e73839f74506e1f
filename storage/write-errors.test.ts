// How write errors are told apart: fenced, outage (retry the same write), data (split the
// round and set the refused event aside). Real errors of both engines, and the shapes of the
// drivers' and the network's.
import t from 'tap';
import { FencedError } from './leases.ts';
import { UnstorableError } from './sql-values.ts';
import { backends, openTestStore, stopTestPostgres } from './testing.ts';
import { describeWriteError, writeErrorKind } from './write-errors.ts';

t.teardown(stopTestPostgres);

t.test('by SQLSTATE class, SQLite result code, network code and Panoptes error', async (t) => {
  const coded = (code: string, message = 'x') => Object.assign(new Error(message), { code });
  const cases: Array<[unknown, ReturnType<typeof writeErrorKind>]> = [
    [new FencedError({ lease: 'cluster/a', holder: 'me', epoch: 1 }, undefined), 'fenced'],
    [new UnstorableError('metadata.name', 'it contains a NUL character'), 'data'],
    [coded('08006'), 'outage'], // connection failure
    [coded('40001'), 'outage'], // serialization failure
    [coded('40P01'), 'outage'], // deadlock
    [coded('53100'), 'outage'], // disk full
    [coded('53300'), 'outage'], // too many connections
    [coded('57P01'), 'outage'], // admin shutdown
    [coded('57014'), 'outage'], // statement timeout / cancel
    [coded('58030'), 'outage'], // I/O error
    [coded('XX000'), 'outage'], // internal error
    [coded('22001'), 'data'], // value too long
    [coded('22021'), 'data'], // invalid byte sequence (NUL)
    [coded('22P05'), 'data'], // untranslatable character
    [coded('23505'), 'data'], // unique violation
    [coded('23514'), 'data'], // check violation
    [coded('54000'), 'data'], // program limit (index row too big)
    [coded('SQLITE_BUSY'), 'outage'],
    [coded('SQLITE_BUSY_SNAPSHOT'), 'outage'],
    [coded('SQLITE_IOERR_WRITE'), 'outage'],
    [coded('SQLITE_FULL'), 'outage'],
    [coded('SQLITE_TOOBIG'), 'data'],
    [coded('SQLITE_CONSTRAINT_CHECK'), 'data'],
    [coded('SQLITE_MISMATCH'), 'data'],
    [coded('ECONNREFUSED'), 'outage'],
    [coded('ECONNRESET'), 'outage'],
    [new Error('Connection terminated unexpectedly'), 'outage'],
    [Object.assign(new Error('Knex: Timeout acquiring a connection. The pool is probably full.'), { name: 'KnexTimeoutError' }), 'outage'],
    [new RangeError('Maximum call stack size exceeded'), 'data'],
  ];
  for (const [err, kind] of cases) t.equal(writeErrorKind(err), kind, `${(err as { code?: string }).code ?? (err as Error).message}`);
});

for (const backend of backends) {
  t.test(`${backend}: a refused row is data, and is described by code, never by its values`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    const k = store.conn.knex;
    await k.raw('CREATE TABLE t_refuse (v text CHECK (v <> \'secret-value\'))');
    const err = await k('t_refuse').insert({ v: 'secret-value' }).catch((e: unknown) => e);
    t.equal(writeErrorKind(err), 'data');
    const d = describeWriteError(err);
    t.match(d.code, backend === 'postgres' ? /^23514$/ : /^SQLITE_CONSTRAINT/);
    t.notMatch(JSON.stringify(d), /secret-value/, 'no value in what is logged');
  });
}
