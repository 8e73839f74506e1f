// Secure serving from flags (kube's names, as in kube's delegated authentication and
// authorization options): the serving certificate, the authentication sources (CA files and
// request headers from flags or, by default, from the host cluster's ConfigMap
// kube-system/extension-apiserver-authentication), TokenReview and SubjectAccessReview
// clients for the host cluster (in-cluster config or a kubeconfig).
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type { Logger } from '../../lib/log.ts';
import { Authenticator, parseBundle, type AuthnConfig, type RequestHeaderConfig } from './authn.ts';
import { Authorizer } from './authz.ts';
import { HostClient } from './hostclient.ts';
import { requestHeaderFlags, requestHeaderNamesFromConfigMap, requestHeaderNamesFromFlags, type RequestHeaderNames } from './request-header.ts';
import { ServingTls } from './tls.ts';

export const secureFlagSpec = {
  'secure-port': { type: 'string' },
  'bind-address': { type: 'string' },
  'tls-cert-file': { type: 'string' },
  'tls-private-key-file': { type: 'string' },
  'client-ca-file': { type: 'string' },
  'requestheader-client-ca-file': { type: 'string' },
  'requestheader-allowed-names': { type: 'string' },
  'requestheader-username-headers': { type: 'string' },
  'requestheader-uid-headers': { type: 'string' },
  'requestheader-group-headers': { type: 'string' },
  'requestheader-extra-headers-prefix': { type: 'string' },
  'authentication-kubeconfig': { type: 'string' },
  'authorization-kubeconfig': { type: 'string' },
  'authentication-skip-lookup': { type: 'string' },
  'authentication-token-webhook-cache-ttl': { type: 'string' },
  'authorization-webhook-cache-authorized-ttl': { type: 'string' },
  'authorization-webhook-cache-unauthorized-ttl': { type: 'string' },
  'authorization-always-allow-groups': { type: 'string' },
  'authorization-always-allow-paths': { type: 'string' },
  'anonymous-auth': { type: 'string' },
} as const;

export type SecureFlagValues = { [K in keyof typeof secureFlagSpec]?: string };

export const secureFlagHelp = `Secure serving (the default of \`panoptes apiserver\`; any of these turns it on for all-in-one):
  --secure-port N                         HTTPS port (default 8443)
  --bind-address ADDR                     (default 0.0.0.0)
  --tls-cert-file FILE, --tls-private-key-file FILE
                                          serving certificate, reloaded when the files change; without them a
                                          self-signed certificate is generated at start
  --client-ca-file FILE                   client certificates signed by it authenticate as CN (user) and O (groups)
  --requestheader-client-ca-file FILE     the front proxy's CA: only peers with a client certificate signed by it
                                          (and a CN in --requestheader-allowed-names) may set the user headers
  --requestheader-allowed-names A,B       allowed front-proxy CNs (empty: any)
  --requestheader-username-headers H,..   default X-Remote-User
  --requestheader-uid-headers H,..        default none: no UID is read from any header (X-Remote-Uid, where the
                                          front proxy sets it and removes a client's own: kube 1.32+)
  --requestheader-group-headers H,..      default X-Remote-Group
  --requestheader-extra-headers-prefix P  default X-Remote-Extra-
                                          These apply only with --requestheader-client-ca-file. Without it, the
                                          front proxy's CA, names and headers come from the host cluster's ConfigMap
                                          kube-system/extension-apiserver-authentication, exactly as it names them
                                          (a header it does not name is not read)
  --authentication-skip-lookup=true       do not read that ConfigMap
  --authentication-kubeconfig FILE        the host cluster, for TokenReview and the ConfigMap (default: in-cluster)
  --authorization-kubeconfig FILE         the host cluster, for SubjectAccessReview (default: in-cluster)
  --authentication-token-webhook-cache-ttl DURATION         (default 10s)
  --authorization-webhook-cache-authorized-ttl DURATION     (default 10s)
  --authorization-webhook-cache-unauthorized-ttl DURATION   (default 10s)
  --authorization-always-allow-groups G,..                  (default system:masters)
  --authorization-always-allow-paths P,..                   (default /healthz,/readyz,/livez)
  --anonymous-auth=true                   requests without credentials act as system:anonymous (default false: 401)`;

export class ConfigError extends Error {
  override name = 'ConfigError';
  constructor(message: string) {
    super(message);
    this.stack = `${this.name}: ${message}`; // the CLI prints the message, not a trace
  }
}

function list(v: string | undefined, fallback: string[]): string[] {
  if (v === undefined) return fallback;
  return v
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

function bool(name: string, v: string | undefined, fallback: boolean): boolean {
  if (v === undefined) return fallback;
  if (['true', '1', 't'].includes(v)) return true;
  if (['false', '0', 'f'].includes(v)) return false;
  throw new ConfigError(`--${name} must be true or false, got ${JSON.stringify(v)}`);
}

function duration(name: string, v: string | undefined, fallbackMs: number): number {
  if (v === undefined) return fallbackMs;
  const m = /^(\d+)(ms|s|m|h)$/.exec(v);
  if (!m) throw new ConfigError(`--${name} must be a duration like 10s, got ${JSON.stringify(v)}`);
  return Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] as 'ms' | 's' | 'm' | 'h'];
}

function readPem(flag: string, path: string): string {
  try {
    const pem = readFileSync(path, 'utf8');
    if (!parseBundle(pem).length) throw new Error('no certificate in it');
    return pem;
  } catch (err) {
    throw new ConfigError(`--${flag} ${path}: ${(err as Error).message}`);
  }
}

export const authConfigMapPath = '/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication';

/** What the ConfigMap (or the flags) say: the CAs as PEM, and the request-header names (request-header.ts). */
export interface AuthSources extends RequestHeaderNames {
  clientCA?: string;
  requestHeaderCA?: string;
}

/** Reads kube-system/extension-apiserver-authentication (what kube-apiserver publishes for extension servers): the request-header names exactly as it gives them. */
export async function lookupAuthSources(client: HostClient): Promise<AuthSources> {
  const cm = await client.get<{ data?: Record<string, string> }>(authConfigMapPath);
  const d = cm.data ?? {};
  return {
    clientCA: d['client-ca-file'] || undefined,
    requestHeaderCA: d['requestheader-client-ca-file'] || undefined,
    ...requestHeaderNamesFromConfigMap(d),
  };
}

export function toAuthnConfig(src: AuthSources, rest: Pick<AuthnConfig, 'tokenReview' | 'anonymous'>): AuthnConfig {
  const rh: RequestHeaderConfig | undefined = src.requestHeaderCA
    ? {
        ca: parseBundle(src.requestHeaderCA),
        allowedNames: src.allowedNames,
        usernameHeaders: src.usernameHeaders,
        uidHeaders: src.uidHeaders,
        groupHeaders: src.groupHeaders,
        extraHeaderPrefixes: src.extraHeaderPrefixes,
      }
    : undefined;
  return { requestHeader: rh, clientCA: src.clientCA ? parseBundle(src.clientCA) : undefined, ...rest };
}

export interface SecureServing {
  host: string;
  port: number;
  tls: ServingTls;
  authenticator: Authenticator;
  authorizer: Authorizer;
  stop(): void;
}

export interface SecureServingDeps {
  /** Host cluster clients (tests inject them); default from the kubeconfig flags or in-cluster. */
  authnClient?: HostClient;
  authzClient?: HostClient;
  /** How often the ConfigMap is read again (default 5 min). */
  lookupRefreshMs?: number;
}

/** Everything secure serving needs, from the flags; throws ConfigError on bad flags or a failed lookup. */
export async function secureServingFromFlags(v: SecureFlagValues, log: Logger, deps: SecureServingDeps = {}): Promise<SecureServing> {
  const port = v['secure-port'] === undefined ? 8443 : Number(v['secure-port']);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError(`--secure-port must be a port number, got ${JSON.stringify(v['secure-port'])}`);
  const host = v['bind-address'] ?? '0.0.0.0';
  const load = (flag: string, path: string | undefined) => {
    try {
      return HostClient.load(path);
    } catch (err) {
      throw new ConfigError(`--${flag} ${path}: ${(err as Error).message}`);
    }
  };
  const authnClient = deps.authnClient ?? load('authentication-kubeconfig', v['authentication-kubeconfig']);
  const authzClient = deps.authzClient ?? load('authorization-kubeconfig', v['authorization-kubeconfig']);
  if (!authzClient) throw new ConfigError('no host cluster to authorize with: run in a pod (in-cluster config) or pass --authorization-kubeconfig (or use --insecure-listen for local development without authentication)');

  // The request-header settings come as a whole from one source (request-header.ts): the flags
  // with --requestheader-client-ca-file, else the ConfigMap exactly as it names them.
  const headerFlags = requestHeaderFlags.filter((f) => v[f] !== undefined);
  if (!v['requestheader-client-ca-file'] && headerFlags.length) {
    throw new ConfigError(`${headerFlags.map((f) => `--${f}`).join(', ')} apply only with --requestheader-client-ca-file; without it the front proxy's CA, names and headers come as a whole from kube-system/extension-apiserver-authentication`);
  }
  let names: RequestHeaderNames;
  try {
    names = requestHeaderNamesFromFlags(v);
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
  const flagSources: AuthSources = {
    clientCA: v['client-ca-file'] ? readPem('client-ca-file', v['client-ca-file']) : undefined,
    requestHeaderCA: v['requestheader-client-ca-file'] ? readPem('requestheader-client-ca-file', v['requestheader-client-ca-file']) : undefined,
    ...names,
  };
  const skipLookup = bool('authentication-skip-lookup', v['authentication-skip-lookup'], false);
  const anonymous = bool('anonymous-auth', v['anonymous-auth'], false);
  const tokenReview = authnClient ? { client: authnClient, ttlMs: duration('authentication-token-webhook-cache-ttl', v['authentication-token-webhook-cache-ttl'], 10_000) } : undefined;
  if (!authnClient) log.warn('no host cluster for authentication (not in a pod, no --authentication-kubeconfig): bearer tokens are not accepted');

  // Flags win; the client CA they leave unset comes from the ConfigMap, and the request-header
  // settings as a whole (kube's rule: from the flags when --requestheader-client-ca-file is given).
  const merge = (cm: AuthSources): AuthSources => {
    const clientCA = flagSources.clientCA ?? cm.clientCA;
    return flagSources.requestHeaderCA ? { ...flagSources, clientCA } : { ...cm, clientCA };
  };
  const needLookup = !skipLookup && (!flagSources.requestHeaderCA || !flagSources.clientCA);
  let sources = flagSources;
  if (needLookup) {
    if (!authnClient) throw new ConfigError('cannot read kube-system/extension-apiserver-authentication without a host cluster: pass --authentication-kubeconfig, the CA flags, or --authentication-skip-lookup=true');
    try {
      sources = merge(await lookupAuthSources(authnClient));
    } catch (err) {
      throw new ConfigError(`reading kube-system/extension-apiserver-authentication from the host cluster: ${(err as Error).message} (the service account needs the extension-apiserver-authentication-reader role in kube-system)`);
    }
  }
  let current = toAuthnConfig(sources, { tokenReview, anonymous });
  let pems = sources;
  const selfSignedHosts = [...new Set(['localhost', '127.0.0.1', '::1', hostname(), ...(host !== '0.0.0.0' && host !== '::' ? [host] : [])])];
  const tls = new ServingTls({ certFile: v['tls-cert-file'], keyFile: v['tls-private-key-file'], selfSignedHosts, clientCAs: () => [pems.requestHeaderCA, pems.clientCA].filter((x): x is string => !!x) }, log);
  const authenticator = new Authenticator(() => current, log.child({ part: 'authn' }));
  const authorizer = new Authorizer(
    {
      client: authzClient,
      alwaysAllowGroups: list(v['authorization-always-allow-groups'], ['system:masters']),
      alwaysAllowPaths: list(v['authorization-always-allow-paths'], ['/healthz', '/readyz', '/livez']),
      allowTtlMs: duration('authorization-webhook-cache-authorized-ttl', v['authorization-webhook-cache-authorized-ttl'], 10_000),
      denyTtlMs: duration('authorization-webhook-cache-unauthorized-ttl', v['authorization-webhook-cache-unauthorized-ttl'], 10_000),
    },
    log.child({ part: 'authz' }),
  );

  // The ConfigMap changes when kube-apiserver's CAs rotate: read it again now and then.
  let timer: NodeJS.Timeout | undefined;
  if (needLookup && authnClient) {
    timer = setInterval(() => {
      lookupAuthSources(authnClient)
        .then((cm) => {
          const next = merge(cm);
          if (JSON.stringify(next) === JSON.stringify(pems)) return;
          pems = next;
          current = toAuthnConfig(next, { tokenReview, anonymous });
          tls.refresh();
          log.info('authentication sources changed (extension-apiserver-authentication)');
        })
        .catch((err: Error) => log.warn('re-reading extension-apiserver-authentication failed (keeping the last one)', { err }));
    }, deps.lookupRefreshMs ?? 300_000);
    timer.unref();
  }
  log.info('authentication', {
    requestHeader: !!current.requestHeader,
    allowedNames: sources.allowedNames,
    clientCA: !!current.clientCA,
    tokenReview: !!tokenReview,
    anonymous,
  });
  if (!current.requestHeader) log.warn('no request-header CA: requests proxied by kube-apiserver cannot be authenticated');
  return {
    host,
    port,
    tls,
    authenticator,
    authorizer,
    stop() {
      if (timer) clearInterval(timer);
      tls.stop();
      authnClient?.close();
      authzClient.close();
    },
  };
}
