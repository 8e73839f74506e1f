// Where the apiserver's proxy gets member credentials (apiserver/proxy/members.ts): the same
// sources synchro reads, so one registration serves both processes.
//   - clusters.yaml (--clusters, env PANOPTES_CLUSTERS) or the contexts of a kubeconfig
//     (--kubeconfig, --contexts): for all-in-one the very flags synchro runs with; a
//     standalone apiserver is given the file itself (mounted from the same Secret as
//     synchro's, or a file of its own when the proxy's identity should differ from synchro's).
//   - Clusters registered through the API: their Cluster objects and inline credentials from
//     storage, checked by the same rules as synchro's (member/registrations.ts: credentials
//     bound to the endpoint they were written with, the network guard), and those held in a
//     Secret of the host cluster, read as synchro reads them (member/host-secrets.ts: the
//     labelled Secrets of the credentials namespace, listed and watched once a Cluster names
//     one) when the apiserver has the host cluster; without it such a cluster is a 503 naming why.
// Both are read again at most every `refreshMs` (default 2 s), so a rotated credential is
// used within that time (a new fingerprint: new connections).
import type { UserInfo } from '../../apiserver/auth/authn.ts';
import { UsageError } from '../command.ts';
import type { MemberConnectionInfo, MemberCredentials } from '../../apiserver/proxy/members.ts';
import type { Logger } from '../../lib/log.ts';
import type { MemberNetworks } from '../../member/networks.ts';
import type { Store } from '../../storage/store.ts';
import { ConfigError, loadClustersFile, loadKubeconfigClusters, type ClusterConfig, type ParsedConfig } from '../../member/cluster-config.ts';
import type { SecretSource } from '../../member/host-secrets.ts';
import { apiClusters, needsSecrets } from '../../member/registrations.ts';

export interface ProxyCredentialsOptions {
  store: Store;
  clustersFile?: string;
  kubeconfig?: string;
  contexts?: 'all' | string[];
  networks: MemberNetworks;
  log: Logger;
  refreshMs?: number;
  /** The host cluster's credentials Secrets (started once a Cluster names a Secret); absent: such clusters are unavailable here. */
  secrets?: SecretSource & { start?(): void };
}

type Answer = MemberConnectionInfo | { unavailable: string } | undefined;

const info = (c: ClusterConfig): MemberConnectionInfo => ({ connection: c, fingerprint: c.fingerprint });

/** --insecure-proxy-user NAME[:GROUP,GROUP...]: in the development mode, the user proxied requests impersonate. */
export function parseProxyUser(value: string | undefined): UserInfo | undefined {
  if (value === undefined) return undefined;
  const [name, groups = ''] = value.split(/:(.*)/s, 2);
  if (!name.trim()) throw new UsageError(`--insecure-proxy-user needs a user name (NAME or NAME:GROUP,GROUP), got ${JSON.stringify(value)}`);
  return { name: name.trim(), groups: groups.split(',').map((g) => g.trim()).filter(Boolean), extra: {} };
}

export function proxyCredentials(o: ProxyCredentialsOptions): MemberCredentials {
  const refreshMs = o.refreshMs ?? 2000;
  let file: ParsedConfig = { clusters: [], invalid: [], files: [] };
  let answers = new Map<string, Answer>();
  let readAt = 0;
  let reading: Promise<void> | undefined;

  const readFile = (): void => {
    try {
      if (o.clustersFile) file = loadClustersFile(o.clustersFile);
      else if (o.kubeconfig) file = loadKubeconfigClusters(o.kubeconfig, o.contexts ?? 'all');
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      o.log.warn('cannot read the member clusters file; the last good one stays in effect', { error: err.message });
    }
  };

  const read = async (): Promise<void> => {
    readFile();
    const next = new Map<string, Answer>();
    for (const c of file.clusters) next.set(c.name, info(c));
    for (const i of file.invalid) if (i.name) next.set(i.name, { unavailable: `its entry in the clusters file is invalid: ${i.message}` });
    const fileNames = new Set(next.keys());
    const registrations = await o.store.listClusterRegistrations();
    if (o.secrets && needsSecrets(registrations)) o.secrets.start?.();
    const api = apiClusters(registrations, fileNames, o.secrets, o.networks);
    const inSecret = new Set(registrations.filter((r) => needsSecrets([r])).map((r) => r.name));
    const secretHeld = o.secrets
      ? { unavailable: 'its credentials Secret in the host cluster is not read yet' }
      : { unavailable: 'its credentials are in a Secret of the host cluster, and this apiserver has no host cluster to read it from (--host-kubeconfig, or run it in the host cluster)' };
    for (const [name, c] of api.configs) next.set(name, info(c));
    for (const [name, i] of api.invalid) next.set(name, inSecret.has(name) && !o.secrets ? secretHeld : { unavailable: i.message });
    for (const name of api.pending) next.set(name, inSecret.has(name) ? secretHeld : { unavailable: 'its credentials cannot be decided yet' });
    for (const name of api.deleting) next.set(name, { unavailable: 'it is being removed' });
    answers = next;
    readAt = Date.now();
  };

  return {
    async lookup(cluster) {
      if (Date.now() - readAt >= refreshMs) {
        reading ??= read().finally(() => (reading = undefined));
        await reading;
      }
      return answers.get(cluster);
    },
  };
}
