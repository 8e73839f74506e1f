// Hostile requests: what a client may send the apiserver. Each answer must be 2xx or 4xx
// (never 5xx) and the server must stay up: values SQL cannot bind (forged continue tokens,
// names with NUL), terms past one request's budget and terms just within it. The hostile-data suite (hostile-e2e.test.ts) sends
// every case after the members' hostile objects are synced: reads with hostile parameters,
// then the write API's bombs (hack/testing/patch-bombs.ts: JSON patch amplification, bodies
// oversized, deeply nested or expanding) against a Cluster object, each with the answer it must
// get, on whichever storage the suite runs on; and every traversal spelling of a path segment
// (hack/testing/path-traversal.ts) on each route, refused with 400 (404 for an empty segment).
import { bodyBombs, patchBombs } from '../testing/patch-bombs.ts';
import { traversalSpellings } from '../testing/path-traversal.ts';

export interface RequestCase {
  name: string;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Path and query, from the apiserver's root. */
  path: string;
  headers?: Record<string, string>;
  body?: string;
  /** The status codes that are right (default: any 2xx or 4xx). */
  expect?: number[];
}

const R = '/apis/panoptes.io/v1alpha1/resources';

const clusters = '/apis/panoptes.io/v1alpha1/clusters';

/** The Cluster object the write cases patch: a member that is not there (nothing is sent to it). */
export const writeTarget = 'hostile-target';

/** The write API's cases: the target created, every patch bomb on it, every body bomb as a create, then the target read back. */
export function writeCases(): RequestCase[] {
  const target = `${clusters}/${writeTarget}`;
  const create = { apiVersion: 'panoptes.io/v1alpha1', kind: 'Cluster', metadata: { name: writeTarget }, spec: { server: 'https://member.example.com:6443' } };
  return [
    { name: 'create the target Cluster', method: 'POST', path: clusters, headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(create), expect: [201] },
    ...patchBombs().map((b): RequestCase => ({ name: `PATCH: ${b.name}`, method: 'PATCH', path: target, headers: { 'Content-Type': b.contentType }, body: b.body, expect: [b.expect.code] })),
    ...bodyBombs().map((b): RequestCase => ({ name: `POST: ${b.name}`, method: 'POST', path: clusters, headers: { 'Content-Type': b.contentType }, body: b.body, expect: [b.expect.code] })),
    { name: 'the target is still served', method: 'GET', path: target, expect: [200] },
  ];
}

/** A continue token as the apiserver writes one (storage/continue.ts), with `body` forged into it. */
const forgedToken = (body: Record<string, unknown>) => Buffer.from(JSON.stringify({ v: 1, rv: 2, k: ['ns', 'a', 'east'], s: 1, ...body })).toString('base64url');

const many = (n: number, f: (i: number) => string) => Array.from({ length: n }, (_, i) => f(i)).join(',');

export function requestCases(namespace: string, cluster = 'east'): RequestCase[] {
  const cms = `${R}/api/v1/namespaces/${namespace}/configmaps`;
  const fuzzy = Array.from({ length: 500 }, () => 'fuzzyName=abc').join('&');
  return [
    // Every string of a continue token is bound into SQL (storage/bound-values.ts): PostgreSQL answered these 500.
    { name: 'a forged continue token whose key holds NUL', method: 'GET', path: `${cms}?limit=1&continue=${forgedToken({ k: [namespace, 'a\u0000', cluster] })}`, expect: [400] },
    { name: 'a forged continue token whose orderBy value holds NUL', method: 'GET', path: `${cms}?limit=1&orderBy=name&continue=${forgedToken({ o: '[["name",null,false]]', sk: ['a\u0000'] })}`, expect: [400] },
    { name: 'a forged continue token whose creation range holds NUL', method: 'GET', path: `${cms}?limit=1&createdSince=2020-01-01T00:00:00Z&continue=${forgedToken({ c: ['2020\u0000', null] })}`, expect: [400] },
    { name: 'a one-cluster get of a name with NUL', method: 'GET', path: `${R}/clusters/${cluster}/api/v1/namespaces/${namespace}/configmaps/a%00b`, expect: [400] },
    // Past the budget of one request's terms (storage/term-budget.ts): SQLite's expression depth before.
    { name: '500 fuzzyName terms', method: 'GET', path: `${cms}?${fuzzy}`, expect: [400] },
    { name: 'a watch with 500 fuzzyName terms, refused before its 200', method: 'GET', path: `${cms}?watch=1&timeoutSeconds=1&${fuzzy}`, expect: [400] },
    // Within it: SQLite's "too many SQL variables" before (one scan per namespace, each binding every value).
    { name: '32 namespaces, 1,000 names and 1,000 ownerUIDs', method: 'GET', path: `${R}/api/v1/configmaps?namespaces=${many(31, (i) => `n${i}`)},${namespace}&names=${many(1000, (i) => `m${i}`)}&ownerUID=${many(1000, (i) => `u${i}`)}&limit=500`, expect: [200] },
    { name: 'a field selector value with NUL', method: 'GET', path: `${cms}?fieldSelector=${encodeURIComponent('metadata.name=a\u0000b')}`, expect: [200] },
    { name: 'a field selector value with a lone surrogate (as UTF-8 cannot carry it: U+FFFD)', method: 'GET', path: `${cms}?fieldSelector=metadata.name%3Da%ED%A0%80b`, expect: [200] },
    { name: 'names= with NUL', method: 'GET', path: `${cms}?names=${encodeURIComponent('a\u0000')}`, expect: [400] },
    { name: 'a label selector value with NUL', method: 'GET', path: `${cms}?labelSelector=${encodeURIComponent('a=b\u0000')}`, expect: [400] },
    { name: 'a label selector of 100,000 characters', method: 'GET', path: `${cms}?labelSelector=${'a'.repeat(100_000)}` },
    { name: 'a continue token that is not one', method: 'GET', path: `${cms}?limit=1&continue=${encodeURIComponent('\u0000'.repeat(10))}`, expect: [400] },
    { name: 'a resourceVersion past 2^64', method: 'GET', path: `${cms}?resourceVersion=99999999999999999999999&resourceVersionMatch=Exact` },
    { name: 'an object name of 10,000 characters', method: 'GET', path: `${cms}/${'n'.repeat(10_000)}`, expect: [404, 400, 414] },
    { name: 'an object name with NUL', method: 'GET', path: `${cms}/a%00b`, expect: [400] },
    { name: 'an external metric over a namespace with NUL', method: 'GET', path: `/apis/external.metrics.k8s.io/v1beta1/namespaces/a%00b/configmaps` },
  ];
}

/** Every traversal spelling where a namespace or a name goes, on each route: stored reads, the proxy (read, write, subresource), fleet metrics, the own kinds. Sent with the path as is. */
export function pathCases(namespace: string): RequestCase[] {
  const routes: Array<{ name: string; method: RequestCase['method']; path: (x: string) => string; body?: string }> = [
    { name: 'stored list, namespace', method: 'GET', path: (x) => `${R}/clusters/east/api/v1/namespaces/${x}/configmaps` },
    { name: 'stored get, name', method: 'GET', path: (x) => `${R}/api/v1/namespaces/${namespace}/configmaps/${x}` },
    { name: 'proxied read, namespace', method: 'GET', path: (x) => `${R}/clusters/east/api/v1/namespaces/${x}/secrets` },
    { name: 'proxied subresource, name', method: 'GET', path: (x) => `${R}/clusters/east/api/v1/namespaces/${namespace}/pods/${x}/log` },
    { name: 'proxied write, namespace', method: 'POST', path: (x) => `${R}/clusters/east/api/v1/namespaces/${x}/configmaps`, body: '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}' },
    { name: 'fleet metrics, namespace', method: 'GET', path: (x) => `${R}/apis/metrics.k8s.io/v1beta1/namespaces/${x}/pods` },
    { name: 'a Cluster, name', method: 'GET', path: (x) => `${clusters}/${x}` },
  ];
  return routes.flatMap((r) =>
    traversalSpellings.map((s): RequestCase => ({
      name: `${r.name}: ${s.name}`,
      method: r.method,
      path: r.path(s.segment),
      ...(r.body ? { body: r.body, headers: { 'Content-Type': 'application/json' } } : {}),
      expect: s.segment === '' ? [404] : [400],
    })),
  );
}
