// Cluster registration: clusters.yaml (parsed, validated, watched for changes) or, for
// all-in-one, the contexts of a kubeconfig file.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import type { ClusterConnection } from './client.ts';
import { readKubeconfig } from './kubeconfig.ts';
import { defaultResources, parsePattern, PatternError, type ResourcePattern } from '../api/resource-patterns.ts';
import { clusterNameProblem, servedSpec } from '../api/cluster.ts';
import { mcsRoleNames, mcsRolesField, type McsRoles } from '../api/mcs-roles.ts';

export interface NamespaceFilter {
  /** Only these namespaces (namespaced objects, and Namespace objects by name). */
  include?: string[];
  /** Never these. */
  exclude?: string[];
}

/** Where a cluster's credentials come from, for its status (never the values). */
export interface CredentialsSource {
  source: 'Secret' | 'Inline' | 'None' | 'File';
  /** namespace/name of the Secret. */
  secret?: string;
  /** Which kinds of credentials are in use: token, clientCertificate, kubeconfig. */
  kinds?: string[];
}

export interface ClusterConfig extends ClusterConnection {
  name: string;
  /** Resource patterns (see resources.ts); the default set when none were given. */
  resources: string[];
  patterns: ResourcePattern[];
  namespaces?: NamespaceFilter;
  /** clusters.yaml (or a kubeconfig context): `file`; a Cluster object of the API: `api`. */
  source: 'file' | 'api';
  /** Changes when anything that affects the connection or selection changes (restart trigger). */
  fingerprint: string;
  /** API clusters: the object's metadata.generation this configuration comes from (status.observedGeneration). */
  generation?: number;
  /** API clusters: where the credentials come from. */
  credentials?: CredentialsSource;
  /** clusters.yaml: the multi-cluster Service roles the entry grants (api/mcs-roles.ts; both when absent). */
  multiClusterServices?: Partial<McsRoles>;
}

/** The settings that decide a cluster's connection and selection, with their patterns and fingerprint. */
export type ClusterSettings = ClusterConnection & { name: string; resources: string[]; namespaces?: NamespaceFilter; source: 'file' | 'api'; multiClusterServices?: Partial<McsRoles> };

/** A configuration from its settings: parsed patterns (a PatternError for a bad one) and the fingerprint. */
export function settingsConfig(s: ClusterSettings): ClusterConfig {
  return { ...s, patterns: s.resources.map(parsePattern), fingerprint: fingerprint(s) };
}

/** An entry that cannot be used; reported in its cluster's status (when it has a name) and the log. */
export interface InvalidEntry {
  index: number;
  name?: string;
  message: string;
  spec: Record<string, unknown>;
}

export interface ParsedConfig {
  clusters: ClusterConfig[];
  invalid: InvalidEntry[];
  /** Files whose change should trigger a reload (the config and the kubeconfigs it names). */
  files: string[];
}

/** The file as a whole cannot be used; the last good configuration stays in effect. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

const clusterName = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const pathKeys = ['kubeconfig', 'certificateAuthority', 'tokenFile', 'clientCertificate', 'clientKey'] as const;
const stringKeys = ['kubeconfig', 'context', 'server', 'certificateAuthority', 'certificateAuthorityData', 'token', 'tokenFile', 'clientCertificate', 'clientCertificateData', 'clientKey', 'clientKeyData', 'tlsServerName'] as const;
const entryKeys = new Set<string>(['name', 'resources', 'namespaces', 'insecureSkipTLSVerify', mcsRolesField, ...stringKeys]);

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The registration as stored in the clusters table and served on a file cluster's object:
 * its name and the allowlisted public fields (api/cluster.ts servedSpec), credentials as
 * "(redacted)"; nothing else of the entry, so a mistyped key's value goes nowhere.
 */
export function publicSpec(c: Partial<ClusterConfig> & Record<string, unknown>): Record<string, unknown> {
  const { source: _source, ...spec } = servedSpec(c);
  return { ...(typeof c.name === 'string' ? { name: c.name } : {}), ...spec };
}

function stringList(v: unknown, what: string): string[] {
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string' && x.trim() !== '')) throw new ConfigError(`${what} must be a list of non-empty strings`);
  return v.map((x: string) => x.trim());
}

function fingerprint(c: ClusterSettings): string {
  const h = createHash('sha256').update(JSON.stringify(c));
  if (c.kubeconfig && existsSync(c.kubeconfig)) h.update(readFileSync(c.kubeconfig));
  return h.digest('hex').slice(0, 16);
}

function parseNamespaces(v: unknown): NamespaceFilter | undefined {
  if (v === undefined || v === null) return undefined;
  if (!isRecord(v)) throw new ConfigError('namespaces must be a map with include and/or exclude lists');
  for (const k of Object.keys(v)) if (k !== 'include' && k !== 'exclude') throw new ConfigError(`namespaces: unknown key ${JSON.stringify(k)} (use include, exclude)`);
  const f: NamespaceFilter = {};
  if (v.include !== undefined) f.include = stringList(v.include, 'namespaces.include');
  if (v.exclude !== undefined) f.exclude = stringList(v.exclude, 'namespaces.exclude');
  return f;
}

/** An entry's multiClusterServices: provider and/or consumer, true or false. */
function parseMcsRoles(v: unknown): Partial<McsRoles> | undefined {
  if (v === undefined || v === null) return undefined;
  if (!isRecord(v)) throw new ConfigError(`${mcsRolesField} must be a map with provider and/or consumer (true or false)`);
  const out: Partial<McsRoles> = {};
  for (const [k, x] of Object.entries(v)) {
    if (!(mcsRoleNames as readonly string[]).includes(k)) throw new ConfigError(`${mcsRolesField}: unknown key ${JSON.stringify(k)} (use provider, consumer)`);
    if (typeof x !== 'boolean') throw new ConfigError(`${mcsRolesField}.${k} must be true or false`);
    out[k as keyof McsRoles] = x;
  }
  return out;
}

function parsePatterns(list: string[]): ResourcePattern[] {
  return list.map((s) => {
    try {
      return parsePattern(s);
    } catch (err) {
      if (err instanceof PatternError) throw new ConfigError(err.message);
      throw err;
    }
  });
}

/** Validates one entry; throws a ConfigError naming the problem. */
function parseEntry(raw: Record<string, unknown>, baseDir: string, defaults: { resources?: string[]; namespaces?: NamespaceFilter }): ClusterConfig {
  const name = raw.name;
  if (typeof name !== 'string' || name === '') throw new ConfigError('name is required');
  if (!clusterName.test(name) || name.length > 63) throw new ConfigError(`name ${JSON.stringify(name)} must be a DNS label: lowercase letters, digits and '-', at most 63 characters`);
  const reserved = clusterNameProblem(name);
  if (reserved) throw new ConfigError(`name ${reserved}`);
  for (const k of Object.keys(raw)) if (!entryKeys.has(k)) throw new ConfigError(`unknown key ${JSON.stringify(k)}`);
  const c: Record<string, unknown> = { name };
  for (const k of stringKeys) {
    const v = raw[k];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'string' || v === '') throw new ConfigError(`${k} must be a non-empty string`);
    c[k] = (pathKeys as readonly string[]).includes(k) && !isAbsolute(v) ? resolve(baseDir, v) : v;
  }
  if (raw.insecureSkipTLSVerify !== undefined) {
    if (typeof raw.insecureSkipTLSVerify !== 'boolean') throw new ConfigError('insecureSkipTLSVerify must be true or false');
    c.insecureSkipTLSVerify = raw.insecureSkipTLSVerify;
  }
  if (c.kubeconfig && c.server) throw new ConfigError('give either kubeconfig (with an optional context) or server, not both');
  if (!c.kubeconfig && !c.server) throw new ConfigError('give kubeconfig (with an optional context) or server');
  if (c.context && !c.kubeconfig) throw new ConfigError('context needs kubeconfig');
  if (c.server) {
    let u: URL;
    try {
      u = new URL(c.server as string);
    } catch {
      throw new ConfigError(`server ${JSON.stringify(c.server)} is not a URL`);
    }
    if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new ConfigError(`server ${JSON.stringify(c.server)} must be an http:// or https:// URL`);
    if (u.username || u.password) throw new ConfigError('server must not carry credentials (user:password@): give token, or a client certificate');
    if (c.token && c.tokenFile) throw new ConfigError('give token or tokenFile, not both');
    if (c.certificateAuthority && c.certificateAuthorityData) throw new ConfigError('give certificateAuthority or certificateAuthorityData, not both');
    const cert = c.clientCertificate || c.clientCertificateData;
    const key = c.clientKey || c.clientKeyData;
    if (Boolean(cert) !== Boolean(key)) throw new ConfigError('a client certificate needs its key, and a key its certificate');
  }
  const resources = raw.resources === undefined || raw.resources === null ? (defaults.resources ?? [...defaultResources]) : stringList(raw.resources, 'resources');
  if (resources.length === 0) throw new ConfigError('resources is empty: leave it out for the default set, or name some');
  const patterns = parsePatterns(resources);
  const namespaces = parseNamespaces(raw.namespaces) ?? defaults.namespaces;
  const roles = parseMcsRoles(raw[mcsRolesField]);
  const base: ClusterSettings = { ...(c as ClusterConnection), name, resources, namespaces, source: 'file', ...(roles ? { [mcsRolesField]: roles } : {}) };
  return { ...base, patterns, fingerprint: fingerprint(base) };
}

/**
 * Parses clusters.yaml. The file holds `clusters:` (a list of entries) and optionally
 * `defaults:` (resources, namespaces), or just the list. A file that is not YAML or has
 * the wrong shape throws a ConfigError; a bad entry becomes an InvalidEntry and the
 * others are still used.
 */
export function parseClustersYaml(text: string, baseDir: string): ParsedConfig {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    const where = err instanceof YAMLParseError && err.linePos ? ` at line ${err.linePos[0].line}` : '';
    throw new ConfigError(`not valid YAML${where}: ${(err as Error).message.split('\n')[0]}`);
  }
  if (doc === null || doc === undefined) doc = { clusters: [] };
  let list: unknown;
  let defaults: { resources?: string[]; namespaces?: NamespaceFilter } = {};
  if (Array.isArray(doc)) list = doc;
  else if (isRecord(doc)) {
    for (const k of Object.keys(doc)) {
      if (!['clusters', 'defaults', 'apiVersion', 'kind'].includes(k)) throw new ConfigError(`unknown top-level key ${JSON.stringify(k)} (expected clusters, defaults)`);
    }
    list = doc.clusters ?? [];
    if (doc.defaults !== undefined && doc.defaults !== null) {
      if (!isRecord(doc.defaults)) throw new ConfigError('defaults must be a map (resources, namespaces)');
      for (const k of Object.keys(doc.defaults)) if (k !== 'resources' && k !== 'namespaces') throw new ConfigError(`defaults: unknown key ${JSON.stringify(k)}`);
      if (doc.defaults.resources !== undefined) {
        defaults.resources = stringList(doc.defaults.resources, 'defaults.resources');
        parsePatterns(defaults.resources);
      }
      defaults.namespaces = parseNamespaces(doc.defaults.namespaces);
    }
  } else throw new ConfigError('expected a map with a clusters list');
  if (!Array.isArray(list)) throw new ConfigError('clusters must be a list');

  const out: ParsedConfig = { clusters: [], invalid: [], files: [] };
  const names = new Set<string>();
  list.forEach((raw: unknown, index) => {
    if (!isRecord(raw)) {
      out.invalid.push({ index, message: `clusters[${index}] must be a map`, spec: {} });
      return;
    }
    const name = typeof raw.name === 'string' && raw.name !== '' ? raw.name : undefined;
    const spec = publicSpec(raw);
    if (name !== undefined && names.has(name)) {
      out.invalid.push({ index, name: undefined, message: `clusters[${index}]: duplicate name ${JSON.stringify(name)} (the first entry is used)`, spec });
      return;
    }
    if (name !== undefined) names.add(name);
    try {
      const c = parseEntry(raw, baseDir, defaults);
      out.clusters.push(c);
      if (c.kubeconfig) out.files.push(c.kubeconfig);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      const validName = name !== undefined && clusterName.test(name) && name.length <= 63 ? name : undefined;
      out.invalid.push({ index, name: validName, message: `clusters[${index}]${name ? ` (${name})` : ''}: ${err.message}`, spec });
    }
  });
  return out;
}

export function loadClustersFile(path: string): ParsedConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  try {
    const parsed = parseClustersYaml(text, dirname(resolve(path)));
    parsed.files.unshift(resolve(path));
    return parsed;
  } catch (err) {
    if (err instanceof ConfigError) throw new ConfigError(`${path}: ${err.message}`);
    throw err;
  }
}

/** Cluster names from context names: lowercased, other characters replaced by '-'. */
export function contextClusterName(context: string): string {
  const n = context.toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 63).replace(/-+$/, '');
  return n || 'cluster';
}

/** all-in-one's source: one cluster per context of a kubeconfig (`all`, or the named ones). */
export function loadKubeconfigClusters(path: string, contexts: 'all' | string[], resources?: string[]): ParsedConfig {
  let available: string[];
  try {
    available = readKubeconfig(path).contexts.map((c) => c.name);
  } catch (err) {
    throw new ConfigError(`cannot load kubeconfig ${path}: ${(err as Error).message}`);
  }
  const wanted = contexts === 'all' ? available : contexts;
  const out: ParsedConfig = { clusters: [], invalid: [], files: [resolve(path)] };
  const names = new Set<string>();
  wanted.forEach((context, index) => {
    const name = contextClusterName(context);
    const raw = { name, kubeconfig: resolve(path), context, ...(resources ? { resources } : {}) };
    if (!available.includes(context)) {
      out.invalid.push({ index, name, message: `kubeconfig ${path} has no context ${JSON.stringify(context)} (it has: ${available.join(', ') || 'none'})`, spec: publicSpec(raw) });
      return;
    }
    if (names.has(name)) {
      out.invalid.push({ index, message: `contexts: two contexts map to cluster name ${JSON.stringify(name)}`, spec: publicSpec(raw) });
      return;
    }
    names.add(name);
    try {
      out.clusters.push(parseEntry(raw, dirname(resolve(path)), {}));
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      out.invalid.push({ index, name, message: `context ${context}: ${err.message}`, spec: publicSpec(raw) });
    }
  });
  return out;
}
