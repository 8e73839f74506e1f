// X.509 helpers (node-forge for signing, node:crypto for keys): a CA, certificates signed by
// it (serving and client), and the self-signed serving certificate used when no
// --tls-cert-file is given. Used by the server, the tests and hack/certs.ts.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import forge from 'node-forge';

export interface KeyPair {
  /** PEM certificate. */
  cert: string;
  /** PEM private key (PKCS#8). */
  key: string;
}

export interface CertOptions {
  commonName: string;
  /** Subject O= values (Kubernetes groups for client certificates). */
  organizations?: string[];
  /** DNS names and IP addresses (serving certificates). */
  hosts?: string[];
  /** Client authentication (default) or serving. */
  usage?: 'client' | 'server' | 'both';
  days?: number;
  /** Backdate notBefore (and shift notAfter) by this many ms, e.g. to make an expired cert in tests. */
  shiftMs?: number;
}

function newKey(bits = 2048): { pem: string; priv: forge.pki.rsa.PrivateKey; pub: forge.pki.rsa.PublicKey } {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: bits });
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const priv = forge.pki.privateKeyFromPem(pem) as forge.pki.rsa.PrivateKey;
  const pub = forge.pki.setRsaPublicKey(priv.n, priv.e);
  return { pem, priv, pub };
}

// Names are UTF8String, which allows any character: forge's default, PrintableString, has no
// `@`, `_` or `*`, and Go's crypto/x509 (kube-apiserver) refuses a certificate with such a
// PrintableString while OpenSSL and Node accept it. RFC 5280 asks for UTF8String too.
// (@types/node-forge declares valueTagClass as an asn1.Class; forge reads it as the asn1.Type.)
const UTF8 = forge.asn1.Type.UTF8 as number as forge.asn1.Class;

function subject(cn: string, orgs: string[] = []): forge.pki.CertificateField[] {
  return [...orgs.map((o) => ({ name: 'organizationName', value: o, valueTagClass: UTF8 })), { name: 'commonName', value: cn, valueTagClass: UTF8 }];
}

/** The CA's subject as the issuer, encoding back to the same bytes (Go matches issuer and CA subject byte for byte). */
function issuerOf(ca: forge.pki.Certificate): forge.pki.CertificateField[] {
  // forge parses a UTF8String to its raw bytes but encodes the value it is given as UTF-8 again.
  return ca.subject.attributes.map((a) => ({ ...a, value: a.valueTagClass === UTF8 && typeof a.value === 'string' ? forge.util.decodeUtf8(a.value) : a.value }));
}

/**
 * A certificate serial from 16 random bytes, as DER's INTEGER content: positive (top bit clear)
 * and minimal (first byte not zero). A leading zero byte made OpenSSL refuse one certificate in
 * 256 ("illegal padding").
 */
export function serialFrom(b: Buffer): string {
  const out = Buffer.from(b);
  out[0] = out[0] & 0x7f || 0x01;
  return out.toString('hex');
}

const serial = (): string => serialFrom(randomBytes(16));

function validity(cert: forge.pki.Certificate, days: number, shiftMs = 0): void {
  const now = Date.now() + shiftMs;
  cert.validity.notBefore = new Date(now - 5 * 60_000);
  cert.validity.notAfter = new Date(now + days * 86_400_000);
}

/** A self-signed CA. */
export function createCA(commonName: string, days = 3650): KeyPair {
  const k = newKey();
  const cert = forge.pki.createCertificate();
  cert.publicKey = k.pub;
  cert.serialNumber = serial();
  validity(cert, days);
  cert.setSubject(subject(commonName));
  cert.setIssuer(subject(commonName));
  cert.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  cert.sign(k.priv, forge.md.sha256.create());
  return { cert: forge.pki.certificateToPem(cert), key: k.pem };
}

function sanExtension(hosts: string[]) {
  return {
    name: 'subjectAltName',
    altNames: hosts.map((h) => (isIP(h) ? { type: 7, ip: h } : { type: 2, value: h })),
  };
}

/** A certificate signed by `ca` (or self-signed when `ca` is undefined). */
export function createCert(ca: KeyPair | undefined, o: CertOptions): KeyPair {
  const k = newKey();
  const cert = forge.pki.createCertificate();
  cert.publicKey = k.pub;
  cert.serialNumber = serial();
  validity(cert, o.days ?? 365, o.shiftMs);
  cert.setSubject(subject(o.commonName, o.organizations));
  const usage = o.usage ?? 'client';
  const ext: object[] = [
    { name: 'basicConstraints', cA: false },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: usage !== 'client', clientAuth: usage !== 'server' },
  ];
  if (o.hosts?.length) ext.push(sanExtension(o.hosts));
  if (ca) {
    const caCert = forge.pki.certificateFromPem(ca.cert);
    cert.setIssuer(issuerOf(caCert));
    cert.setExtensions(ext);
    cert.sign(forge.pki.privateKeyFromPem(ca.key) as forge.pki.rsa.PrivateKey, forge.md.sha256.create());
  } else {
    cert.setIssuer(subject(o.commonName, o.organizations));
    cert.setExtensions(ext);
    cert.sign(k.priv, forge.md.sha256.create());
  }
  return { cert: forge.pki.certificateToPem(cert), key: k.pem };
}

/** The serving certificate made at start when no --tls-cert-file is given. */
export function selfSignedServing(hosts: string[]): KeyPair {
  return createCert(undefined, { commonName: `panoptes@${Math.floor(Date.now() / 1000)}`, hosts, usage: 'server', days: 365 });
}
