// Where Panoptes may connect for a member cluster registered through the API: not to
// loopback (127.0.0.0/8, ::1), link-local (169.254.0.0/16, where cloud metadata services
// answer, and fe80::/10) or unspecified (0.0.0.0/8, ::) addresses — IPv4-mapped and
// IPv4-compatible IPv6 forms included, and names such as `localhost` — unless the operator
// allows given networks (`--allow-member-networks CIDR[,CIDR...]`). Whoever may register a
// Cluster could otherwise make synchro fetch from the host's own services. Checked twice:
// when a Cluster is written (literal addresses and localhost names: api/cluster.ts) and when
// synchro connects (every address a name resolves to: guardedLookup, used by
// member/client.ts), so a name that resolves, or later rebinds, to such an address is
// refused too. clusters.yaml and kubeconfig clusters, written by the operator, are not
// restricted.
import dns, { type LookupAddress } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { ipv6Words } from '../kube/ip.ts';

/** The flag (and its environment variable) that widens what API-registered clusters may reach. */
export const memberNetworksFlag = '--allow-member-networks';
export const memberNetworksEnv = 'PANOPTES_ALLOW_MEMBER_NETWORKS';

interface Range {
  net: string;
  prefix: number;
  family: 'ipv4' | 'ipv6';
  what: string;
}

const refusedRanges: Range[] = [
  { net: '127.0.0.0', prefix: 8, family: 'ipv4', what: 'loopback' },
  { net: '0.0.0.0', prefix: 8, family: 'ipv4', what: 'unspecified' },
  { net: '169.254.0.0', prefix: 16, family: 'ipv4', what: 'link-local (cloud metadata services answer there)' },
  { net: '::1', prefix: 128, family: 'ipv6', what: 'loopback' },
  { net: '::', prefix: 128, family: 'ipv6', what: 'unspecified' },
  { net: 'fe80::', prefix: 10, family: 'ipv6', what: 'link-local' },
];
const refusedLists = refusedRanges.map((r) => {
  const list = new BlockList();
  list.addSubnet(r.net, r.prefix, r.family);
  return { range: r, list };
});

/**
 * An address as the network sees it: IPv4 for IPv4 (also for the IPv4-mapped ::ffff:a.b.c.d
 * and the IPv4-compatible ::a.b.c.d forms of IPv6), IPv6 otherwise; undefined if not an address.
 */
export function canonicalAddress(address: string): { address: string; family: 'ipv4' | 'ipv6' } | undefined {
  const bare = address.replace(/^\[|\]$/g, '');
  if (isIP(bare) === 4) return { address: bare, family: 'ipv4' };
  const w = ipv6Words(bare);
  if (!w) return undefined;
  const v4 = () => `${w[6] >> 8}.${w[6] & 255}.${w[7] >> 8}.${w[7] & 255}`;
  const upperZero = w.slice(0, 5).every((x) => x === 0);
  if (upperZero && w[5] === 0xffff) return { address: v4(), family: 'ipv4' };
  if (upperZero && w[5] === 0 && (w[6] !== 0 || w[7] > 1)) return { address: v4(), family: 'ipv4' };
  return { address: bare.replace(/%.*$/, ''), family: 'ipv6' };
}

const localhostName = /^(?:localhost|[^.]+(?:\.[^.]+)*\.localhost|ip6-localhost|ip6-loopback)\.?$/i;

/** Whether a host name always means this machine (RFC 6761 `localhost` and `*.localhost`, Debian's ip6-localhost). */
export const isLocalhostName = (host: string): boolean => localhostName.test(host);

/** A bad --allow-member-networks value. */
export class NetworksError extends Error {
  override name = 'NetworksError';
}

/** The operator's allowance: networks API-registered clusters may reach although they are refused by default. */
export class MemberNetworks {
  private readonly allowed = new BlockList();

  constructor(readonly cidrs: readonly string[] = []) {
    for (const c of cidrs) {
      const m = /^([^/]+)(?:\/(\d{1,3}))?$/.exec(c.trim());
      const ip = m ? canonicalAddress(m[1]) : undefined;
      const max = ip?.family === 'ipv4' ? 32 : 128;
      const prefix = m?.[2] === undefined ? max : Number(m[2]);
      if (!m || !ip || prefix > max || (ip.family === 'ipv4' && isIP(m[1]) === 6)) throw new NetworksError(`${memberNetworksFlag}: ${JSON.stringify(c)} is not a CIDR such as 127.0.0.0/8 or fe80::/10`);
      this.allowed.addSubnet(ip.address, prefix, ip.family);
    }
  }

  /** CIDR[,CIDR...] (empty: nothing allowed). */
  static parse(text: string | undefined): MemberNetworks {
    const list = (text ?? '').split(',').map((s) => s.trim()).filter(Boolean);
    return new MemberNetworks(list);
  }

  /** Whether `address` is inside an allowed network. */
  allows(address: string): boolean {
    const a = canonicalAddress(address);
    return a !== undefined && this.allowed.check(a.address, a.family);
  }

  /**
   * Why an address may not be reached (`127.0.0.1 is loopback`), or undefined when it may:
   * it is in none of the refused ranges, or inside an allowed network.
   */
  refused(address: string): string | undefined {
    const a = canonicalAddress(address);
    if (!a) return undefined;
    const hit = refusedLists.find((r) => r.range.family === a.family && r.list.check(a.address, a.family));
    if (!hit || this.allowed.check(a.address, a.family)) return undefined;
    return `${address} is ${hit.range.what}`;
  }

  /**
   * Why the host of a URL may not be reached, as far as it can be told without DNS: an
   * address in a refused range, or a localhost name (unless 127.0.0.1 or ::1 is allowed).
   * Other names are checked when synchro connects (guardedLookup).
   */
  hostRefused(hostname: string): string | undefined {
    const host = hostname.replace(/^\[|\]$/g, '');
    if (isLocalhostName(host)) return this.allows('127.0.0.1') || this.allows('::1') ? undefined : `${host} is loopback`;
    return this.refused(host);
  }

  /** Whether the host of a URL is an address (or localhost name) inside an allowed network. */
  hostAllowed(hostname: string): boolean {
    const host = hostname.replace(/^\[|\]$/g, '');
    if (isLocalhostName(host)) return this.allows('127.0.0.1') || this.allows('::1');
    return this.allows(host);
  }
}

/** The words an error of a refused address ends with: what the operator can do. */
export const allowHint = `API-registered clusters may not reach loopback, link-local or unspecified addresses unless the operator allows them with ${memberNetworksFlag}`;

/** The error of a connection refused by the guard (describeError shows its code). */
export class RefusedAddressError extends Error {
  override name = 'RefusedAddressError';
  readonly code = 'EREFUSEDADDRESS';
}

export type Resolve = (hostname: string, options: dns.LookupAllOptions, callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void) => void;

/**
 * A `lookup` for an HTTP agent that resolves every address of a name and keeps only those
 * that may be reached: refused ranges are dropped unless allowed, and with `onlyAllowed`
 * (plain HTTP with credentials) only allowed networks remain. None left: the connection fails
 * with RefusedAddressError. Each connection resolves again, so a name that rebinds is
 * checked each time.
 */
export function guardedLookup(networks: MemberNetworks, opts: { onlyAllowed?: boolean; resolve?: Resolve } = {}): LookupFunction {
  const resolve: Resolve = opts.resolve ?? ((h, o, cb) => dns.lookup(h, o, cb));
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (err, addresses) => {
      const cb = callback as (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;
      if (err) return cb(err, '', 0);
      const problems: string[] = [];
      const usable = addresses.filter((a) => {
        const why = networks.refused(a.address);
        if (why) problems.push(why);
        else if (opts.onlyAllowed && !networks.allows(a.address)) problems.push(`${a.address} is not in ${memberNetworksFlag} (plain http:// with credentials)`);
        return !why && (!opts.onlyAllowed || networks.allows(a.address));
      });
      if (usable.length === 0) {
        return cb(new RefusedAddressError(`${hostname} resolves to ${problems.join(', ') || 'no address'}: ${allowHint}`), '', 0);
      }
      if (options.all) cb(null, usable);
      else cb(null, usable[0].address, usable[0].family);
    });
  };
}
