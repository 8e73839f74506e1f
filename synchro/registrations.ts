// Clusters registered through the API, as synchro runs them: each Cluster object of storage
// (read on every reconcile pass) becomes a cluster configuration — its server, CA and
// selection from the spec, its credentials inline (stored apart) or from a Secret of the
// host cluster (synchro/host-secrets.ts) — or an invalid entry saying what is missing. A
// name clusters.yaml also has is the file's: the object is reported as a conflict. An object
// with a deletionTimestamp is to be removed.
import { parse as parseYaml } from 'yaml';
import type { ClusterRegistration } from '../storage/cluster-objects.ts';
import type { KubeObject } from '../storage/types.ts';
import { clusterFinalizer, secretClusterLabel, secretKeys, validateClusterSpec, type ClusterSpec } from '../api/cluster.ts';
import type { ClusterConnection } from '../member/client.ts';
import { settingsConfig, type ClusterConfig, type CredentialsSource, type InvalidEntry } from './config.ts';
import type { SecretSource } from './host-secrets.ts';
import { defaultResources, PatternError } from '../api/resource-patterns.ts';
import { errorText } from '../kube/field-errors.ts';

/** What synchro does with the API's Cluster objects this pass. */
export interface ApiClusters {
  configs: Map<string, ClusterConfig>;
  invalid: Map<string, InvalidEntry>;
  /** Objects marked for deletion: their cluster is removed, then the finalizer released. */
  deleting: Set<string>;
  /**
   * Names left as they are this pass: the configuration cannot be decided yet (the host's
   * Secrets are not read yet), or the object is being deleted but no longer waits for synchro
   * (its finalizer was removed; another one holds it).
   */
  pending: Set<string>;
  /** Every Cluster object by name (file clusters' too). */
  objects: Map<string, ClusterRegistration>;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const unb64 = (s: string) => Buffer.from(s, 'base64').toString('utf8');

/** Whether a Cluster object came from clusters.yaml (written by synchro) rather than the API. */
export const isFileObject = (o: KubeObject): boolean => isRecord(o.spec) && o.spec.source === 'file';

class Unusable extends Error {}

/** User credentials and a CA from a kubeconfig held in a Secret: no exec plugins, auth providers or file references. */
function fromKubeconfig(text: string, where: string): { token?: string; cert?: string; key?: string; ca?: string } {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    throw new Unusable(`${where}: not a kubeconfig: ${(err as Error).message.split('\n')[0]}`);
  }
  if (!isRecord(doc)) throw new Unusable(`${where}: not a kubeconfig`);
  const list = (k: string) => (Array.isArray(doc[k]) ? (doc[k] as unknown[]).filter(isRecord) : []);
  const ctxName = doc['current-context'];
  const ctx = list('contexts').find((c) => c.name === ctxName)?.context;
  if (!isRecord(ctx)) throw new Unusable(`${where}: the kubeconfig has no current context`);
  const user = list('users').find((u) => u.name === ctx.user)?.user;
  const cluster = list('clusters').find((c) => c.name === ctx.cluster)?.cluster;
  const u = isRecord(user) ? user : {};
  for (const k of ['exec', 'auth-provider', 'tokenFile', 'client-certificate', 'client-key', 'username', 'password']) {
    if (u[k] !== undefined) throw new Unusable(`${where}: user ${k} is not supported in a Secret's kubeconfig (give token, or client-certificate-data and client-key-data)`);
  }
  if (isRecord(cluster) && cluster['certificate-authority'] !== undefined) throw new Unusable(`${where}: certificate-authority (a file) is not supported; give certificate-authority-data`);
  const str = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);
  return {
    token: str(u.token),
    cert: str(u['client-certificate-data']),
    key: str(u['client-key-data']),
    ca: isRecord(cluster) ? str(cluster['certificate-authority-data']) : undefined,
  };
}

/** The connection of one API cluster; `undefined` while its Secret is not known yet. Throws Unusable with the reason. */
function connection(name: string, spec: ClusterSpec, reg: ClusterRegistration, secrets: SecretSource | undefined): { conn: ClusterConnection; credentials: CredentialsSource } | undefined {
  const conn: ClusterConnection = { server: spec.server };
  if (spec.caData) conn.certificateAuthorityData = spec.caData;
  if (spec.insecureSkipTLSVerify) conn.insecureSkipTLSVerify = true;
  if (spec.tlsServerName) conn.tlsServerName = spec.tlsServerName;
  const ref = spec.credentials?.secretRef?.name;
  if (!ref) {
    const c = reg.credentials ?? {};
    const kinds: string[] = [];
    if (c.token) {
      conn.token = c.token;
      kinds.push('token');
    }
    if (c.clientCertData && c.clientKeyData) {
      conn.clientCertificateData = c.clientCertData;
      conn.clientKeyData = c.clientKeyData;
      kinds.push('clientCertificate');
    }
    return { conn, credentials: kinds.length ? { source: 'Inline', kinds } : { source: 'None' } };
  }
  if (!secrets) throw new Unusable(`spec.credentials.secretRef names Secret ${ref}, but this synchro process has no host cluster client: run it in the host cluster (in-cluster configuration) or give --host-kubeconfig`);
  const where = `Secret ${secrets.namespace}/${ref}`;
  const found = secrets.lookup(ref);
  if (found.state === 'pending') return undefined;
  if (found.state === 'error') throw new Unusable(found.message);
  const secret = found.secret;
  if (!secret) throw new Unusable(`${where} not found with label ${secretClusterLabel}=${name} (synchro reads only Secrets labelled with the cluster they are for)`);
  const labelled = secret.labels[secretClusterLabel];
  if (labelled !== name) throw new Unusable(`${where} is labelled ${secretClusterLabel}=${labelled}: it is for that cluster, not ${name}`);
  const d = secret.data;
  const kinds: string[] = [];
  let ca: string | undefined = d[secretKeys.ca];
  if (d[secretKeys.token]) {
    conn.token = unb64(d[secretKeys.token]).trim();
    kinds.push('token');
  }
  if (d[secretKeys.cert] || d[secretKeys.key]) {
    if (!d[secretKeys.cert] || !d[secretKeys.key]) throw new Unusable(`${where}: ${secretKeys.cert} and ${secretKeys.key} go together`);
    conn.clientCertificateData = d[secretKeys.cert];
    conn.clientKeyData = d[secretKeys.key];
    kinds.push('clientCertificate');
  }
  if (d[secretKeys.kubeconfig]) {
    const k = fromKubeconfig(unb64(d[secretKeys.kubeconfig]), `${where} key ${secretKeys.kubeconfig}`);
    if (k.token && !conn.token) conn.token = k.token;
    if (k.cert && k.key && !conn.clientCertificateData) {
      conn.clientCertificateData = k.cert;
      conn.clientKeyData = k.key;
    }
    ca ??= k.ca;
    kinds.push('kubeconfig');
  }
  if (!kinds.length) throw new Unusable(`${where} has none of the keys ${Object.values(secretKeys).join(', ')}`);
  if (!conn.certificateAuthorityData && ca && !conn.insecureSkipTLSVerify) conn.certificateAuthorityData = ca;
  return { conn, credentials: { source: 'Secret', secret: `${secrets.namespace}/${ref}`, kinds } };
}

/** The configuration of one API Cluster object; undefined while it cannot be decided. Throws Unusable. */
function apiConfig(reg: ClusterRegistration, secrets: SecretSource | undefined): ClusterConfig | undefined {
  const errs = validateClusterSpec(reg.object.spec);
  if (errs.length) throw new Unusable(`invalid spec: ${errs.map(errorText).join('; ')}`);
  const spec = reg.object.spec as ClusterSpec;
  const c = connection(reg.name, spec, reg, secrets);
  if (!c) return undefined;
  try {
    const config = settingsConfig({ ...c.conn, name: reg.name, resources: spec.resources ?? [...defaultResources], namespaces: spec.namespaces, source: 'api' });
    const generation = Number(reg.object.metadata?.generation ?? 0) || undefined;
    return { ...config, credentials: c.credentials, ...(generation ? { generation } : {}) };
  } catch (err) {
    if (err instanceof PatternError) throw new Unusable(err.message);
    throw err;
  }
}

/**
 * Sorts the Cluster objects: the file's names (`fileNames`: configured or invalid entries)
 * are the file's, objects marked for deletion are to be removed, the others run (or are
 * invalid, or pending while their Secret is not read yet).
 */
export function apiClusters(registrations: ClusterRegistration[], fileNames: Set<string>, secrets: SecretSource | undefined): ApiClusters {
  const out: ApiClusters = { configs: new Map(), invalid: new Map(), deleting: new Set(), pending: new Set(), objects: new Map() };
  registrations.forEach((reg, index) => {
    out.objects.set(reg.name, reg);
    if (isFileObject(reg.object) || fileNames.has(reg.name)) return;
    const md = reg.object.metadata ?? {};
    if (md.deletionTimestamp) {
      if (Array.isArray(md.finalizers) && md.finalizers.includes(clusterFinalizer)) out.deleting.add(reg.name);
      else out.pending.add(reg.name);
      return;
    }
    try {
      const config = apiConfig(reg, secrets);
      if (config) out.configs.set(reg.name, config);
      else out.pending.add(reg.name);
    } catch (err) {
      if (!(err instanceof Unusable)) throw err;
      out.invalid.set(reg.name, { index, name: reg.name, message: `Cluster ${reg.name}: ${err.message}`, spec: {} });
    }
  });
  return out;
}

/** Whether any API cluster names a Secret (the host's Secrets are then listed and watched). */
export const needsSecrets = (registrations: ClusterRegistration[]): boolean =>
  registrations.some((r) => !isFileObject(r.object) && isRecord(r.object.spec) && isRecord(r.object.spec.credentials) && r.object.spec.credentials.secretRef !== undefined);

