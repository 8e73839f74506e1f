// Collections end to end on both backends: the real kubectl (get, -o yaml, -l with the
// search.panoptes.io/ keys, explain) and @kubernetes/client-node (get, list, Watch) against the
// apiserver (get -w of a collection too), and paging a collection while its kinds change (no duplicates, no losses, one rv).
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CustomObjectsApi, KubeConfig, Watch } from '@kubernetes/client-node';
import t from 'tap';
import { parse } from 'yaml';
import { get } from '../../hack/sim/testutil.ts';
import { setLogLevel } from '../../lib/log.ts';
import { backends, openTestStore, podEvent, seedCluster, stopTestPostgres } from '../../storage/testing.ts';
import type { KubeObject, UpstreamEvent } from '../../storage/types.ts';
import { createApiserver } from '../server.ts';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');
t.teardown(stopTestPostgres);

const apiResources = [
  { group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, singularName: 'pod' },
  { group: 'apps', version: 'v1', resource: 'deployments', kind: 'Deployment', namespaced: true, singularName: 'deployment' },
  { group: 'batch', version: 'v1', resource: 'cronjobs', kind: 'CronJob', namespaced: true, singularName: 'cronjob' },
];

function deployment(ns: string, name: string, rv: string, type: UpstreamEvent['type'] = 'ADDED'): UpstreamEvent {
  return { type, group: 'apps', version: 'v1', resource: 'deployments', object: { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name, namespace: ns, uid: `d-${ns}-${name}`, resourceVersion: rv, creationTimestamp: '2026-01-01T00:00:00Z', labels: { app: name } } } };
}
function cronjob(ns: string, name: string, rv: string): UpstreamEvent {
  return { type: 'ADDED', group: 'batch', version: 'v1', resource: 'cronjobs', object: { apiVersion: 'batch/v1', kind: 'CronJob', metadata: { name, namespace: ns, uid: `c-${ns}-${name}`, resourceVersion: rv, creationTimestamp: '2026-01-01T00:00:00Z', labels: { app: name } } } };
}
const id = (o: KubeObject) => `${o.kind}/${o.metadata?.annotations?.['panoptes.io/cluster']}/${o.metadata?.namespace}/${o.metadata?.name}`;

for (const backend of backends) {
  t.test(backend, async (t) => {
    const { store, close } = await openTestStore(backend);
    for (const c of ['east', 'west']) {
      await seedCluster(store, c, { phase: 'Ready', ready: true, apiResources });
      const events: UpstreamEvent[] = [];
      for (let i = 0; i < 5; i++) {
        events.push(deployment('shop', `web-${i}`, String(10 + i)));
        events.push(cronjob('batch', `nightly-${i}`, String(20 + i)));
        events.push(podEvent('ADDED', 'shop', `web-${i}-abc`, String(30 + i), { labels: { app: `web-${i}` }, owner: 'rs' }));
        events.push(podEvent('ADDED', 'shop', `debug-${i}`, String(40 + i), { labels: { app: 'debug' } }));
      }
      await store.applyBatch(c, events);
    }
    const api = await createApiserver({ store, catalogOptions: { refreshMs: 100 } });
    const base = await api.listen('127.0.0.1', 0);
    const dir = mkdtempSync(join(tmpdir(), 'panoptes-coll-e2e-'));
    t.teardown(async () => {
      await api.close();
      await close();
      rmSync(dir, { recursive: true, force: true });
    });
    const kubectl = (args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
        execFile('kubectl', ['--server', `${base}/apis/panoptes.io/v1alpha1/resources`, '--cache-dir', join(dir, 'cache'), ...args], { timeout: 60_000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) =>
          resolve({ code: err ? 1 : 0, stdout, stderr }),
        ),
      );
    const C = '/apis/panoptes.io/v1alpha1/collectionresources';

    t.test('kubectl', async (t) => {
      const list = await kubectl(['get', 'collectionresources']);
      t.equal(list.code, 0, list.stderr);
      t.match(list.stdout, /^NAME\s+RESOURCES\n/);
      t.match(list.stdout, /\nworkloads\s+deployments\.apps,statefulsets\.apps,daemonsets\.apps,jobs\.batch,cronjobs\.batch,replicasets\.apps \(bare\),pods \(bare\)\n/);

      const w = await kubectl(['get', 'collectionresources', 'workloads']);
      t.equal(w.code, 0, w.stderr);
      const lines = w.stdout.trim().split('\n');
      t.match(lines[0], /^KIND\s+CLUSTER\s+NAMESPACE\s+NAME\s+AGE$/);
      t.equal(lines.length, 1 + 30, 'deployments, cronjobs and the bare pods of both clusters');
      t.ok(lines.some((l) => /^Deployment\.apps\s+east\s+shop\s+web-0\s+\d+d$/.test(l)), 'a Deployment row');
      t.ok(lines.some((l) => /^Pod\s+west\s+shop\s+debug-1\s+\d+d$/.test(l)), 'a bare Pod row');
      t.notOk(lines.some((l) => /web-\d-abc/.test(l)), 'no owned Pod');

      // kubectl prints an object with items as a List of them; --raw shows the CollectionResource.
      const yaml = await kubectl(['get', 'collectionresources', 'workloads', '-o', 'yaml']);
      t.equal(yaml.code, 0, yaml.stderr);
      const objects = parse(yaml.stdout) as { kind: string; items: KubeObject[] };
      t.equal(objects.kind, 'List');
      t.equal(objects.items.length, 30);
      t.same([...new Set(objects.items.map((i) => i.kind))].sort(), ['CronJob', 'Deployment', 'Pod']);
      const raw = await kubectl(['get', '--raw', `${C}/workloads`]);
      t.equal(raw.code, 0, raw.stderr);
      const doc = JSON.parse(raw.stdout) as { kind: string; apiVersion: string; metadata: { name: string; resourceVersion: string }; resourceTypes: unknown[]; items: KubeObject[] };
      t.equal(doc.kind, 'CollectionResource');
      t.equal(doc.apiVersion, 'panoptes.io/v1alpha1');
      t.equal(doc.metadata.name, 'workloads');
      t.equal(doc.items.length, 30);
      t.same(doc.resourceTypes, [
        { group: 'apps', version: 'v1', kind: 'Deployment', resource: 'deployments' },
        { group: 'batch', version: 'v1', kind: 'CronJob', resource: 'cronjobs' },
        { group: '', version: 'v1', kind: 'Pod', resource: 'pods', bare: true },
      ]);

      // -l names no object: the list with search.panoptes.io/collection selects the collection.
      const any = await kubectl(['get', 'collectionresources', '-l', 'search.panoptes.io/collection=any,search.panoptes.io/resources in (pods),app=debug', '-o', 'yaml']);
      t.equal(any.code, 0, any.stderr);
      const anyDoc = parse(any.stdout) as { items: KubeObject[] };
      t.equal(anyDoc.items.length, 10);
      t.ok(anyDoc.items.every((i) => i.kind === 'Pod' && i.metadata?.labels?.app === 'debug'));

      const east = await kubectl(['get', 'collectionresources', '-l', 'search.panoptes.io/collection=workloads,search.panoptes.io/clusters=east,app=web-1']);
      t.equal(east.code, 0, east.stderr);
      t.same(east.stdout.trim().split('\n').slice(1).map((l) => l.split(/\s+/).slice(0, 4).join(' ')), ['Deployment.apps east shop web-1']);

      const chunked = await kubectl(['get', 'collectionresources', '-l', 'search.panoptes.io/collection=workloads', '--chunk-size', '7']);
      t.equal(chunked.code, 0, chunked.stderr);
      t.same(chunked.stdout.trim().split('\n').slice(1), lines.slice(1), 'kubectl pages the list form (limit 7, continue) to the same rows');

      // kubectl get -w: the list form, then its watch, as Tables.
      const watchersBefore = api.deps.watch.stats().watchers;
      const watcher = spawn('kubectl', ['--server', `${base}/apis/panoptes.io/v1alpha1/resources`, '--cache-dir', join(dir, 'cache'), 'get', 'collectionresources', '-l', 'search.panoptes.io/collection=workloads,app=watched', '-w'], { stdio: ['ignore', 'pipe', 'pipe'] });
      let watched = '';
      watcher.stdout.on('data', (d: Buffer) => (watched += d.toString()));
      watcher.stderr.on('data', (d: Buffer) => (watched += d.toString()));
      t.teardown(() => watcher.kill());
      // Its watch open (an empty list prints nothing to wait for), then the change: each wait bounded at 30 s.
      for (let i = 0; i < 300 && api.deps.watch.stats().watchers <= watchersBefore; i++) await new Promise((r) => setTimeout(r, 100));
      t.ok(api.deps.watch.stats().watchers > watchersBefore, "kubectl's watch is open before the change");
      const watchedEvent = deployment('shop', 'watched', '800');
      watchedEvent.object.metadata!.labels = { app: 'watched' };
      await store.applyBatch('east', [watchedEvent]);
      for (let i = 0; i < 300 && !/Deployment\.apps\s+east\s+shop\s+watched/.test(watched); i++) await new Promise((r) => setTimeout(r, 100));
      t.match(watched, /Deployment\.apps\s+east\s+shop\s+watched\s+\d+d/, `kubectl -w shows the new object of the collection: ${watched}`);
      watcher.kill();

      const noTerms = await kubectl(['get', 'collectionresources', 'any']);
      t.not(noTerms.code, 0);
      t.match(noTerms.stderr, /groups= or resources=/);

      const explain = await kubectl(['explain', 'collectionresources']);
      t.equal(explain.code, 0, explain.stderr);
      t.match(explain.stdout, /KIND:\s+CollectionResource/);
      t.match(explain.stdout, /one list of several kinds/);
      const explainTypes = await kubectl(['explain', 'collectionresources.resourceTypes']);
      t.match(explainTypes.stdout, /bare\s+<boolean>/);
    });

    t.test('@kubernetes/client-node: get, list and Watch', async (t) => {
      const kc = new KubeConfig();
      kc.loadFromOptions({ clusters: [{ name: 'p', server: base, skipTLSVerify: true }], users: [{ name: 'u' }], contexts: [{ name: 'p', cluster: 'p', user: 'u' }], currentContext: 'p' });
      const custom = kc.makeApiClient(CustomObjectsApi);
      const all = (await custom.listClusterCustomObject({ group: 'panoptes.io', version: 'v1alpha1', plural: 'collectionresources' })) as { items: Array<{ metadata: { name: string } }> };
      t.same(all.items.map((i) => i.metadata.name), ['any', 'workloads']);
      const workloads = (await custom.getClusterCustomObject({ group: 'panoptes.io', version: 'v1alpha1', name: 'workloads', plural: 'collectionresources' })) as { metadata: { resourceVersion: string }; items: KubeObject[] };
      t.equal(workloads.items.length, 31, 'and the one kubectl -w saw added');

      const events: Array<{ type: string; id: string; rv: number }> = [];
      let done: (err?: unknown) => void = () => undefined;
      const ended = new Promise((r) => (done = r));
      const req = await new Watch(kc).watch(
        `${C}/workloads`,
        { resourceVersion: workloads.metadata.resourceVersion },
        (type, obj: KubeObject) => events.push({ type, id: id(obj), rv: Number(obj.metadata?.resourceVersion) }),
        (err) => done(err),
      );
      t.teardown(() => req.abort());
      await store.applyBatch('east', [deployment('shop', 'new', '900'), podEvent('ADDED', 'shop', 'owned', '901', { owner: 'rs' }), cronjob('batch', 'new', '902')]);
      await store.applyBatch('west', [deployment('shop', 'web-0', '903', 'DELETED')]);
      for (let i = 0; i < 600 && events.length < 3; i++) await new Promise((r) => setTimeout(r, 50));
      t.same(events.map((e) => `${e.type} ${e.id}`), ['ADDED Deployment/east/shop/new', 'ADDED CronJob/east/batch/new', 'DELETED Deployment/west/shop/web-0'], 'every kind of the collection, the owned pod left out');
      t.same(events.map((e) => e.rv), [...events.map((e) => e.rv)].sort((a, b) => a - b), 'in rv order');
      req.abort();
      await Promise.race([ended, new Promise((r) => setTimeout(r, 1000))]);
    });

    t.test('paging under churn: no duplicates, no losses, one rv', async (t) => {
      const snapshot = (await get(`${base}${C}/workloads`)).json as { items: KubeObject[] };
      const want = snapshot.items.map(id);
      const seen: string[] = [];
      const rvs = new Set<string>();
      let token = '';
      for (let page = 0; page < 100; page++) {
        const r = await get(`${base}${C}/workloads?limit=4${token ? `&continue=${encodeURIComponent(token)}` : ''}`);
        t.equal(r.status, 200, `page ${page}: ${r.status === 200 ? 'OK' : r.text}`);
        rvs.add(r.json.metadata.resourceVersion);
        seen.push(...(r.json.items as KubeObject[]).map(id));
        token = r.json.continue ?? '';
        if (!token) break;
        // Between pages: objects of every kind added, deleted and changed.
        await store.applyBatch('east', [deployment('aaa', `early-${page}`, String(1000 + page)), deployment('shop', `web-${page % 5}`, String(2000 + page), page % 2 ? 'MODIFIED' : 'DELETED'), podEvent('ADDED', 'zzz', `late-${page}`, String(3000 + page))]);
      }
      t.equal(new Set(seen).size, seen.length, 'no duplicates');
      t.same(seen, want, 'exactly the snapshot of the first page');
      t.equal(rvs.size, 1, 'one rv');
    });
  });
}
