// Authentication, as kube's delegated authentication does it (k8s.io/apiserver
// pkg/authentication/request/{headerrequest,x509,bearertoken} behind a union):
//   1. request header (front proxy): the peer's client certificate chains to the
//      request-header CA and its CN is allowed → user, uid, groups and extras from the
//      headers request-header.ts names (the one rule: only those configured, a UID header
//      only where one is). From any other peer those headers are ignored (and removed).
//   2. client certificate chaining to the client CA → user CN, groups O.
//   3. bearer token → TokenReview against the host cluster, cached briefly.
// Success of any wins; a presented credential that fails (and no success) → 401; no
// credential at all → anonymous when enabled, else 401. Authenticated users get the
// group system:authenticated, as in kube.
import { createHash, X509Certificate } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { DetailedPeerCertificate, TLSSocket } from 'node:tls';
import type { Logger } from '../../lib/log.ts';
import { StatusError } from '../../kube/status.ts';
import { TtlCache } from './cache.ts';
import { clearAuthHeaders, requestHeaderUser, type RequestHeaderNames } from './request-header.ts';
import type { UserInfo } from './user.ts';

export type { UserInfo } from './user.ts';
import type { HostClient } from './hostclient.ts';

/** The front proxy: its CA, and the headers it may name the user with (request-header.ts, the one rule of which headers are read). */
export interface RequestHeaderConfig extends RequestHeaderNames {
  /** The request-header (front-proxy) CA bundle. */
  ca: X509Certificate[];
}

export interface TokenReviewConfig {
  client: HostClient;
  /** Cache time of an answer (kube's default 10 s). */
  ttlMs: number;
  audiences?: string[];
}

export interface AuthnConfig {
  requestHeader?: RequestHeaderConfig;
  clientCA?: X509Certificate[];
  tokenReview?: TokenReviewConfig;
  anonymous: boolean;
}

export const anonymousUser: UserInfo = { name: 'system:anonymous', groups: ['system:unauthenticated'], extra: {} };

/** Parses a PEM bundle into certificates. */
export function parseBundle(pem: string): X509Certificate[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  return blocks.map((b) => new X509Certificate(b));
}

const clientAuthOid = '1.3.6.1.5.5.7.3.2';

function inValidity(c: X509Certificate, now: number): boolean {
  return Date.parse(c.validFrom) <= now && now <= Date.parse(c.validTo);
}

/** The peer's certificates, leaf first, as presented. */
export function peerChain(peer: DetailedPeerCertificate | undefined): X509Certificate[] {
  const out: X509Certificate[] = [];
  let c = peer;
  while (c && c.raw && out.length < 10) {
    out.push(new X509Certificate(c.raw));
    if (!c.issuerCertificate || c.issuerCertificate === c || c.issuerCertificate.raw?.equals(c.raw)) break;
    c = c.issuerCertificate;
  }
  return out;
}

/**
 * Verifies that `chain[0]` (a client certificate) chains to one of `roots` through the
 * presented intermediates, every link in its validity period; throws the reason otherwise.
 */
export function verifyClientChain(chain: X509Certificate[], roots: X509Certificate[], now = Date.now()): X509Certificate {
  const leaf = chain[0];
  if (!leaf) throw new Error('no client certificate');
  if (!inValidity(leaf, now)) throw new Error(`x509: certificate has expired or is not yet valid (CN=${cn(leaf)})`);
  const eku = leaf.keyUsage;
  if (eku && eku.length && !eku.includes(clientAuthOid)) throw new Error('x509: certificate specifies an incompatible key usage');
  let current = leaf;
  const intermediates = chain.slice(1);
  for (let depth = 0; depth < 8; depth++) {
    const root = roots.find((r) => current.checkIssued(r) && current.verify(r.publicKey));
    if (root) {
      if (!inValidity(root, now)) throw new Error('x509: the signing CA has expired');
      return leaf;
    }
    const next = intermediates.find((i) => i.ca && i !== current && current.checkIssued(i) && current.verify(i.publicKey) && inValidity(i, now));
    if (!next) break;
    current = next;
  }
  throw new Error('x509: certificate signed by unknown authority');
}

function cn(c: X509Certificate): string {
  return /(?:^|\n)CN=([^\n]*)/.exec(c.subject)?.[1] ?? '';
}

function orgs(c: X509Certificate): string[] {
  return [...c.subject.matchAll(/(?:^|\n)O=([^\n]*)/g)].map((m) => m[1]);
}

function withAuthenticated(u: UserInfo): UserInfo {
  if (u.name === anonymousUser.name || u.groups.includes('system:authenticated')) return u;
  return { ...u, groups: [...u.groups, 'system:authenticated'] };
}

export const unauthorized = () => new StatusError('Unauthorized', 'Unauthorized', {});

interface TokenReviewStatus {
  status?: { authenticated?: boolean; error?: string; user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> } };
}

export class Authenticator {
  private readonly tokens = new TtlCache<UserInfo | null>();

  constructor(
    private readonly config: () => AuthnConfig,
    private readonly log: Logger,
  ) {}

  /** The request's user; throws a 401 StatusError when it has none. */
  async authenticate(req: IncomingMessage): Promise<UserInfo> {
    const cfg = this.config();
    const errors: string[] = [];
    const socket = req.socket as Partial<TLSSocket>;
    const chain = typeof socket.getPeerCertificate === 'function' ? peerChain(socket.getPeerCertificate(true)) : [];
    let presented = chain.length > 0;

    // 1. Front proxy.
    const rh = cfg.requestHeader;
    if (rh && chain.length && rh.ca.length) {
      try {
        const leaf = verifyClientChain(chain, rh.ca);
        const name = cn(leaf);
        if (rh.allowedNames.length && !rh.allowedNames.includes(name)) throw new Error(`x509: subject with cn=${name} is not in the allowed list`);
        const u = requestHeaderUser(req, rh);
        if (u) {
          clearAuthHeaders(req, rh);
          return withAuthenticated(u);
        }
      } catch (err) {
        errors.push(`request header: ${(err as Error).message}`);
      }
    }
    clearAuthHeaders(req, rh); // from any other peer they mean nothing

    // 2. Client certificate.
    if (cfg.clientCA?.length && chain.length) {
      try {
        const leaf = verifyClientChain(chain, cfg.clientCA);
        return withAuthenticated({ name: cn(leaf), groups: orgs(leaf), extra: {} });
      } catch (err) {
        errors.push(`client certificate: ${(err as Error).message}`);
      }
    } else if (chain.length && !(rh && rh.ca.length)) presented = false; // nothing verifies certificates: as if none was sent

    // 3. Bearer token.
    const m = /^bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
    if (m && cfg.tokenReview) {
      presented = true;
      try {
        const u = await this.review(m[1], cfg.tokenReview);
        if (u) {
          delete req.headers.authorization;
          return withAuthenticated(u);
        }
        errors.push('token: not authenticated by TokenReview');
      } catch (err) {
        this.log.warn('TokenReview failed', { err: err as Error });
        errors.push(`token: ${(err as Error).message}`);
      }
    }

    if (!presented && !m && cfg.anonymous) return anonymousUser;
    this.log.debug('unauthenticated request', { url: req.url, errors });
    throw unauthorized();
  }

  private async review(token: string, tr: TokenReviewConfig): Promise<UserInfo | null> {
    const key = createHash('sha256').update(token).digest('hex');
    const cached = this.tokens.get(key);
    if (cached !== undefined) return cached;
    const body = { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token, ...(tr.audiences?.length ? { audiences: tr.audiences } : {}) } };
    const res = await tr.client.post<TokenReviewStatus>('/apis/authentication.k8s.io/v1/tokenreviews', body);
    const s = res.status;
    const u: UserInfo | null = s?.authenticated && s.user?.username ? { name: s.user.username, uid: s.user.uid || undefined, groups: s.user.groups ?? [], extra: s.user.extra ?? {} } : null;
    this.tokens.set(key, u, tr.ttlMs);
    return u;
  }
}
