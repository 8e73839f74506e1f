// A kubeconfig file, read the way client-go's clientcmd reads one: clusters, users and
// contexts by name, the current context, file references relative to the kubeconfig's
// directory. Static credentials (token, token file, client certificate, basic auth,
// impersonation) are applied here; users with an exec plugin or an auth provider are handed
// to @kubernetes/client-node's KubeConfig (member/client.ts), which is only loaded for them:
// its generated API is about 70 MB of a process's memory.
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { parse as parseYaml, YAMLParseError } from 'yaml';

export interface KubeconfigCluster {
  name: string;
  /** Without a trailing slash. */
  server: string;
  caFile?: string;
  caData?: string;
  skipTLSVerify: boolean;
  tlsServerName?: string;
}

export interface KubeconfigUser {
  name: string;
  token?: string;
  tokenFile?: string;
  certFile?: string;
  certData?: string;
  keyFile?: string;
  keyData?: string;
  username?: string;
  password?: string;
  /** `as`: the Impersonate-User header. */
  impersonateUser?: string;
  /** An exec plugin or an auth provider: credentials that only running code can produce. */
  plugin: boolean;
}

export interface KubeconfigContext {
  name: string;
  cluster: string;
  user?: string;
}

export interface Kubeconfig {
  file: string;
  clusters: KubeconfigCluster[];
  users: KubeconfigUser[];
  contexts: KubeconfigContext[];
  currentContext?: string;
}

const record = (v: unknown): Record<string, unknown> => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
const text = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
const entries = (v: unknown): Record<string, unknown>[] => (Array.isArray(v) ? v.map(record) : []);

/**
 * The YAML of a kubeconfig; an error says where, never what: the parser's message quotes the
 * source around the error, which in a kubeconfig is as likely as not a token or a key, and
 * the error goes into a Cluster's status.
 */
export function parseKubeconfigYaml(text: string, what: string): unknown {
  try {
    return parseYaml(text);
  } catch (err) {
    if (!(err instanceof YAMLParseError)) throw err;
    const at = err.linePos ? ` at line ${err.linePos[0].line}, column ${err.linePos[0].col}` : '';
    throw new Error(`${what} is not valid YAML${at} (${err.code})`);
  }
}

/** Reads and checks a kubeconfig file; throws an Error that says what is wrong. */
export function readKubeconfig(file: string): Kubeconfig {
  return parseKubeconfig(readFileSync(file, 'utf8'), file);
}

/** Checks a kubeconfig's text (`file`: where it is, for messages and relative paths); throws an Error that says what is wrong. */
export function parseKubeconfig(source: string, file: string): Kubeconfig {
  const root = record(parseKubeconfigYaml(source, `kubeconfig ${file}`));
  const dir = dirname(file);
  const path = (p: string | undefined) => (p === undefined || isAbsolute(p) ? p : join(dir, p));
  const clusters = entries(root.clusters).map((e, i): KubeconfigCluster => {
    const name = text(e.name);
    if (!name) throw new Error(`clusters[${i}].name is missing`);
    const c = record(e.cluster);
    if (e.cluster === undefined || e.cluster === null) throw new Error(`clusters[${i}].cluster is missing`);
    const server = text(c.server);
    if (!server) throw new Error(`clusters[${i}].cluster.server is missing`);
    return {
      name,
      server: server.replace(/\/$/, ''),
      caFile: path(text(c['certificate-authority'])),
      caData: text(c['certificate-authority-data']),
      skipTLSVerify: c['insecure-skip-tls-verify'] === true,
      tlsServerName: text(c['tls-server-name']),
    };
  });
  const users = entries(root.users).map((e, i): KubeconfigUser => {
    const name = text(e.name);
    if (!name) throw new Error(`users[${i}].name is missing`);
    const u = record(e.user);
    return {
      name,
      token: text(u.token),
      // client-go's field is `tokenFile`; `token-file` is what @kubernetes/client-node reads,
      // and what kubeconfigs written for it (and earlier versions of synchro) use.
      tokenFile: path(text(u.tokenFile) ?? text(u['token-file'])),
      certFile: path(text(u['client-certificate'])),
      certData: text(u['client-certificate-data']),
      keyFile: path(text(u['client-key'])),
      keyData: text(u['client-key-data']),
      username: text(u.username),
      password: text(u.password),
      impersonateUser: text(u.as),
      plugin: Boolean(u.exec || u['auth-provider']),
    };
  });
  const contexts = entries(root.contexts).map((e, i): KubeconfigContext => {
    const name = text(e.name);
    if (!name) throw new Error(`contexts[${i}].name is missing`);
    if (e.context === undefined || e.context === null) throw new Error(`contexts[${i}].context is missing`);
    const c = record(e.context);
    const cluster = text(c.cluster);
    if (!cluster) throw new Error(`contexts[${i}].context.cluster is missing`);
    return { name, cluster, user: text(c.user) };
  });
  return { file, clusters, users, contexts, currentContext: text(root['current-context']) };
}

/** The cluster and user of a context (the current one when not named); throws when they are missing. */
export function kubeconfigContext(kc: Kubeconfig, context?: string): { context: string; cluster: KubeconfigCluster; user?: KubeconfigUser } {
  const name = context ?? kc.currentContext;
  const ctx = kc.contexts.find((c) => c.name === name);
  if (!ctx) {
    if (context !== undefined) throw new Error(`kubeconfig ${kc.file} has no context ${JSON.stringify(context)}`);
    throw new Error(`kubeconfig ${kc.file}: context ${JSON.stringify(name)} names no cluster`);
  }
  const cluster = kc.clusters.find((c) => c.name === ctx.cluster);
  if (!cluster) throw new Error(`kubeconfig ${kc.file}: context ${JSON.stringify(ctx.name)} names no cluster`);
  return { context: ctx.name, cluster, user: kc.users.find((u) => u.name === ctx.user) };
}

/** The file's entries of one context, its cluster and its user, as written (for a plugin's loader). */
export function rawContext(file: string, context: string): Record<string, unknown> {
  const root = record(parseYaml(readFileSync(file, 'utf8')));
  const ctx = entries(root.contexts).find((e) => e.name === context);
  const c = record(ctx?.context);
  return {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: entries(root.clusters).filter((e) => e.name === c.cluster),
    users: entries(root.users).filter((e) => e.name === c.user),
    contexts: ctx ? [ctx] : [],
    'current-context': context,
  };
}
