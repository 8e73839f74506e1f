// The exec providers of ClusterProfile access (KEP-5339), as kubectl runs an exec credential
// plugin: the operator configures them on synchro (--clusterprofile-provider-file, the format
// of upstream's pkg/access/config.go: {"providers": [{"name", "execConfig": {apiVersion,
// command, args, env, provideClusterInfo}}]}), and a ClusterProfile's access provider of the
// same name is reached with the credentials the command prints (an ExecCredential: token, or
// client certificate and key; expirationTimestamp). The command, its arguments and environment
// are the operator's alone: the additional-args and additional-envs extensions a profile may
// carry are ignored (upstream's policy Ignore, its default), so whoever writes a ClusterProfile
// runs no code in synchro. What the plugin is told (provideClusterInfo) is the profile's
// server, CA and client.authentication.k8s.io/exec extension, as upstream passes them; the
// credentials it answers are cached for that cluster information only, until they expire.
// Whoever writes a ClusterProfile chooses its server, and a plugin such as upstream's
// secretreader answers by the extension's clusterName alone: so each provider also names the
// servers its credentials may go to (`servers`, Panoptes' addition to the format, which
// upstream's reader ignores: exact URLs, or https://*.example.com for any host below), and
// for any other server the plugin is not run at all.
import { spawn } from 'node:child_process';
import { canonicalJson } from '../../kube/patch.ts';
import type { ExecClusterInfo, ExecCredentialResult, ExecCredentialSource } from './candidate.ts';

export interface ExecProvider {
  name: string;
  /** The servers its credentials may be sent to: URLs, a host may start with `*.`. */
  servers: string[];
  execConfig: { apiVersion: string; command: string; args: string[]; env: Array<{ name: string; value: string }>; provideClusterInfo: boolean };
}

const execApiVersions = ['client.authentication.k8s.io/v1', 'client.authentication.k8s.io/v1beta1'];
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const strings = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string');

/** The providers of a provider file's text; throws (naming the field) when it is not one. */
export function parseProviderFile(text: string, where: string): ExecProvider[] {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new Error(`${where}: not JSON`);
  }
  if (!isRecord(doc) || !Array.isArray(doc.providers)) throw new Error(`${where}: must be an object with a list providers`);
  const seen = new Set<string>();
  return doc.providers.map((p, i) => {
    const at = `${where}: providers[${i}]`;
    if (!isRecord(p) || typeof p.name !== 'string' || p.name === '') throw new Error(`${at}: needs a name`);
    if (seen.has(p.name)) throw new Error(`${at}: provider ${p.name} is named twice`);
    seen.add(p.name);
    const e = p.execConfig;
    if (!isRecord(e) || typeof e.command !== 'string' || e.command === '') throw new Error(`${at}: needs execConfig.command`);
    const apiVersion = typeof e.apiVersion === 'string' ? e.apiVersion : 'client.authentication.k8s.io/v1';
    if (!execApiVersions.includes(apiVersion)) throw new Error(`${at}: execConfig.apiVersion must be one of ${execApiVersions.join(', ')}`);
    if (e.args !== undefined && e.args !== null && !strings(e.args)) throw new Error(`${at}: execConfig.args must be a list of strings`);
    const env = e.env === undefined || e.env === null ? [] : e.env;
    if (!Array.isArray(env) || !env.every((x) => isRecord(x) && typeof x.name === 'string' && typeof x.value === 'string')) throw new Error(`${at}: execConfig.env must be a list of {name, value}`);
    for (const k of Object.keys(p)) if (k.startsWith('profileSourced') && p[k] !== 'Ignore') throw new Error(`${at}: ${k} ${JSON.stringify(p[k])} is not supported: a ClusterProfile never adds arguments or environment to a command of synchro`);
    if (!strings(p.servers) || p.servers.length === 0) throw new Error(`${at}: needs servers, the server URLs its credentials may be sent to (e.g. ["https://*.eks.amazonaws.com"]): a ClusterProfile's writer chooses its server`);
    for (const x of p.servers) if (!serverPattern(x)) throw new Error(`${at}: servers: ${JSON.stringify(x)} is not an https:// or http:// URL (a host may start with *.)`);
    return { name: p.name, servers: p.servers, execConfig: { apiVersion, command: e.command, args: strings(e.args) ? e.args : [], env: env as Array<{ name: string; value: string }>, provideClusterInfo: e.provideClusterInfo === true } };
  });
}

/** A `servers` entry as a matcher: scheme, host (or `*.` and the suffix below which any host matches) and port. */
function serverPattern(pattern: string): ((server: string) => boolean) | undefined {
  const wild = pattern.match(/^(https?:\/\/)\*\.(.*)$/);
  let u: URL;
  try {
    u = new URL(wild ? `${wild[1]}${wild[2]}` : pattern);
  } catch {
    return undefined;
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') return undefined;
  return (server: string) => {
    let s: URL;
    try {
      s = new URL(server);
    } catch {
      return false;
    }
    if (s.protocol !== u.protocol || s.port !== u.port || s.pathname.replace(/\/+$/, '') !== u.pathname.replace(/\/+$/, '')) return false;
    return wild ? s.hostname.endsWith(`.${u.hostname}`) : s.hostname === u.hostname;
  };
}

/** Whether `server` is one of the provider's servers. */
export const serverAllowed = (p: ExecProvider, server: string): boolean => p.servers.some((x) => serverPattern(x)?.(server) === true);

export interface ExecCredentialsOptions {
  /** Called when a run ends or a credential expires: the importer computes its views again. */
  onChange: () => void;
  /** A run longer than this is killed (default 10 s). */
  timeoutMs?: number;
  /** Credentials without an expirationTimestamp are obtained again after this (default 10 minutes). */
  refreshMs?: number;
  /** A failed run is tried again after this (default 30 s). */
  retryMs?: number;
}

interface Entry {
  result: ExecCredentialResult;
  /** When the result stops being used (ms since the epoch). */
  until: number;
  running?: Promise<void>;
}

const maxOutput = 1 << 20;

export class ExecCredentials implements ExecCredentialSource {
  private readonly providers: Map<string, ExecProvider>;
  private readonly entries = new Map<string, Entry>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private stopped = false;

  constructor(
    providers: ExecProvider[],
    private readonly opts: ExecCredentialsOptions,
  ) {
    this.providers = new Map(providers.map((p) => [p.name, p]));
  }

  has(provider: string): boolean {
    return this.providers.has(provider);
  }

  get(provider: string, cluster: ExecClusterInfo): ExecCredentialResult {
    const p = this.providers.get(provider);
    if (!p) return { state: 'error', message: `synchro has no exec provider ${provider} (--clusterprofile-provider-file)` };
    // The credentials go only to the servers the operator names: for another, the plugin is not even run.
    if (!serverAllowed(p, cluster.server)) return { state: 'error', message: `exec provider ${provider} may not be used for server ${cluster.server}: it is not one of its servers in --clusterprofile-provider-file` };
    const key = `${provider}\n${canonicalJson(cluster)}`;
    const e = this.entries.get(key);
    const now = Date.now();
    if (e && (e.running || now < e.until)) return e.result;
    // Expired: obtained again; an expired credential is not used meanwhile.
    const entry: Entry = { result: { state: 'pending' }, until: Infinity };
    this.entries.set(key, entry);
    entry.running = this.run(p, cluster).then(
      ({ until, ...r }) => this.settle(entry, r, until),
      (err: unknown) => this.settle(entry, { state: 'error', message: `exec provider ${provider}: ${(err as Error).message}` }, Date.now() + (this.opts.retryMs ?? 30_000)),
    );
    return entry.result;
  }

  private settle(entry: Entry, result: ExecCredentialResult, until: number): void {
    entry.result = result;
    entry.until = until;
    entry.running = undefined;
    if (this.stopped) return;
    const t = setTimeout(() => {
      this.timers.delete(t);
      if (!this.stopped) this.opts.onChange();
    }, Math.max(0, Math.min(until - Date.now(), 2 ** 31 - 1)));
    t.unref();
    this.timers.add(t);
    this.opts.onChange();
  }

  private run(p: ExecProvider, cluster: ExecClusterInfo): Promise<ExecCredentialResult & { state: 'ready'; until: number }> {
    const c = p.execConfig;
    const info = {
      apiVersion: c.apiVersion,
      kind: 'ExecCredential',
      spec: {
        interactive: false,
        ...(c.provideClusterInfo
          ? {
              cluster: {
                server: cluster.server,
                ...(cluster.caData ? { 'certificate-authority-data': cluster.caData } : {}),
                ...(cluster.tlsServerName ? { 'tls-server-name': cluster.tlsServerName } : {}),
                ...(cluster.insecureSkipTLSVerify ? { 'insecure-skip-tls-verify': true } : {}),
                ...(cluster.config !== undefined ? { config: cluster.config } : {}),
              },
            }
          : {}),
      },
    };
    return new Promise((resolve, reject) => {
      const child = spawn(c.command, c.args, { env: { ...process.env, ...Object.fromEntries(c.env.map((e) => [e.name, e.value])), KUBERNETES_EXEC_INFO: JSON.stringify(info) }, stdio: ['ignore', 'pipe', 'pipe'], timeout: this.opts.timeoutMs ?? 10_000 });
      const out: Buffer[] = [];
      let size = 0;
      let errText = '';
      child.stdout.on('data', (b: Buffer) => {
        size += b.length;
        if (size <= maxOutput) out.push(b);
        else child.kill();
      });
      child.stderr.on('data', (b: Buffer) => (errText = (errText + b.toString('utf8')).slice(-500)));
      child.on('error', (err) => reject(new Error(`${c.command} could not run: ${err.message}`)));
      child.on('close', (code, signal) => {
        // stderr is the plugin's own message; stdout holds the credentials and is never quoted.
        if (code !== 0) return reject(new Error(`${c.command} exited with ${signal ? `signal ${signal}` : `code ${code}`}${errText.trim() ? `: ${errText.trim().split('\n').pop()}` : ''}`));
        try {
          resolve(this.credential(Buffer.concat(out).toString('utf8'), c.command));
        } catch (err) {
          reject(err as Error);
        }
      });
    });
  }

  private credential(text: string, command: string): ExecCredentialResult & { state: 'ready'; until: number } {
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch {
      throw new Error(`${command} printed no ExecCredential JSON`);
    }
    const s = isRecord(doc) && isRecord(doc.status) ? doc.status : undefined;
    if (!s) throw new Error(`${command} printed an ExecCredential without status`);
    const str = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);
    const token = str(s.token);
    const cert = str(s.clientCertificateData);
    const key = str(s.clientKeyData);
    if (!token && !(cert && key)) throw new Error(`${command} printed an ExecCredential with neither a token nor clientCertificateData and clientKeyData`);
    const expires = str(s.expirationTimestamp) ? Date.parse(str(s.expirationTimestamp)!) : NaN;
    const refresh = Date.now() + (this.opts.refreshMs ?? 600_000);
    // Obtained again a little before they expire (a tenth of their life, at most a minute).
    const until = Number.isFinite(expires) ? Math.min(refresh, expires - Math.min(60_000, (expires - Date.now()) / 10)) : refresh;
    const b64 = (pem: string) => Buffer.from(pem).toString('base64');
    return { state: 'ready', until, ...(token ? { token: token.trim() } : {}), ...(cert && key ? { clientCertData: b64(cert), clientKeyData: b64(key) } : {}) };
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }
}
