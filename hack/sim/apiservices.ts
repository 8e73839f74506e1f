// The APIService objects (apiregistration.k8s.io/v1) of a simulated cluster, as kube-apiserver's
// aggregator keeps them: one per served group version, named `<version>.<group>` (`v1.` for the
// core group). kube-apiserver's own group versions and those of CRDs are *Local* (no
// `spec.service`; labelled `kube-aggregator.kubernetes.io/automanaged`: `onstart` for the
// built-in ones, `true` for CRDs, whose APIService goes with the group version's last CRD);
// an aggregated API's names its Service (metrics-server's metrics.k8s.io, and what
// `SimClusterOptions.aggregatedApis` adds). Status: Available, reason `Local` ("Local
// APIServices are always available") or `Passed` ("all checks passed").
// Ref: k8s.io/kube-aggregator/pkg/controllers/autoregister, .../status (available_controller.go),
// k8s.io/kubernetes/pkg/controlplane/controller/crdregistration, cmd/kube-apiserver/app/aggregator.go.
import { randomUUID } from 'node:crypto';
import { extraGroups } from './extra-apis.ts';
import type { AggregatedApi, ApiServiceRef, Registry } from './resources.ts';
import type { Store } from './store.ts';
import { kubeTime, type KObject } from './types.ts';

const id = 'apiregistration.k8s.io/apiservices';
const managedLabel = 'kube-aggregator.kubernetes.io/automanaged';

/** kube-apiserver's groupPriorityMinimum and versionPriority of its own group versions (aggregator.go apiVersionPriorities). */
const priorities: Record<string, [number, number]> = {
  '/v1': [18000, 1], 'apiregistration.k8s.io/v1': [18000, 15], 'apps/v1': [17800, 15], 'events.k8s.io/v1': [17750, 15],
  'authentication.k8s.io/v1': [17700, 15], 'authorization.k8s.io/v1': [17600, 15], 'autoscaling/v2': [17500, 30],
  'autoscaling/v1': [17500, 15], 'batch/v1': [17400, 15], 'certificates.k8s.io/v1': [17300, 15], 'networking.k8s.io/v1': [17200, 15],
  'policy/v1': [17100, 15], 'rbac.authorization.k8s.io/v1': [17000, 15], 'storage.k8s.io/v1': [16800, 15],
  'apiextensions.k8s.io/v1': [16700, 15], 'admissionregistration.k8s.io/v1': [16700, 15], 'scheduling.k8s.io/v1': [16600, 15],
  'coordination.k8s.io/v1': [16500, 15], 'node.k8s.io/v1': [16300, 15], 'discovery.k8s.io/v1': [16200, 15],
  'flowcontrol.apiserver.k8s.io/v1beta3': [16100, 18],
};

type Source = 'builtin' | 'crd' | ApiServiceRef;

function apiService(group: string, version: string, source: Source, now: string): KObject {
  const [groupPriorityMinimum, versionPriority] = source === 'builtin' ? (priorities[`${group}/${version}`] ?? [1000, 15]) : source === 'crd' ? [1000, 100] : [100, 100];
  const local = typeof source === 'string';
  return {
    apiVersion: 'apiregistration.k8s.io/v1',
    kind: 'APIService',
    metadata: { name: `${version}.${group}`, ...(local ? { labels: { [managedLabel]: source === 'builtin' ? 'onstart' : 'true' } } : {}) },
    spec: {
      ...(group ? { group } : {}),
      version,
      ...(local ? {} : { service: { namespace: source.namespace, name: source.name, port: source.port ?? 443 }, insecureSkipTLSVerify: true }),
      groupPriorityMinimum,
      versionPriority,
    },
    status: {
      conditions: [
        local
          ? { type: 'Available', status: 'True', lastTransitionTime: now, reason: 'Local', message: 'Local APIServices are always available' }
          : { type: 'Available', status: 'True', lastTransitionTime: now, reason: 'Passed', message: 'all checks passed' },
      ],
    },
  };
}

/** Keeps the store's APIServices equal to what the registry serves, now and whenever it changes. */
export function keepApiServices(store: Store, registry: Registry): void {
  const sync = () => {
    const now = kubeTime();
    const wanted = new Map<string, KObject>();
    for (const gv of registry.groupVersionSources()) wanted.set(`${gv.version}.${gv.group}`, apiService(gv.group, gv.version, gv.source, now));
    for (const g of extraGroups) {
      const name = `${g.version}.${g.name}`;
      if (!wanted.has(name)) wanted.set(name, apiService(g.name, g.version, g.service ?? 'builtin', now));
    }
    for (const o of store.list(id).items) {
      if (!wanted.has(o.metadata.name!)) store.remove(id, undefined, o.metadata.name!);
    }
    for (const [name, o] of wanted) {
      const cur = store.get(id, undefined, name);
      if (cur && JSON.stringify(cur.spec) === JSON.stringify(o.spec) && JSON.stringify(cur.metadata.labels) === JSON.stringify(o.metadata.labels)) continue;
      store.put(id, { ...o, metadata: { ...o.metadata, uid: cur?.metadata.uid ?? randomUUID(), creationTimestamp: cur?.metadata.creationTimestamp ?? now } });
    }
  };
  sync();
  registry.onChange(sync);
}

/**
 * What a host cluster with Panoptes installed serves through its aggregator (manifests/base's
 * APIServices, Service panoptes/panoptes-apiserver): panoptes.io's Clusters, ClusterSources and
 * MultiClusterServices, and external.metrics.k8s.io (get only).
 */
export const panoptesApis: AggregatedApi[] = [
  {
    group: 'panoptes.io',
    version: 'v1alpha1',
    service: { namespace: 'panoptes', name: 'panoptes-apiserver' },
    resources: [
      { resource: 'clusters', kind: 'Cluster', namespaced: false },
      { resource: 'clustersources', kind: 'ClusterSource', namespaced: false },
      { resource: 'multiclusterservices', kind: 'MultiClusterService', namespaced: true, shortNames: ['mcs'] },
    ],
  },
  {
    group: 'external.metrics.k8s.io',
    version: 'v1beta1',
    service: { namespace: 'panoptes', name: 'panoptes-apiserver' },
    resources: [{ resource: 'pods', kind: 'ExternalMetricValueList', namespaced: true, singularName: '', verbs: ['get'] }],
  },
];
