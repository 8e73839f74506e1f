// One check of every value bound into SQL (storage/bound-values.ts), on both engines: a value
// with NUL or a lone surrogate is a 400 before any statement is sent, wherever it comes from
// (a forged continue token, a name in a get, the rv translation lookup of a proxied write, a
// key list of a search), and a failed statement's error never carries its statement or its
// values.
import t from 'tap';
import { checkBindings, UnboundValueError } from './bound-values.ts';
import { encodeContinue, type ContinueToken } from './continue.ts';
import { backends, openTestStore, podEvent, stopTestPostgres } from './testing.ts';
import type { ListQuery } from './types.ts';

t.teardown(stopTestPostgres);

t.test('the check: NUL and lone surrogates, in strings and arrays; everything else passes', async (t) => {
  t.throws(() => checkBindings(['a', 'b\u0000']), { name: 'UnboundValueError', code: 400, reason: 'BadRequest', message: /holds a NUL character/ });
  t.throws(() => checkBindings([['x', 'y\ud800']]), { message: /holds an unpaired UTF-16 surrogate/ });
  t.throws(() => checkBindings(['\udc00z']), UnboundValueError);
  t.doesNotThrow(() => checkBindings(['plain', 'emoji \u{1F600}', '\ufffd', 42, null, Buffer.from([0]), ['a', 7]]));
  t.doesNotThrow(() => checkBindings(undefined));
});

const pods = { group: '', resource: 'pods' };
const token = (t: Partial<ContinueToken>) => encodeContinue({ rv: 2, namespace: 'ns', name: 'p-1', cluster: 'c', served: 1, ...t });

for (const backend of backends) {
  t.test(`${backend}: every request value with NUL or a lone surrogate is a 400, before SQL`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    await store.applyBatch('c', [podEvent('ADDED', 'ns', 'p-1', '1'), podEvent('ADDED', 'ns', 'p-2', '2')]);
    let sent = 0;
    store.conn.knex.on('query', () => sent++);
    const refused = async (what: string, run: () => Promise<unknown>, message = /a value of this request holds (a NUL character|an unpaired UTF-16 surrogate)/) => {
      const before = sent;
      await t.rejects(run(), { code: 400, reason: 'BadRequest', message }, what);
      return sent - before;
    };
    const key = (name: string) => ({ cluster: 'c', group: '', resource: 'pods', namespace: 'ns', name });
    await refused('a get by a name with NUL', () => store.get(key('p\u00001')));
    await refused('a get by a name with a lone surrogate', () => store.get(key('p\ud8001')));
    await refused('a get in a namespace with NUL', () => store.get({ ...key('p-1'), namespace: 'n\u0000s' }));
    await refused('the rv translation of a proxied write', () => store.memberRvAt(key('p\u00001'), 2));
    await refused('names= with NUL', () => store.list({ ...pods, names: ['p-1', 'p\u0000'] }));
    await refused('namespaces= with NUL', () => store.list({ ...pods, namespaces: ['n\u0000s'] }));
    await refused('an owner chain by a name with NUL', () => store.list({ ...pods, owners: { names: ['d\u0000'], group: 'apps', resource: 'deployments', seniority: 1 } }));
    const forged = /continue key is not valid: not a token issued by this server/;
    const page: ListQuery = { ...pods, limit: 1 };
    t.equal(await refused('a continue token whose key holds NUL', () => store.list({ ...page, continue: token({ name: 'p\u00001' }) }), forged), 0, 'refused before any statement');
    await refused('a continue token whose cluster holds a lone surrogate', () => store.list({ ...page, continue: token({ cluster: 'c\udc00' }) }), forged);
    await refused('a continue token whose orderBy value holds NUL', () => store.list({ ...page, orderBy: [{ key: 'name', desc: false }], continue: token({ order: '[["name",null,false]]', sortValues: ['p\u0000'] }) }), forged);
    await refused('a continue token whose created range holds NUL', () => store.list({ ...page, createdSince: '2020-01-01T00:00:00Z', continue: token({ created: ['2020\u0000', null] }) }), forged);
    await refused('a collection token whose kind holds NUL', () => store.list({ ...page, kinds: [pods], continue: token({ group: '', resource: 'po\u0000ds' }) }), forged);
    // kube's field selector compares any value: one no key holds equals no name, and is not bound.
    t.same((await store.list({ ...pods, fieldSelector: [{ field: 'metadata.name', operator: '=', value: 'p\u00001' }] })).items, []);
    t.equal((await store.list({ ...pods, fieldSelector: [{ field: 'metadata.name', operator: '!=', value: 'p\u00001' }] })).items.length, 2);
    // What storage searches of member content is mapped before it is bound (storage/sql-values.ts sqlText).
    t.same((await store.list({ ...pods, jsonFields: [{ path: ['metadata', 'name'], operator: 'in', values: ['p\u00001'] }] })).items, []);
    t.equal((await store.get(key('p-1')))?.name, 'p-1', 'and the store serves on');
  });

  t.test(`${backend}: a failed statement's error carries neither the statement nor its values`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    const err = (await store.conn.knex.raw('SELECT secret_column FROM objects WHERE name = ?', ['secret-value']).catch((e: unknown) => e)) as Error;
    t.ok(err instanceof Error, 'it fails');
    t.notMatch(err.message, /secret-value|SELECT|objects/, `the driver's message alone: ${err.message}`);
    t.match(err.message, /secret_column/, 'which says what failed');
    const inTrx = (await store.conn.knex.transaction((trx) => trx.raw('SELECT nope FROM objects WHERE uid = ?', ['secret-uid'])).catch((e: unknown) => e)) as Error;
    t.notMatch(inTrx.message, /secret-uid|SELECT/, `in a transaction too: ${inTrx.message}`);
  });
}
