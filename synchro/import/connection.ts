// The configuration a shard runs an imported Cluster with: the connection its source object
// gives now (endpoint and credentials together: read from the source Secret where it is, so
// a rotation restarts the sync within a pass), the selection of the Cluster's spec, and the
// rules every member connection follows — the operator's network allowance (loopback,
// link-local and unspecified addresses refused unless allowed, no credentials over plain
// http:// outside it: api/cluster.ts validateClusterSpec), the guard on every connection, and
// the credentials registered with the redactor.
import { importedFrom, withDefaults } from '../../api/cluster-source.ts';
import type { ClusterSpec } from '../../api/cluster.ts';
import { validateClusterSpec } from '../../api/cluster.ts';
import { defaultResources, PatternError } from '../../api/resource-patterns.ts';
import { errorText } from '../../kube/field-errors.ts';
import { rememberSecrets } from '../../lib/redact.ts';
import type { ClusterConnection } from '../../member/client.ts';
import type { MemberNetworks } from '../../member/networks.ts';
import type { ClusterRegistration } from '../../storage/cluster-objects.ts';
import { settingsConfig } from '../../member/cluster-config.ts';
import { withoutImporter, type ImportedConfig } from '../../member/registrations.ts';
import { describe } from './candidate.ts';
import type { Importer } from './importer.ts';

export type { ImportedConfig };

export function importedConfig(reg: ClusterRegistration, importer: Importer | undefined, networks: MemberNetworks): ImportedConfig {
  const source = importedFrom(reg.object.spec)!;
  const spec = reg.object.spec as ClusterSpec;
  if (!importer) return withoutImporter(source);
  const view = importer.view(source);
  if (!view || view.state === 'pending') return { state: 'pending' };
  if (view.state === 'error') return { state: 'invalid', message: view.message };
  const c = view.clusters.get(reg.name);
  if (!c) {
    // Delete: the importer removes it. Keep: it stays, with its data, and says why it is not synced.
    if (withDefaults(importer.spec(source) ?? ({} as never)).onSourceRemoval !== 'Keep') return { state: 'pending' };
    const what = spec.sourceObject ? describe(spec.sourceObject) : 'its source object';
    return { state: 'invalid', message: `${what} of ClusterSource ${source} is gone; the Cluster is kept (onSourceRemoval: Keep) with its data` };
  }
  if (c.pending && !c.invalid) return { state: 'pending' };
  if (c.invalid || !c.connection) return { state: 'invalid', message: c.invalid ?? `${describe(c.sourceObject)} gives no connection` };
  const conn = c.connection;
  rememberSecrets(conn.token, conn.clientKeyData, conn.clientKeyData && Buffer.from(conn.clientKeyData, 'base64').toString('utf8'));
  const credentials = Boolean(conn.token || conn.clientKeyData);
  const checked = { server: conn.server, ...(conn.caData ? { caData: conn.caData } : {}), ...(conn.insecureSkipTLSVerify ? { insecureSkipTLSVerify: true } : {}), ...(conn.tlsServerName ? { tlsServerName: conn.tlsServerName } : {}), resources: spec.resources, namespaces: spec.namespaces };
  const errs = validateClusterSpec(JSON.parse(JSON.stringify(checked)), { networks, storedCredentials: credentials });
  if (errs.length) return { state: 'invalid', message: `${describe(c.sourceObject)}: ${errs.map(errorText).join('; ')}` };
  const connection: ClusterConnection = {
    server: conn.server,
    networkGuard: { allow: [...networks.cidrs] },
    ...(conn.caData ? { certificateAuthorityData: conn.caData } : {}),
    ...(conn.insecureSkipTLSVerify ? { insecureSkipTLSVerify: true } : {}),
    ...(conn.tlsServerName ? { tlsServerName: conn.tlsServerName } : {}),
    ...(conn.token ? { token: conn.token } : {}),
    ...(conn.clientCertData && conn.clientKeyData ? { clientCertificateData: conn.clientCertData, clientKeyData: conn.clientKeyData } : {}),
  };
  const kinds = [...(conn.token ? ['token'] : []), ...(conn.clientKeyData ? ['clientCertificate'] : [])];
  try {
    const config = settingsConfig({ ...connection, name: reg.name, resources: spec.resources ?? [...defaultResources], namespaces: spec.namespaces, source: 'api' });
    const generation = Number(reg.object.metadata?.generation ?? 0) || undefined;
    const secret = c.secret ? `${c.secret.namespace}/${c.secret.name}` : undefined;
    return { state: 'ready', config: { ...config, credentials: kinds.length ? { source: 'Secret', ...(secret ? { secret } : {}), kinds } : { source: 'None' }, ...(generation ? { generation } : {}) } };
  } catch (err) {
    if (err instanceof PatternError) return { state: 'invalid', message: err.message };
    throw err;
  }
}
