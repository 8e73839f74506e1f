// The simulated clusters of hack/bench/synchro.ts, in their own process so that they do not
// share synchro's event loop. Driven over IPC; reports when each churn event happened
// (cluster, upstream resourceVersion, wall time in ms) so the parent can measure
// upstream-event-to-commit lag.
import { startSimClusters, type SimCluster } from '../sim/cluster.ts';
import type { KObject } from '../sim/types.ts';

type Msg =
  | { cmd: 'start'; clusters: number; workload?: boolean }
  | { cmd: 'bulk'; cluster: number; count: number; namespaces: number; bytes?: number; prefix?: string }
  | { cmd: 'churn'; ratePerCluster: number }
  | { cmd: 'stop-churn' }
  | { cmd: 'lists' }
  | { cmd: 'exit' };

let clusters: SimCluster[] = [];
let pending: Array<[string, string, number]> = [];
let flushTimer: NodeJS.Timeout | undefined;
const now = () => performance.timeOrigin + performance.now();
const send = (m: unknown) => process.send!(m);

process.on('message', async (m: Msg) => {
  switch (m.cmd) {
    case 'start':
      clusters = await startSimClusters(Array.from({ length: m.clusters }, (_, i) => `bench-${i}`), { historySize: 50_000, workload: m.workload });
      send({ ok: 'start', urls: clusters.map((c) => c.url) });
      break;
    case 'bulk': {
      const c = clusters[m.cluster];
      for (let i = 0; i < m.namespaces; i++) {
        if (!c.store.get('/namespaces', undefined, `bench-${i}`)) c.crud.create(c.registry.lookup('', 'v1', 'namespaces')!, 'v1', undefined, { metadata: { name: `bench-${i}` } });
      }
      const objects: KObject[] = [];
      // Padding to about m.bytes of JSON per object (without it, about 500 bytes).
      const pad = m.bytes ? 'x'.repeat(Math.max(0, m.bytes - 500)) : undefined;
      for (let i = 0; i < m.count; i++) {
        objects.push({
          metadata: {
            name: `${m.prefix ?? 'cm-'}${i.toString(36).padStart(5, '0')}`,
            namespace: `bench-${i % m.namespaces}`,
            labels: { app: `app-${i % 50}`, 'app.kubernetes.io/part-of': 'bench' },
            annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{"apiVersion":"v1","kind":"ConfigMap"}' },
            managedFields: [{ manager: 'kubectl', operation: 'Update', apiVersion: 'v1', time: '2024-01-01T00:00:00Z', fieldsType: 'FieldsV1', fieldsV1: { 'f:data': {} } }],
          },
          data: { 'config.yaml': `replicas: ${i % 7}\nimage: registry.example.com/app:${i % 13}\nfeature: on\n`, index: String(i), ...(pad ? { padding: pad } : {}) },
        });
      }
      c.bulkCreate('configmaps', objects);
      send({ ok: 'bulk', rv: c.store.resourceVersion });
      break;
    }
    case 'churn':
      for (const c of clusters) {
        for (const id of ['/configmaps', '/pods']) c.store.subscribe(id, (e) => pending.push([c.name, String(e.rv), now()]));
        c.churn.start({ ratePerSecond: m.ratePerCluster, seed: clusters.indexOf(c) + 1, maxObjects: 2000 });
      }
      flushTimer = setInterval(() => {
        if (pending.length === 0) return;
        send({ times: pending });
        pending = [];
      }, 50);
      send({ ok: 'churn' });
      break;
    case 'stop-churn':
      for (const c of clusters) c.churn.stop();
      clearInterval(flushTimer);
      if (pending.length) send({ times: pending });
      pending = [];
      send({ ok: 'stop-churn', stats: clusters.map((c) => c.churn.status()) });
      break;
    case 'lists':
      // Every cluster's configmaps and pods: [resource/namespace/name, uid@resourceVersion].
      send({
        ok: 'lists',
        lists: clusters.map((c) =>
          ['/configmaps', '/pods'].flatMap((id) => c.store.list(id).items.map((o) => [`${id.slice(1)}/${o.metadata.namespace ?? ''}/${o.metadata.name}`, `${o.metadata.uid}@${o.metadata.resourceVersion}`])),
        ),
      });
      break;
    case 'exit':
      await Promise.all(clusters.map((c) => c.close()));
      send({ ok: 'exit' });
      process.exit(0);
  }
});
send({ ok: 'ready' });
