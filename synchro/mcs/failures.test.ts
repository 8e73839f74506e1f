// The dispatcher's failure policy, against a fake consumer: a failure is the key's own (its
// backoff, its own error, every other key goes on) unless it is provably the dispatcher's
// identity — a 401, or a 403 a SelfSubjectAccessReview confirms — which blocks the consumer (401)
// or that namespace of it (403) for a backoff; a run of failures keeps the time it began; the
// key's first batch without a failure ends its record.
import t from 'tap';
import { HttpError, type WritableClusterClient } from '../../member/client.ts';
import { ConsumerFailures } from './failures.ts';
import { MemberRequestError } from './writer.ts';

/** A consumer that answers SelfSubjectAccessReviews with `allowed` (undefined: the review fails), recording them. */
function consumer(allowed: boolean | undefined) {
  const reviews: unknown[] = [];
  const client = {
    async create(path: string, body: { spec?: { resourceAttributes?: unknown } }) {
      if (path !== '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews') throw new Error(`unexpected ${path}`);
      reviews.push(body.spec?.resourceAttributes);
      if (allowed === undefined) throw new HttpError(503, 'HTTP 503 ServiceUnavailable', 'ServiceUnavailable');
      return { status: { allowed } };
    },
  } as unknown as WritableClusterClient;
  return { client, reviews };
}

const opts = { forbiddenBackoff: { initialMs: 10_000, maxMs: 300_000 }, errorBackoff: { initialMs: 1000, maxMs: 60_000 } };
const tenantA = { namespace: 'tenant-a', name: 'web' };
const tenantA2 = { namespace: 'tenant-a', name: 'api' };
const tenantB = { namespace: 'tenant-b', name: 'web' };
const signal = new AbortController().signal;
const forbidden = (text: string) => new MemberRequestError('create', 'EndpointSlice', 'web-1', undefined, new HttpError(403, 'HTTP 403 Forbidden', 'Forbidden', text));

t.test("a 403 the review does not confirm is the object's own: its key waits, nothing else", async (t) => {
  for (const [why, text] of [
    ['a full ResourceQuota', 'endpointslices "web-1" is forbidden: exceeded quota: q, requested: count/endpointslices.discovery.k8s.io=1, used: 10, limited: 10'],
    ['a Terminating namespace', 'endpointslices "web-1" is forbidden: unable to create new content in namespace tenant-a because it is being terminated'],
    ['a LimitRange', 'endpointslices "web-1" is forbidden: maximum cpu usage per Container is 1'],
  ]) {
    const f = new ConsumerFailures('lab', opts);
    const { client, reviews } = consumer(true);
    const w = await f.failed(tenantA, forbidden(text), client, signal, 1000);
    t.equal(w.identity, false, `${why}: not the identity's`);
    t.same(reviews, [{ verb: 'create', group: 'discovery.k8s.io', resource: 'endpointslices', namespace: 'tenant-a' }], `${why}: checked with a SelfSubjectAccessReview of the request`);
    t.same(w.reason, { reason: 'Forbidden', message: `writing EndpointSlice tenant-a/web-1 in cluster lab: HTTP 403 Forbidden: ${text}` }, `${why}: its own object's error, nothing about RBAC`);
    t.ok(f.waiting(tenantA), `${why}: that key waits`);
    t.notOk(f.waiting(tenantA2), `${why}: another key of the namespace does not`);
    t.notOk(f.waiting(tenantB), `${why}: another tenant does not`);
  }
});

t.test('5xx, 429, timeouts, unreachable, and a review that cannot be made: the key\'s own', async (t) => {
  const errs = [
    new MemberRequestError('update', 'Service', 'web', undefined, new HttpError(500, 'HTTP 500 InternalError', 'InternalError', 'etcd leader changed')),
    new MemberRequestError('update', 'Service', 'web', undefined, new HttpError(429, 'HTTP 429 TooManyRequests', 'TooManyRequests')),
    Object.assign(new Error('timeout of 1000 ms'), { code: 'ETIMEDOUT' }),
  ];
  for (const err of errs) {
    const f = new ConsumerFailures('lab', opts);
    const w = await f.failed(tenantA, err, consumer(true).client, signal, 1000);
    t.equal(w.identity, false, err.message);
    t.notOk(f.waiting(tenantB), `${err.message}: the other keys go on`);
  }
  const f = new ConsumerFailures('lab', opts);
  const w = await f.failed(tenantA, forbidden('nope'), consumer(undefined).client, signal, 1000);
  t.equal(w.identity, false, 'a 403 whose review fails proves nothing about the identity');
});

t.test("the dispatcher's identity: a 403 the review confirms blocks its namespace; a 401 the consumer", async (t) => {
  const f = new ConsumerFailures('lab', opts);
  const w = await f.failed(tenantA, forbidden('endpointslices is forbidden: User "panoptes" cannot create resource "endpointslices"'), consumer(false).client, signal, 1000);
  t.equal(w.identity, true);
  t.match(w.reason, { reason: 'Forbidden', message: /^the dispatcher's identity in cluster lab may not create endpointslices\.discovery\.k8s\.io in namespace tenant-a \(.*confirmed by a SelfSubjectAccessReview\): give it the role of manifests\/member-cluster\/dispatcher\/$/ });
  t.ok(f.waiting(tenantA2)?.identity, 'every key of that namespace waits');
  t.notOk(f.waiting(tenantB), 'another namespace does not');
  const g = new ConsumerFailures('lab', opts);
  const u = await g.failed(tenantA, new MemberRequestError('get', 'Service', 'web', undefined, new HttpError(401, 'HTTP 401 Unauthorized', 'Unauthorized')), consumer(true).client, signal, 1000);
  t.equal(u.identity, true);
  t.ok(g.waiting(tenantB)?.identity, '401: every key of the consumer waits');
  t.match(u.reason.message, /^cluster lab refuses the dispatcher's credentials/);
});

t.test("a create's 404: NamespaceNotFound only when the consumer says the namespace is not found", async (t) => {
  const notFound = (text: string) => new MemberRequestError('create', 'ServiceImport', 'web', undefined, new HttpError(404, 'HTTP 404 NotFound', 'NotFound', text));
  const cases: Array<[string, string, string]> = [
    ['the namespace is missing (NamespaceLifecycle admission)', 'namespaces "tenant-a" not found', 'NamespaceNotFound'],
    ['the kind is not served (its CRD went)', 'the server could not find the requested resource', 'NotFound'],
    ['another namespace named', 'namespaces "tenant-b" not found', 'NotFound'],
  ];
  for (const [why, text, reason] of cases) {
    const w = await new ConsumerFailures('lab', opts).failed(tenantA, notFound(text), consumer(true).client, signal, 1000);
    t.same(w.reason, { reason, message: `writing ServiceImport tenant-a/web in cluster lab: HTTP 404 NotFound: ${text}` }, why);
    t.equal(w.identity, false, `${why}: the key's own`);
  }
});

t.test('backoff per key, the time a run of failures began, and its end', async (t) => {
  const f = new ConsumerFailures('lab', { ...opts, errorBackoff: { initialMs: 1000, maxMs: 8000 } });
  const client = consumer(true).client;
  const t0 = performance.now();
  const delays: number[] = [];
  for (let i = 0; i < 5; i++) delays.push((await f.failed(tenantA, forbidden('exceeded quota'), client, signal, 1000)).until - t0);
  t.ok(delays[1] > delays[0] && delays[2] > delays[1], `growing: ${delays.map(Math.round).join(', ')} ms`);
  t.ok(delays[4] <= 8000 * 1.1 + 100, 'bounded by its maximum');
  const since = f.failingSince(tenantA);
  t.match(since, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  await f.failed(tenantA, forbidden('exceeded quota'), client, signal, 1000);
  t.equal(f.failingSince(tenantA), since, 'the run keeps the time it began');
  t.notOk(f.waiting(tenantA, performance.now() + 60_000), 'after its backoff it may be written again');
  f.succeeded(tenantA);
  t.equal(f.failingSince(tenantA), undefined, 'a batch without a failure ends it');
  t.notOk(f.waiting(tenantA));
});
