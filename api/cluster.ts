// The spec of a `Cluster` object (clusters.panoptes.io): what an API-registered cluster says
// about its connection and selection, validated field by field (the apiserver answers 422
// with one cause per field; synchro validates again with its own network allowance), the
// one allowlist of what is served of a spec (API objects and clusters.yaml entries, `source:
// file`), and the endpoint inline credentials are bound to. Pure: no I/O, shared by the
// apiserver (validation) and synchro (turning objects into cluster configurations).
import { fieldForbidden, fieldInvalid, fieldNotSupported, fieldRequired, uniqueStrings, type FieldError } from '../kube/field-errors.ts';
import { allowHint, MemberNetworks, memberNetworksFlag } from '../member/networks.ts';
import { objectMetaShape, type Shape } from '../kube/known-fields.ts';
import { dnsLabelProblem, dnsSubdomainProblem } from '../kube/names.ts';
import { mcsRolesField, validateMcsRoles, type McsRoles } from './mcs-roles.ts';
import { parsePattern, PatternError } from './resource-patterns.ts';

export { dnsLabelProblem, dnsSubdomainProblem };

/**
 * Names no member cluster may have. kube-apiserver reads the fleet URLs as the resource
 * `resources` named `clusters`, `api` or `apis` (`/apis/panoptes.io/v1alpha1/resources/clusters/<c>/...`,
 * `/resources/api/v1/...`, `/resources/apis/...`), so the default view role grants those names
 * (manifests/base/rbac.yaml, a `*` rule limited to them); a cluster of one of these names would
 * match that rule in Panoptes' own `clusters/proxy` review and be open to every view holder.
 */
export const reservedClusterNames: readonly string[] = ['clusters', 'api', 'apis'];

/** Why `name` cannot name a member cluster (every source: the API, clusters.yaml, kubeconfig contexts, ClusterSources), or undefined. */
export function clusterNameProblem(name: string): string | undefined {
  const why = dnsLabelProblem(name);
  if (why) return why;
  if (reservedClusterNames.includes(name)) return `${JSON.stringify(name)} is reserved (${reservedClusterNames.join(', ')} are the names of the fleet URLs that the view role grants)`;
  return undefined;
}

/** spec.credentials: a Secret of the host cluster, or inline values (write-only: never served). */
export interface ClusterSpecCredentials {
  secretRef?: { name: string };
  /** Imported Clusters only: the source Secret holding the credentials, in a namespace the ClusterSource reads (set by Panoptes). */
  sourceSecretRef?: { namespace: string; name: string };
  token?: string;
  clientCertData?: string;
  clientKeyData?: string;
}

export interface ClusterSpec {
  /**
   * `api` (registered through the API; the default), `file` (clusters.yaml, read-only) or
   * `clustersource/<name>` (imported by a ClusterSource, read-only: api/cluster-source.ts).
   */
  source?: string;
  /** Imported Clusters: the object of the host cluster they come from. */
  sourceObject?: SourceObjectRef;
  server?: string;
  /** Base64 PEM CA bundle, as certificate-authority-data in a kubeconfig. */
  caData?: string;
  insecureSkipTLSVerify?: boolean;
  tlsServerName?: string;
  resources?: string[];
  namespaces?: { include?: string[]; exclude?: string[] };
  credentials?: ClusterSpecCredentials;
  /** Whether it may provide and consume multi-cluster Services (api/mcs-roles.ts: granted by the operator; defaults by source). */
  multiClusterServices?: Partial<McsRoles>;
}

/** The host cluster object an imported Cluster comes from (and, for a kubeconfig with several, its context). */
export interface SourceObjectRef {
  apiVersion: string;
  kind: string;
  namespace?: string;
  name: string;
  context?: string;
}

/** Set on every API-created Cluster by the apiserver; synchro releases it once the cluster's objects are deleted. */
export const clusterFinalizer = 'panoptes.io/synchro';

/** The inline credential fields: accepted on writes, kept apart by storage, never served. */
export const inlineCredentialFields = ['token', 'clientCertData', 'clientKeyData'] as const;

/** The Secret keys synchro reads (a kubernetes.io/service-account-token or kubernetes.io/tls Secret works as is). */
export const secretKeys = { token: 'token', ca: 'ca.crt', cert: 'tls.crt', key: 'tls.key', kubeconfig: 'kubeconfig' } as const;

/** The label a Secret must carry, naming the cluster it is for, before synchro uses it. */
export const secretClusterLabel = 'panoptes.io/cluster';

/** The annotation a Secret must carry, naming the server (spec.server) its credentials are for, or `*` for any. */
export const secretServerAnnotation = 'panoptes.io/server';
export const anyServer = '*';

/**
 * The one allowlist of what is served of a Cluster spec (objects of the API and of
 * clusters.yaml, the clusters table): these fields, of these types, and nothing else. A key
 * that is not here — a typo such as `tokn:` — is never copied, whatever its value.
 */
type FieldType = 'string' | 'boolean' | 'strings' | { [field: string]: FieldType };
const publicSpecFields: Record<string, FieldType> = {
  source: 'string',
  server: 'string',
  caData: 'string',
  insecureSkipTLSVerify: 'boolean',
  tlsServerName: 'string',
  resources: 'strings',
  namespaces: { include: 'strings', exclude: 'strings' },
  credentials: { secretRef: { name: 'string' }, sourceSecretRef: { namespace: 'string', name: 'string' } },
  sourceObject: { apiVersion: 'string', kind: 'string', namespace: 'string', name: 'string', context: 'string' },
  [mcsRolesField]: { provider: 'boolean', consumer: 'boolean' },
  // clusters.yaml: a kubeconfig context, and paths of files (not their contents).
  kubeconfig: 'string',
  context: 'string',
  certificateAuthority: 'string',
  tokenFile: 'string',
  clientCertificate: 'string',
  clientKey: 'string',
};
/** clusters.yaml keys whose values are credentials: served as "(redacted)" to say they are set, never their value. */
export const fileSecretFields = ['token', 'clientCertificateData', 'clientKeyData', 'certificateAuthorityData'] as const;
export const redactedValue = '(redacted)';

function allowed(v: unknown, type: FieldType): unknown {
  if (type === 'string') return typeof v === 'string' ? v : undefined;
  if (type === 'boolean') return typeof v === 'boolean' ? v : undefined;
  if (type === 'strings') return Array.isArray(v) && v.every((x) => typeof x === 'string') ? [...(v as string[])] : undefined;
  if (!isRecord(v)) return undefined;
  const out: Record<string, unknown> = {};
  // In the object's own key order: a spec served back reads as it was written (kubectl apply compares its annotation as text).
  for (const k of Object.keys(v)) {
    const sub = Object.hasOwn(type, k) ? type[k] : undefined;
    const x = sub === undefined ? undefined : allowed(v[k], sub);
    if (x !== undefined) out[k] = x;
  }
  return Object.keys(out).length ? out : undefined;
}

const isFileSecret = (k: string): boolean => (fileSecretFields as readonly string[]).includes(k);

/** The served form of a spec (or of a clusters.yaml entry): its allowlisted public fields; credentials never. */
export function servedSpec(spec: unknown): Record<string, unknown> {
  if (!isRecord(spec)) return {};
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(spec)) {
    if (isFileSecret(k)) {
      if (spec[k] !== undefined && spec[k] !== null && spec[k] !== '') out[k] = redactedValue;
      continue;
    }
    const type = Object.hasOwn(publicSpecFields, k) ? publicSpecFields[k] : undefined;
    const x = type === undefined ? undefined : allowed(spec[k], type);
    if (x !== undefined) out[k] = k === 'server' ? withoutUserinfo(x as string) : x;
  }
  return out;
}

/** A URL without the user:password it may carry (refused as a server, but never served either). */
function withoutUserinfo(url: string): string {
  try {
    const u = new URL(url);
    if (!u.username && !u.password) return url;
    u.username = '';
    u.password = '';
    return u.href;
  } catch {
    return url;
  }
}

/** What inline credentials are bound to: where synchro connects with them and how it trusts the server. */
export interface ClusterEndpoint {
  server: string;
  caData?: string;
  insecureSkipTLSVerify?: boolean;
  tlsServerName?: string;
}
export const endpointFields = ['server', 'caData', 'insecureSkipTLSVerify', 'tlsServerName'] as const;

/** A server URL as compared: scheme, lowercase host, port unless the default, path without trailing slashes. */
export function normalizeServer(server: string): string {
  try {
    const u = new URL(server.trim());
    return `${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, '')}`;
  } catch {
    return server.trim();
  }
}

/** The endpoint a spec says (normalised: what two specs are compared by). */
export function clusterEndpoint(spec: unknown): ClusterEndpoint {
  const s = isRecord(spec) ? spec : {};
  const str = (v: unknown) => (typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined);
  return {
    server: typeof s.server === 'string' ? normalizeServer(s.server) : '',
    ...(str(s.caData) ? { caData: str(s.caData) } : {}),
    ...(s.insecureSkipTLSVerify === true ? { insecureSkipTLSVerify: true } : {}),
    ...(str(s.tlsServerName) ? { tlsServerName: str(s.tlsServerName) } : {}),
  };
}

/** The endpoint fields that differ between two endpoints (normalised). */
export function endpointChanges(from: ClusterEndpoint, to: ClusterEndpoint): Array<(typeof endpointFields)[number]> {
  const a = clusterEndpoint(from);
  const b = clusterEndpoint(to);
  return endpointFields.filter((k) => a[k] !== b[k]);
}

/** The rule a change of endpoint without new inline credentials breaks (the 422's cause, synchro's refusal). */
export const endpointBindingRule =
  'inline credentials are bound to the endpoint they were given for: give spec.credentials again with a change of server, caData, insecureSkipTLSVerify or tlsServerName';

/** What validation knows besides the spec: the operator's network allowance, and whether credentials come with it. */
export interface ValidationContext {
  /** The operator's --allow-member-networks (default: none). */
  networks?: MemberNetworks;
  /** Inline credentials are stored for the object already (the request gives none). */
  storedCredentials?: boolean;
}

/** clusters.yaml keys that only a file entry may use, and what an API object says instead. */
const fileOnly: Record<string, string> = {
  kubeconfig: 'file references are not accepted through the API (Panoptes does not read its own files for API-registered clusters): give spec.server, spec.caData and spec.credentials',
  context: 'kubeconfig contexts are for clusters.yaml: give spec.server, spec.caData and spec.credentials',
  certificateAuthority: 'file references are not accepted through the API: give the CA bundle as spec.caData (base64 PEM)',
  tokenFile: 'file references are not accepted through the API: give spec.credentials.token, or spec.credentials.secretRef',
  clientCertificate: 'file references are not accepted through the API: give spec.credentials.clientCertData, or spec.credentials.secretRef',
  clientKey: 'file references are not accepted through the API: give spec.credentials.clientKeyData, or spec.credentials.secretRef',
  certificateAuthorityData: 'use spec.caData',
  token: 'use spec.credentials.token (write-only), or spec.credentials.secretRef',
  clientCertificateData: 'use spec.credentials.clientCertData (write-only), or spec.credentials.secretRef',
  clientKeyData: 'use spec.credentials.clientKeyData (write-only), or spec.credentials.secretRef',
};

/**
 * The fields of a Cluster object, for the strict decoding of writes (`unknown field
 * "spec.foo"`). File-only spec keys are known (they get a 422 that says what to use instead).
 */
export const clusterShape: Shape = {
  apiVersion: true,
  kind: true,
  metadata: objectMetaShape,
  spec: {
    source: true, server: true, caData: true, insecureSkipTLSVerify: true, tlsServerName: true, resources: true,
    namespaces: { include: true, exclude: true },
    credentials: { secretRef: { name: true }, sourceSecretRef: { namespace: true, name: true }, token: true, clientCertData: true, clientKeyData: true },
    sourceObject: { apiVersion: true, kind: true, namespace: true, name: true, context: true },
    [mcsRolesField]: { provider: true, consumer: true },
    ...Object.fromEntries(Object.keys(fileOnly).map((k) => [k, true])),
  },
  status: true,
};

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Whether `text` is base64 of PEM blocks of the given type. */
function isBase64Pem(text: string, what: RegExp): boolean {
  if (!/^[A-Za-z0-9+/=\s]+$/.test(text)) return false;
  const pem = Buffer.from(text, 'base64').toString('utf8');
  return what.test(pem);
}
const certificatePem = /-----BEGIN CERTIFICATE-----[\s\S]+-----END CERTIFICATE-----/;
const keyPem = /-----BEGIN ([A-Z]+ )?PRIVATE KEY-----[\s\S]+-----END ([A-Z]+ )?PRIVATE KEY-----/;

function optionalString(errs: FieldError[], path: string, v: unknown, secret = false): v is string | undefined {
  if (v === undefined) return true;
  if (typeof v !== 'string') {
    errs.push(fieldInvalid(path, secret ? hidden : v, secret ? `must be a string (got ${kindOf(v)})` : 'must be a string'));
    return false;
  }
  return true;
}

/** What a credential field's error shows instead of its value. */
const hidden = '(hidden)';
const kindOf = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'a list' : `a ${typeof v}`);

function validateCredentials(errs: FieldError[], c: unknown): void {
  const p = 'spec.credentials';
  if (c === undefined) return;
  // The value is never shown: a string here is most likely a token.
  if (!isRecord(c)) return void errs.push(fieldInvalid(p, hidden, `must be an object with secretRef, or token and/or clientCertData and clientKeyData (got ${kindOf(c)})`));
  const inline = inlineCredentialFields.filter((k) => c[k] !== undefined);
  if (c.sourceSecretRef !== undefined) errs.push(fieldForbidden(`${p}.sourceSecretRef`, 'set by Panoptes on the Clusters a ClusterSource imports: give secretRef (a Secret in the namespace Panoptes runs in)'));
  if (c.secretRef !== undefined) {
    if (inline.length) errs.push(fieldForbidden(`${p}.${inline[0]}`, 'give either secretRef or inline credentials, not both'));
    if (!isRecord(c.secretRef)) errs.push(fieldInvalid(`${p}.secretRef`, c.secretRef, 'must be an object with the name of a Secret in the namespace Panoptes runs in'));
    else if (c.secretRef.name === undefined || c.secretRef.name === '') errs.push(fieldRequired(`${p}.secretRef.name`, 'the name of a Secret in the namespace Panoptes runs in'));
    else if (typeof c.secretRef.name !== 'string') errs.push(fieldInvalid(`${p}.secretRef.name`, c.secretRef.name, 'must be a string'));
    else {
      const why = dnsSubdomainProblem(c.secretRef.name);
      if (why) errs.push(fieldInvalid(`${p}.secretRef.name`, c.secretRef.name, why));
    }
  }
  if (optionalString(errs, `${p}.token`, c.token, true) && c.token !== undefined && (c.token === '' || /\s/.test(c.token))) {
    errs.push(fieldInvalid(`${p}.token`, hidden, 'must be a bearer token: not empty, no whitespace'));
  }
  const cert = c.clientCertData;
  const key = c.clientKeyData;
  if (optionalString(errs, `${p}.clientCertData`, cert, true) && cert !== undefined && !isBase64Pem(cert, certificatePem)) {
    errs.push(fieldInvalid(`${p}.clientCertData`, hidden, 'must be base64 of a PEM certificate, as client-certificate-data in a kubeconfig'));
  }
  if (optionalString(errs, `${p}.clientKeyData`, key, true) && key !== undefined && !isBase64Pem(key, keyPem)) {
    errs.push(fieldInvalid(`${p}.clientKeyData`, hidden, 'must be base64 of a PEM private key, as client-key-data in a kubeconfig'));
  }
  if (cert !== undefined && key === undefined) errs.push(fieldRequired(`${p}.clientKeyData`, 'a client certificate needs its key'));
  if (key !== undefined && cert === undefined) errs.push(fieldRequired(`${p}.clientCertData`, 'a client key needs its certificate'));
}

/**
 * Where spec.server may not go: a loopback, link-local or unspecified address (or a localhost
 * name) outside the operator's allowance; plain http:// with credentials to anything but an
 * address inside it (the credentials would travel in clear text to wherever the name leads).
 */
function serverReach(errs: FieldError[], u: URL, spec: Record<string, unknown>, ctx: ValidationContext): void {
  const networks = ctx.networks ?? new MemberNetworks();
  const refused = networks.hostRefused(u.hostname);
  if (refused) return void errs.push(fieldForbidden('spec.server', `${refused}: ${allowHint}`));
  const credentials = spec.credentials !== undefined || ctx.storedCredentials === true;
  if (u.protocol === 'http:' && credentials && !networks.hostAllowed(u.hostname)) {
    errs.push(
      fieldForbidden(
        'spec.server',
        `plain http:// would send the credentials in clear text: use https://, or (for a test cluster on a network the operator allows with ${memberNetworksFlag}) give the server as an address inside it`,
      ),
    );
  }
}

/** Every problem with the spec of an API-registered Cluster, one error per field. */
export function validateClusterSpec(spec: unknown, ctx: ValidationContext = {}): FieldError[] {
  const errs: FieldError[] = [];
  if (spec === undefined || spec === null) return [fieldRequired('spec', 'the member cluster to register: at least spec.server')];
  if (!isRecord(spec)) return [fieldInvalid('spec', spec, 'must be an object')];
  if (spec.source !== undefined && spec.source !== 'api') {
    errs.push(fieldNotSupported('spec.source', spec.source, ['api']));
  }
  for (const [k, why] of Object.entries(fileOnly)) if (spec[k] !== undefined) errs.push(fieldForbidden(`spec.${k}`, why));
  if (spec.sourceObject !== undefined) errs.push(fieldForbidden('spec.sourceObject', 'set by Panoptes on the Clusters a ClusterSource imports: create a ClusterSource instead'));

  if (spec.server === undefined || spec.server === '') errs.push(fieldRequired('spec.server', 'the URL of the member API server, e.g. https://10.0.0.1:6443'));
  else if (typeof spec.server !== 'string') errs.push(fieldInvalid('spec.server', spec.server, 'must be a string'));
  else {
    let u: URL | undefined;
    try {
      u = new URL(spec.server);
    } catch {
      errs.push(fieldInvalid('spec.server', spec.server, 'must be a URL, e.g. https://10.0.0.1:6443'));
    }
    if (u) {
      if (u.protocol !== 'https:' && u.protocol !== 'http:') errs.push(fieldInvalid('spec.server', spec.server, 'must be an https:// (or, for a local test cluster, http://) URL'));
      else if (u.username || u.password) errs.push(fieldInvalid('spec.server', spec.server, 'must not carry credentials: give them in spec.credentials'));
      else if (u.search || u.hash) errs.push(fieldInvalid('spec.server', spec.server, 'must not have a query or a fragment'));
      else serverReach(errs, u, spec, ctx);
    }
  }
  if (optionalString(errs, 'spec.caData', spec.caData) && spec.caData !== undefined && !isBase64Pem(spec.caData, certificatePem)) {
    errs.push(fieldInvalid('spec.caData', spec.caData.length > 40 ? `${spec.caData.slice(0, 40)}...` : spec.caData, 'must be base64 of PEM certificates, as certificate-authority-data in a kubeconfig'));
  }
  if (spec.insecureSkipTLSVerify !== undefined && typeof spec.insecureSkipTLSVerify !== 'boolean') {
    errs.push(fieldInvalid('spec.insecureSkipTLSVerify', spec.insecureSkipTLSVerify, 'must be true or false'));
  } else if (spec.insecureSkipTLSVerify === true && spec.caData !== undefined) {
    errs.push(fieldForbidden('spec.insecureSkipTLSVerify', 'a CA bundle (spec.caData) and skipping verification exclude each other, as in a kubeconfig'));
  }
  if (optionalString(errs, 'spec.tlsServerName', spec.tlsServerName) && spec.tlsServerName !== undefined) {
    const why = dnsSubdomainProblem(spec.tlsServerName);
    if (why) errs.push(fieldInvalid('spec.tlsServerName', spec.tlsServerName, why));
  }
  if (spec.resources !== undefined) {
    if (Array.isArray(spec.resources) && spec.resources.length === 0) {
      errs.push(fieldInvalid('spec.resources', spec.resources, 'must name at least one resource pattern; leave it out for the default set'));
    }
    uniqueStrings(errs, 'spec.resources', spec.resources, (s, p) => {
      try {
        parsePattern(s);
      } catch (err) {
        if (!(err instanceof PatternError)) throw err;
        errs.push(fieldInvalid(p, s, err.message));
      }
    });
  }
  if (spec.namespaces !== undefined) {
    if (!isRecord(spec.namespaces)) errs.push(fieldInvalid('spec.namespaces', spec.namespaces, 'must be an object with include and/or exclude lists'));
    else {
      for (const k of ['include', 'exclude'] as const) {
        if (spec.namespaces[k] === undefined) continue;
        uniqueStrings(errs, `spec.namespaces.${k}`, spec.namespaces[k], (s, p) => {
          const why = dnsLabelProblem(s);
          if (why) errs.push(fieldInvalid(p, s, why));
        });
      }
    }
  }
  validateCredentials(errs, spec.credentials);
  errs.push(...validateMcsRoles(spec[mcsRolesField], `spec.${mcsRolesField}`));
  return errs;
}

/** The inline credentials given in a spec (undefined when none are), and the spec without them (what is served). */
export function splitCredentials(spec: Record<string, unknown>): { served: Record<string, unknown>; inline?: { token?: string; clientCertData?: string; clientKeyData?: string }; secretRef: boolean } {
  const c = spec.credentials;
  if (!isRecord(c)) return { served: servedSpec(spec), secretRef: false };
  const inline: Record<string, string> = {};
  const rest: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(c)) {
    if ((inlineCredentialFields as readonly string[]).includes(k)) {
      if (typeof v === 'string') inline[k] = v;
    } else rest[k] = v;
  }
  const served = servedSpec(spec);
  return { served, ...(Object.keys(inline).length ? { inline } : {}), secretRef: rest.secretRef !== undefined };
}

/** The served spec of a clusters.yaml (or kubeconfig context) entry: its allowlisted public settings, `source: file`. */
export function fileClusterSpec(entry: Record<string, unknown>): Record<string, unknown> {
  const { source: _source, ...rest } = servedSpec(entry);
  return { source: 'file', ...rest };
}
