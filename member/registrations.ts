// Clusters registered through the API, as synchro runs them and the apiserver's proxy reaches
// them: each Cluster object of storage (read on every reconcile pass) becomes a cluster
// configuration — its server, CA and
// selection from the spec, its credentials inline (stored apart) or from a Secret of the
// host cluster (member/host-secrets.ts) — or an invalid entry saying what is missing. A
// name clusters.yaml also has is the file's: the object is reported as a conflict. An object
// with a deletionTimestamp is to be removed.
//
// Credentials go only where they were given for. Inline credentials record the endpoint they
// were written with: used only while the spec says the same endpoint. A Secret names the
// server it is for (annotation panoptes.io/server, or `*` for any), and the spec cannot
// weaken the trust the Secret's owner gave: a Secret with a CA is trusted with that CA only
// (spec.caData must be the same, spec.insecureSkipTLSVerify is refused), and skipping
// verification needs the Secret's own kubeconfig to skip it. Every configuration gets the
// network guard (member/networks.ts), and the credentials loaded are registered with the
// redactor (lib/redact.ts). Clusters imported by a ClusterSource get their connection from
// synchro's importer (synchro/config/registrations.ts passes it in); without one they are invalid.
import {
  anyServer,
  clusterEndpoint,
  clusterFinalizer,
  endpointBindingRule,
  endpointChanges,
  normalizeServer,
  secretClusterLabel,
  secretKeys,
  secretServerAnnotation,
  validateClusterSpec,
  type ClusterEndpoint,
  type ClusterSpec,
} from '../api/cluster.ts';
import type { ClusterConnection } from './client.ts';
import { parseKubeconfigYaml } from './kubeconfig.ts';
import { MemberNetworks } from './networks.ts';
import { isSecretKey, redact, rememberSecrets } from '../lib/redact.ts';
import { settingsConfig, type ClusterConfig, type CredentialsSource, type InvalidEntry } from './cluster-config.ts';
import type { HostSecret, SecretSource } from './host-secrets.ts';
import { defaultResources, PatternError } from '../api/resource-patterns.ts';
import { errorText } from '../kube/field-errors.ts';
import { importedFrom } from '../api/cluster-source.ts';

/**
 * A Cluster object of the API with its inline credentials, as storage reads it
 * (storage/cluster-objects.ts ClusterRegistration has this shape and more).
 */
export interface RegisteredCluster {
  name: string;
  object: { metadata?: { generation?: unknown; deletionTimestamp?: unknown; finalizers?: unknown; [k: string]: unknown }; [k: string]: unknown };
  /** Inline credentials, and the endpoint they were given for. */
  credentials?: { token?: string; clientCertData?: string; clientKeyData?: string; endpoint?: ClusterEndpoint };
}

/** The configuration of a Cluster imported by a ClusterSource, as synchro's importer gives it. */
export type ImportedConfig = { state: 'pending' } | { state: 'invalid'; message: string } | { state: 'ready'; config: ClusterConfig };

/** An imported Cluster where no importer runs (no host cluster client). */
export const withoutImporter = (source: string): ImportedConfig => ({
  state: 'invalid',
  message: `imported by ClusterSource ${source}, but this synchro process has no host cluster client to read its source objects: give --host-kubeconfig, or run it in the host cluster`,
});

/** What synchro does with the API's Cluster objects this pass. */
export interface ApiClusters<R extends RegisteredCluster = RegisteredCluster> {
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
  objects: Map<string, R>;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const unb64 = (s: string) => Buffer.from(s, 'base64').toString('utf8');

/** Whether a Cluster object came from clusters.yaml (written by synchro) rather than the API. */
export const isFileObject = (o: Record<string, unknown>): boolean => isRecord(o.spec) && o.spec.source === 'file';

class Unusable extends Error {}

/** What a kubeconfig held in a Secret gives: user credentials, and how its cluster is trusted. */
interface SecretKubeconfig {
  token?: string;
  cert?: string;
  key?: string;
  ca?: string;
  insecure?: boolean;
  tlsServerName?: string;
}

/** User credentials and a CA from a kubeconfig held in a Secret: no exec plugins, auth providers or file references. */
function fromKubeconfig(text: string, where: string): SecretKubeconfig {
  let doc: unknown;
  try {
    doc = parseKubeconfigYaml(text, where);
  } catch (err) {
    throw new Unusable((err as Error).message);
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
  const c = isRecord(cluster) ? cluster : {};
  return {
    token: str(u.token),
    cert: str(u['client-certificate-data']),
    key: str(u['client-key-data']),
    ca: str(c['certificate-authority-data']),
    insecure: c['insecure-skip-tls-verify'] === true,
    tlsServerName: str(c['tls-server-name']),
  };
}

const samePem = (a: string, b: string) => unb64(a).replace(/\s+/g, '') === unb64(b).replace(/\s+/g, '');

/**
 * The Secret names the server its credentials are for, and the spec keeps the TLS trust the
 * Secret gives: its CA (spec.caData may only repeat it; skipping verification is refused),
 * and no skipping of verification the Secret's kubeconfig does not itself skip.
 */
function checkSecretTrust(where: string, secret: HostSecret, spec: ClusterSpec, ca: string | undefined, k: SecretKubeconfig | undefined): void {
  const server = secret.annotations[secretServerAnnotation];
  const annotate = `kubectl -n ${secret.namespace} annotate secret ${secret.name} ${secretServerAnnotation}=${spec.server}`;
  if (server === undefined || server.trim() === '') {
    throw new Unusable(`${where} does not say which server its credentials are for: add the annotation ${secretServerAnnotation}: ${spec.server} (${annotate}), or ${secretServerAnnotation}: "${anyServer}" to allow any server`);
  }
  if (server.trim() !== anyServer && normalizeServer(server) !== normalizeServer(spec.server ?? '')) {
    throw new Unusable(`${where} is for server ${server} (annotation ${secretServerAnnotation}), not ${spec.server}: its credentials are not sent elsewhere; if they are for ${spec.server}, ${annotate} --overwrite`);
  }
  if (ca) {
    if (spec.insecureSkipTLSVerify) throw new Unusable(`spec.insecureSkipTLSVerify: ${where} has a CA for its server, and its credentials are sent only to a server that CA verifies`);
    if (spec.caData && !samePem(spec.caData, ca)) throw new Unusable(`spec.caData differs from the CA of ${where}: its credentials are sent only to a server that CA verifies; leave spec.caData out (the Secret's CA is used) or give the same CA`);
  } else if (spec.insecureSkipTLSVerify && !k?.insecure) {
    throw new Unusable(`spec.insecureSkipTLSVerify: ${where} does not allow its credentials to be sent without verifying the server (its kubeconfig would say insecure-skip-tls-verify: true)`);
  }
  if (k?.tlsServerName && spec.tlsServerName && spec.tlsServerName !== k.tlsServerName) {
    throw new Unusable(`spec.tlsServerName differs from tls-server-name of the kubeconfig in ${where}: leave it out or give the same name`);
  }
}

/** The connection of one API cluster; `undefined` while its Secret is not known yet. Throws Unusable with the reason. */
function connection(name: string, spec: ClusterSpec, reg: RegisteredCluster, secrets: SecretSource | undefined, networks: MemberNetworks): { conn: ClusterConnection; credentials: CredentialsSource } | undefined {
  const conn: ClusterConnection = { server: spec.server, networkGuard: { allow: [...networks.cidrs] } };
  if (spec.caData) conn.certificateAuthorityData = spec.caData;
  if (spec.insecureSkipTLSVerify) conn.insecureSkipTLSVerify = true;
  if (spec.tlsServerName) conn.tlsServerName = spec.tlsServerName;
  const ref = spec.credentials?.secretRef?.name;
  if (!ref) {
    const c = reg.credentials ?? {};
    rememberSecrets(c.token, c.clientKeyData, c.clientKeyData && unb64(c.clientKeyData));
    // Bound to the endpoint they were given for (credentials stored before endpoints were recorded have none: see synchro/README.md).
    if (c.endpoint && (c.token || c.clientKeyData)) {
      const changed = endpointChanges(c.endpoint, clusterEndpoint(spec));
      if (changed.length) throw new Unusable(`the stored inline credentials were given for another ${changed.map((f) => `spec.${f}`).join(', ')} (server ${c.endpoint.server}), so they are not used: ${endpointBindingRule}`);
    }
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
  for (const [key, value] of Object.entries(d)) if (isSecretKey(key)) rememberSecrets(value, unb64(value));
  const kinds: string[] = [];
  let ca: string | undefined = d[secretKeys.ca];
  const k = d[secretKeys.kubeconfig] ? fromKubeconfig(unb64(d[secretKeys.kubeconfig]), `${where} key ${secretKeys.kubeconfig}`) : undefined;
  if (k) rememberSecrets(k.token, k.key, k.key && unb64(k.key));
  checkSecretTrust(where, secret, spec, ca ?? k?.ca, k);
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
  if (k) {
    if (k.token && !conn.token) conn.token = k.token;
    if (k.cert && k.key && !conn.clientCertificateData) {
      conn.clientCertificateData = k.cert;
      conn.clientKeyData = k.key;
    }
    ca ??= k.ca;
    if (k.tlsServerName) conn.tlsServerName = k.tlsServerName;
    kinds.push('kubeconfig');
  }
  if (!kinds.length) throw new Unusable(`${where} has none of the keys ${Object.values(secretKeys).join(', ')}`);
  // The Secret's CA is the one its credentials are trusted with (checkSecretTrust refused any other).
  if (ca) conn.certificateAuthorityData = ca;
  return { conn, credentials: { source: 'Secret', secret: `${secrets.namespace}/${ref}`, kinds } };
}

/** The configuration of one API Cluster object; undefined while it cannot be decided. Throws Unusable. */
function apiConfig(reg: RegisteredCluster, secrets: SecretSource | undefined, networks: MemberNetworks): ClusterConfig | undefined {
  // Validated again with this process's allowance: what the apiserver accepted may not be reachable from here.
  const errs = validateClusterSpec(reg.object.spec, { networks, storedCredentials: Boolean(reg.credentials?.token || reg.credentials?.clientKeyData) });
  if (errs.length) throw new Unusable(`invalid spec: ${errs.map(errorText).join('; ')}`);
  const spec = reg.object.spec as ClusterSpec;
  const c = connection(reg.name, spec, reg, secrets, networks);
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
 * invalid, or pending while their Secret is not read yet). `imported` gives an imported
 * Cluster's configuration (synchro's importer); without it such a Cluster is invalid.
 */
export function apiClusters<R extends RegisteredCluster>(
  registrations: R[],
  fileNames: Set<string>,
  secrets: SecretSource | undefined,
  networks = new MemberNetworks(),
  imported?: (reg: R) => ImportedConfig,
): ApiClusters<R> {
  const out: ApiClusters<R> = { configs: new Map(), invalid: new Map(), deleting: new Set(), pending: new Set(), objects: new Map() };
  registrations.forEach((reg, index) => {
    out.objects.set(reg.name, reg);
    if (isFileObject(reg.object) || fileNames.has(reg.name)) return;
    const md = reg.object.metadata ?? {};
    if (md.deletionTimestamp) {
      if (Array.isArray(md.finalizers) && md.finalizers.includes(clusterFinalizer)) out.deleting.add(reg.name);
      else out.pending.add(reg.name);
      return;
    }
    // Imported by a ClusterSource: the connection its source object gives (synchro/import/connection.ts).
    const source = importedFrom(reg.object.spec);
    if (source !== undefined) {
      const r = imported ? imported(reg) : withoutImporter(source);
      if (r.state === 'ready') out.configs.set(reg.name, r.config);
      else if (r.state === 'pending') out.pending.add(reg.name);
      else out.invalid.set(reg.name, { index, name: reg.name, message: redact(`Cluster ${reg.name}: ${r.message}`), spec: {} });
      return;
    }
    try {
      const config = apiConfig(reg, secrets, networks);
      if (config) out.configs.set(reg.name, config);
      else out.pending.add(reg.name);
    } catch (err) {
      if (!(err instanceof Unusable)) throw err;
      out.invalid.set(reg.name, { index, name: reg.name, message: redact(`Cluster ${reg.name}: ${err.message}`), spec: {} });
    }
  });
  return out;
}

/** Whether any API cluster names a Secret (the host's Secrets are then listed and watched). */
export const needsSecrets = (registrations: RegisteredCluster[]): boolean =>
  registrations.some((r) => !isFileObject(r.object) && isRecord(r.object.spec) && isRecord(r.object.spec.credentials) && r.object.spec.credentials.secretRef !== undefined);

