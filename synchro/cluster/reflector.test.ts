// The reflector's list-and-reconcile against a scripted member cluster (pages and errors in
// a fixed order), on a real Store: what a relist leaves in storage when its continue token
// expires half-way, and when the resource's served version moved.
import { PassThrough } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import t, { type Test } from 'tap';
import { logger } from '../../lib/log.ts';
import type { Store } from '../../storage/store.ts';
import { clusterLease } from '../../storage/leases.ts';
import { openTestStore, takeLease } from '../../storage/testing.ts';
import type { KubeObject } from '../../storage/types.ts';
import { Batcher, defaultBatcherOptions } from '../commit/batcher.ts';
import { HttpError, type ClusterClient, type ConditionalAnswer } from '../../member/client.ts';
import { AnswerTooLargeError } from '../../member/answer-size.ts';
import { Committer } from '../commit/committer.ts';
import { SynchroMetrics } from '../metrics/metrics.ts';
import { Reflector } from './reflector.ts';
import type { ApiResource } from './resources.ts';
import { waitUntil } from '../testutil.ts';

type Page = { metadata: { resourceVersion: string; continue?: string }; items: KubeObject[] };

/** A member that answers list requests from a script (a page or an error each), and holds watches open. */
class ScriptedMember implements ClusterClient {
  readonly server = 'http://scripted.invalid';
  readonly warnings: readonly string[] = [];
  readonly requests: string[] = [];
  private readonly watches: PassThrough[] = [];
  constructor(private readonly script: Array<Page | Error>) {}

  async get<T>(path: string): Promise<T> {
    this.requests.push(path);
    const next = this.script.shift();
    if (!next) throw new HttpError(500, 'script exhausted');
    if (next instanceof Error) throw next;
    return structuredClone(next) as T;
  }

  async getConditional<T>(path: string): Promise<ConditionalAnswer<T>> {
    return { notModified: false, body: await this.get<T>(path), contentType: 'application/json' };
  }

  async stream(path: string): Promise<IncomingMessage> {
    this.requests.push(path);
    const s = new PassThrough();
    this.watches.push(s);
    return s as unknown as IncomingMessage;
  }

  close(): void {
    for (const w of this.watches) w.end();
  }
}

const cm = (name: string, rv: string, apiVersion = 'v1'): KubeObject => ({ apiVersion, kind: 'ConfigMap', metadata: { name, namespace: 'ns', uid: `uid-${name}`, resourceVersion: rv } });

async function reflect(t: Test, resource: ApiResource, member: ScriptedMember, seed: (store: Store) => Promise<void> = async () => {}) {
  const { store, close } = await openTestStore('sqlite');
  t.teardown(close);
  await seed(store);
  const metrics = new SynchroMetrics();
  const log = logger('test');
  const committer = new Committer(store, defaultBatcherOptions('sqlite'), metrics, log);
  const batcher = new Batcher(committer, 'm', defaultBatcherOptions('sqlite'), metrics, log, { fence: await takeLease(store, clusterLease('m')) });
  const refl = new Reflector({ cluster: 'm', client: member, store, batcher, resource, metrics, log, pageSize: 2, backoff: { initialMs: 10, maxMs: 20 } });
  t.teardown(async () => {
    member.close();
    await refl.stop();
    await batcher.close();
    await committer.close();
  });
  refl.start();
  await waitUntil('the list is complete', () => refl.hasSynced, 10_000, 10);
  return store;
}

const configmaps: ApiResource = { group: '', version: 'v1', resource: 'configmaps', kind: 'ConfigMap', namespaced: true };

t.test('a list restarted after an expired continue token deletes what only the abandoned pages had', async (t) => {
  const member = new ScriptedMember([
    // The first list: page 1 at rv 100 has x, then its continue token expires.
    { metadata: { resourceVersion: '100', continue: 'token-1' }, items: [cm('a', '90'), cm('x', '95')] },
    new HttpError(410, 'The provided continue parameter is too old', 'Expired'),
    // The fresh list at rv 200: x was deleted upstream meanwhile.
    { metadata: { resourceVersion: '200', continue: 'token-2' }, items: [cm('a', '90'), cm('b', '150')] },
    { metadata: { resourceVersion: '200' }, items: [cm('c', '160')] },
  ]);
  const store = await reflect(t, configmaps, member);
  const names = (await store.list({ group: '', resource: 'configmaps' })).items.map((o) => o.name);
  t.same(names, ['a', 'b', 'c'], 'x, written from the abandoned page, is gone');
  const types = (await store.changesAfter(1, 100)).map((c) => `${c.type} ${c.name}`);
  t.same(types, ['ADDED a', 'ADDED x', 'ADDED b', 'ADDED c', 'DELETED x']);
  t.same(member.requests.filter((p) => !p.includes('watch')).length, 4);
});

t.test('a page larger than Panoptes reads of an answer is asked for again, smaller, from the same place', async (t) => {
  const member = new ScriptedMember([
    { metadata: { resourceVersion: '100', continue: 'token-1' }, items: [cm('a', '90'), cm('b', '91')] },
    new AnswerTooLargeError(256 * 1024 * 1024),
    { metadata: { resourceVersion: '100', continue: 'token-2' }, items: [cm('c', '92')] },
    { metadata: { resourceVersion: '100' }, items: [cm('d', '93')] },
  ]);
  const store = await reflect(t, configmaps, member);
  t.same((await store.list({ group: '', resource: 'configmaps' })).items.map((o) => o.name), ['a', 'b', 'c', 'd'], 'every object synced');
  t.same(member.requests.filter((p) => !p.includes('watch')).map((p) => new URLSearchParams(p.slice(p.indexOf('?') + 1)).toString()), ['limit=2', 'limit=2&continue=token-1', 'limit=1&continue=token-1', 'limit=1&continue=token-2']);
});

t.test('a relist at a new served version re-serves unchanged objects at it', async (t) => {
  const widgets = (version: string): ApiResource => ({ group: 'example.com', version, resource: 'widgets', kind: 'Widget', namespaced: true });
  const w = (name: string, version: string): KubeObject => ({ apiVersion: `example.com/${version}`, kind: 'Widget', metadata: { name, namespace: 'ns', uid: `uid-${name}`, resourceVersion: '10' } });
  const member = new ScriptedMember([{ metadata: { resourceVersion: '300' }, items: [w('w1', 'v1'), w('w2', 'v1')] }]);
  const store = await reflect(t, widgets('v1'), member, async (store) => {
    await store.applyBatch('m', [w('w1', 'v1beta1'), w('w2', 'v1beta1')].map((object) => ({ type: 'ADDED' as const, group: 'example.com', version: 'v1beta1', resource: 'widgets', object })));
  });
  const items = (await store.list({ group: 'example.com', resource: 'widgets' })).items;
  t.same(items.map((i) => i.version), ['v1', 'v1']);
  t.same(items.map((i) => (JSON.parse(i.object) as KubeObject).apiVersion), ['example.com/v1', 'example.com/v1']);
  const changes = await store.changesAfter(1, 100);
  t.same(changes.map((c) => `${c.type} ${c.name} ${c.version}`), ['ADDED w1 v1beta1', 'ADDED w2 v1beta1', 'MODIFIED w1 v1', 'MODIFIED w2 v1']);
});

t.test('a relist writes nothing for objects unchanged at the same version', async (t) => {
  const member = new ScriptedMember([{ metadata: { resourceVersion: '300' }, items: [cm('a', '10'), cm('b', '11')] }]);
  const store = await reflect(t, configmaps, member, async (store) => {
    await store.applyBatch('m', [cm('a', '10'), cm('b', '11')].map((object) => ({ type: 'ADDED' as const, group: '', version: 'v1', resource: 'configmaps', object })));
  });
  t.equal(await store.watermark(), 3, 'no change after the two seeded ones');
});
