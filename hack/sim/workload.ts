// The demo workload of a simulated cluster: nodes, namespaces, deployments with their
// replicasets and pods, a statefulset, a daemonset, a job, services with endpointslices,
// configmaps, a secret, events, and a CRD with a few custom resources. Objects look like a
// real cluster's (owner references, pod-template-hash, statuses), deterministic per cluster.
// Pods are placed as the ReplicaSet controller places them (pod-placement.ts: a node, an
// address from its podCIDR); the statuses of deployments and replicasets and every
// EndpointSlice are the controllers' own (controllers.ts), written by one pass of them at the
// end, so a cluster whose controllers then run has nothing left to change.
import { Controllers } from './controllers.ts';
import type { Crud } from './crud.ts';
import { podTemplateHash } from './deployment-controller.ts';
import { Placer } from './pod-placement.ts';
import { Random, seedOf } from './random.ts';
import type { ResourceInfo } from './resources.ts';
import { kubeTime, type JsonObject, type KObject } from './types.ts';

export interface WorkloadOptions {
  /** Cluster name: names nodes and seeds the randomness. */
  cluster?: string;
  /** Replica multiplier for the deployments (default 1). */
  scale?: number;
  /**
   * The second octet of the cluster's pod network: its nodes' podCIDRs are 10.<n>.<i>.0/24
   * (default 244, kind's 10.244.0.0/16). Clusters of one fleet get networks of their own, as
   * clusters whose pods reach each other must: startSimClusters gives the i-th 244 + i.
   */
  podNetwork?: number;
}

/** The CRD the demo installs (group demo.panoptes.io, kind Widget). */
export const widgetCRD: KObject = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'widgets.demo.panoptes.io' },
  spec: {
    group: 'demo.panoptes.io',
    scope: 'Namespaced',
    names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList', shortNames: ['wd'], categories: ['all'] },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        schema: {
          openAPIV3Schema: {
            type: 'object',
            description: 'Widget is a demo custom resource of the simulated clusters.',
            properties: {
              spec: {
                type: 'object',
                description: 'WidgetSpec is the desired state of a Widget.',
                properties: {
                  color: { type: 'string', description: 'Color of the widget.' },
                  replicas: { type: 'integer', format: 'int32', minimum: 0, description: 'Desired number of widgets (the scale subresource).' },
                  size: { type: 'string', enum: ['S', 'M', 'L'], description: 'Size of the widget.' },
                },
              },
              status: {
                type: 'object',
                description: 'WidgetStatus is the observed state of a Widget.',
                properties: {
                  replicas: { type: 'integer', format: 'int32', description: 'Observed number of widgets.' },
                  phase: { type: 'string', description: 'Lifecycle phase.' },
                },
              },
            },
          },
        },
        subresources: { status: {}, scale: { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas' } },
        additionalPrinterColumns: [{ name: 'Color', type: 'string', jsonPath: '.spec.color' }],
      },
    ],
  },
};

class Builder {
  private readonly rng: Random;
  /** Made once the nodes exist. */
  placer?: Placer;

  constructor(private readonly crud: Crud, readonly cluster: string) {
    this.rng = new Random(seedOf(cluster));
  }

  info(group: string, resource: string): ResourceInfo {
    const info = this.crud.registry.byId(`${group}/${resource}`);
    if (!info) throw new Error(`no resource ${group}/${resource}`);
    return info;
  }

  create(group: string, resource: string, namespace: string | undefined, body: KObject): KObject {
    const info = this.info(group, resource);
    return this.crud.create(info, info.versions[0], namespace, body, { keepStatus: true, fieldManager: 'sim-workload' });
  }

  hash(n: number): string {
    const alphabet = 'bcdfghjklmnpqrstvwxz2456789';
    let s = '';
    for (let i = 0; i < n; i++) s += alphabet[this.rng.int(alphabet.length)];
    return s;
  }

  pick<T>(items: readonly T[]): T {
    return this.rng.pick(items);
  }
}

function owner(o: KObject): JsonObject {
  return { apiVersion: o.apiVersion, kind: o.kind, name: o.metadata.name, uid: o.metadata.uid, controller: true, blockOwnerDeletion: true };
}

/** A pod spec with one container serving on 8080 (named `http`, so Services may target it by name). */
function podSpec(image: string): JsonObject {
  return {
    containers: [{ name: image.split('/').pop()!.split(':')[0], image, ports: [{ name: 'http', containerPort: 8080, protocol: 'TCP' }], resources: {} }],
    restartPolicy: 'Always',
    schedulerName: 'default-scheduler',
    serviceAccountName: 'default',
  };
}

/** Pods of an owner, placed and started (nodes: one pod on each, as a DaemonSet's). */
function pods(b: Builder, ns: string, prefix: string, labels: Record<string, string>, image: string, count: number, ownerObj: KObject, opts: { names?: string[]; nodes?: string[] } = {}): KObject[] {
  const out: KObject[] = [];
  for (let i = 0; i < count; i++) {
    const name = opts.names?.[i] ?? `${prefix}-${b.hash(5)}`;
    const spec = podSpec(image);
    const placed = b.placer!.place(spec.containers, opts.nodes?.[i]);
    out.push(b.create('', 'pods', ns, {
      metadata: { name, labels, ownerReferences: [owner(ownerObj)] as never },
      spec: { ...spec, ...(placed.nodeName ? { nodeName: placed.nodeName } : {}) },
      status: placed.status,
    }));
  }
  return out;
}

/** A Deployment, its ReplicaSet (named by the template's hash, as the controller names it) and its pods; the statuses come from the controllers. */
function deployment(b: Builder, ns: string, name: string, replicas: number, image: string): KObject[] {
  const labels = { app: name };
  const template = { metadata: { labels }, spec: podSpec(image) };
  const d = b.create('apps', 'deployments', ns, {
    metadata: { name, labels, annotations: { 'deployment.kubernetes.io/revision': '1' } },
    spec: { replicas, selector: { matchLabels: labels }, template, strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%', maxUnavailable: '25%' } } },
  });
  const hash = podTemplateHash(template);
  const rsLabels = { ...labels, 'pod-template-hash': hash };
  const rs = b.create('apps', 'replicasets', ns, {
    metadata: { name: `${name}-${hash}`, labels: rsLabels, ownerReferences: [owner(d)] as never, annotations: { 'deployment.kubernetes.io/revision': '1' } },
    spec: { replicas, selector: { matchLabels: rsLabels }, template: { ...template, metadata: { labels: rsLabels } } },
  });
  return pods(b, ns, `${name}-${hash}`, rsLabels, image, replicas, rs);
}

/** A Service selecting pods; its EndpointSlices come from the EndpointSlice controller. */
function service(b: Builder, ns: string, name: string, selector: Record<string, string>, port = 80): void {
  b.create('', 'services', ns, {
    metadata: { name, labels: { app: name } },
    spec: { selector, ports: [{ name: 'http', port, targetPort: 8080, protocol: 'TCP' }] },
  });
}

function event(b: Builder, ns: string, about: KObject, reason: string, message: string): void {
  const now = kubeTime();
  b.create('', 'events', ns, {
    metadata: { name: `${about.metadata.name}.${b.hash(8)}` },
    involvedObject: { apiVersion: about.apiVersion, kind: about.kind, namespace: ns, name: about.metadata.name, uid: about.metadata.uid },
    reason, message, type: 'Normal', count: 1, firstTimestamp: now, lastTimestamp: now,
    source: { component: 'deployment-controller' }, reportingComponent: 'deployment-controller',
  });
}

/**
 * A Deployment of `replicas` pods and its Service (port `http` 80 to the pods' 8080), written
 * as a client writes them: a running cluster's controllers make the ReplicaSet, the pods and
 * the EndpointSlices (a static one gets them from `controllers.reconcileAll()`).
 */
export function addApp(crud: Crud, namespace: string, name: string, replicas: number, image = `registry.example/${name}:1`): void {
  const labels = { app: name };
  const info = (id: string) => crud.registry.byId(id)!;
  crud.create(info('apps/deployments'), 'v1', namespace, {
    metadata: { name, namespace, labels },
    spec: { replicas, selector: { matchLabels: labels }, template: { metadata: { labels }, spec: podSpec(image) } },
  });
  crud.create(info('/services'), 'v1', namespace, { metadata: { name, namespace, labels }, spec: { selector: labels, ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }] } });
}

/** Loads the demo workload into a cluster (namespaces default and kube-system must exist). */
export function loadWorkload(crud: Crud, opts: WorkloadOptions = {}): void {
  const cluster = opts.cluster ?? 'sim';
  const k = Math.max(1, opts.scale ?? 1);
  const b = new Builder(crud, cluster);
  const zones = ['zone-a', 'zone-b', 'zone-c'];
  const nodes: string[] = [];
  for (let i = 1; i <= 3; i++) {
    const name = `${cluster}-node-${i}`;
    nodes.push(name);
    b.create('', 'nodes', undefined, {
      metadata: { name, labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux', 'topology.kubernetes.io/zone': zones[i - 1], ...(i === 1 ? { 'node-role.kubernetes.io/control-plane': '' } : {}) } },
      spec: { podCIDR: `10.${opts.podNetwork ?? 244}.${i}.0/24` },
      status: {
        conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'kubelet is posting ready status' }],
        addresses: [{ type: 'InternalIP', address: `172.18.0.${i + 1}` }, { type: 'Hostname', address: name }],
        capacity: { cpu: '4', memory: '8Gi', pods: '110' },
        nodeInfo: { kubeletVersion: 'v1.28.0', osImage: 'Simulated Linux', containerRuntimeVersion: 'containerd://1.7.0', architecture: 'amd64', operatingSystem: 'linux' },
      },
    });
  }
  b.placer = new Placer(crud.store);
  for (const ns of ['shop', 'monitoring', 'batch']) b.create('', 'namespaces', undefined, { metadata: { name: ns, labels: { team: ns } } });
  for (const ns of ['default', 'kube-system', 'shop', 'monitoring', 'batch']) {
    b.create('', 'configmaps', ns, { metadata: { name: 'kube-root-ca.crt' }, data: { 'ca.crt': '-----BEGIN CERTIFICATE-----\nsimulated\n-----END CERTIFICATE-----\n' } });
  }

  // kube-system: DNS and a per-node proxy.
  deployment(b, 'kube-system', 'coredns', 2, 'registry.k8s.io/coredns/coredns:v1.10.1');
  service(b, 'kube-system', 'kube-dns', { app: 'coredns' }, 53);
  const ds = b.create('apps', 'daemonsets', 'kube-system', {
    metadata: { name: 'kube-proxy', labels: { 'k8s-app': 'kube-proxy' } },
    spec: { selector: { matchLabels: { 'k8s-app': 'kube-proxy' } }, template: { metadata: { labels: { 'k8s-app': 'kube-proxy' } }, spec: podSpec('registry.k8s.io/kube-proxy:v1.28.0') } },
    status: { currentNumberScheduled: 3, desiredNumberScheduled: 3, numberAvailable: 3, numberReady: 3, updatedNumberScheduled: 3, numberMisscheduled: 0, observedGeneration: 1 },
  });
  pods(b, 'kube-system', 'kube-proxy', { 'k8s-app': 'kube-proxy' }, 'registry.k8s.io/kube-proxy:v1.28.0', 3, ds, { nodes });

  // shop: a web shop.
  for (const [name, replicas, image] of [['frontend', 3, 'ghcr.io/demo/frontend:1.4.2'], ['cart', 2, 'ghcr.io/demo/cart:2.0.1'], ['checkout', 2, 'ghcr.io/demo/checkout:0.9.0']] as const) {
    const ps = deployment(b, 'shop', name, replicas * k, image);
    service(b, 'shop', name, { app: name });
    b.create('', 'configmaps', 'shop', { metadata: { name: `${name}-config`, labels: { app: name } }, data: { LOG_LEVEL: b.pick(['info', 'debug']), FEATURE_FLAGS: 'new-ui=on' } });
    event(b, 'shop', ps[0], 'Scheduled', `Successfully assigned shop/${ps[0].metadata.name} to ${(ps[0].spec as JsonObject).nodeName}`);
  }
  b.create('', 'secrets', 'shop', { metadata: { name: 'payment-api' }, type: 'Opaque', data: { token: Buffer.from(`sim-${cluster}-token`).toString('base64') } });

  // monitoring: a statefulset and a dashboard.
  const ssLabels = { app: 'prometheus' };
  const ss = b.create('apps', 'statefulsets', 'monitoring', {
    metadata: { name: 'prometheus', labels: ssLabels },
    spec: { replicas: 2, serviceName: 'prometheus', selector: { matchLabels: ssLabels }, template: { metadata: { labels: ssLabels }, spec: podSpec('quay.io/prometheus/prometheus:v2.47.0') } },
    status: { replicas: 2, readyReplicas: 2, availableReplicas: 2, currentReplicas: 2, updatedReplicas: 2, observedGeneration: 1 },
  });
  pods(b, 'monitoring', 'prometheus', ssLabels, 'quay.io/prometheus/prometheus:v2.47.0', 2, ss, { names: ['prometheus-0', 'prometheus-1'] });
  service(b, 'monitoring', 'prometheus', ssLabels, 9090);
  deployment(b, 'monitoring', 'grafana', 1, 'grafana/grafana:10.1.0');
  service(b, 'monitoring', 'grafana', { app: 'grafana' }, 3000);

  // batch: a finished job.
  const jobLabels = { 'job-name': 'nightly-report' };
  const job = b.create('batch', 'jobs', 'batch', {
    metadata: { name: 'nightly-report', labels: jobLabels },
    spec: { completions: 1, parallelism: 1, backoffLimit: 6, selector: { matchLabels: jobLabels }, template: { metadata: { labels: jobLabels }, spec: { ...podSpec('busybox:1.36'), restartPolicy: 'Never' } } },
    status: { succeeded: 1, startTime: kubeTime(), completionTime: kubeTime(), conditions: [{ type: 'Complete', status: 'True' }] },
  });
  const [jp] = pods(b, 'batch', 'nightly-report', jobLabels, 'busybox:1.36', 1, job);
  const status = { ...(jp.status as JsonObject), phase: 'Succeeded' };
  crud.update(b.info('', 'pods'), 'v1', 'batch', jp.metadata.name!, { ...jp, status }, { subresource: 'status' });

  // A CRD and its custom resources.
  b.create('apiextensions.k8s.io', 'customresourcedefinitions', undefined, widgetCRD);
  for (const [name, color] of [['sprocket', 'red'], ['gear', 'blue'], ['cog', 'green']]) {
    b.create('demo.panoptes.io', 'widgets', 'shop', {
      metadata: { name, labels: { color } },
      spec: { color, replicas: 1, size: b.pick(['S', 'M', 'L']) },
      status: { replicas: 1, phase: 'Ready' },
    });
  }

  // The controllers' statuses and EndpointSlices, written now so the workload is complete with or without them running.
  new Controllers(crud).reconcileAll();
}
