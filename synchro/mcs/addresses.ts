// Which provider endpoints a consumer may be given: pure. An address kube would refuse in an
// EndpointSlice (ValidateNonSpecialIP: loopback, link-local, unspecified, link-local
// multicast; an address of the other family than the slice's addressType; a name that is not
// a domain) is never written, and neither is an address in the consumer's own pod or service
// ranges when they are known (its Nodes' spec.podCIDRs, its ServiceCIDRs): there it would
// reach the consumer's own pods or Services, not the provider's. An endpoint with such an
// address is left out of the slice (kube would refuse the whole slice), and the consumer's
// status says which and why.
import { cidrContains, ipBytes, nonSpecialIPProblems, parseCidr } from '../../kube/ip.ts';
import { dnsLabelProblem, dnsSubdomainProblem } from '../../kube/names.ts';
import type { KubeObject } from '../../storage/types.ts';

/** A consumer's own address ranges, as far as Panoptes syncs them (CIDRs). */
export interface ConsumerRanges {
  pods: string[];
  services: string[];
}

type Obj = Record<string, unknown>;
const isRecord = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The ranges, parsed once per consumer. */
export interface ParsedRanges {
  cidrs: Array<{ cidr: string; what: 'pod' | 'service'; parsed: { bytes: number[]; prefix: number } }>;
}

export function parseRanges(r: ConsumerRanges | undefined): ParsedRanges {
  const cidrs: ParsedRanges['cidrs'] = [];
  for (const [what, list] of [['pod', r?.pods ?? []], ['service', r?.services ?? []]] as const) {
    for (const cidr of list) {
      const parsed = parseCidr(cidr);
      if (parsed) cidrs.push({ cidr, what, parsed });
    }
  }
  return { cidrs };
}

/** Why `address` of a slice of `addressType` may not be written into consumer `cluster` (undefined: it may). */
export function refusedAddress(addressType: unknown, address: unknown, cluster: string, ranges: ParsedRanges): string | undefined {
  if (typeof address !== 'string') return 'not a string';
  if (addressType === 'FQDN') {
    const name = address.replace(/\.$/, '');
    const why = dnsSubdomainProblem(name) ?? (name.split('.').length < 2 ? 'should be a domain with at least two segments separated by dots' : name.split('.').map(dnsLabelProblem).find(Boolean));
    return why;
  }
  if (addressType !== 'IPv4' && addressType !== 'IPv6') return `address type ${String(addressType)} is not one kube accepts`;
  const bytes = ipBytes(address);
  if (!bytes || bytes.length !== (addressType === 'IPv4' ? 4 : 16)) return `must be a valid ${addressType} address`;
  const special = nonSpecialIPProblems(address);
  if (special.length) return special[0];
  const hit = ranges.cidrs.find((c) => cidrContains(c.parsed, bytes));
  if (hit) return `is in the ${hit.what} range ${hit.cidr} of cluster ${cluster}: it would reach the consumer's own ${hit.what === 'pod' ? 'pods' : 'Services'}`;
  return undefined;
}

/** A provider slice's endpoints a consumer may be given, and what was left out (`address: why`). */
export function allowedEndpoints(slice: KubeObject, cluster: string, ranges: ParsedRanges): { endpoints: unknown[]; refused: string[] } {
  const endpoints: unknown[] = [];
  const refused: string[] = [];
  for (const e of Array.isArray(slice.endpoints) ? slice.endpoints : []) {
    const addresses = isRecord(e) && Array.isArray(e.addresses) ? e.addresses : [];
    const bad = addresses.map((a) => [a, refusedAddress(slice.addressType, a, cluster, ranges)] as const).filter(([, why]) => why !== undefined);
    if (bad.length === 0) endpoints.push(e);
    else refused.push(...bad.map(([a, why]) => `${String(a)} ${why}`));
  }
  return { endpoints, refused };
}
