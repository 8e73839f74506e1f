// The hostile-data suite, on SQLite and PostgreSQL: a simulated member holds every hostile
// object of hack/hostile/objects.ts (NUL, lone surrogates and astral characters, 300- and
// 10,000-character owner uids, labels at kube's limits and beyond them, 1 MiB and 1.5 MiB
// objects, an array of 45,000 elements, nesting to kube's 10,000 levels) plus two that
// storage refuses; the real synchro syncs it over HTTP and the real apiserver serves it over
// HTTP, with hostile requests (hack/hostile/requests.ts) besides. Every request answers 2xx
// or 4xx, never 5xx; every wait is bounded; storage equals the member byte for byte but for
// the refused objects, which are quarantined (named in the cluster's status, counted) while
// everything else of their round and of the other cluster commits; a relist does not bring
// the refusal back.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { createApiserver } from '../../apiserver/server.ts';
import { stringifyJson } from '../../kube/json-text.ts';
import { setLogLevel } from '../../lib/log.ts';
import { backends, openTestStore, refuseObjectsHolding, stopTestPostgres } from '../../storage/testing.ts';
import type { KubeObject } from '../../storage/types.ts';
import { SynchroMetrics } from '../../synchro/metrics/metrics.ts';
import { startSynchro } from '../../synchro/synchro.ts';
import { fastTimings, tempDir, waitUntil, writeClusters } from '../../synchro/testutil.ts';
import { startSimClusters } from '../sim/cluster.ts';
import { http, httpRawPath, openWatch } from '../sim/testutil.ts';
import type { KObject } from '../sim/types.ts';
import { memberContent, servedContent } from './compare.ts';
import { blobResource, hugeArrayEntries, labelsAtLimits } from './objects.ts';
import { pathCases, requestCases, writeCases } from './requests.ts';
import { loadHostile } from './sim.ts';

if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');
t.teardown(stopTestPostgres);

const ns = 'hostile';
const R = '/apis/panoptes.io/v1alpha1/resources';
const EM = '/apis/external.metrics.k8s.io/v1beta1';
/** What a test-only database constraint refuses (storage/testing.ts refuseObjectsHolding). */
const marker = 'poison-pill';

const metricsFile = `metrics:
  - name: nul-annotated
    resource: configmaps
    namespaces: [${ns}]
    match:
      - { path: ".metadata.annotations['example.com/nul']", operator: Exists }
  - name: astral-data
    resource: configmaps
    namespaces: [${ns}]
    match:
      - { path: .data.k, operator: In, values: ["emoji \u{1F600} and \u{10FFFF} and \u{1D11E}"] }
  - name: blobs-ready
    resource: ${blobResource.resource}.${blobResource.group}
    namespaces: [${ns}]
    aggregate: sum
    path: .status.ready
`;

for (const backend of backends) {
  t.test(`hostile member data through synchro, list, watch, selectors and external metrics (${backend})`, async (t) => {
    const [east, west] = await startSimClusters(['east', 'west'], { bookmarkIntervalMs: 1000 });
    const load = loadHostile(east, ns);
    // Two objects storage refuses: a name with NUL (PostgreSQL's text cannot hold it, so neither
    // engine stores it) and one a database constraint refuses; plus pods whose node names hold NUL.
    const refused: KObject[] = [
      { metadata: { name: 'bad\u0000name', namespace: ns }, data: { a: '1' } },
      { metadata: { name: 'pill', namespace: ns, annotations: { note: marker } }, data: { a: '1' } },
    ];
    east.bulkCreate('configmaps', refused);
    east.bulkCreate('pods', [
      { metadata: { name: 'p-nul', namespace: ns }, spec: { nodeName: 'node\u0000x', containers: [{ name: 'c', image: 'i' }] } },
      { metadata: { name: 'p-plain', namespace: ns }, spec: { nodeName: 'node-1', containers: [{ name: 'c', image: 'i' }] } },
    ]);
    const nsInfo = west.registry.lookup('', 'v1', 'namespaces')!;
    west.crud.create(nsInfo, 'v1', undefined, { metadata: { name: ns } });
    west.bulkCreate('configmaps', Array.from({ length: 20 }, (_, i) => ({ metadata: { name: `plain-${i}`, namespace: ns }, data: { i: String(i) } })));

    const { store, close } = await openTestStore(backend);
    await refuseObjectsHolding(store, marker);
    const { dir, cleanup } = tempDir();
    const clustersFile = join(dir, 'clusters.yaml');
    const resources = ['configmaps', 'pods', `${blobResource.group}/${blobResource.resource}`];
    writeClusters(clustersFile, [east, west].map((s) => ({ name: s.name, server: s.url, resources })));
    writeFileSync(join(dir, 'metrics.yaml'), metricsFile);
    const metrics = new SynchroMetrics();
    const synchro = await startSynchro({ store, clustersFile, timings: fastTimings, reloadIntervalMs: 50, metrics, compaction: false });
    const api = await createApiserver({ store, externalMetrics: { file: join(dir, 'metrics.yaml'), reloadIntervalMs: 100 } });
    const base = await api.listen('127.0.0.1', 0);
    t.teardown(async () => {
      await synchro.stop();
      await api.close();
      await Promise.all([east.close(), west.close()]);
      await close();
      cleanup();
    });

    // Every answer of the suite, checked at the end: 2xx or 4xx.
    const answers: Array<{ what: string; status: number; text: string }> = [];
    const req = async (path: string, what = path.slice(0, 120)) => {
      const r = await http('GET', `${base}${path}`);
      answers.push({ what, status: r.status, text: r.text.slice(0, 300) });
      return r;
    };

    t.ok(await synchro.waitForInitialSync(60_000), 'initial sync of both clusters, within a minute');
    const stored = load.configMaps.filter((o) => !refused.some((r) => r.metadata.name === o.metadata.name));
    await waitUntil(
      'every storable object of both members listed',
      async () => {
        const r = await req(`${R}/api/v1/namespaces/${ns}/configmaps`);
        return r.status === 200 && r.json.items.length === stored.length + 20;
      },
      30_000,
      200,
    );
    // The apiserver learns which resources are synced from storage, on its own schedule: until
    // it knows the CRD's, a one-cluster read of it goes to the member through the proxy (which
    // this server, authenticating nobody, refuses with 403). Wait for discovery, not for a time.
    for (const view of [R, `${R}/clusters/east`])
      await waitUntil(
        `${blobResource.resource}.${blobResource.group} in the discovery of ${view}`,
        async () => {
          const r = await http('GET', `${base}${view}/apis/${blobResource.group}/${blobResource.version}`);
          return r.status === 200 && (r.json.resources as Array<{ name: string }>).some((x) => x.name === blobResource.resource);
        },
        30_000,
        200,
      );

    t.test('the refused objects are quarantined and named; everything else of their round and of the other cluster commits', async (t) => {
      const cluster = await waitUntil(
        'the quarantine in the Cluster status',
        async () => {
          const r = await req('/apis/panoptes.io/v1alpha1/clusters/east');
          const c = r.json?.status?.conditions?.find((x: { type: string }) => x.type === 'ObjectsQuarantined');
          return c && r.json.status.quarantinedObjects?.length === 2 ? r.json : undefined;
        },
        20_000,
        100,
      );
      const condition = cluster.status.conditions.find((x: { type: string }) => x.type === 'ObjectsQuarantined');
      t.match(condition, { status: 'True', reason: 'StorageRefusedObjects' });
      t.match(condition.message, /configmaps hostile\/pill/, 'the condition names the object: resource, namespace/name');
      t.notMatch(JSON.stringify(cluster.status), new RegExp(marker), 'but never its content');
      t.same(cluster.status.quarantinedObjects.map((q: { name: string }) => q.name).sort(), ['bad\u0000name', 'pill']);
      const total = (await metrics.quarantinedEvents.get()).values.reduce((n, v) => n + v.value, 0);
      t.equal(total, 2, 'panoptes_synchro_quarantined_events_total');
      const west = await req('/apis/panoptes.io/v1alpha1/clusters/west');
      t.notOk(west.json.status.conditions.some((x: { type: string }) => x.type === 'ObjectsQuarantined'), 'the other cluster has nothing quarantined');
    });

    t.test('storage equals the member byte for byte: gets by name (253 characters, astral characters)', async (t) => {
      const one = (o: KObject, path: string) => ({ o, path });
      const all = [
        ...stored.map((o) => one(o, `${R}/clusters/east/api/v1/namespaces/${ns}/configmaps/${encodeURIComponent(o.metadata.name!)}`)),
        ...load.blobs.map((o) => one(o, `${R}/clusters/east/apis/${blobResource.group}/${blobResource.version}/namespaces/${ns}/${blobResource.resource}/${encodeURIComponent(o.metadata.name!)}`)),
      ];
      for (const { o, path } of all) {
        const r = await req(path, `get ${o.metadata.name!.slice(0, 60)}`);
        if (!t.equal(r.status, 200, `get ${o.metadata.name!.slice(0, 60)}`)) continue;
        t.ok(servedContent(r.text) === memberContent(o as KubeObject), `${o.metadata.name!.slice(0, 60)}: the member's content, byte for byte`);
      }
    });

    t.test('lists in pages', async (t) => {
      const pages = async (path: string, limit: number) => {
        const names: string[] = [];
        let cont = '';
        for (let i = 0; i < 50; i++) {
          const r = await req(`${path}?limit=${limit}${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`);
          if (!t.equal(r.status, 200, `page ${i}`)) break;
          names.push(...r.json.items.map((x: KubeObject) => x.metadata!.name!));
          cont = r.json.metadata.continue ?? '';
          if (!cont) break;
        }
        return names.sort();
      };
      t.same(await pages(`${R}/clusters/east/api/v1/namespaces/${ns}/configmaps`, 2), stored.map((o) => o.metadata.name!).sort(), 'configmaps');
      t.same(await pages(`${R}/apis/${blobResource.group}/${blobResource.version}/namespaces/${ns}/${blobResource.resource}`, 1), load.blobs.map((o) => o.metadata.name!).sort(), 'blobs of 1.5 MiB and 10,000 levels, one per page');
    });

    t.test('label and field selectors', async (t) => {
      const names = async (path: string) => {
        const r = await req(path);
        t.equal(r.status, 200, path.slice(0, 120));
        return (r.json?.items ?? []).map((x: KubeObject) => x.metadata!.name!).sort();
      };
      const [key, value] = Object.entries(labelsAtLimits())[0];
      const cms = `${R}/api/v1/namespaces/${ns}/configmaps`;
      t.same(await names(`${cms}?labelSelector=${encodeURIComponent(`${key}=${value}`)}`), ['labels-at-limits'], 'a label key and value at their limits');
      t.same(await names(`${cms}?labelSelector=${encodeURIComponent('replicas>41')}`), ['labels-at-limits'], 'a>N');
      t.same(await names(`${R}/apis/${blobResource.group}/${blobResource.version}/namespaces/${ns}/${blobResource.resource}?labelSelector=nul-value`), ['labels-beyond-kube'], 'a key whose value no selector can name');
      const env = (name: string) => `${R}/apis/${blobResource.group}/${blobResource.version}/namespaces/${ns}/${blobResource.resource}?fieldSelector=${encodeURIComponent(`.spec.containers[*].env[*].name=${name}`)}`;
      t.same(await names(env(`E${hugeArrayEntries - 1}`)), ['huge-array'], `a [*] over ${hugeArrayEntries} elements finds the last`);
      t.same(await names(env('nope')), []);
      t.same(await names(`${R}/api/v1/namespaces/${ns}/pods?fieldSelector=${encodeURIComponent('spec.nodeName=node\u0000x')}`), ['p-nul'], 'a field value with NUL');
      t.same(await names(`${R}/api/v1/namespaces/${ns}/pods?fieldSelector=${encodeURIComponent('spec.nodeName!=node\u0000x')}`), ['p-plain']);
    });

    t.test('external metrics: counts and declared metrics with path and match over the namespace', async (t) => {
      const value = async (metric: string) => {
        const r = await req(`${EM}/namespaces/${ns}/${metric}`);
        t.equal(r.status, 200, `${metric}: ${r.text.slice(0, 200)}`);
        return r.json?.items?.map((i: { value: string }) => i.value);
      };
      t.same(await value('configmaps'), [String(stored.length + 20)], 'count');
      t.same(await value('nul-annotated'), ['1'], 'match Exists over a NUL annotation');
      t.same(await value('astral-data'), ['1'], 'match In over astral characters');
      t.same(await value('blobs-ready'), [String(load.blobs.length)], 'sum over blobs of 1.5 MiB and 10,000 levels');
    });

    t.test('a watch from an rv sends the change of a hostile object', async (t) => {
      const list = await req(`${R}/api/v1/namespaces/${ns}/configmaps?limit=1`);
      const rv = list.json.metadata.resourceVersion as string;
      const w = await openWatch(`${base}${R}/api/v1/namespaces/${ns}/configmaps?watch=1&resourceVersion=${rv}`);
      t.teardown(() => w.close());
      t.equal(w.status, 200);
      const before = east.store.get('/configmaps', ns, 'nul-annotation')!;
      east.bulkCreate('configmaps', [{ ...before, metadata: { ...before.metadata, annotations: { ...before.metadata.annotations, 'example.com/more': 'x\u0000\ud800\u{1F600}' } }, data: { v: 'changed\u0000' } }]);
      const after = east.store.get('/configmaps', ns, 'nul-annotation')!;
      const deadline = Date.now() + 15_000;
      let event: { type: string; object: KubeObject } | undefined;
      while (!event && Date.now() < deadline) {
        const events = await w.waitFor(1, 1000);
        event = events.find((e) => e.type === 'MODIFIED' && e.object?.metadata?.name === 'nul-annotation');
        if (!event && events.length) events.splice(0, events.length);
      }
      if (!t.ok(event, 'MODIFIED within 15 s')) return;
      t.ok(servedContent(stringifyJson(event!.object)) === memberContent(after as KubeObject), "the event carries the member's new content");
    });

    t.test('a selector watch over the 10,000-level object: in when it gains the label, out when it loses it', async (t) => {
      const blobs = `${R}/apis/${blobResource.group}/${blobResource.version}/namespaces/${ns}/${blobResource.resource}`;
      const list = await req(`${blobs}?limit=1`);
      const w = await openWatch(`${base}${blobs}?watch=1&labelSelector=watched%3Dyes&resourceVersion=${list.json.metadata.resourceVersion}`);
      t.teardown(() => w.close());
      const deep = east.store.get(`${blobResource.group}/${blobResource.resource}`, ns, 'nested-max')!;
      east.bulkCreate(`${blobResource.group}/${blobResource.resource}`, [{ ...deep, metadata: { ...deep.metadata, labels: { watched: 'yes' } } }]);
      const labelled = east.store.get(`${blobResource.group}/${blobResource.resource}`, ns, 'nested-max')!;
      east.bulkCreate(`${blobResource.group}/${blobResource.resource}`, [{ ...labelled, metadata: { ...labelled.metadata, labels: { watched: 'no' } } }]);
      const events = await w.waitFor(2, 15_000);
      t.same(events.map((e) => [e.type, e.object?.metadata?.name]), [['ADDED', 'nested-max'], ['DELETED', 'nested-max']], 'ADDED, then DELETED (its state before it stopped matching)');
      if (events[1]) t.ok(servedContent(stringifyJson(events[1].object)) === memberContent(labelled as KubeObject), 'the DELETED event carries the whole object');
    });

    t.test('a relist does not bring the refusal back, and writes go on', async (t) => {
      const count = async () => (await metrics.quarantinedEvents.get()).values.reduce((n, v) => n + v.value, 0);
      const before = await count();
      const relists = async () => (await metrics.relists.get()).values.filter((v) => v.labels.cluster === 'east' && v.labels.reason === 'expired').reduce((n, v) => n + v.value, 0);
      const relistsBefore = await relists();
      east.faults.expireHistory();
      east.faults.dropWatches();
      await waitUntil('east relisted', async () => (await relists()) > relistsBefore, 20_000, 100);
      east.bulkCreate('configmaps', [{ metadata: { name: 'after-relist', namespace: ns }, data: {} }]);
      await waitUntil('the next object is stored', async () => (await req(`${R}/clusters/east/api/v1/namespaces/${ns}/configmaps/after-relist`)).status === 200, 20_000, 100);
      t.equal(await count(), before, 'the quarantined versions were not offered to storage again');
    });

    t.test('hostile requests', async (t) => {
      for (const c of [...requestCases(ns), ...pathCases(ns), ...writeCases()]) {
        const r = await httpRawPath(c.method, base, c.path, c.body, c.headers);
        answers.push({ what: c.name, status: r.status, text: r.text.slice(0, 300) });
        if (c.expect) t.ok(c.expect.includes(r.status), `${c.name}: ${r.status} ${r.text.slice(0, 200)}`);
      }
    });

    t.test('every answer was 2xx or 4xx', async (t) => {
      t.ok(answers.length > 30, `${answers.length} requests`);
      const bad = answers.filter((a) => a.status < 200 || a.status >= 500 || (a.status >= 300 && a.status < 400));
      t.same(bad, [], 'no 5xx');
    });
  });
}
