// kubeconfigSecrets: any Secret of the namespaces named, matching the selector, with a
// kubeconfig under spec.kubeconfigSecrets.key (default `kubeconfig`): its current context is
// one cluster, or (contexts: All) each context is. {name} is the Secret's name.
import { defaultKubeconfigKey, selectorQuery, type ClusterSourceSpec } from '../../../api/cluster-source.ts';
import { describe, secretCollections, secretRef, unb64, type ImportCandidate, type SourceKind } from '../candidate.ts';
import { kubeconfigConnections } from '../kubeconfig.ts';

export const kubeconfigSecrets: SourceKind = {
  collections: (spec) => secretCollections(spec, selectorQuery(spec.selector)),
  candidates(spec: ClusterSourceSpec, { secrets }) {
    const key = spec.kubeconfigSecrets?.key ?? defaultKubeconfigKey;
    const all = spec.kubeconfigSecrets?.contexts === 'All';
    const out: ImportCandidate[] = [];
    for (const s of secrets) {
      const value = s.data?.[key];
      if (value === undefined) continue; // not a kubeconfig Secret
      const ref = secretRef(s);
      const base = { baseName: s.metadata.name, namespace: ref.namespace ?? '', secret: { namespace: ref.namespace ?? '', name: ref.name } };
      const where = `${describe(ref)} key ${key}`;
      try {
        for (const c of kubeconfigConnections(unb64(value), where, all)) {
          const sourceObject = all ? { ...ref, context: c.context } : ref;
          out.push({ ...base, ...(all ? { context: c.context } : {}), sourceObject, ...('connection' in c ? { connection: c.connection } : { invalid: c.invalid }) });
        }
      } catch (err) {
        out.push({ ...base, sourceObject: ref, invalid: (err as Error).message });
      }
    }
    return out;
  },
};
