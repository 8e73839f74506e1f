// Certificates for local runs and tests: a serving CA and a serving certificate for
// Panoptes, a front-proxy (request-header) CA with the client certificate kube-apiserver
// would present (CN front-proxy-client), and a client CA with an admin client certificate.
//
//   node --import tsx hack/certs.ts [DIR] [HOST...]   (default DIR ./data/certs, hosts localhost 127.0.0.1)
//
// writes DIR/{serving-ca,serving,front-proxy-ca,front-proxy-client,client-ca,admin}.{crt,key}.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createCA, createCert, type KeyPair } from '../apiserver/auth/certs.ts';

export interface CertSet {
  servingCA: KeyPair;
  serving: KeyPair;
  frontProxyCA: KeyPair;
  /** What kube-apiserver presents when it proxies (--proxy-client-cert-file). */
  frontProxyClient: KeyPair;
  clientCA: KeyPair;
  /** CN=panoptes-admin, O=system:masters. */
  admin: KeyPair;
}

export const defaultHosts = ['localhost', '127.0.0.1', '::1', 'panoptes-apiserver', 'panoptes-apiserver.panoptes', 'panoptes-apiserver.panoptes.svc', 'panoptes-apiserver.panoptes.svc.cluster.local'];

export function makeCertSet(hosts: string[] = defaultHosts): CertSet {
  const servingCA = createCA('panoptes-serving-ca');
  const frontProxyCA = createCA('panoptes-front-proxy-ca');
  const clientCA = createCA('panoptes-client-ca');
  return {
    servingCA,
    serving: createCert(servingCA, { commonName: 'panoptes-apiserver', hosts, usage: 'server' }),
    frontProxyCA,
    frontProxyClient: createCert(frontProxyCA, { commonName: 'front-proxy-client' }),
    clientCA,
    admin: createCert(clientCA, { commonName: 'panoptes-admin', organizations: ['system:masters'] }),
  };
}

const fileNames: Record<keyof CertSet, string> = {
  servingCA: 'serving-ca',
  serving: 'serving',
  frontProxyCA: 'front-proxy-ca',
  frontProxyClient: 'front-proxy-client',
  clientCA: 'client-ca',
  admin: 'admin',
};

export function writeCertSet(dir: string, set: CertSet): void {
  mkdirSync(dir, { recursive: true });
  for (const [k, name] of Object.entries(fileNames) as [keyof CertSet, string][]) {
    writeFileSync(join(dir, `${name}.crt`), set[k].cert);
    writeFileSync(join(dir, `${name}.key`), set[k].key, { mode: 0o600 });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [dir = './data/certs', ...hosts] = process.argv.slice(2);
  writeCertSet(dir, makeCertSet(hosts.length ? hosts : defaultHosts));
  process.stdout.write(`certificates written to ${dir}: ${Object.values(fileNames).join(', ')} (.crt, .key)\n`);
}
