// Every certificate Panoptes makes (the self-signed serving certificate, hack/certs.ts's CAs,
// serving and client certificates, the ones tests make) must parse with Go's crypto/x509,
// which kube-apiserver uses to talk to an aggregated API server: each issuer and subject
// value must be valid for its ASN.1 string type. Read from the DER by hack/x509-names.ts, not
// by node-forge, OpenSSL or Node, which all accept `@` in a PrintableString.
import { X509Certificate } from 'node:crypto';
import t from 'tap';
import { makeCertSet } from '../../hack/certs.ts';
import { certificateNames, directoryStringProblem, directoryStringProblems } from '../../hack/x509-names.ts';
import { createCA, createCert, selfSignedServing, serialFrom, type KeyPair } from './certs.ts';

const CN = '2.5.4.3';
const O = '2.5.4.10';

function values(cert: string, field: 'issuer' | 'subject'): [string, number, string][] {
  return certificateNames(cert)
    .filter((s) => s.field === field)
    .map((s) => [s.oid, s.tag, s.bytes.toString('utf8')]);
}

function rawName(cert: string, field: 'issuer' | 'subject'): string {
  return certificateNames(cert)
    .filter((s) => s.field === field)
    .map((s) => `${s.oid}/${s.tag}/${s.bytes.toString('hex')}`)
    .join(',');
}

t.test('the DER check refuses what Go refuses', async (t) => {
  const s = (tag: number, text: string | Buffer) => ({ field: 'subject' as const, oid: CN, tag, bytes: Buffer.isBuffer(text) ? text : Buffer.from(text, 'utf8') });
  t.equal(directoryStringProblem(s(19, "Panoptes CA-1 (test) a+b, c/d: e=f? 'g'.")), undefined, 'every PrintableString character');
  for (const bad of ['panoptes@1700000000', 'under_score', '*.example', 'a&b', 'é']) {
    t.match(directoryStringProblem(s(19, bad)), /PrintableString/, `PrintableString ${bad}`);
  }
  t.equal(directoryStringProblem(s(22, 'panoptes@1700000000_*')), undefined, 'IA5String: any ASCII');
  t.match(directoryStringProblem(s(22, 'é')), /IA5String .* not ASCII/);
  t.equal(directoryStringProblem(s(12, 'panoptes@1700000000 é ✓')), undefined, 'UTF8String: any valid UTF-8');
  t.match(directoryStringProblem(s(12, Buffer.from([0x61, 0xc3]))), /not valid UTF-8/);
  t.match(directoryStringProblem(s(30, Buffer.from([0, 0x61]))), /ASN\.1 type 30/);
});

t.test('the walker reads issuer and subject from the DER', async (t) => {
  const ca = createCA('walker-ca');
  const leaf = createCert(ca, { commonName: 'leaf', organizations: ['system:masters', 'devs'] });
  t.same(values(ca.cert, 'subject').map(([oid, , v]) => [oid, v]), [[CN, 'walker-ca']]);
  t.same(values(leaf.cert, 'issuer').map(([oid, , v]) => [oid, v]), [[CN, 'walker-ca']]);
  t.same(values(leaf.cert, 'subject').map(([oid, , v]) => [oid, v]), [[O, 'system:masters'], [O, 'devs'], [CN, 'leaf']]);
  // Node's own parser agrees on the text.
  t.equal(new X509Certificate(leaf.cert).subject, 'O=system:masters\nO=devs\nCN=leaf');
});

t.test('every generated certificate parses with Go crypto/x509 rules', async (t) => {
  const set = makeCertSet();
  const ca = createCA('panoptes-test-ca');
  const generated: Record<string, KeyPair> = {
    ...Object.fromEntries(Object.entries(set)),
    'self-signed serving (no --tls-cert-file)': selfSignedServing(['localhost', '127.0.0.1', '::1']),
    'self-signed client': createCert(undefined, { commonName: 'someone@example', organizations: ['system:masters'] }),
    'serving from a CA': createCert(ca, { commonName: 'kube-apiserver', hosts: ['127.0.0.1', 'x.svc'], usage: 'server' }),
    'client with groups': createCert(ca, { commonName: 'dora', organizations: ['devs', 'ops'] }),
    'expired client': createCert(ca, { commonName: 'front-proxy-client', days: 1, shiftMs: -3 * 86_400_000 }),
    'non-ASCII CA': createCA('prüf-ca_1'),
  };
  for (const [name, pair] of Object.entries(generated)) {
    t.same(directoryStringProblems(pair.cert), [], name);
    const tags = certificateNames(pair.cert).map((s) => s.tag);
    t.ok(tags.length >= 2 && tags.every((tag) => tag === 12), `${name}: issuer and subject are UTF8String, as Go writes names it cannot print`);
  }
  t.match(values(generated['self-signed serving (no --tls-cert-file)'].cert, 'subject'), [[CN, 12, /^panoptes@\d+$/]]);
});

t.test('an issuer is byte for byte its CA subject, also for non-ASCII names', async (t) => {
  // Go finds a certificate's parent by comparing the raw issuer with the raw CA subject.
  for (const cn of ['panoptes-serving-ca', 'prüf-ca_1 ✓']) {
    const ca = createCA(cn);
    const leaf = createCert(ca, { commonName: 'leaf', usage: 'server', hosts: ['127.0.0.1'] });
    t.equal(rawName(leaf.cert, 'issuer'), rawName(ca.cert, 'subject'), cn);
    t.ok(new X509Certificate(leaf.cert).checkIssued(new X509Certificate(ca.cert)), `${cn}: Node sees the chain`);
    t.ok(new X509Certificate(leaf.cert).verify(new X509Certificate(ca.cert).publicKey), `${cn}: signed by the CA`);
  }
});

t.test('serials are positive, minimal DER integers whatever the random bytes', async (t) => {
  const bad: string[] = [];
  for (let first = 0; first < 256; first++) {
    for (const second of [0x00, 0x7f, 0x80, 0xff]) {
      const hex = serialFrom(Buffer.from([first, second, ...new Array(14).fill(0)]));
      const lead = parseInt(hex.slice(0, 2), 16);
      if (hex.length !== 32 || lead === 0 || lead > 0x7f) bad.push(`${first}/${second}: ${hex}`);
    }
  }
  t.same(bad, [], 'first byte 0x01-0x7f: no sign padding a parser refuses');
});
