// SIG Multicluster's Cluster Inventory API (KEP-4322): each ClusterProfile
// (multicluster.x-k8s.io/v1alpha1, namespaced; kubernetes-sigs/cluster-inventory-api,
// apis/v1alpha1/clusterprofile_types.go) is a cluster. How to reach it is KEP-5339's: its
// status.accessProviders (and the deprecated status.credentialProviders, the same type; an
// accessProvider of the same name wins) are {name, cluster}, the cluster a clientcmd v1 Cluster
// (server, certificate-authority-data, tls-server-name, insecure-skip-tls-verify, extensions).
// As upstream's reference consumer (pkg/access/config.go, BuildConfigFromCP) does, the first
// provider of the ClusterSource's list that the profile offers is used, and its credentials
// come from the operator's side, never from the profile:
// - Secret: Panoptes reads them as upstream's secretreader plugin does
//   (plugins/secretreader/cmd/plugin/main.go: key `token` of the Secret named by `clusterName`
//   of the extension client.authentication.k8s.io/exec, here defaulting to the profile's name),
//   in the profile's namespace only (one of spec.namespaces). The Secret must also say which
//   server the token is for (key `server`): a profile naming another server is Invalid, so
//   whoever may write a ClusterProfile cannot send a token to an endpoint of their choosing.
// - Exec: the exec plugin of that name configured on synchro (exec-credentials.ts), told the
//   profile's server, CA and that extension, as upstream tells it.
// The profile's conditions (ControlPlaneHealthy, Joined, …) are shown on the Cluster. A profile
// this installation publishes of its own Clusters (publish-profiles.ts) is not imported back.
import { selectorQuery, type ClusterSourceSpec } from '../../../api/cluster-source.ts';
import { installationLabel } from '../../../api/multicluster-service.ts';
import { describe, secretCollections, sourceConditionPrefix, type Collection, type ImportCandidate, type ImportedConnection, type SourceCondition, type SourceKind } from '../candidate.ts';

export const profileGroup = 'multicluster.x-k8s.io';
export const profileVersion = 'v1alpha1';
export const profileApiVersion = `${profileGroup}/${profileVersion}`;
export const profileCRD = `clusterprofiles.${profileGroup}`;
export const profilesPath = (ns: string): string => `/apis/${profileApiVersion}/namespaces/${encodeURIComponent(ns)}/clusterprofiles`;
/** Upstream's LabelClusterManagerKey. */
export const clusterManagerLabel = 'x-k8s.io/cluster-manager';
/** The cluster manager Panoptes is when it publishes (spec.clusterManager.name and the label's value). */
export const panoptesManager = 'panoptes';
/** The extension upstream passes to an exec plugin as ExecCredential spec.cluster.config. */
export const execExtension = 'client.authentication.k8s.io/exec';
/** Keys of a Secret provider's Secret: upstream secretreader's token, and the server it is for. */
export const secretTokenKey = 'token';
export const secretServerKey = 'server';

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
const unb64 = (s: string | undefined): string | undefined => (s === undefined ? undefined : Buffer.from(s, 'base64').toString('utf8').trim());

/** The access providers a profile offers, by name (accessProviders over credentialProviders). */
function accessProviders(status: Record<string, unknown>): Map<string, Record<string, unknown>> {
  const out = new Map<string, Record<string, unknown>>();
  for (const field of ['credentialProviders', 'accessProviders']) {
    const list = status[field];
    if (!Array.isArray(list)) continue;
    for (const p of list) if (isRecord(p) && str(p.name)) out.set(p.name as string, isRecord(p.cluster) ? p.cluster : {});
  }
  return out;
}

/** A profile's conditions, as strings, their types prefixed (ClusterProfileControlPlaneHealthy): at most 16, messages cut. */
export function profileConditions(status: Record<string, unknown>): SourceCondition[] {
  const list = Array.isArray(status.conditions) ? status.conditions : [];
  return list
    .filter(isRecord)
    .filter((c) => str(c.type) && str(c.status))
    .slice(0, 16)
    .map((c) => ({ type: `${sourceConditionPrefix}${c.type as string}`, status: c.status as string, reason: str(c.reason) ?? '', message: (str(c.message) ?? '').slice(0, 1024), lastTransitionTime: str(c.lastTransitionTime) ?? '' }));
}

const extension = (cluster: Record<string, unknown>, name: string): unknown => (Array.isArray(cluster.extensions) ? cluster.extensions.find((e) => isRecord(e) && e.name === name)?.extension : undefined);

export const clusterProfiles: SourceKind = {
  collections(spec: ClusterSourceSpec): Collection[] {
    const crd = { name: profileCRD, without: 'ClusterProfiles are the source objects, so it imports nothing' };
    const profiles = spec.namespaces.map((ns): Collection => ({ role: 'clusters', path: profilesPath(ns), labelSelector: selectorQuery(spec.selector), crd }));
    const secrets = spec.clusterProfiles?.providers.some((p) => p.type === 'Secret') ? secretCollections(spec, '') : [];
    return [...profiles, ...secrets];
  },
  candidates(spec, { secrets, clusters }, context) {
    const out: ImportCandidate[] = [];
    const providers = spec.clusterProfiles?.providers ?? [];
    const secretsByKey = new Map(secrets.map((s) => [`${s.metadata.namespace}/${s.metadata.name}`, s]));
    for (const p of clusters) {
      if (context?.installation && p.metadata.labels?.[clusterManagerLabel] === panoptesManager && p.metadata.labels?.[installationLabel] === context.installation) continue;
      const namespace = p.metadata.namespace ?? '';
      const ref = { apiVersion: profileApiVersion, kind: 'ClusterProfile', namespace, name: p.metadata.name };
      const status = isRecord(p.status) ? p.status : {};
      const conditions = profileConditions(status);
      const base = { baseName: p.metadata.name, namespace, sourceObject: ref, ...(conditions.length ? { conditions } : {}) };
      const where = describe(ref);
      const offered = accessProviders(status);
      const chosen = providers.find((x) => offered.has(x.name));
      if (!chosen) {
        out.push({ ...base, invalid: `${where} offers no access provider this ClusterSource uses (${providers.map((x) => x.name).join(', ')}); it offers ${offered.size ? [...offered.keys()].join(', ') : 'none'} (status.accessProviders)` });
        continue;
      }
      const cluster = offered.get(chosen.name)!;
      const at = `${where} access provider ${chosen.name}`;
      const server = str(cluster.server);
      if (!server) {
        out.push({ ...base, invalid: `${at} has no cluster.server` });
        continue;
      }
      if (str(cluster['certificate-authority'])) {
        out.push({ ...base, invalid: `${at}: cluster.certificate-authority (a file) is not supported: give certificate-authority-data` });
        continue;
      }
      if (str(cluster['proxy-url'])) {
        out.push({ ...base, invalid: `${at}: cluster.proxy-url is not supported` });
        continue;
      }
      const endpoint: ImportedConnection = {
        server,
        ...(str(cluster['certificate-authority-data']) ? { caData: str(cluster['certificate-authority-data']) } : {}),
        ...(cluster['insecure-skip-tls-verify'] === true ? { insecureSkipTLSVerify: true } : {}),
        ...(str(cluster['tls-server-name']) ? { tlsServerName: str(cluster['tls-server-name']) } : {}),
      };
      const config = extension(cluster, execExtension);
      if (chosen.type === 'Exec') {
        const exec = context?.exec;
        if (!exec?.has(chosen.name)) {
          out.push({ ...base, invalid: `${at}: synchro has no exec provider ${chosen.name} (--clusterprofile-provider-file)` });
          continue;
        }
        const r = exec.get(chosen.name, { ...endpoint, ...(config !== undefined ? { config } : {}) });
        if (r.state === 'pending') out.push({ ...base, pending: `${at}: the exec provider is obtaining credentials` });
        else if (r.state === 'error') out.push({ ...base, invalid: `${at}: ${r.message}` });
        else out.push({ ...base, connection: { ...endpoint, ...(r.token ? { token: r.token } : {}), ...(r.clientCertData && r.clientKeyData ? { clientCertData: r.clientCertData, clientKeyData: r.clientKeyData } : {}) } });
        continue;
      }
      const name = (isRecord(config) ? str(config.clusterName) : undefined) ?? p.metadata.name;
      const secret = { namespace, name };
      const s = secretsByKey.get(`${namespace}/${name}`);
      const sat = `${at}: its Secret ${namespace}/${name}`;
      const token = unb64(s?.data?.[secretTokenKey]);
      const boundTo = unb64(s?.data?.[secretServerKey]);
      if (!s) out.push({ ...base, secret, invalid: `${sat} is not found` });
      else if (s.type === 'kubernetes.io/service-account-token') out.push({ ...base, secret, invalid: `${sat} is a ServiceAccount token of the host cluster, not a member's credentials` });
      else if (!token) out.push({ ...base, secret, invalid: `${sat} has no key ${secretTokenKey}` });
      else if (!boundTo) out.push({ ...base, secret, invalid: `${sat} has no key ${secretServerKey}: the server its token is for` });
      else if (!sameServer(boundTo, server)) out.push({ ...base, secret, invalid: `${sat} holds a token for ${boundTo}, not for ${server}: it is not sent there` });
      else out.push({ ...base, secret, connection: { ...endpoint, token } });
    }
    return out;
  },
};

/** Whether two server URLs are one endpoint (scheme, host and port; a trailing slash aside). */
function sameServer(a: string, b: string): boolean {
  try {
    const x = new URL(a);
    const y = new URL(b);
    return x.protocol === y.protocol && x.host === y.host && x.pathname.replace(/\/+$/, '') === y.pathname.replace(/\/+$/, '');
  } catch {
    return a === b;
  }
}
