// Hostile requests: what a client may send the apiserver. Each answer must be 2xx or 4xx
// (never 5xx) and the server must stay up. The hostile-data suite (hostile-e2e.test.ts) sends
// every case after the members' hostile objects are synced. This is the place for request-side
// cases of the write API too (JSON patch bombs, oversized and deeply nested bodies): add them
// to requestCases.

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

export function requestCases(namespace: string): RequestCase[] {
  const cms = `${R}/api/v1/namespaces/${namespace}/configmaps`;
  return [
    { name: 'a field selector value with NUL', method: 'GET', path: `${cms}?fieldSelector=${encodeURIComponent('metadata.name=a\u0000b')}`, expect: [200] },
    { name: 'a field selector value with a lone surrogate (as UTF-8 cannot carry it: U+FFFD)', method: 'GET', path: `${cms}?fieldSelector=metadata.name%3Da%ED%A0%80b`, expect: [200] },
    { name: 'names= with NUL', method: 'GET', path: `${cms}?names=${encodeURIComponent('a\u0000')}` },
    { name: 'a label selector value with NUL', method: 'GET', path: `${cms}?labelSelector=${encodeURIComponent('a=b\u0000')}`, expect: [400] },
    { name: 'a label selector of 100,000 characters', method: 'GET', path: `${cms}?labelSelector=${'a'.repeat(100_000)}` },
    { name: 'a continue token that is not one', method: 'GET', path: `${cms}?limit=1&continue=${encodeURIComponent('\u0000'.repeat(10))}`, expect: [400] },
    { name: 'a resourceVersion past 2^64', method: 'GET', path: `${cms}?resourceVersion=99999999999999999999999&resourceVersionMatch=Exact` },
    { name: 'an object name of 10,000 characters', method: 'GET', path: `${cms}/${'n'.repeat(10_000)}`, expect: [404, 400, 414] },
    { name: 'an object name with NUL', method: 'GET', path: `${cms}/a%00b`, expect: [404, 400] },
    { name: 'an external metric over a namespace with NUL', method: 'GET', path: `/apis/external.metrics.k8s.io/v1beta1/namespaces/a%00b/configmaps` },
  ];
}
