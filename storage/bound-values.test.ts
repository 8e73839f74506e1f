// One check of every value bound into SQL (storage/bound-values.ts): a value with NUL or a
// lone surrogate is a 400 (where requests bring one, on both engines: storage/hostile.test.ts),
// and a failed statement's error never carries its statement or its values.
import t from 'tap';
import { checkBindings, UnboundValueError } from './bound-values.ts';
import { backends, openTestStore, stopTestPostgres } from './testing.ts';

t.teardown(stopTestPostgres);

t.test('the check: NUL and lone surrogates, in strings and arrays; everything else passes', async (t) => {
  t.throws(() => checkBindings(['a', 'b\u0000']), { name: 'UnboundValueError', code: 400, reason: 'BadRequest', message: /holds a NUL character/ });
  t.throws(() => checkBindings([['x', 'y\ud800']]), { message: /holds an unpaired UTF-16 surrogate/ });
  t.throws(() => checkBindings(['\udc00z']), UnboundValueError);
  t.doesNotThrow(() => checkBindings(['plain', 'emoji \u{1F600}', '\ufffd', 42, null, Buffer.from([0]), ['a', 7]]));
  t.doesNotThrow(() => checkBindings(undefined));
});

for (const backend of backends) {
  t.test(`${backend}: a failed statement's error carries neither the statement nor its values`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    const err = (await store.conn.knex.raw('SELECT secret_column FROM objects WHERE name = ?', ['secret-value']).catch((e: unknown) => e)) as Error;
    t.ok(err instanceof Error, 'it fails');
    t.notMatch(err.message, /secret-value|SELECT|objects/, `the driver's message alone: ${err.message}`);
    t.match(err.message, /secret_column/, 'which says what failed');
    t.notMatch(String(err.stack), /secret-value/, 'nor its stack, which the apiserver logs with a 500');
    const inTrx = (await store.conn.knex.transaction((trx) => trx.raw('SELECT nope FROM objects WHERE uid = ?', ['secret-uid'])).catch((e: unknown) => e)) as Error;
    t.notMatch(inTrx.message, /secret-uid|SELECT/, `in a transaction too: ${inTrx.message}`);
  });
}
