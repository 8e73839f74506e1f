// Test helper: a fake HOST cluster API over HTTPS on 127.0.0.1 with its own CA. Answers
// the extension-apiserver-authentication ConfigMap, TokenReview (from a token table) and
// SubjectAccessReview (from a policy function), and records every request.
import { createServer, request, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { createCA, createCert } from '../../apiserver/auth/certs.ts';
import type { UserInfo } from '../../apiserver/auth/authn.ts';
import type { SubjectAccessReviewSpec } from '../../apiserver/auth/authz.ts';
import { HostClient } from '../../apiserver/auth/hostclient.ts';

export interface RecordedRequest {
  method: string;
  path: string;
  authorization?: string;
  body: unknown;
}

export interface FakeHostOptions {
  configMap: Record<string, string>;
  tokens: Record<string, UserInfo>;
  /** allowed, or a reason string for a denial */
  policy: (spec: SubjectAccessReviewSpec) => true | string;
  /** The token Panoptes must present. */
  saToken?: string;
  /** default: an ephemeral port */
  port?: number;
}

export interface FakeHost {
  url: string;
  /** The host's CA (PEM), for kubeconfigs. */
  ca: string;
  saToken: string;
  requests: RecordedRequest[];
  sars(): SubjectAccessReviewSpec[];
  client(): HostClient;
  close(): Promise<void>;
}

/**
 * The extension-apiserver-authentication ConfigMap as kube-apiserver 1.28 publishes it: the
 * client CA, and the front proxy's CA, allowed name (front-proxy-client) and X-Remote-* headers;
 * no requestheader-uid-headers (kube 1.32+ adds it when its flag is set).
 */
export function authenticationConfigMap(certs: { clientCA: { cert: string }; frontProxyCA: { cert: string } }): Record<string, string> {
  return {
    'client-ca-file': certs.clientCA.cert,
    'requestheader-client-ca-file': certs.frontProxyCA.cert,
    'requestheader-allowed-names': '["front-proxy-client"]',
    'requestheader-username-headers': '["X-Remote-User"]',
    'requestheader-group-headers': '["X-Remote-Group"]',
    'requestheader-extra-headers-prefix': '["X-Remote-Extra-"]',
  };
}

export async function startFakeHost(o: FakeHostOptions): Promise<FakeHost> {
  const ca = createCA('fake-host-ca');
  const serving = createCert(ca, { commonName: 'kube-apiserver', hosts: ['127.0.0.1'], usage: 'server' });
  const saToken = o.saToken ?? 'panoptes-sa-token';
  const requests: RecordedRequest[] = [];
  const server: Server = createServer({ key: serving.key, cert: serving.cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const body = text ? (JSON.parse(text) as Record<string, unknown>) : undefined;
      const path = (req.url ?? '').split('?')[0];
      requests.push({ method: req.method ?? '', path, authorization: req.headers.authorization, body });
      const send = (code: number, doc: unknown) => {
        res.writeHead(code, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(doc));
      };
      if (req.headers.authorization !== `Bearer ${saToken}`) return send(401, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Unauthorized', code: 401, message: 'Unauthorized' });
      if (req.method === 'GET' && path === '/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication') {
        return send(200, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'extension-apiserver-authentication', namespace: 'kube-system' }, data: o.configMap });
      }
      if (req.method === 'POST' && path === '/apis/authentication.k8s.io/v1/tokenreviews') {
        const spec = (body as { spec: { token: string } }).spec;
        const u = o.tokens[spec.token];
        const status = u ? { authenticated: true, user: { username: u.name, uid: u.uid, groups: u.groups, extra: u.extra } } : { authenticated: false, error: 'invalid token' };
        return send(201, { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec, status });
      }
      if (req.method === 'POST' && path === '/apis/authorization.k8s.io/v1/subjectaccessreviews') {
        const spec = (body as { spec: SubjectAccessReviewSpec }).spec;
        const d = o.policy(spec);
        const status = d === true ? { allowed: true, reason: 'allowed by the test policy' } : { allowed: false, reason: d };
        return send(201, { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec, status });
      }
      send(404, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404, message: 'not found' });
    });
  });
  await new Promise<void>((resolve) => server.listen(o.port ?? 0, '127.0.0.1', resolve));
  const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    ca: ca.cert,
    saToken,
    requests,
    sars: () => requests.filter((r) => r.path.endsWith('/subjectaccessreviews')).map((r) => (r.body as { spec: SubjectAccessReviewSpec }).spec),
    client: () => new HostClient({ server: url, ca: ca.cert, token: saToken }, 5000),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A GET through the front proxy (its client certificate and X-Remote-User), as kube-apiserver forwards an aggregated request. */
export function frontProxyGet(base: string, path: string, ca: string, client: { cert: string; key: string }, user: string, extraHeaders: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return frontProxyRequest(base, 'GET', path, ca, client, user, undefined, extraHeaders);
}

/** Any request through the front proxy, with a JSON body (a write: POST, PUT, PATCH with merge-patch). */
export function frontProxyRequest(base: string, method: string, path: string, ca: string, client: { cert: string; key: string }, user: string, body?: unknown, extraHeaders: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const type = method === 'PATCH' ? 'application/merge-patch+json' : 'application/json';
    const headers = { 'X-Remote-User': user, 'X-Remote-Group': ['system:authenticated'], ...(body !== undefined ? { 'Content-Type': type } : {}), ...extraHeaders };
    const req = request(base + path, { method, ca, cert: client.cert, key: client.key, headers, agent: false, timeout: 10_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}
