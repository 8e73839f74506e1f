// What one request may bind into SQL, over HTTP on both backends: a NUL in a name (a get in
// either view, a proxied PUT whose resourceVersion storage translates: refused as a path
// segment first, and by storage's check of bound values where a value gets past that), a
// NUL in a search value, a forged continue token (its key, its orderBy values, its creation
// range) are 400s, never a 500 from PostgreSQL; and terms past the budget of one request (storage/term-budget.ts) are a 400 that
// names it, for a list and before a watch's 200, where terms within it are served.
import t from 'tap';
import { simCluster, http } from '../../hack/sim/testutil.ts';
import { logger, setLogLevel } from '../../lib/log.ts';
import { backends, openTestStore, podEvent, seedCluster, stopTestPostgres } from '../../storage/testing.ts';
import { createApiserver } from '../server.ts';
import type { MemberCredentials } from '../proxy/members.ts';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');
t.teardown(stopTestPostgres);

const P = '/apis/panoptes.io/v1alpha1/resources';
const podsResource = { group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, singularName: 'pod' };
const token = (body: Record<string, unknown>) => Buffer.from(JSON.stringify({ v: 1, rv: 2, k: ['shop', 'p-1', 'east'], s: 1, ...body })).toString('base64url');
const range = (n: number, f: (i: number) => string) => Array.from({ length: n }, (_, i) => f(i));

for (const backend of backends) {
  t.test(`${backend}: values SQL cannot bind and terms past the budget are 400s`, async (t) => {
    const east = await simCluster(t, { name: 'east', controllers: false });
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    await seedCluster(store, 'east', { phase: 'Ready', ready: true, apiResources: [podsResource] });
    await store.applyBatch('east', Array.from({ length: 40 }, (_, i) => podEvent('ADDED', `ns-${i % 32}`, `p-${i}`, String(10 + i), { owner: `rs-${i % 4}` })));
    const credentials: MemberCredentials = { lookup: async () => ({ connection: { server: east.url }, fingerprint: east.url }) };
    const api = await createApiserver({ store, log: logger('test'), catalogOptions: { refreshMs: 200 }, proxy: { credentials, unauthenticatedUser: { name: 'dev', groups: ['developers'], extra: {} } } });
    t.teardown(() => api.close());
    const base = await api.listen('127.0.0.1', 0);
    const expect = async (what: string, method: string, path: string, code: number, message?: RegExp, body?: unknown) => {
      const r = await http(method, `${base}${path}`, body);
      t.equal(r.status, code, `${what}: ${r.text.slice(0, 300)}`);
      if (message) t.match(r.json?.message, message, what);
      return r;
    };
    // A path segment with NUL is refused by the routes' segment rule (kube/path-segments.ts), a value of the query by storage's check.
    const inPath = /may not contain control characters|holds a NUL character/;
    await expect('a one-cluster get of a name with NUL', 'GET', `${P}/clusters/east/api/v1/namespaces/ns-1/pods/p%00-1`, 400, inPath);
    await expect('an all-clusters get of a name with NUL', 'GET', `${P}/api/v1/namespaces/ns-1/pods/p%00-1`, 400, inPath);
    await expect('a list in a namespace with NUL', 'GET', `${P}/clusters/east/api/v1/namespaces/ns%00/pods`, 400, inPath);
    await expect('names= with NUL', 'GET', `${P}/api/v1/pods?names=p-1,p%00`, 400, /holds a NUL character/);
    const forged = /continue key is not valid/;
    await expect('a continue token whose key holds NUL', 'GET', `${P}/api/v1/pods?limit=1&continue=${token({ k: ['ns-1', 'p\u0000', 'east'] })}`, 400, forged);
    await expect('a continue token whose orderBy value holds NUL', 'GET', `${P}/api/v1/pods?limit=1&orderBy=name&continue=${token({ o: '[["name",null,false]]', sk: ['p\u0000'] })}`, 400, forged);
    await expect('a continue token whose created range holds NUL', 'GET', `${P}/api/v1/pods?limit=1&createdSince=2020-01-01T00:00:00Z&continue=${token({ c: ['2020\u0000', null] })}`, 400, forged);
    // The proxied write's resourceVersion is translated in storage (Panoptes' rv to the member's) before anything reaches the member.
    const put = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p\u0000-1', namespace: 'ns-1', resourceVersion: '11' }, spec: { containers: [{ name: 'c', image: 'i' }] } };
    await expect('a proxied PUT of a name with NUL, with a resourceVersion', 'PUT', `${P}/clusters/east/api/v1/namespaces/ns-1/pods/p%00-1`, 400, undefined, put);
    t.equal(east.auth.impersonations.length, 0, 'nothing reached the member');

    // Terms past the budget: 500 fuzzy names (SQLite: "Expression tree is too large").
    const fuzzy = range(500, () => 'fuzzyName=pod').join('&');
    await expect('500 fuzzyName terms', 'GET', `${P}/api/v1/pods?${fuzzy}`, 400, /^too many search terms: this request has 500 \(fuzzyName 500\), more than the 100 a request may have/);
    await expect('the same watch, refused before its 200', 'GET', `${P}/api/v1/pods?watch=1&${fuzzy}`, 400, /too many search terms/);
    // 32 namespaces, 1,000 names and 1,000 ownerUIDs (SQLite: "too many SQL variables"): within one statement's budget.
    const names = [...range(998, (i) => `x${i}`), 'p-0', 'p-33'].join(',');
    const uids = [...range(999, (i) => `u${i}`), 'rs-1'].join(',');
    const within = await expect('32 namespaces, 1,000 names and 1,000 ownerUIDs', 'GET', `${P}/api/v1/pods?namespaces=${range(32, (i) => `ns-${i}`).join(',')}&names=${names}&ownerUID=${uids}&limit=500`, 200);
    t.same(within.json.items.map((i: { metadata: { name: string } }) => i.metadata.name), ['p-33'], 'served');
  });
}
