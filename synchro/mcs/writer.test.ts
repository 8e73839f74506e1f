// The writes of one consumer, against an in-memory member: the live object is read first;
// nothing without Panoptes' mark, nor another installation's, is updated or deleted; no slice
// or ServiceImport goes beside a Service that is not this installation's; a slice of another
// Service or source is left alone; objects written before installations had ids are adopted
// or deleted by the rules of ownership.ts; an object already as planned is not written; writes
// are conditional on what was read; a failed request says which it was; no write starts once
// the lease is gone or about to end; and the Membership says how long a lease is surely held.
import t from 'tap';
import { annotations, installationLabel, managedByLabel, managedByValue } from '../../api/multicluster-service.ts';
import { logger } from '../../lib/log.ts';
import { HttpError, type ConditionalAnswer, type WritableClusterClient } from '../../member/client.ts';
import { clusterLease } from '../../storage/leases.ts';
import { backends, openTestStore, stopTestPostgres } from '../../storage/testing.ts';
import type { KubeObject } from '../../storage/types.ts';
import { defaultShardSettings, Membership } from '../membership/membership.ts';
import { SynchroMetrics } from '../metrics/metrics.ts';
import '../testutil.ts'; // warnings and errors only in the test's output
import type { Op } from './diff.ts';
import { collectionPath, LeaseGoneError, MemberRequestError, MemberWriter, type LeaseCheck } from './writer.ts';

t.teardown(stopTestPostgres);

const ID = 'aaaabbbbcccc';
const mark = { [managedByLabel]: managedByValue, [installationLabel]: ID };
const KEY = { namespace: 'shop', name: 'web', installation: ID };
const servicePath = `${collectionPath('Service', 'shop')}/web`;
/** A Service of the key in the member: this installation's (the default), or with other labels. */
const putService = (m: FakeMember, labels: Record<string, string> = mark) => m.objects.set(servicePath, { metadata: { name: 'web', namespace: 'shop', uid: 'svc', resourceVersion: '2', labels }, spec: { ports: [{ name: 'http', port: 80 }] } });

/** A member's objects by path, with kube's resourceVersion checks, recording every request. */
class FakeMember implements WritableClusterClient {
  readonly server = 'https://member.test/';
  readonly warnings = [];
  readonly objects = new Map<string, KubeObject>();
  readonly requests: string[] = [];
  private rv = 10;
  /** Answers 409 to the next PUT of this path (someone wrote in between). */
  conflictOnce?: string;
  /** Deletes this path just before the next write to it (someone deleted it in between). */
  vanishOnce?: string;

  private vanish(path: string): void {
    if (this.vanishOnce !== path) return;
    this.vanishOnce = undefined;
    this.objects.delete(path);
  }

  private stamp(o: KubeObject, uid?: string): KubeObject {
    return { ...structuredClone(o), metadata: { ...o.metadata, uid: uid ?? o.metadata?.uid ?? `uid-${this.rv}`, resourceVersion: String(++this.rv) } };
  }
  async get<T>(path: string): Promise<T> {
    this.requests.push(`GET ${path}`);
    const o = this.objects.get(path);
    if (!o) throw new HttpError(404, 'HTTP 404 NotFound', 'NotFound');
    return structuredClone(o) as T;
  }
  async getConditional<T>(path: string): Promise<ConditionalAnswer<T>> {
    return { notModified: false, body: await this.get<T>(path), contentType: 'application/json' };
  }

  async stream(): Promise<never> {
    throw new Error('no watch here');
  }
  close(): void {}
  async create<T>(path: string, body: unknown): Promise<T> {
    const o = body as KubeObject;
    const at = `${path}/${o.metadata?.name}`;
    this.requests.push(`POST ${path}`);
    if (this.objects.has(at)) throw new HttpError(409, 'HTTP 409 AlreadyExists', 'AlreadyExists');
    const stored = this.stamp(o);
    this.objects.set(at, stored);
    return structuredClone(stored) as T;
  }
  async update<T>(path: string, body: unknown): Promise<T> {
    this.requests.push(`PUT ${path}`);
    this.vanish(path);
    const status = path.endsWith('/status');
    const at = status ? path.slice(0, -'/status'.length) : path;
    const cur = this.objects.get(at);
    const o = body as KubeObject;
    if (!cur) throw new HttpError(404, 'HTTP 404 NotFound', 'NotFound');
    if (this.conflictOnce === path || o.metadata?.resourceVersion !== cur.metadata?.resourceVersion) {
      this.conflictOnce = undefined;
      cur.metadata!.resourceVersion = String(++this.rv);
      throw new HttpError(409, 'HTTP 409 Conflict', 'Conflict');
    }
    const next = status ? { ...cur, status: o.status } : { ...o, status: cur.status };
    const stored = this.stamp(next, cur.metadata?.uid);
    this.objects.set(at, stored);
    return structuredClone(stored) as T;
  }
  async delete<T>(path: string, opts: { preconditions?: { uid?: string; resourceVersion?: string } } = {}): Promise<T> {
    this.requests.push(`DELETE ${path} ${JSON.stringify(opts.preconditions ?? {})}`);
    this.vanish(path);
    const cur = this.objects.get(path);
    if (!cur) throw new HttpError(404, 'HTTP 404 NotFound', 'NotFound');
    if (opts.preconditions?.resourceVersion && opts.preconditions.resourceVersion !== cur.metadata?.resourceVersion) throw new HttpError(409, 'HTTP 409 Conflict', 'Conflict');
    this.objects.delete(path);
    return {} as T;
  }
}

const leaseFor = (ms: () => number): LeaseCheck => ({
  signal: new AbortController().signal,
  remainingMs: () => {
    const left = ms();
    if (left <= 0) throw new LeaseGoneError('gone');
    return left;
  },
});

const slicePath = `${collectionPath('EndpointSlice', 'shop')}/east-a`;
const slice = (ips: string[], extra: Partial<KubeObject> = {}): KubeObject => ({
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
  metadata: { name: 'east-a', namespace: 'shop', labels: { ...mark, 'kubernetes.io/service-name': 'web' }, annotations: { [annotations.source]: 'east/shop/a' } },
  addressType: 'IPv4',
  endpoints: ips.map((ip) => ({ addresses: [ip] })),
  ports: [],
  ...extra,
});
const op = (verb: Op['verb'], desired?: KubeObject, kind: Op['kind'] = 'EndpointSlice', name = 'east-a'): Op => ({ kind, verb, name, ...(desired ? { desired } : {}) });
const writesOf = (m: FakeMember) => m.requests.filter((r) => !r.startsWith('GET'));

t.test('one object at a time: read first, write only what differs, conditionally', async (t) => {
  const m = new FakeMember();
  putService(m);
  const w = new MemberWriter(m, leaseFor(() => 5000), 1000, KEY);
  const created = await w.apply(op('create', slice(['10.0.0.1'])));
  t.same(created.writes, ['create']);
  t.same(writesOf(m), [`POST ${collectionPath('EndpointSlice', 'shop')}`]);
  const again = await w.apply(op('update', slice(['10.0.0.1'])));
  t.same(again.writes, [], 'already as planned: nothing written');
  t.equal(again.rv, created.rv);
  const updated = await w.apply(op('update', slice(['10.0.0.1', '10.0.0.2'])));
  t.same(updated.writes, ['update']);
  t.equal((m.objects.get(slicePath)!.endpoints as unknown[]).length, 2);
  m.conflictOnce = slicePath;
  const retried = await w.apply(op('update', slice(['10.0.0.3'])));
  t.same(retried.writes, ['update'], 'a 409 (written in between): read again and write once more');
  t.same(m.objects.get(slicePath)!.endpoints, [{ addresses: ['10.0.0.3'] }]);
  const replaced = await w.apply(op('update', slice(['fd00::1'], { addressType: 'IPv6' })));
  t.same(replaced.writes, ['delete', 'create'], 'addressType is immutable: replaced');
  const uid = m.objects.get(slicePath)!.metadata!.uid;
  const rv = m.objects.get(slicePath)!.metadata!.resourceVersion;
  m.requests.length = 0;
  const deleted = await w.apply(op('delete'));
  t.same(deleted.writes, ['delete']);
  t.same(writesOf(m), [`DELETE ${slicePath} ${JSON.stringify({ uid, resourceVersion: rv })}`], 'the delete carries the uid and resourceVersion it read');
  t.same((await w.apply(op('delete'))).writes, [], 'already gone: nothing');

  await w.apply(op('create', slice(['10.0.0.1'])));
  m.vanishOnce = slicePath;
  t.same((await w.apply(op('delete'))).writes, [], 'deleted by someone between the read and the delete: as wanted, no error');
  await w.apply(op('create', slice(['10.0.0.1'])));
  m.vanishOnce = slicePath;
  const recreated = await w.apply(op('update', slice(['10.0.0.4'])));
  t.same(recreated.writes, ['create'], 'deleted between the read and the update: read again, created');
  t.same(m.objects.get(slicePath)!.endpoints, [{ addresses: ['10.0.0.4'] }]);
});

t.test("nothing without Panoptes' mark is updated or deleted", async (t) => {
  const m = new FakeMember();
  const own: KubeObject = { metadata: { name: 'web', namespace: 'shop', uid: 'theirs', resourceVersion: '3' }, spec: { selector: { app: 'web' }, ports: [{ port: 80 }] } };
  m.objects.set(`${collectionPath('Service', 'shop')}/web`, own);
  m.objects.set(slicePath, slice(['10.9.9.9'], { metadata: { name: 'east-a', namespace: 'shop', resourceVersion: '4', labels: { 'kubernetes.io/service-name': 'web' } } }));
  putService(m, {}); // the consumer's own Service (no mark)
  m.objects.set(servicePath, { ...own });
  const w = new MemberWriter(m, leaseFor(() => 5000), 1000, KEY);
  const desired: KubeObject = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'shop', labels: mark }, spec: { type: 'ClusterIP', ports: [{ name: 'http', port: 80, protocol: 'TCP' }] } };
  for (const o of [op('create', desired, 'Service', 'web'), op('update', desired, 'Service', 'web'), op('delete', undefined, 'Service', 'web'), op('update', slice(['10.0.0.1'])), op('delete')]) {
    const r = await w.apply(o);
    t.same(r.writes, [], `${o.verb} ${o.kind}: nothing written`);
    t.match(r.conflict, /without Panoptes' mark \(app.kubernetes.io\/managed-by=panoptes.io\): left alone/);
  }
  t.same(writesOf(m), [], 'not one write request');
  t.same(m.objects.get(`${collectionPath('Service', 'shop')}/web`), own);
});

t.test('a ServiceImport: created, then its status (a subresource)', async (t) => {
  const m = new FakeMember();
  putService(m);
  const w = new MemberWriter(m, leaseFor(() => 5000), 1000, KEY);
  const si: KubeObject = { apiVersion: 'multicluster.x-k8s.io/v1alpha1', kind: 'ServiceImport', metadata: { name: 'web', namespace: 'shop', labels: mark }, spec: { type: 'ClusterSetIP', ports: [] }, status: { clusters: [{ cluster: 'east' }] } };
  const r = await w.apply(op('create', si, 'ServiceImport', 'web'));
  t.same(r.writes, ['create', 'update']);
  t.same(writesOf(m), [`POST ${collectionPath('ServiceImport', 'shop')}`, `PUT ${collectionPath('ServiceImport', 'shop')}/web/status`]);
  t.same(m.objects.get(`${collectionPath('ServiceImport', 'shop')}/web`)!.status, { clusters: [{ cluster: 'east' }] });
  t.same((await w.apply(op('update', si, 'ServiceImport', 'web'))).writes, [], 'as planned: nothing');
});

t.test('no write starts without the lease, or too close to its end', async (t) => {
  const m = new FakeMember();
  putService(m);
  let left = 5000;
  const w = new MemberWriter(m, leaseFor(() => left), 1000, KEY);
  left = 0;
  await t.rejects(w.apply(op('create', slice(['10.0.0.1']))), LeaseGoneError);
  t.same(writesOf(m), [], 'nothing written');
  left = 5000;
  await w.apply(op('create', slice(['10.0.0.1'])));
  left = 0;
  await t.rejects(w.apply(op('delete')), LeaseGoneError);
  t.ok(m.objects.has(slicePath), 'not deleted');
});

t.test("no slice nor ServiceImport beside a Service that is not this installation's", async (t) => {
  const si: KubeObject = { apiVersion: 'multicluster.x-k8s.io/v1alpha1', kind: 'ServiceImport', metadata: { name: 'web', namespace: 'shop', labels: mark }, spec: { type: 'ClusterSetIP', ports: [] }, status: { clusters: [] } };
  const cases: Array<[string, ((m: FakeMember) => void) | undefined, RegExp]> = [
    ["the consumer's own Service (kubernetes, kube-dns, anything it made)", (m) => putService(m, {}), /Service shop\/web there is the consumer's own: Panoptes adds nothing to a Service it did not create/],
    ["another installation's", (m) => putService(m, { ...mark, [installationLabel]: 'ddddeeeeffff' }), /another Panoptes installation's/],
    ['one written before installations had ids, not adopted yet', (m) => putService(m, { [managedByLabel]: managedByValue }), /not adopted by this installation yet/],
    ['none at all (storage had not seen it go)', undefined, /Service shop\/web there is not there/],
  ];
  for (const [name, setup, why] of cases) {
    const m = new FakeMember();
    setup?.(m);
    const w = new MemberWriter(m, leaseFor(() => 5000), 1000, KEY);
    for (const o of [op('create', slice(['10.0.0.1'])), op('create', si, 'ServiceImport', 'web')]) {
      const r = await w.apply(o);
      t.same(r.writes, [], `${name}: ${o.kind} not written`);
      t.match(r.conflict, why, `${name}: ${o.kind}: says why`);
    }
    t.same(writesOf(m), [], `${name}: not one write`);
    t.equal(m.requests.filter((r) => r === `GET ${servicePath}`).length, 1, `${name}: the Service is read once per batch`);
  }
  const m = new FakeMember();
  const w = new MemberWriter(m, leaseFor(() => 5000), 1000, KEY);
  const desired: KubeObject = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'shop', labels: mark }, spec: { type: 'ClusterIP', ports: [{ name: 'http', port: 80, protocol: 'TCP' }] } };
  t.same((await w.apply(op('create', desired, 'Service', 'web'))).writes, ['create']);
  t.same((await w.apply(op('create', slice(['10.0.0.1'])))).writes, ['create'], 'once its own Service is created in the batch, its slices follow (without reading it again)');
  t.equal(m.requests.filter((r) => r === `GET ${servicePath}`).length, 1);
});

t.test("storage's copy says the Service is this installation's: a slice already there is updated without reading the Service; a new one still checks it", async (t) => {
  const m = new FakeMember();
  putService(m, {}); // meanwhile the consumer's own: storage has not seen it yet
  m.objects.set(slicePath, slice(['10.9.9.9'], { metadata: { name: 'east-a', namespace: 'shop', resourceVersion: '4', labels: { ...mark, 'kubernetes.io/service-name': 'web' }, annotations: { [annotations.source]: 'east/shop/a' } } }));
  const w = new MemberWriter(m, leaseFor(() => 5000), 1000, { ...KEY, serviceMine: true });
  t.same((await w.apply(op('update', slice(['10.0.0.1'])))).writes, ['update'], 'an update of its own slice: one GET and one PUT');
  t.equal(m.requests.filter((r) => r === `GET ${servicePath}`).length, 0, 'no read of the Service on the path of an endpoint change');
  const other = slice(['10.0.0.2'], { metadata: { name: 'east-b', namespace: 'shop', labels: { ...mark, 'kubernetes.io/service-name': 'web' }, annotations: { [annotations.source]: 'east/shop/b' } } });
  const created = await w.apply({ kind: 'EndpointSlice', verb: 'create', name: 'east-b', desired: other });
  t.same(created.writes, [], 'a new slice: the live Service is read, and it is not this installation\'s');
  t.match(created.conflict, /the consumer's own: Panoptes adds nothing to a Service it did not create/);
});

t.test("another installation's objects, and slices of another Service or source, are left alone", async (t) => {
  const m = new FakeMember();
  putService(m);
  const otherId = { ...mark, [installationLabel]: 'ddddeeeeffff' };
  m.objects.set(slicePath, slice(['10.9.9.9'], { metadata: { name: 'east-a', namespace: 'shop', resourceVersion: '4', labels: { ...otherId, 'kubernetes.io/service-name': 'web' } } }));
  const w = new MemberWriter(m, leaseFor(() => 5000), 1000, KEY);
  for (const o of [op('update', slice(['10.0.0.1'])), op('delete')]) t.match((await w.apply(o)).conflict, /written by another Panoptes installation \(panoptes.io\/installation=ddddeeeeffff\): left alone/, `${o.verb}: refused`);
  m.objects.set(slicePath, slice(['10.9.9.9'], { metadata: { name: 'east-a', namespace: 'shop', resourceVersion: '5', labels: { ...mark, 'kubernetes.io/service-name': 'a-web' } } }));
  for (const o of [op('update', slice(['10.0.0.1'])), op('delete')]) t.match((await w.apply(o)).conflict, /belongs to Service shop\/a-web, not web: left alone/, `${o.verb}: a slice of another Service of the same name`);
  m.objects.set(slicePath, slice(['10.9.9.9'], { metadata: { name: 'east-a', namespace: 'shop', resourceVersion: '6', labels: { ...mark, 'kubernetes.io/service-name': 'web' }, annotations: { [annotations.source]: 'east-a/shop/x' } } }));
  t.match((await w.apply(op('update', slice(['10.0.0.1'])))).conflict, /holds the endpoints of east-a\/shop\/x, not east\/shop\/a: left alone/, 'a slice of another source under the same name');
  t.same(writesOf(m), [], 'not one write');
});

t.test('objects Panoptes wrote before installations had ids: adopted with the Service, or deleted where the Service is nobody\'s', async (t) => {
  const legacy = { [managedByLabel]: managedByValue };
  const legacySlice = () => slice(['10.9.9.9'], { metadata: { name: 'east-a', namespace: 'shop', resourceVersion: '4', labels: { ...legacy, 'kubernetes.io/service-name': 'web' }, annotations: { [annotations.source]: 'east/shop/a' } } });
  const desired: KubeObject = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'shop', labels: mark }, spec: { type: 'ClusterIP', ports: [{ name: 'http', port: 80, protocol: 'TCP' }] } };

  const m = new FakeMember();
  putService(m, legacy);
  m.objects.set(slicePath, legacySlice());
  const w = new MemberWriter(m, leaseFor(() => 5000), 1000, KEY);
  const adopted = await w.apply(op('update', desired, 'Service', 'web'));
  t.same(adopted.writes, ['update'], 'the Service: updated with the id, conditional on the version read');
  t.equal(m.objects.get(servicePath)!.metadata!.labels![installationLabel], ID);
  const sliceAdopted = await w.apply(op('update', slice(['10.0.0.1'])));
  t.same(sliceAdopted.writes, ['update'], 'its slice, now beside this installation\'s Service: adopted');
  t.equal(m.objects.get(slicePath)!.metadata!.labels![installationLabel], ID);

  // Two installations adopt the same version: the second one's update is refused (409), it reads the first one's id.
  const race = new FakeMember();
  putService(race, legacy);
  const theirs = { ...mark, [installationLabel]: 'ddddeeeeffff' };
  const orig = race.update.bind(race);
  let raced = false;
  race.update = async <T>(path: string, body: unknown): Promise<T> => {
    if (!raced && path === servicePath) {
      raced = true;
      const cur = race.objects.get(servicePath)!;
      race.objects.set(servicePath, { ...cur, metadata: { ...cur.metadata, resourceVersion: '99', labels: theirs } });
    }
    return orig(path, body);
  };
  const lost = await new MemberWriter(race, leaseFor(() => 5000), 1000, KEY).apply(op('update', desired, 'Service', 'web'));
  t.match(lost.conflict, /written by another Panoptes installation \(panoptes.io\/installation=ddddeeeeffff\)/, 'exactly one installation adopts it');
  t.equal(race.objects.get(servicePath)!.metadata!.labels![installationLabel], 'ddddeeeeffff');

  const cases: Array<[string, Record<string, string> | undefined, boolean]> = [
    ["the consumer's own Service (it provides it itself)", {}, true],
    ['no Service at all', undefined, true],
    ["another installation's Service", theirs, false],
    ['a Service without an id either (not adopted yet)', legacy, false],
  ];
  for (const [name, svcLabels, deleted] of cases) {
    const c = new FakeMember();
    if (svcLabels) putService(c, svcLabels);
    c.objects.set(slicePath, legacySlice());
    const r = await new MemberWriter(c, leaseFor(() => 5000), 1000, KEY).apply(op('delete'));
    t.same(r.writes, deleted ? ['delete'] : [], `a legacy slice planned away beside ${name}: ${deleted ? 'deleted' : 'left alone'}`);
  }
  const unwanted = new FakeMember();
  putService(unwanted, legacy);
  t.match((await new MemberWriter(unwanted, leaseFor(() => 5000), 1000, KEY).apply(op('delete', undefined, 'Service', 'web'))).conflict, /before installations had ids and this installation does not want it: left alone/, 'a legacy Service nobody here wants: left in place');
});

t.test('a failed request says which it was (for the failure policy)', async (t) => {
  const m = new FakeMember();
  putService(m);
  m.create = async () => {
    throw new HttpError(403, 'HTTP 403 Forbidden', 'Forbidden', 'endpointslices "east-a" is forbidden: exceeded quota: q, requested: count/endpointslices.discovery.k8s.io=1, used: 10, limited: 10');
  };
  const err = await new MemberWriter(m, leaseFor(() => 5000), 1000, KEY).apply(op('create', slice(['10.0.0.1']))).catch((e: unknown) => e);
  t.ok(err instanceof MemberRequestError);
  t.match(err, { verb: 'create', kind: 'EndpointSlice', objectName: 'east-a', cause: { status: 403, statusMessage: /exceeded quota/ } });
});

for (const backend of backends) {
  t.test(`${backend}: Membership.remainingMs: how long a lease is surely held, 0 once given up`, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    const settings = defaultShardSettings({ identity: 'm1', leaseTtlMs: 3000 });
    const m = new Membership(store, settings, new SynchroMetrics(), logger('test'), () => undefined);
    t.teardown(() => m.stop());
    m.start();
    await m.join();
    const lease = clusterLease('east');
    t.equal(m.remainingMs(lease), 0, 'not held');
    t.ok((await m.acquire(lease)) !== undefined);
    const left = m.remainingMs(lease);
    t.ok(left > 1500 && left <= 3000 - 600, `held: until the watchdog's deadline, before the TTL (${Math.round(left)} ms)`);
    await m.release(lease, 'rebalance');
    t.equal(m.remainingMs(lease), 0, 'released');
  });
}
