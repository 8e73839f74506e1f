// The owner search terms, named as Clusterpedia names them: ownerUID (the owner's uid),
// ownerName with ownerGR (the owner's name and group-resource, `deployments.apps`), and
// ownerSeniority (0 the owner's own dependents, 1 theirs, ..., or `any` level), as query
// parameters and as search.panoptes.io/<term> label keys. → ListQuery.ownerUIDs (the
// owner uid column alone: served to watches too) or ListQuery.owners (storage/owners.ts).
import { badRequest } from '../../kube/status.ts';
import { maxOwnerDepth } from '../../storage/owners.ts';
import type { ListQuery } from '../../storage/types.ts';
import type { SearchParams } from '../endpoints/request.ts';

/** The owner terms beyond ownerUID: parameter / label key name → SearchParams key. */
export const ownerSearchKeys = {
  ownerName: 'ownerNames',
  ownerGR: 'ownerGR',
  ownerSeniority: 'ownerSeniority',
} as const satisfies Record<string, keyof SearchParams>;

const dnsLabel = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const dnsSubdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** `<resource>` (core group) or `<resource>.<group>`, as kubectl writes a group-resource. */
export function parseGroupResource(v: string): { group: string; resource: string } | undefined {
  const dot = v.indexOf('.');
  const resource = dot < 0 ? v : v.slice(0, dot);
  const group = dot < 0 ? '' : v.slice(dot + 1);
  if (resource.length > 63 || !dnsLabel.test(resource)) return undefined;
  if (group !== '' && (group.length > 253 || !dnsSubdomain.test(group))) return undefined;
  return { group, resource };
}

/** Why one value of an owner term is malformed, or undefined. */
export function invalidOwnerValue(key: (typeof ownerSearchKeys)[keyof typeof ownerSearchKeys], v: string): string | undefined {
  if (key === 'ownerNames') return v.length > 0 && v.length <= 253 && !v.includes('/') ? undefined : 'is not a valid owner name';
  if (key === 'ownerGR') return parseGroupResource(v) ? undefined : 'is not a group-resource such as deployments.apps or pods';
  return v === 'any' || (/^\d$/.test(v) && Number(v) < maxOwnerDepth) ? undefined : `is not a seniority: 0 to ${maxOwnerDepth - 1}, or any`;
}

/** One value of a term that takes one; a term given twice with different values (parameter and label key) is a conflict. */
function single(values: string[] | undefined, param: string): string | undefined {
  if (values === undefined) return undefined;
  if (values.length !== 1) throw badRequest(`${param}: give one value (${values.length === 0 ? 'its parameter and label key disagree' : 'several were given'})`);
  return values[0];
}

/** The storage terms of the owner search, or a 400 naming the terms that do not combine and why. */
export function ownerTerms(s: SearchParams): Pick<ListQuery, 'ownerUIDs' | 'owners'> {
  const gr = single(s.ownerGR, 'ownerGR');
  const seniorityText = single(s.ownerSeniority, 'ownerSeniority');
  if (s.ownerNames && s.ownerUIDs) throw badRequest('ownerName and ownerUID cannot be combined: the uid names one owner already; give one of them');
  if (s.ownerNames && gr === undefined) throw badRequest('ownerName needs ownerGR (the owner’s group-resource, e.g. deployments.apps): owners are found by group-resource and name, not by name over every stored object');
  if (gr !== undefined && !s.ownerNames) throw badRequest('ownerGR applies to ownerName only: give ownerName too');
  if (seniorityText !== undefined && !s.ownerNames && !s.ownerUIDs) throw badRequest('ownerSeniority needs ownerName (with ownerGR) or ownerUID: the owner it counts from');
  const seniority = seniorityText === undefined ? 0 : seniorityText === 'any' ? 'any' : Number(seniorityText);
  if (s.ownerUIDs && seniority === 0) return { ownerUIDs: s.ownerUIDs };
  if (s.ownerUIDs) return { owners: { uids: s.ownerUIDs, seniority } };
  if (s.ownerNames) return { owners: { names: s.ownerNames, ...parseGroupResource(gr!), seniority } };
  return {};
}

/** The owner terms of a search beyond ownerUID, as given (for views that rebuild the search). */
export function ownerSearchOf(s: SearchParams): Pick<SearchParams, 'ownerNames' | 'ownerGR' | 'ownerSeniority'> {
  const out: Pick<SearchParams, 'ownerNames' | 'ownerGR' | 'ownerSeniority'> = {};
  for (const key of Object.values(ownerSearchKeys)) if (s[key] !== undefined) out[key] = s[key];
  return out;
}
