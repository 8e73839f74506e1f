// A small HTTPS client for the HOST cluster (where the APIService is registered): reads
// the extension-apiserver-authentication ConfigMap, posts TokenReviews and
// SubjectAccessReviews. Credentials from in-cluster service account files or a kubeconfig
// (--authentication-kubeconfig / --authorization-kubeconfig).
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { parse as parseYaml } from 'yaml';

export interface HostCredentials {
  /** https://host:port (no trailing slash). */
  server: string;
  /** PEM CA bundle; undefined: the system roots. */
  ca?: string;
  insecureSkipTLSVerify?: boolean;
  token?: string;
  /** Re-read on every request after `tokenTtlMs` (rotated service account tokens). */
  tokenFile?: string;
  cert?: string;
  key?: string;
}

export class HostError extends Error {
  override name = 'HostError';
  constructor(
    message: string,
    readonly code?: number,
  ) {
    super(message);
  }
}

const saDir = '/var/run/secrets/kubernetes.io/serviceaccount';

/** In-cluster credentials (KUBERNETES_SERVICE_HOST/PORT and the service account files). */
export function inClusterCredentials(env: NodeJS.ProcessEnv = process.env, dir = saDir): HostCredentials | undefined {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port) return undefined;
  const h = host.includes(':') ? `[${host}]` : host;
  return { server: `https://${h}:${port}`, ca: readFileSync(`${dir}/ca.crt`, 'utf8'), tokenFile: `${dir}/token` };
}

interface KubeconfigDoc {
  'current-context'?: string;
  contexts?: { name: string; context: { cluster: string; user?: string } }[];
  clusters?: { name: string; cluster: { server: string; 'certificate-authority'?: string; 'certificate-authority-data'?: string; 'insecure-skip-tls-verify'?: boolean } }[];
  users?: { name: string; user?: { token?: string; tokenFile?: string; 'client-certificate'?: string; 'client-certificate-data'?: string; 'client-key'?: string; 'client-key-data'?: string } }[];
}

const b64 = (s: string) => Buffer.from(s, 'base64').toString('utf8');

/** Credentials of a kubeconfig file's current context (token, token file or client certificate). */
export function kubeconfigCredentials(path: string, context?: string): HostCredentials {
  const doc = parseYaml(readFileSync(path, 'utf8')) as KubeconfigDoc | null;
  if (!doc || typeof doc !== 'object') throw new Error(`${path}: not a kubeconfig`);
  const ctxName = context ?? doc['current-context'];
  const ctx = doc.contexts?.find((c) => c.name === ctxName)?.context;
  if (!ctx) throw new Error(`${path}: context ${JSON.stringify(ctxName)} not found`);
  const cluster = doc.clusters?.find((c) => c.name === ctx.cluster)?.cluster;
  if (!cluster?.server) throw new Error(`${path}: cluster ${JSON.stringify(ctx.cluster)} not found`);
  const user = doc.users?.find((u) => u.name === ctx.user)?.user ?? {};
  const rel = (p: string) => (p.startsWith('/') ? p : `${path.replace(/[^/]*$/, '')}${p}`);
  const file = (p: string | undefined, data: string | undefined) => (data ? b64(data) : p ? readFileSync(rel(p), 'utf8') : undefined);
  return {
    server: cluster.server.replace(/\/$/, ''),
    ca: file(cluster['certificate-authority'], cluster['certificate-authority-data']),
    insecureSkipTLSVerify: cluster['insecure-skip-tls-verify'] === true,
    token: user.token,
    tokenFile: user.tokenFile ? rel(user.tokenFile) : undefined,
    cert: file(user['client-certificate'], user['client-certificate-data']),
    key: file(user['client-key'], user['client-key-data']),
  };
}

export class HostClient {
  private token?: { value: string; readAt: number };
  /** Keep-alive connections: reviews are frequent and small. */
  private readonly agent: Agent;

  constructor(
    readonly creds: HostCredentials,
    private readonly timeoutMs = 10_000,
    private readonly tokenTtlMs = 60_000,
  ) {
    this.agent = new Agent({ keepAlive: true, maxSockets: 32, ca: creds.ca, cert: creds.cert, key: creds.key, rejectUnauthorized: !creds.insecureSkipTLSVerify });
  }

  /** Closes idle connections. */
  close(): void {
    this.agent.destroy();
  }

  /** From a kubeconfig path, or in-cluster; undefined when neither is available. */
  static load(kubeconfig: string | undefined, timeoutMs?: number): HostClient | undefined {
    const creds = kubeconfig ? kubeconfigCredentials(kubeconfig) : inClusterCredentials();
    return creds ? new HostClient(creds, timeoutMs) : undefined;
  }

  private bearer(): string | undefined {
    if (this.creds.token) return this.creds.token;
    if (!this.creds.tokenFile) return undefined;
    const now = Date.now();
    if (!this.token || now - this.token.readAt > this.tokenTtlMs) this.token = { value: readFileSync(this.creds.tokenFile, 'utf8').trim(), readAt: now };
    return this.token.value;
  }

  get<T>(path: string): Promise<T> {
    return this.call<T>('GET', path);
  }

  post<T>(path: string, body: unknown): Promise<T> {
    return this.call<T>('POST', path, JSON.stringify(body));
  }

  private call<T>(method: string, path: string, body?: string): Promise<T> {
    const url = new URL(this.creds.server + path);
    const headers: Record<string, string> = { Accept: 'application/json', 'User-Agent': 'panoptes-apiserver' };
    const token = this.bearer();
    if (token) headers.Authorization = `Bearer ${token}`;
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      headers['Content-Length'] = String(Buffer.byteLength(body));
    }
    return new Promise<T>((resolve, reject) => {
      const req = request(
        url,
        {
          method,
          headers,
          ca: this.creds.ca,
          cert: this.creds.cert,
          key: this.creds.key,
          rejectUnauthorized: !this.creds.insecureSkipTLSVerify,
          timeout: this.timeoutMs,
          agent: this.agent,
        },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (c: Buffer) => {
            size += c.length;
            if (size > 4 << 20) return req.destroy(new HostError(`${method} ${path}: response too large`));
            chunks.push(c);
          });
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            const code = res.statusCode ?? 0;
            if (code < 200 || code > 299) {
              let msg = text.slice(0, 300);
              try {
                msg = (JSON.parse(text) as { message?: string }).message ?? msg;
              } catch {
                // not a Status
              }
              return reject(new HostError(`${method} ${url.pathname} on the host cluster: ${code} ${msg}`, code));
            }
            try {
              resolve(JSON.parse(text) as T);
            } catch {
              reject(new HostError(`${method} ${url.pathname} on the host cluster: answer is not JSON`, code));
            }
          });
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new HostError(`${method} ${url.pathname} on the host cluster: no answer within ${this.timeoutMs} ms`)));
      req.on('error', reject);
      req.end(body);
    });
  }
}
