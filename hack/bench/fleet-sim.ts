// The simulated clusters of hack/bench/fleet.ts, in a process of their own: a thousand small
// clusters, each with a realistic mix of objects (Deployments, their ReplicaSets and Pods,
// Services, ConfigMaps, Namespaces), static (no controllers: the mix stays as created).
// Driven over IPC (hack/bench/sim-process.ts).
import { startSimCluster, type SimCluster } from '../sim/cluster.ts';
import type { KObject } from '../sim/types.ts';

type Msg =
  | { cmd: 'start'; clusters: number; objectsPerCluster: number; basePort?: number }
  | { cmd: 'touch'; cluster: number; seq: number }
  | { cmd: 'exit' };

let clusters: SimCluster[] = [];
const send = (m: unknown) => process.send!(m);

/** One cluster's objects, in groups of 86: a namespace, 5 Deployments, each with a ReplicaSet, 6 Pods, a Service and 8 ConfigMaps. */
export function fleetMix(cluster: number, objects: number): Record<string, KObject[]> {
  const out: Record<string, KObject[]> = { namespaces: [], 'deployments.apps': [], 'replicasets.apps': [], pods: [], services: [], configmaps: [] };
  const groups = Math.max(1, Math.round(objects / 86)); // 86 objects a group
  for (let g = 0; g < groups; g++) {
    const ns = `team-${g}`;
    out.namespaces.push({ metadata: { name: ns, labels: { team: `t${g % 7}` } } });
    for (let d = 0; d < 5; d++) {
      const app = `app-${g}-${d}`;
      const labels = { app, tier: d % 2 ? 'web' : 'api', 'app.kubernetes.io/part-of': `suite-${g % 3}` };
      const depUid = `dep-${cluster}-${g}-${d}`;
      const rsUid = `rs-${cluster}-${g}-${d}`;
      const hash = (cluster * 7919 + g * 31 + d).toString(36).padStart(5, 'x').slice(-5);
      const template = { metadata: { labels }, spec: { containers: [{ name: 'main', image: `registry.example.com/${app}:1.${g % 9}`, ports: [{ containerPort: 8080, protocol: 'TCP' }], resources: { requests: { cpu: '100m', memory: '128Mi' } } }] } };
      out['deployments.apps'].push({ metadata: { name: app, namespace: ns, uid: depUid, labels }, spec: { replicas: 6, selector: { matchLabels: { app } }, template }, status: { replicas: 6, readyReplicas: 6, availableReplicas: 6 } });
      out['replicasets.apps'].push({
        metadata: { name: `${app}-${hash}`, namespace: ns, uid: rsUid, labels: { ...labels, 'pod-template-hash': hash }, ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: app, uid: depUid, controller: true, blockOwnerDeletion: true }] },
        spec: { replicas: 6, selector: { matchLabels: { app, 'pod-template-hash': hash } }, template },
        status: { replicas: 6, readyReplicas: 6 },
      });
      for (let p = 0; p < 6; p++) {
        out.pods.push({
          metadata: { name: `${app}-${hash}-${p.toString(36)}${g.toString(36)}`, namespace: ns, labels: { ...labels, 'pod-template-hash': hash }, ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: `${app}-${hash}`, uid: rsUid, controller: true, blockOwnerDeletion: true }] },
          spec: { ...template.spec, nodeName: `node-${(g + p) % 12}`, restartPolicy: 'Always', serviceAccountName: 'default' },
          status: { phase: p === 5 && d === 0 ? 'Pending' : 'Running', podIP: `10.${cluster % 250}.${g % 250}.${d * 10 + p}`, conditions: [{ type: 'Ready', status: 'True' }], containerStatuses: [{ name: 'main', ready: true, restartCount: p % 3, state: { running: { startedAt: '2026-01-01T00:00:00Z' } } }] },
        });
      }
      out.services.push({ metadata: { name: app, namespace: ns, labels }, spec: { selector: { app }, ports: [{ port: 80, targetPort: 8080, protocol: 'TCP' }], type: 'ClusterIP', clusterIP: `10.96.${g % 250}.${d + 1}` } });
      for (let c = 0; c < 8; c++) out.configmaps.push({ metadata: { name: `${app}-config-${c}`, namespace: ns, labels: { app } }, data: { 'settings.yaml': `replicas: ${c}\nlevel: info\nfeature-${c}: on\n` } });
    }
  }
  return out;
}

process.on('message', async (m: Msg) => {
  switch (m.cmd) {
    case 'start': {
      const urls: string[] = [];
      for (let i = 0; i < m.clusters; i++) {
        const c = await startSimCluster({ name: `fleet-${i}`, controllers: false, historySize: 1000, port: m.basePort ? m.basePort + i : 0 });
        const mix = fleetMix(i, m.objectsPerCluster);
        for (const [resource, objects] of Object.entries(mix)) c.bulkCreate(resource, objects);
        clusters.push(c);
        urls.push(c.url);
      }
      send({ ok: 'start', urls });
      break;
    }
    case 'touch': {
      // One pod's annotation: the watch delivery of the fleet is timed from here (the parent
      // takes the time before it asks; this answers once written).
      const c = clusters[m.cluster];
      const info = c.registry.lookup('', 'v1', 'pods')!;
      const pods = c.store.list('/pods').items;
      const pod = pods[m.seq % Math.min(50, pods.length)];
      c.crud.patch(info, 'v1', pod.metadata.namespace!, pod.metadata.name!, 'merge', { metadata: { annotations: { 'bench/seq': String(m.seq) } } });
      send({ ok: 'touch' });
      break;
    }
    case 'exit':
      await Promise.all(clusters.map((c) => c.close()));
      clusters = [];
      send({ ok: 'exit' });
      process.exit(0);
  }
});
send({ ok: 'ready' });
