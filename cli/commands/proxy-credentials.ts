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
// used within that time (a new fingerprint: new connections). start() reads them at once, so
// the Secrets are listed at start rather than on the first proxied request; readyCheck (a
// /readyz check) passes once that is done: the Clusters read and, when one names a Secret, the
// first list of the Secrets answered, whatever it held, or failed (the host unreachable: its
// Clusters are 503s naming why), so at most the list's 30 s timeout. A proxied request to a
// Cluster whose Secret is not listed yet waits for that list (at most `secretsWaitMs`).
import type { UserInfo } from '../../apiserver/auth/authn.ts';
import type { HealthCheck } from '../../apiserver/endpoints/health.ts';
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
  /** How long a proxied request waits for the first list of the Secrets before its 503 (default 10 s). */
  secretsWaitMs?: number;
}

/** The proxy's member credentials, read at start, and the /readyz check that waits for them. */
export interface ProxyCredentials extends MemberCredentials {
  /** Reads them now (the Secrets' list+watch starts if a Cluster names one); errors are logged, and lookups read again. */
  start(): void;
  /** `member-credentials`: passes once the first read is done, Secrets' first list included (then stays passing). */
  readyCheck: HealthCheck;
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

/** Whether `p` settles within `ms`. */
async function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([p.then(() => true), late]);
  } finally {
    clearTimeout(timer);
  }
}

export function proxyCredentials(o: ProxyCredentialsOptions): ProxyCredentials {
  const refreshMs = o.refreshMs ?? 2000;
  const secretsWaitMs = o.secretsWaitMs ?? 10_000;
  let file: ParsedConfig = { clusters: [], invalid: [], files: [] };
  let answers = new Map<string, Answer>();
  /** Clusters whose Secret is not known yet because the first list of the Secrets has no outcome yet. */
  let waiting = new Set<string>();
  let readAt = 0;
  let reading: Promise<void> | undefined;
  /** The first list of the Secrets, once started, and whether it has an outcome. */
  let secretsListed: Promise<void> | undefined;
  let secretsAnswered = false;
  let ready = false;

  const startSecrets = (secrets: NonNullable<ProxyCredentialsOptions['secrets']>): void => {
    secrets.start?.();
    if (secretsListed) return;
    secretsListed = secrets.listed?.() ?? Promise.resolve();
    void secretsListed.then(() => (secretsAnswered = true));
  };

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
    if (o.secrets && needsSecrets(registrations)) startSecrets(o.secrets);
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
    waiting = new Set(o.secrets ? [...api.pending].filter((n) => inSecret.has(n)) : []);
    readAt = Date.now();
  };

  /** Reads again when the last read is older than refreshMs (or `now`), one read at a time. */
  const refresh = async (now = false): Promise<void> => {
    if (now) await reading?.catch(() => undefined);
    if (!now && Date.now() - readAt < refreshMs) return;
    reading ??= read().finally(() => (reading = undefined));
    await reading;
  };

  return {
    start() {
      refresh().catch((err: unknown) => o.log.warn('cannot read the registered Clusters for the proxy; read again on the next request', { error: (err as Error).message }));
    },
    readyCheck: {
      name: 'member-credentials',
      async check() {
        if (ready) return undefined;
        const read = refresh().then(
          () => undefined,
          (err: unknown) => `the registered Clusters cannot be read: ${(err as Error).message}`,
        );
        if (!(await within(read, 3000))) return 'the registered Clusters are not read yet';
        const failed = await read;
        if (failed) return failed;
        if (secretsListed && !secretsAnswered) return `the credentials Secrets of the host cluster (namespace ${o.secrets?.namespace ?? ''}) are not listed yet`;
        ready = true;
        return undefined;
      },
    },
    async lookup(cluster) {
      await refresh();
      // Its Secret is not listed yet: wait for the first list (bounded), then read again, rather than a 503.
      if (waiting.has(cluster) && secretsListed) {
        if (secretsAnswered || (await within(secretsListed, secretsWaitMs))) await refresh(true);
      }
      return answers.get(cluster);
    },
  };
}
