// The demo workload of a simulated cluster: nodes, namespaces, deployments with their
// replicasets and pods, a statefulset, a daemonset, a job, services with endpointslices,
// configmaps, a secret, events, and a CRD with a few custom resources. Objects look like a
// real cluster's (owner references, pod-template-hash, statuses), deterministic per cluster.
import type { Crud } from './crud.ts';
import { Random, seedOf } from './random.ts';
import type { ResourceInfo } from './resources.ts';
import { kubeTime, type JsonObject, type KObject } from './types.ts';

export interface WorkloadOptions {
  /** Cluster name: names nodes and seeds the randomness. */
  cluster?: string;
  /** Replica multiplier for the deployments (default 1). */
  scale?: number;
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
  private ip = 10;

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

  podIP(): string {
    const n = this.ip++;
    return `10.244.${(n >> 8) & 255}.${n & 255}`;
  }

  pick<T>(items: readonly T[]): T {
    return this.rng.pick(items);
  }
}

function owner(o: KObject): JsonObject {
  return { apiVersion: o.apiVersion, kind: o.kind, name: o.metadata.name, uid: o.metadata.uid, controller: true, blockOwnerDeletion: true };
}

function podSpec(image: string, node: string): JsonObject {
  return {
    containers: [{ name: image.split('/').pop()!.split(':')[0], image, ports: [{ containerPort: 8080, protocol: 'TCP' }], resources: {} }],
    nodeName: node,
    restartPolicy: 'Always',
    schedulerName: 'default-scheduler',
    serviceAccountName: 'default',
  };
}

function runningStatus(b: Builder, node: string, image: string): JsonObject {
  const now = kubeTime();
  return {
    phase: 'Running',
    conditions: ['Initialized', 'Ready', 'ContainersReady', 'PodScheduled'].map((type) => ({ type, status: 'True', lastTransitionTime: now })),
    hostIP: node,
    podIP: b.podIP(),
    startTime: now,
    qosClass: 'BestEffort',
    containerStatuses: [{ name: image.split('/').pop()!.split(':')[0], image, ready: true, started: true, restartCount: 0, state: { running: { startedAt: now } } }],
  };
}

function pods(b: Builder, nodes: string[], ns: string, prefix: string, labels: Record<string, string>, image: string, count: number, ownerObj: KObject, names?: string[]): KObject[] {
  const out: KObject[] = [];
  for (let i = 0; i < count; i++) {
    const node = nodes[i % nodes.length];
    const name = names?.[i] ?? `${prefix}-${b.hash(5)}`;
    out.push(b.create('', 'pods', ns, {
      metadata: { name, labels, ownerReferences: [owner(ownerObj)] as never },
      spec: podSpec(image, node),
      status: runningStatus(b, node, image),
    }));
  }
  return out;
}

function deployment(b: Builder, nodes: string[], ns: string, name: string, replicas: number, image: string): KObject[] {
  const labels = { app: name };
  const template = { metadata: { labels }, spec: podSpec(image, '') };
  const ready = { replicas, readyReplicas: replicas, availableReplicas: replicas, updatedReplicas: replicas, observedGeneration: 1 };
  const d = b.create('apps', 'deployments', ns, {
    metadata: { name, labels, annotations: { 'deployment.kubernetes.io/revision': '1' } },
    spec: { replicas, selector: { matchLabels: labels }, template, strategy: { type: 'RollingUpdate' } },
    status: { ...ready, conditions: [{ type: 'Available', status: 'True', reason: 'MinimumReplicasAvailable' }] },
  });
  const hash = b.hash(10);
  const rsLabels = { ...labels, 'pod-template-hash': hash };
  const rs = b.create('apps', 'replicasets', ns, {
    metadata: { name: `${name}-${hash}`, labels: rsLabels, ownerReferences: [owner(d)] as never, annotations: { 'deployment.kubernetes.io/revision': '1' } },
    spec: { replicas, selector: { matchLabels: rsLabels }, template: { ...template, metadata: { labels: rsLabels } } },
    status: { replicas, readyReplicas: replicas, availableReplicas: replicas, fullyLabeledReplicas: replicas, observedGeneration: 1 },
  });
  return pods(b, nodes, ns, `${name}-${hash}`, rsLabels, image, replicas, rs);
}

function service(b: Builder, ns: string, name: string, selector: Record<string, string>, backends: KObject[], port = 80): void {
  b.create('', 'services', ns, {
    metadata: { name, labels: { app: name } },
    spec: { selector, ports: [{ name: 'http', port, targetPort: 8080, protocol: 'TCP' }] },
  });
  b.create('discovery.k8s.io', 'endpointslices', ns, {
    metadata: { name: `${name}-${b.hash(5)}`, labels: { 'kubernetes.io/service-name': name, 'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io' } },
    addressType: 'IPv4',
    endpoints: backends.map((p) => ({
      addresses: [(p.status as JsonObject).podIP],
      conditions: { ready: true, serving: true, terminating: false },
      nodeName: (p.spec as JsonObject).nodeName,
      targetRef: { kind: 'Pod', namespace: ns, name: p.metadata.name, uid: p.metadata.uid },
    })),
    ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
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
      spec: { podCIDR: `10.244.${i}.0/24` },
      status: {
        conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'kubelet is posting ready status' }],
        addresses: [{ type: 'InternalIP', address: `172.18.0.${i + 1}` }, { type: 'Hostname', address: name }],
        capacity: { cpu: '4', memory: '8Gi', pods: '110' },
        nodeInfo: { kubeletVersion: 'v1.28.0', osImage: 'Simulated Linux', containerRuntimeVersion: 'containerd://1.7.0', architecture: 'amd64', operatingSystem: 'linux' },
      },
    });
  }
  for (const ns of ['shop', 'monitoring', 'batch']) b.create('', 'namespaces', undefined, { metadata: { name: ns, labels: { team: ns } } });
  for (const ns of ['default', 'kube-system', 'shop', 'monitoring', 'batch']) {
    b.create('', 'configmaps', ns, { metadata: { name: 'kube-root-ca.crt' }, data: { 'ca.crt': '-----BEGIN CERTIFICATE-----\nsimulated\n-----END CERTIFICATE-----\n' } });
  }

  // kube-system: DNS and a per-node proxy.
  const dns = deployment(b, nodes, 'kube-system', 'coredns', 2, 'registry.k8s.io/coredns/coredns:v1.10.1');
  service(b, 'kube-system', 'kube-dns', { app: 'coredns' }, dns, 53);
  const ds = b.create('apps', 'daemonsets', 'kube-system', {
    metadata: { name: 'kube-proxy', labels: { 'k8s-app': 'kube-proxy' } },
    spec: { selector: { matchLabels: { 'k8s-app': 'kube-proxy' } }, template: { metadata: { labels: { 'k8s-app': 'kube-proxy' } }, spec: podSpec('registry.k8s.io/kube-proxy:v1.28.0', '') } },
    status: { currentNumberScheduled: 3, desiredNumberScheduled: 3, numberAvailable: 3, numberReady: 3, updatedNumberScheduled: 3, numberMisscheduled: 0, observedGeneration: 1 },
  });
  pods(b, nodes, 'kube-system', 'kube-proxy', { 'k8s-app': 'kube-proxy' }, 'registry.k8s.io/kube-proxy:v1.28.0', 3, ds);

  // shop: a web shop.
  for (const [name, replicas, image] of [['frontend', 3, 'ghcr.io/demo/frontend:1.4.2'], ['cart', 2, 'ghcr.io/demo/cart:2.0.1'], ['checkout', 2, 'ghcr.io/demo/checkout:0.9.0']] as const) {
    const ps = deployment(b, nodes, 'shop', name, replicas * k, image);
    service(b, 'shop', name, { app: name }, ps);
    b.create('', 'configmaps', 'shop', { metadata: { name: `${name}-config`, labels: { app: name } }, data: { LOG_LEVEL: b.pick(['info', 'debug']), FEATURE_FLAGS: 'new-ui=on' } });
    event(b, 'shop', ps[0], 'Scheduled', `Successfully assigned shop/${ps[0].metadata.name} to ${(ps[0].spec as JsonObject).nodeName}`);
  }
  b.create('', 'secrets', 'shop', { metadata: { name: 'payment-api' }, type: 'Opaque', data: { token: Buffer.from(`sim-${cluster}-token`).toString('base64') } });

  // monitoring: a statefulset and a dashboard.
  const ssLabels = { app: 'prometheus' };
  const ss = b.create('apps', 'statefulsets', 'monitoring', {
    metadata: { name: 'prometheus', labels: ssLabels },
    spec: { replicas: 2, serviceName: 'prometheus', selector: { matchLabels: ssLabels }, template: { metadata: { labels: ssLabels }, spec: podSpec('quay.io/prometheus/prometheus:v2.47.0', '') } },
    status: { replicas: 2, readyReplicas: 2, availableReplicas: 2, currentReplicas: 2, updatedReplicas: 2, observedGeneration: 1 },
  });
  const prom = pods(b, nodes, 'monitoring', 'prometheus', ssLabels, 'quay.io/prometheus/prometheus:v2.47.0', 2, ss, ['prometheus-0', 'prometheus-1']);
  service(b, 'monitoring', 'prometheus', ssLabels, prom, 9090);
  const graf = deployment(b, nodes, 'monitoring', 'grafana', 1, 'grafana/grafana:10.1.0');
  service(b, 'monitoring', 'grafana', { app: 'grafana' }, graf, 3000);

  // batch: a finished job.
  const jobLabels = { 'job-name': 'nightly-report' };
  const job = b.create('batch', 'jobs', 'batch', {
    metadata: { name: 'nightly-report', labels: jobLabels },
    spec: { completions: 1, parallelism: 1, backoffLimit: 6, selector: { matchLabels: jobLabels }, template: { metadata: { labels: jobLabels }, spec: { ...podSpec('busybox:1.36', ''), restartPolicy: 'Never' } } },
    status: { succeeded: 1, startTime: kubeTime(), completionTime: kubeTime(), conditions: [{ type: 'Complete', status: 'True' }] },
  });
  const [jp] = pods(b, nodes, 'batch', 'nightly-report', jobLabels, 'busybox:1.36', 1, job);
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
}
