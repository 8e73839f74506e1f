// The serving certificate: --tls-cert-file/--tls-private-key-file, reloaded when either file
// changes (Secret volume updates swap symlinks: polled with stat, which follows them), or a
// self-signed one made at start. Client certificates are requested but not required (the
// front proxy and client-CA users present one, bearer-token users do not) and verified by
// authn.ts against the right CA, so the handshake accepts any.
import { readFileSync, statSync } from 'node:fs';
import type { ServerOptions } from 'node:https';
import type { Server as TlsServer } from 'node:tls';
import { createSecureContext } from 'node:tls';
import type { Logger } from '../../lib/log.ts';
import { selfSignedServing, type KeyPair } from './certs.ts';

export interface ServingTlsOptions {
  certFile?: string;
  keyFile?: string;
  /** Names and addresses of the self-signed certificate (default localhost, 127.0.0.1, ::1 and the pod's service names). */
  selfSignedHosts?: string[];
  /** CA bundles (PEM) advertised to clients in the CertificateRequest. */
  clientCAs?: () => string[];
  /** How often the files are checked (default 10 s). */
  reloadIntervalMs?: number;
}

function stamp(path: string): string {
  const s = statSync(path);
  return `${s.ino}:${s.size}:${s.mtimeMs}`;
}

export class ServingTls {
  private pair: KeyPair;
  private stamps = '';
  private timer?: NodeJS.Timeout;
  private server?: TlsServer;
  readonly selfSigned: boolean;

  constructor(
    private readonly opts: ServingTlsOptions,
    private readonly log: Logger,
  ) {
    if (!!opts.certFile !== !!opts.keyFile) throw new Error('--tls-cert-file and --tls-private-key-file go together');
    if (opts.certFile && opts.keyFile) {
      this.selfSigned = false;
      this.pair = this.read();
      createSecureContext(this.pair); // fails early on a key that does not match
    } else {
      this.selfSigned = true;
      const hosts = opts.selfSignedHosts ?? ['localhost', '127.0.0.1', '::1'];
      this.pair = selfSignedServing(hosts);
      log.warn('no --tls-cert-file given: serving with a self-signed certificate generated at start (clients must skip verification or trust it explicitly; kube-apiserver needs it in the APIService caBundle or insecureSkipTLSVerify)', { hosts });
    }
  }

  private read(): KeyPair {
    const certFile = this.opts.certFile!;
    const keyFile = this.opts.keyFile!;
    this.stamps = `${stamp(certFile)}|${stamp(keyFile)}`;
    return { cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8') };
  }

  private contextOptions() {
    const ca = this.opts.clientCAs?.() ?? [];
    return { key: this.pair.key, cert: this.pair.cert, ...(ca.length ? { ca } : {}) };
  }

  /** Options for the TLS server (http2.createSecureServer, https.createServer). */
  serverOptions(): ServerOptions {
    return { ...this.contextOptions(), requestCert: true, rejectUnauthorized: false, minVersion: 'TLSv1.2' };
  }

  /** Starts watching the files (no-op for a self-signed certificate). */
  attach(server: TlsServer): void {
    this.server = server;
    if (this.selfSigned) return;
    const every = this.opts.reloadIntervalMs ?? 10_000;
    this.timer = setInterval(() => this.check(), every);
    this.timer.unref();
  }

  /** Reloads when a file changed; a bad pair is logged and the old one kept. Returns true on reload. */
  check(): boolean {
    if (this.selfSigned || !this.server) return false;
    try {
      const now = `${stamp(this.opts.certFile!)}|${stamp(this.opts.keyFile!)}`;
      if (now === this.stamps) return false;
      const old = this.pair;
      this.pair = this.read();
      try {
        this.server.setSecureContext(this.contextOptions());
      } catch (err) {
        this.pair = old;
        throw err;
      }
      this.log.info('serving certificate reloaded', { certFile: this.opts.certFile });
      return true;
    } catch (err) {
      this.stamps = ''; // retried at the next check (e.g. the key file is written after the certificate)
      this.log.warn('serving certificate not reloaded (keeping the current one)', { err: err as Error });
      return false;
    }
  }

  /** Re-applies the context (e.g. the client CA bundles changed). */
  refresh(): void {
    this.server?.setSecureContext(this.contextOptions());
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  get certificate(): string {
    return this.pair.cert;
  }
}
