// Argo CD: a cluster is a Secret labelled `argocd.argoproj.io/secret-type: cluster` with keys
// `name`, `server` and `config`, a JSON object (Argo CD's "Declarative Setup", Clusters):
// bearerToken, tlsClientConfig {caData, certData, keyData (base64 PEM), insecure, serverName};
// username/password, awsAuthConfig and execProviderConfig are refused with the reason (they
// need basic auth, or running code on the Panoptes host). {name} is the `name` key (Argo CD's
// display name, often not a DNS label), or the Secret's name without it.
import { selectorQuery } from '../../../api/cluster-source.ts';
import { describe, secretCollections, secretRef, unb64, type ImportCandidate, type SourceKind } from '../candidate.ts';

export const argoSecretTypeLabel = 'argocd.argoproj.io/secret-type';

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

export const argoCD: SourceKind = {
  collections: (spec) => secretCollections(spec, selectorQuery(spec.selector, [`${argoSecretTypeLabel}=cluster`])),
  candidates(_spec, { secrets }) {
    const out: ImportCandidate[] = [];
    for (const s of secrets) {
      if (s.metadata.labels?.[argoSecretTypeLabel] !== 'cluster') continue;
      const ref = secretRef(s);
      const namespace = ref.namespace ?? '';
      const d = s.data ?? {};
      const base = { baseName: d.name ? unb64(d.name).trim() : s.metadata.name, namespace, sourceObject: ref, secret: { namespace, name: ref.name } };
      const where = describe(ref);
      const invalid = (why: string) => out.push({ ...base, invalid: `${where}: ${why}` });
      if (!d.server) {
        invalid('has no key server');
        continue;
      }
      let config: unknown = {};
      try {
        config = d.config ? JSON.parse(unb64(d.config)) : {};
      } catch {
        invalid('key config is not JSON'); // its text is never quoted: it holds the credentials
        continue;
      }
      if (!isRecord(config)) {
        invalid('key config is not a JSON object');
        continue;
      }
      if (config.awsAuthConfig !== undefined) invalid('config.awsAuthConfig (EKS authentication through AWS IAM) is not supported: give a bearerToken');
      else if (config.execProviderConfig !== undefined) invalid('config.execProviderConfig (an exec plugin) is not supported: Panoptes runs no code for imported clusters; give a bearerToken');
      else if (config.username !== undefined || config.password !== undefined) invalid('config.username/password (basic auth) is not supported: give a bearerToken or tlsClientConfig certData and keyData');
      else {
        const tls = isRecord(config.tlsClientConfig) ? config.tlsClientConfig : {};
        if (str(tls.certData) && !str(tls.keyData)) {
          invalid('config.tlsClientConfig.certData without keyData');
          continue;
        }
        out.push({
          ...base,
          connection: {
            server: unb64(d.server).trim(),
            ...(str(tls.caData) ? { caData: str(tls.caData) } : {}),
            ...(tls.insecure === true ? { insecureSkipTLSVerify: true } : {}),
            ...(str(tls.serverName) ? { tlsServerName: str(tls.serverName) } : {}),
            ...(str(config.bearerToken) ? { token: str(config.bearerToken)!.trim() } : {}),
            ...(str(tls.certData) && str(tls.keyData) ? { clientCertData: str(tls.certData), clientKeyData: str(tls.keyData) } : {}),
          },
        });
      }
    }
    return out;
  },
};
