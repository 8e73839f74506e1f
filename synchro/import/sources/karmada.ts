// Karmada: each member is a cluster-scoped `Cluster` (cluster.karmada.io/v1alpha1) with
// spec.apiEndpoint, spec.secretRef {namespace, name} — a Secret with keys `caBundle` and
// `token` (karmadactl join writes it to karmada-cluster) — spec.insecureSkipTLSVerification,
// and spec.syncMode Push or Pull. Only Push clusters are imported: a Pull cluster's agent
// reaches Karmada, and Karmada holds no credentials to reach it. The Secrets are read in the
// namespaces of the ClusterSource only: a Cluster naming a Secret elsewhere is Invalid, and so is
// one naming a ServiceAccount token Secret (whoever may create a Karmada Cluster chooses its
// endpoint: name in spec.namespaces only where Karmada keeps its member Secrets).
import { selectorQuery, type ClusterSourceSpec } from '../../../api/cluster-source.ts';
import { describe, secretCollections, type Collection, type ImportCandidate, type SourceKind } from '../candidate.ts';

export const karmadaClusters = '/apis/cluster.karmada.io/v1alpha1/clusters';

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export const karmada: SourceKind = {
  collections(spec: ClusterSourceSpec): Collection[] {
    const crd = { name: 'clusters.cluster.karmada.io', without: 'Karmada Clusters are the source objects, so it imports nothing' };
    return [{ role: 'clusters', path: karmadaClusters, labelSelector: selectorQuery(spec.selector), crd }, ...secretCollections(spec, '')];
  },
  candidates(spec, { secrets, clusters }) {
    const out: ImportCandidate[] = [];
    const secretsByKey = new Map(secrets.map((s) => [`${s.metadata.namespace}/${s.metadata.name}`, s]));
    for (const c of clusters) {
      const sp = c.spec ?? {};
      if (sp.syncMode !== 'Push') continue;
      const ref = { apiVersion: 'cluster.karmada.io/v1alpha1', kind: 'Cluster', name: c.metadata.name };
      const base = { baseName: c.metadata.name, namespace: '', sourceObject: ref };
      const where = describe(ref);
      const invalid = (why: string, secret?: { namespace: string; name: string }) => out.push({ ...base, ...(secret ? { secret } : {}), invalid: `${where}: ${why}` });
      const server = str(sp.apiEndpoint);
      const sr = isRecord(sp.secretRef) ? sp.secretRef : {};
      const secret = str(sr.namespace) && str(sr.name) ? { namespace: str(sr.namespace)!, name: str(sr.name)! } : undefined;
      if (!server) invalid('has no spec.apiEndpoint');
      else if (!secret) invalid('has no spec.secretRef with namespace and name');
      else if (!spec.namespaces.includes(secret.namespace)) invalid(`its Secret is in namespace ${secret.namespace}, which the ClusterSource does not read: add it to spec.namespaces`, secret);
      else {
        const s = secretsByKey.get(`${secret.namespace}/${secret.name}`);
        const token = s?.data?.token ? Buffer.from(s.data.token, 'base64').toString('utf8').trim() : undefined;
        if (!s) invalid(`its Secret ${secret.namespace}/${secret.name} is not found`, secret);
        // karmadactl join writes an Opaque Secret: a host ServiceAccount's token is never sent to the endpoint a Karmada Cluster names.
        else if (s.type === 'kubernetes.io/service-account-token') invalid(`its Secret ${secret.namespace}/${secret.name} is a ServiceAccount token of the host cluster, not a member's credentials`, secret);
        else if (!token) invalid(`its Secret ${secret.namespace}/${secret.name} has no key token`, secret);
        else
          out.push({
            ...base,
            secret,
            connection: {
              server,
              ...(s.data?.caBundle ? { caData: s.data.caBundle } : {}),
              ...(sp.insecureSkipTLSVerification === true ? { insecureSkipTLSVerify: true } : {}),
              token,
            },
          });
      }
    }
    return out;
  },
};
