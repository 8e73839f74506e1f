import t from 'tap';
import type { Store } from './store.ts';
import { backends, openTestStore, stopTestPostgres } from './testing.ts';
import type { ListQuery, OwnerQuery, UpstreamEvent } from './types.ts';

t.teardown(stopTestPostgres);

type Ref = { kind: string; apiVersion: string; name: string; uid: string };

/** An object of `group/resource` with one controller reference (or none). */
function obj(type: UpstreamEvent['type'], group: string, resource: string, kind: string, namespace: string, name: string, uid: string, rv: string, owner?: Ref, extra: Record<string, unknown> = {}): UpstreamEvent {
  return {
    type,
    group,
    version: 'v1',
    resource,
    object: {
      apiVersion: group ? `${group}/v1` : 'v1',
      kind,
      metadata: { name, namespace, uid, resourceVersion: rv, creationTimestamp: '2026-01-01T00:00:00Z', ...(owner ? { ownerReferences: [{ ...owner, controller: true }] } : {}) },
      ...extra,
    },
  };
}
const ref = (kind: string, apiVersion: string, name: string, uid: string): Ref => ({ kind, apiVersion, name, uid });

/**
 * Per cluster: Deployment web → ReplicaSets web-1 (3 pods), web-2 (2 pods); Deployment api →
 * ReplicaSet api-1 (2 pods); CronJob web → Job web-1 → 2 pods; a bare pod; a pod in another
 * namespace naming web-1's uid (absent, as kube's garbage collector holds it); a
 * cluster-scoped owner of a pod. Uids repeat across clusters, so chains must stay in theirs.
 */
function fleet(cluster: string): UpstreamEvent[] {
  const u = (s: string) => `${s}-uid`;
  const dep = ref('Deployment', 'apps/v1', 'web', u('dep-web'));
  const rs1 = ref('ReplicaSet', 'apps/v1', 'web-1', u('rs-web-1'));
  const rs2 = ref('ReplicaSet', 'apps/v1', 'web-2', u('rs-web-2'));
  const api = ref('Deployment', 'apps/v1', 'api', u('dep-api'));
  const rsApi = ref('ReplicaSet', 'apps/v1', 'api-1', u('rs-api-1'));
  const cron = ref('CronJob', 'batch/v1', 'web', u('cron-web'));
  const job = ref('Job', 'batch/v1', 'web-1', u('job-web-1'));
  const node = ref('Node', 'v1', 'n1', u('node-n1'));
  const pod = (name: string, owner?: Ref, ns = 'shop') => obj('ADDED', '', 'pods', 'Pod', ns, name, u(`${cluster}-pod-${name}`), '1', owner);
  return [
    obj('ADDED', 'apps', 'deployments', 'Deployment', 'shop', 'web', dep.uid, '1'),
    obj('ADDED', 'apps', 'deployments', 'Deployment', 'shop', 'api', api.uid, '1'),
    obj('ADDED', 'apps', 'replicasets', 'ReplicaSet', 'shop', 'web-1', rs1.uid, '1', dep),
    obj('ADDED', 'apps', 'replicasets', 'ReplicaSet', 'shop', 'web-2', rs2.uid, '1', dep),
    obj('ADDED', 'apps', 'replicasets', 'ReplicaSet', 'shop', 'api-1', rsApi.uid, '1', api),
    obj('ADDED', 'batch', 'cronjobs', 'CronJob', 'shop', 'web', cron.uid, '1'),
    obj('ADDED', 'batch', 'jobs', 'Job', 'shop', 'web-1', job.uid, '1', cron),
    obj('ADDED', '', 'nodes', 'Node', '', 'n1', node.uid, '1'),
    pod('web-1-a', rs1),
    pod('web-1-b', rs1),
    pod('web-1-c', rs1),
    pod('web-2-a', rs2),
    pod('web-2-b', rs2),
    pod('api-1-a', rsApi),
    pod('api-1-b', rsApi),
    pod('job-a', job),
    pod('job-b', job),
    pod('bare'),
    pod('elsewhere', rs1, 'other'),
    pod('on-node', node, 'other'),
  ];
}

const pods = (owners: OwnerQuery, q: Partial<ListQuery> = {}): ListQuery => ({ group: '', resource: 'pods', owners, ...q });
const names = async (store: Store, q: ListQuery) => (await store.list(q)).items.map((i) => `${i.cluster}/${i.namespace}/${i.name}`);
const deploymentWeb: OwnerQuery = { names: ['web'], group: 'apps', resource: 'deployments', seniority: 1 };

for (const backend of backends) {
  t.test(backend, async (t) => {
    const { store, close } = await openTestStore(backend);
    t.teardown(close);
    await store.applyBatch('east', fleet('east'));
    await store.applyBatch('west', fleet('west'));

    t.test('a Deployment’s pods, through its ReplicaSets, in one query', async (t) => {
      t.same(await names(store, pods(deploymentWeb, { clusters: ['east'] })), ['east/shop/web-1-a', 'east/shop/web-1-b', 'east/shop/web-1-c', 'east/shop/web-2-a', 'east/shop/web-2-b']);
      t.equal((await names(store, pods(deploymentWeb))).length, 10, 'in every cluster, each chain inside its own cluster');
      t.same(await names(store, pods({ ...deploymentWeb, names: ['api'] }, { clusters: ['west'] })), ['west/shop/api-1-a', 'west/shop/api-1-b']);
    });

    t.test('the group-resource tells owners of one name apart', async (t) => {
      t.same(await names(store, pods({ names: ['web'], group: 'batch', resource: 'cronjobs', seniority: 1 }, { clusters: ['east'] })), ['east/shop/job-a', 'east/shop/job-b']);
      t.same(await names(store, pods({ names: ['web'], group: 'apps', resource: 'replicasets', seniority: 1 })), [], 'no ReplicaSet is named web');
    });

    t.test('seniority: direct dependents, a level further, any level', async (t) => {
      t.same(await names(store, pods({ names: ['web-1'], group: 'apps', resource: 'replicasets', seniority: 0 }, { clusters: ['east'] })), ['east/shop/web-1-a', 'east/shop/web-1-b', 'east/shop/web-1-c'], 'the namespaced owner’s reference from another namespace is absent');
      t.same(await names(store, pods({ ...deploymentWeb, seniority: 0 })), [], 'pods are not the Deployment’s own dependents');
      t.equal((await names(store, pods({ ...deploymentWeb, seniority: 'any' }, { clusters: ['east'] }))).length, 5);
      t.same(
        (await store.list({ group: 'apps', resource: 'replicasets', owners: { ...deploymentWeb, seniority: 'any' }, clusters: ['east'] })).items.map((i) => i.name),
        ['web-1', 'web-2'],
        'any level includes the first',
      );
      t.same(await names(store, pods({ names: ['n1'], group: '', resource: 'nodes', seniority: 0 }, { clusters: ['west'] })), ['west/other/on-node'], 'a cluster-scoped owner’s dependents in any namespace');
    });

    t.test('by owner uid with seniority', async (t) => {
      t.equal((await names(store, pods({ uids: ['dep-web-uid'], seniority: 1 }))).length, 10);
      t.same(await names(store, pods({ uids: ['cron-web-uid'], seniority: 1 }, { clusters: ['west'], namespaces: ['shop'] })), ['west/shop/job-a', 'west/shop/job-b']);
      t.same(await names(store, pods({ uids: ['nope'], seniority: 1 })), []);
      await t.rejects(store.list(pods({ uids: ['nope', 'bad\u0000'], seniority: 1 })), { code: 400, message: /holds a NUL character/ }, 'a uid SQL cannot bind is a 400 (storage/bound-values.ts)');
    });

    t.test('paging under churn: one rv, no duplicates, no losses', async (t) => {
      const q = pods(deploymentWeb, { limit: 2 });
      const first = await store.list(q);
      const whole = await names(store, { ...q, limit: undefined, exactRv: first.resourceVersion });
      t.equal(whole.length, 10);
      const seen = first.items.map((i) => `${i.cluster}/${i.namespace}/${i.name}`);
      let token = first.continue;
      for (let page = 1, n = 0; token && page < 50; page++) {
        // A rollout goes on: a new ReplicaSet and pod, an old pod deleted, pods and ReplicaSets modified.
        await store.applyBatch('east', [
          obj('ADDED', 'apps', 'replicasets', 'ReplicaSet', 'shop', `web-new-${page}`, `rs-new-${page}`, String(100 + n++), ref('Deployment', 'apps/v1', 'web', 'dep-web-uid')),
          obj('ADDED', '', 'pods', 'Pod', 'shop', `web-new-${page}-a`, `pod-new-${page}`, String(100 + n++), ref('ReplicaSet', 'apps/v1', `web-new-${page}`, `rs-new-${page}`)),
          obj('MODIFIED', 'apps', 'replicasets', 'ReplicaSet', 'shop', 'web-1', 'rs-web-1-uid', String(100 + n++), ref('Deployment', 'apps/v1', 'web', 'dep-web-uid'), { status: { replicas: page } }),
          ...(page === 1 ? [obj('DELETED', '', 'pods', 'Pod', 'shop', 'web-2-b', 'east-pod-web-2-b-uid', String(100 + n++))] : []),
          obj('MODIFIED', '', 'pods', 'Pod', 'shop', 'web-1-c', 'east-pod-web-1-c-uid', String(100 + n++), ref('ReplicaSet', 'apps/v1', 'web-1', 'rs-web-1-uid'), { status: { phase: `p${page}` } }),
        ]);
        const r = await store.list({ ...q, continue: token });
        t.equal(r.resourceVersion, first.resourceVersion, `page ${page} is read at the first page’s rv`);
        seen.push(...r.items.map((i) => `${i.cluster}/${i.namespace}/${i.name}`));
        token = r.continue;
      }
      t.same(seen, whole, 'the pages hold the list at the first page’s rv, once each');
      t.ok((await names(store, pods(deploymentWeb))).some((n) => n.includes('web-new-')), 'the new ReplicaSet’s pods are listed afterwards');
    });
  });
}
