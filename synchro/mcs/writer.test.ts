// The writes of one consumer, against an in-memory member: the live object is read first;
// nothing without Panoptes' mark is updated or deleted; an object already as planned is not
// written; writes are conditional on what was read; no write starts once the lease is gone or
// about to end; and the Membership says how long a lease is surely held.
import t from 'tap';
import { managedByLabel, managedByValue } from '../../api/multicluster-service.ts';
import { logger } from '../../lib/log.ts';
import { HttpError, type WritableClusterClient } from '../../member/client.ts';
import { clusterLease } from '../../storage/leases.ts';
import { backends, openTestStore, stopTestPostgres } from '../../storage/testing.ts';
import type { KubeObject } from '../../storage/types.ts';
import { defaultShardSettings, Membership } from '../membership.ts';
import { SynchroMetrics } from '../metrics.ts';
import '../testutil.ts'; // warnings and errors only in the test's output
import type { Op } from './diff.ts';
import { collectionPath, LeaseGoneError, MemberWriter, type LeaseCheck } from './writer.ts';

t.teardown(stopTestPostgres);

const mark = { [managedByLabel]: managedByValue };

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
  metadata: { name: 'east-a', namespace: 'shop', labels: { ...mark, 'kubernetes.io/service-name': 'web' } },
  addressType: 'IPv4',
  endpoints: ips.map((ip) => ({ addresses: [ip] })),
  ports: [],
  ...extra,
});
const op = (verb: Op['verb'], desired?: KubeObject, kind: Op['kind'] = 'EndpointSlice', name = 'east-a'): Op => ({ kind, verb, name, ...(desired ? { desired } : {}) });
const writesOf = (m: FakeMember) => m.requests.filter((r) => !r.startsWith('GET'));

t.test('one object at a time: read first, write only what differs, conditionally', async (t) => {
  const m = new FakeMember();
  const w = new MemberWriter(m, leaseFor(() => 5000), 1000);
  const created = await w.apply(op('create', slice(['10.0.0.1'])), 'shop');
  t.same(created.writes, ['create']);
  t.same(writesOf(m), [`POST ${collectionPath('EndpointSlice', 'shop')}`]);
  const again = await w.apply(op('update', slice(['10.0.0.1'])), 'shop');
  t.same(again.writes, [], 'already as planned: nothing written');
  t.equal(again.rv, created.rv);
  const updated = await w.apply(op('update', slice(['10.0.0.1', '10.0.0.2'])), 'shop');
  t.same(updated.writes, ['update']);
  t.equal((m.objects.get(slicePath)!.endpoints as unknown[]).length, 2);
  m.conflictOnce = slicePath;
  const retried = await w.apply(op('update', slice(['10.0.0.3'])), 'shop');
  t.same(retried.writes, ['update'], 'a 409 (written in between): read again and write once more');
  t.same(m.objects.get(slicePath)!.endpoints, [{ addresses: ['10.0.0.3'] }]);
  const replaced = await w.apply(op('update', slice(['fd00::1'], { addressType: 'IPv6' })), 'shop');
  t.same(replaced.writes, ['delete', 'create'], 'addressType is immutable: replaced');
  const uid = m.objects.get(slicePath)!.metadata!.uid;
  const rv = m.objects.get(slicePath)!.metadata!.resourceVersion;
  m.requests.length = 0;
  const deleted = await w.apply(op('delete'), 'shop');
  t.same(deleted.writes, ['delete']);
  t.same(writesOf(m), [`DELETE ${slicePath} ${JSON.stringify({ uid, resourceVersion: rv })}`], 'the delete carries the uid and resourceVersion it read');
  t.same((await w.apply(op('delete'), 'shop')).writes, [], 'already gone: nothing');

  await w.apply(op('create', slice(['10.0.0.1'])), 'shop');
  m.vanishOnce = slicePath;
  t.same((await w.apply(op('delete'), 'shop')).writes, [], 'deleted by someone between the read and the delete: as wanted, no error');
  await w.apply(op('create', slice(['10.0.0.1'])), 'shop');
  m.vanishOnce = slicePath;
  const recreated = await w.apply(op('update', slice(['10.0.0.4'])), 'shop');
  t.same(recreated.writes, ['create'], 'deleted between the read and the update: read again, created');
  t.same(m.objects.get(slicePath)!.endpoints, [{ addresses: ['10.0.0.4'] }]);
});

t.test("nothing without Panoptes' mark is updated or deleted", async (t) => {
  const m = new FakeMember();
  const own: KubeObject = { metadata: { name: 'web', namespace: 'shop', uid: 'theirs', resourceVersion: '3' }, spec: { selector: { app: 'web' }, ports: [{ port: 80 }] } };
  m.objects.set(`${collectionPath('Service', 'shop')}/web`, own);
  m.objects.set(slicePath, slice(['10.9.9.9'], { metadata: { name: 'east-a', namespace: 'shop', resourceVersion: '4', labels: { 'kubernetes.io/service-name': 'web' } } }));
  const w = new MemberWriter(m, leaseFor(() => 5000), 1000);
  const desired: KubeObject = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'shop', labels: mark }, spec: { type: 'ClusterIP', ports: [{ name: 'http', port: 80, protocol: 'TCP' }] } };
  for (const o of [op('create', desired, 'Service', 'web'), op('update', desired, 'Service', 'web'), op('delete', undefined, 'Service', 'web'), op('update', slice(['10.0.0.1'])), op('delete')]) {
    const r = await w.apply(o, 'shop');
    t.same(r.writes, [], `${o.verb} ${o.kind}: nothing written`);
    t.match(r.conflict, /without Panoptes' mark: left alone/);
  }
  t.same(writesOf(m), [], 'not one write request');
  t.same(m.objects.get(`${collectionPath('Service', 'shop')}/web`), own);
});

t.test('a ServiceImport: created, then its status (a subresource)', async (t) => {
  const m = new FakeMember();
  const w = new MemberWriter(m, leaseFor(() => 5000), 1000);
  const si: KubeObject = { apiVersion: 'multicluster.x-k8s.io/v1alpha1', kind: 'ServiceImport', metadata: { name: 'web', namespace: 'shop', labels: mark }, spec: { type: 'ClusterSetIP', ports: [] }, status: { clusters: [{ cluster: 'east' }] } };
  const r = await w.apply(op('create', si, 'ServiceImport', 'web'), 'shop');
  t.same(r.writes, ['create', 'update']);
  t.same(writesOf(m), [`POST ${collectionPath('ServiceImport', 'shop')}`, `PUT ${collectionPath('ServiceImport', 'shop')}/web/status`]);
  t.same(m.objects.get(`${collectionPath('ServiceImport', 'shop')}/web`)!.status, { clusters: [{ cluster: 'east' }] });
  t.same((await w.apply(op('update', si, 'ServiceImport', 'web'), 'shop')).writes, [], 'as planned: nothing');
});

t.test('no write starts without the lease, or too close to its end', async (t) => {
  const m = new FakeMember();
  let left = 5000;
  const w = new MemberWriter(m, leaseFor(() => left), 1000);
  left = 0;
  await t.rejects(w.apply(op('create', slice(['10.0.0.1'])), 'shop'), LeaseGoneError);
  t.same(writesOf(m), [], 'nothing written');
  left = 5000;
  await w.apply(op('create', slice(['10.0.0.1'])), 'shop');
  left = 0;
  await t.rejects(w.apply(op('delete'), 'shop'), LeaseGoneError);
  t.ok(m.objects.has(slicePath), 'not deleted');
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
