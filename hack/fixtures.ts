// Shared by the benchmarks: a realistic pod of about 1-1.5 KB, a realistic ConfigMap, and percentiles.
import type { KubeObject, UpstreamEvent } from '../storage/types.ts';

export interface PodSpec {
  namespace: string;
  name: string;
  uid: string;
  upstreamRv: string;
  labels: Record<string, string>;
  annotations?: Record<string, string>;
  ownerName: string;
  ownerUid: string;
  nodeName: string;
  podIP: string;
  restartCount?: number;
}

/** A pod as a member cluster serves it, with the usual spec and status. */
export function realisticPod(p: PodSpec): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: p.name,
      namespace: p.namespace,
      uid: p.uid,
      resourceVersion: p.upstreamRv,
      creationTimestamp: '2026-01-01T00:00:00Z',
      labels: p.labels,
      ...(p.annotations ? { annotations: p.annotations } : {}),
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: p.ownerName, uid: p.ownerUid, controller: true }],
    },
    spec: {
      nodeName: p.nodeName,
      containers: [
        {
          name: 'app',
          image: 'registry.example.com/team/app:1.2.3',
          ports: [{ containerPort: 8080, protocol: 'TCP' }],
          resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { cpu: '500m', memory: '256Mi' } },
          env: [{ name: 'MODE', value: 'production' }, { name: 'REGION', value: 'eu-west-1' }],
        },
      ],
      serviceAccountName: 'default',
      restartPolicy: 'Always',
      schedulerName: 'default-scheduler',
    },
    status: {
      phase: 'Running',
      podIP: p.podIP,
      startTime: '2026-01-01T00:00:05Z',
      conditions: [
        { type: 'Ready', status: 'True', lastTransitionTime: '2026-01-01T00:00:09Z' },
        { type: 'ContainersReady', status: 'True', lastTransitionTime: '2026-01-01T00:00:09Z' },
      ],
      containerStatuses: [{ name: 'app', ready: true, restartCount: p.restartCount ?? 0, image: 'registry.example.com/team/app:1.2.3', started: true }],
    },
  };
}

/** The p-th percentile (0-100) of the samples (nearest rank). */
export function percentile(samples: number[], p: number): number {
  if (samples.length === 0) return NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/**
 * The `i`th ConfigMap of about 1.4 KB of JSON, as a member would report it: metadata, a
 * properties file with random values, a random hash and 320 random base64 characters (a key
 * or certificate). gzip makes it about a third of its size, as real ones, not a tenth.
 */
export function realisticConfigMap(i: number, rand: () => number): UpstreamEvent {
  const hex = (n: number) => Array.from({ length: n }, () => Math.floor(rand() * 16).toString(16)).join('');
  const b64chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  const b64 = (n: number) => Array.from({ length: n }, () => b64chars[Math.floor(rand() * 64)]).join('');
  const app = `app-${i % 40}`;
  const props: string[] = [];
  for (let k = 0; k < 8; k++) props.push(`feature.${k}.enabled=${rand() < 0.5}`, `endpoint.${k}=https://svc-${hex(6)}.example.com:${8000 + Math.floor(rand() * 1000)}/v${k}`);
  return {
    type: 'ADDED',
    group: '',
    version: 'v1',
    resource: 'configmaps',
    object: {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: `${app}-config-${i.toString(36).padStart(5, '0')}`,
        namespace: `bench-${i % 20}`,
        uid: `${hex(8)}-${hex(4)}-${hex(4)}-${hex(4)}-${hex(12)}`,
        resourceVersion: String(10_000 + i),
        creationTimestamp: '2026-01-01T00:00:00Z',
        labels: { app, tier: i % 2 ? 'web' : 'api' },
        annotations: { 'bench/owner': `team-${i % 7}` },
      },
      data: { 'app.properties': props.join('\n'), 'checksum': hex(64), 'client.key': b64(320) },
    },
  };
}
