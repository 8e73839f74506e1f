// Shared by the benchmarks: a realistic pod of about 1-1.5 KB, and percentiles.
import type { KubeObject } from '../storage/types.ts';

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
