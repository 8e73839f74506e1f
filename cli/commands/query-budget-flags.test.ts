// The budget flags of lists with unindexed JSON path terms: parsing, and a running apiserver
// that refuses such a list past --field-path-max-objects and --field-path-max-bytes.
import t from 'tap';
import { freePort } from '../../storage/testing/postgres.ts';
import { logger, setLogLevel } from '../../lib/log.ts';
import { openTestStore, podEvent } from '../../storage/testing.ts';
import { startServing } from './apiserver.ts';
import { queryBudgetFlags } from './query-budget-flags.ts';

setLogLevel('error');

t.test('defaults, values and bad values', async (t) => {
  t.same(queryBudgetFlags({}), { queryBudget: { rows: 20_000, bytes: 16 * 1024 * 1024, ms: 2000 } });
  t.same(queryBudgetFlags({ 'field-path-max-objects': '500', 'field-path-max-bytes': '4Mi', 'field-path-timeout': '250ms' }), { queryBudget: { rows: 500, bytes: 4 * 1024 * 1024, ms: 250 } });
  t.throws(() => queryBudgetFlags({ 'field-path-max-bytes': '0' }), /--field-path-max-bytes must be at least 1/);
  t.throws(() => queryBudgetFlags({ 'field-path-max-bytes': 'lots' }), /--field-path-max-bytes must be a size/);
  t.throws(() => queryBudgetFlags({ 'field-path-max-objects': '0' }), /--field-path-max-objects must be at least 1/);
  t.throws(() => queryBudgetFlags({ 'field-path-timeout': 'soon' }), /--field-path-timeout/);
});

t.test('a running apiserver answers 400 past --field-path-max-objects, and serves a narrower list', async (t) => {
  const { store, close } = await openTestStore('sqlite');
  t.teardown(close);
  await store.applyBatch('c', Array.from({ length: 5 }, (_, i) => podEvent('ADDED', i < 2 ? 'small' : 'big', `p${i}`, String(i + 1))));
  const port = await freePort();
  const server = await startServing(store, { 'insecure-listen': `127.0.0.1:${port}`, 'field-path-max-objects': '3' }, logger('test'));
  t.teardown(() => server.close());
  const list = (ns: string) => fetch(`${server.url}/apis/panoptes.io/v1alpha1/resources/api/v1${ns}/pods?fieldSelector=${encodeURIComponent('.spec.nodeName!=x')}`);
  const refused = await list('');
  t.equal(refused.status, 400);
  t.match(await refused.json(), { kind: 'Status', reason: 'BadRequest', message: /would read more than 3 objects/ });
  const narrow = await list('/namespaces/small');
  t.equal(narrow.status, 200);
  t.equal(((await narrow.json()) as { items: unknown[] }).items.length, 2);
});

t.test('a running apiserver answers 400 past --field-path-max-bytes', async (t) => {
  const { store, close } = await openTestStore('sqlite');
  t.teardown(close);
  await store.applyBatch('c', Array.from({ length: 4 }, (_, i) => podEvent('ADDED', 'ns', `p${i}`, String(i + 1))));
  const one = (await store.list({ group: '', resource: 'pods', limit: 1 })).items[0].object.length;
  const port = await freePort();
  const server = await startServing(store, { 'insecure-listen': `127.0.0.1:${port}`, 'field-path-max-bytes': String(one * 2) }, logger('test'));
  t.teardown(() => server.close());
  const list = (names: string) => fetch(`${server.url}/apis/panoptes.io/v1alpha1/resources/api/v1/pods?names=${names}&fieldSelector=${encodeURIComponent('.spec.nodeName!=x')}`);
  const refused = await list('p0,p1,p2');
  t.equal(refused.status, 400);
  t.match(await refused.json(), { kind: 'Status', reason: 'BadRequest', message: /would read .* MiB of documents, more than the .* MiB a list may/ });
  t.equal((await list('p0,p1')).status, 200, 'two documents are within it');
});
