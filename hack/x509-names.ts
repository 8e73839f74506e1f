// Reads the issuer and subject of an X.509 certificate straight from its DER, with a DER walker
// of its own, and tells which directory strings Go's crypto/x509 (kube-apiserver's parser)
// would refuse: a value whose characters its ASN.1 string type does not allow. node-forge,
// OpenSSL and Node's TLS accept such certificates, so their parsers cannot be the check.
import { X509Certificate } from 'node:crypto';

export interface DirectoryString {
  field: 'issuer' | 'subject';
  /** Attribute type, dotted (2.5.4.3 is CN, 2.5.4.10 is O). */
  oid: string;
  /** ASN.1 universal tag number of the value (12 UTF8String, 19 PrintableString, 22 IA5String, ...). */
  tag: number;
  /** The value's content octets. */
  bytes: Buffer;
}

interface Tlv {
  /** The identifier octet (class, constructed bit, tag number). */
  id: number;
  tag: number;
  constructed: boolean;
  content: Buffer;
}

function readTlv(buf: Buffer, at: number): { tlv: Tlv; next: number } {
  if (at + 2 > buf.length) throw new Error(`DER: truncated at ${at}`);
  const id = buf[at];
  if ((id & 0x1f) === 0x1f) throw new Error(`DER: high tag number at ${at} (not used in certificate names)`);
  let len = buf[at + 1];
  let start = at + 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n === 0 || n > 4) throw new Error(`DER: bad length octets at ${at}`);
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + buf[start + i];
    start += n;
  }
  const end = start + len;
  if (end > buf.length) throw new Error(`DER: length past the end at ${at}`);
  return { tlv: { id, tag: id & 0x1f, constructed: (id & 0x20) !== 0, content: buf.subarray(start, end) }, next: end };
}

function children(tlv: Tlv): Tlv[] {
  if (!tlv.constructed) throw new Error(`DER: tag ${tlv.tag} is not constructed`);
  const out: Tlv[] = [];
  for (let at = 0; at < tlv.content.length; ) {
    const { tlv: child, next } = readTlv(tlv.content, at);
    out.push(child);
    at = next;
  }
  return out;
}

function oidString(b: Buffer): string {
  const parts = [Math.floor(b[0] / 40), b[0] % 40];
  let v = 0;
  for (let i = 1; i < b.length; i++) {
    v = v * 128 + (b[i] & 0x7f);
    if (!(b[i] & 0x80)) {
      parts.push(v);
      v = 0;
    }
  }
  return parts.join('.');
}

const SEQUENCE = 0x30;
const SET = 0x31;
const OID = 0x06;

function names(name: Tlv, field: DirectoryString['field']): DirectoryString[] {
  if (name.id !== SEQUENCE) throw new Error(`${field}: not a SEQUENCE`);
  const out: DirectoryString[] = [];
  for (const rdn of children(name)) {
    if (rdn.id !== SET) throw new Error(`${field}: RelativeDistinguishedName is not a SET`);
    for (const atv of children(rdn)) {
      const [type, value] = children(atv);
      if (atv.id !== SEQUENCE || type?.id !== OID || !value) throw new Error(`${field}: malformed AttributeTypeAndValue`);
      out.push({ field, oid: oidString(type.content), tag: value.tag, bytes: Buffer.from(value.content) });
    }
  }
  return out;
}

/** Issuer and subject attributes of a certificate (PEM or DER). */
export function certificateNames(cert: string | Buffer): DirectoryString[] {
  const der = typeof cert === 'string' ? new X509Certificate(cert).raw : cert;
  const [tbs] = children(readTlv(der, 0).tlv);
  if (!tbs) throw new Error('certificate: no tbsCertificate');
  const fields = children(tbs);
  // [0] EXPLICIT version is optional; then serialNumber, signature, issuer, validity, subject.
  const base = fields[0]?.id === 0xa0 ? 1 : 0;
  const issuer = fields[base + 2];
  const subject = fields[base + 4];
  if (!issuer || !subject) throw new Error('certificate: tbsCertificate too short');
  return [...names(issuer, 'issuer'), ...names(subject, 'subject')];
}

const printable = /^[A-Za-z0-9 '()+,\-./:=?]*$/;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Why Go's crypto/x509 refuses this value, or undefined when its type allows its characters. */
export function directoryStringProblem(s: DirectoryString): string | undefined {
  const text = s.bytes.toString('latin1');
  switch (s.tag) {
    case 19: // PrintableString
      return printable.test(text) ? undefined : `PrintableString ${JSON.stringify(text)} has characters outside A-Z a-z 0-9 space ' ( ) + , - . / : = ?`;
    case 22: // IA5String
      return [...s.bytes].every((b) => b < 0x80) ? undefined : `IA5String ${JSON.stringify(text)} is not ASCII`;
    case 18: // NumericString
      return /^[0-9 ]*$/.test(text) ? undefined : `NumericString ${JSON.stringify(text)} has characters outside 0-9 and space`;
    case 12: // UTF8String
      try {
        utf8.decode(s.bytes);
        return undefined;
      } catch {
        return `UTF8String ${s.bytes.toString('hex')} is not valid UTF-8`;
      }
    default:
      return `ASN.1 type ${s.tag} is not a directory string type Panoptes expects (UTF8String, PrintableString, IA5String, NumericString)`;
  }
}

/** Every issuer or subject value of `cert` that Go's crypto/x509 would refuse, described. */
export function directoryStringProblems(cert: string | Buffer): string[] {
  return certificateNames(cert).flatMap((s) => {
    const p = directoryStringProblem(s);
    return p ? [`${s.field} ${s.oid}: ${p}`] : [];
  });
}
