// IP addresses as kube-apiserver reads them: netutils.ParseIPSloppy (IPv4 may have leading
// zeros; an IPv4-mapped IPv6 address is IPv4, as Go's net.IP.To4 says), the ranges of a
// CIDR, and ValidateNonSpecialIP (k8s.io/kubernetes pkg/apis/core/validation): no unspecified,
// loopback, link-local unicast or link-local multicast address as an endpoint — what kube
// refuses in an EndpointSlice of addressType IPv4 or IPv6 since CVE-2021-25737, with its words.
import { isIPv4, isIPv6 } from 'node:net';

/** The 8 16-bit words of an IPv6 address (brackets and zone removed, a dotted IPv4 tail folded in), or undefined. */
export function ipv6Words(address: string): number[] | undefined {
  let a = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  if (!isIPv6(a)) return undefined;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (dotted) {
    const [p, q, r, s] = dotted[1].split('.').map(Number);
    a = `${a.slice(0, -dotted[1].length)}${((p << 8) | q).toString(16)}:${((r << 8) | s).toString(16)}`;
  }
  const [head, tail] = a.includes('::') ? a.split('::') : [a, undefined];
  const h = head ? head.split(':') : [];
  const t = tail === undefined ? [] : tail ? tail.split(':') : [];
  const zeros = tail === undefined ? 0 : 8 - h.length - t.length;
  return [...h, ...Array<string>(zeros).fill('0'), ...t].map((w) => parseInt(w, 16));
}

/** The bytes of an address as Go's net.IP holds it after ParseIPSloppy: 4 for IPv4 (and IPv4-mapped IPv6), 16 for IPv6; undefined if it is none. */
export function ipBytes(address: string): number[] | undefined {
  const v4 = address.replace(/(^|\.)0+(\d)/g, '$1$2');
  if (isIPv4(v4)) return v4.split('.').map(Number);
  if (address.includes('%') || address.startsWith('[')) return undefined; // Go's ParseIP takes no zone and no brackets
  const words = ipv6Words(address);
  if (!words) return undefined;
  const bytes = words.flatMap((w) => [w >> 8, w & 255]);
  return bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 255 && bytes[11] === 255 ? bytes.slice(12) : bytes;
}

/** A CIDR (`10.0.0.0/16`, `fd00::/64`) as bytes and a prefix length, or undefined. */
export function parseCidr(cidr: string): { bytes: number[]; prefix: number } | undefined {
  const m = /^([^/]+)\/(\d{1,3})$/.exec(cidr.trim());
  const bytes = m ? ipBytes(m[1]) : undefined;
  if (!m || !bytes) return undefined;
  // An IPv4 CIDR written in IPv4-mapped form keeps an IPv6 prefix length: Go's ParseCIDR does not map it.
  const prefix = Number(m[2]) - (bytes.length === 4 && m[1].includes(':') ? 96 : 0);
  return prefix >= 0 && prefix <= bytes.length * 8 ? { bytes, prefix } : undefined;
}

/** Whether `address` (bytes) is inside the CIDR (of the same family). */
export function cidrContains(cidr: { bytes: number[]; prefix: number }, address: number[]): boolean {
  if (cidr.bytes.length !== address.length) return false;
  for (let bit = 0; bit < cidr.prefix; bit++) {
    const mask = 0x80 >> bit % 8;
    if ((cidr.bytes[bit >> 3] & mask) !== (address[bit >> 3] & mask)) return false;
  }
  return true;
}

/** ValidateNonSpecialIP's messages for an address (none: it may be an endpoint). */
export function nonSpecialIPProblems(address: string): string[] {
  const b = ipBytes(address);
  if (!b) return ['must be a valid IP address'];
  const v4 = b.length === 4;
  const out: string[] = [];
  if (b.every((x) => x === 0)) out.push(`may not be unspecified (${address})`);
  if (v4 ? b[0] === 127 : b.slice(0, 15).every((x) => x === 0) && b[15] === 1) out.push('may not be in the loopback range (127.0.0.0/8, ::1/128)');
  if (v4 ? b[0] === 169 && b[1] === 254 : b[0] === 0xfe && (b[1] & 0xc0) === 0x80) out.push('may not be in the link-local range (169.254.0.0/16, fe80::/10)');
  if (v4 ? b[0] === 224 && b[1] === 0 && b[2] === 0 : b[0] === 0xff && (b[1] & 0x0f) === 0x02) out.push('may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)');
  return out;
}
