// Cluster API: for every workload cluster, the management cluster holds a Secret
// `<cluster>-kubeconfig` of type `cluster.x-k8s.io/secret`, labelled
// `cluster.x-k8s.io/cluster-name: <cluster>`, whose key `value` is a kubeconfig (the
// cluster-api book, "Certificate Management" / util/secret: Kubeconfig purpose). The same label
// is on its -ca, -etcd, -sa and -proxy Secrets, which are not kubeconfigs. With
// provisionedOnly, only clusters whose `Cluster` (cluster.x-k8s.io/v1beta1) is provisioned:
// status.phase Provisioned, or status.infrastructureReady and status.controlPlaneReady.
import { selectorQuery, type ClusterSourceSpec } from '../../../api/cluster-source.ts';
import { describe, secretCollections, secretRef, unb64, type Collection, type ImportCandidate, type SourceKind } from '../candidate.ts';
import { kubeconfigConnections } from '../kubeconfig.ts';
import type { HostObject } from '../../../member/list-watch.ts';

export const capiClusterNameLabel = 'cluster.x-k8s.io/cluster-name';
export const capiSecretType = 'cluster.x-k8s.io/secret';
export const capiKubeconfigKey = 'value';

function provisioned(c: HostObject | undefined): boolean {
  const s = c?.status ?? {};
  return s.phase === 'Provisioned' || (s.infrastructureReady === true && s.controlPlaneReady === true);
}

export const clusterAPI: SourceKind = {
  collections(spec: ClusterSourceSpec): Collection[] {
    const secrets = secretCollections(spec, selectorQuery(spec.selector, [capiClusterNameLabel]));
    if (!spec.clusterAPI?.provisionedOnly) return secrets;
    const crd = { name: 'clusters.cluster.x-k8s.io', without: 'spec.clusterAPI.provisionedOnly imports a Secret only once its Cluster API Cluster is provisioned, so it imports nothing' };
    return [...secrets, ...spec.namespaces.map((ns): Collection => ({ role: 'clusters', path: `/apis/cluster.x-k8s.io/v1beta1/namespaces/${encodeURIComponent(ns)}/clusters`, labelSelector: '', crd }))];
  },
  candidates(spec, { secrets, clusters }) {
    const out: ImportCandidate[] = [];
    const byName = new Map(clusters.map((c) => [`${c.metadata.namespace}/${c.metadata.name}`, c]));
    for (const s of secrets) {
      const cluster = s.metadata.labels?.[capiClusterNameLabel];
      if (!cluster || s.metadata.name !== `${cluster}-kubeconfig` || (s.type !== undefined && s.type !== capiSecretType)) continue;
      const ref = secretRef(s);
      const namespace = ref.namespace ?? '';
      if (spec.clusterAPI?.provisionedOnly && !provisioned(byName.get(`${namespace}/${cluster}`))) continue;
      const base = { baseName: cluster, namespace, sourceObject: ref, secret: { namespace, name: ref.name } };
      const value = s.data?.[capiKubeconfigKey];
      if (value === undefined) {
        out.push({ ...base, invalid: `${describe(ref)} has no key ${capiKubeconfigKey}` });
        continue;
      }
      try {
        const [c] = kubeconfigConnections(unb64(value), `${describe(ref)} key ${capiKubeconfigKey}`, false);
        out.push({ ...base, ...('connection' in c ? { connection: c.connection } : { invalid: c.invalid }) });
      } catch (err) {
        out.push({ ...base, invalid: (err as Error).message });
      }
    }
    return out;
  },
};
