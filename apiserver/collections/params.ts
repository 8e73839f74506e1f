// The collection of a list (`search.panoptes.io/collection=workloads`: kubectl -l names no
// object, so `kubectl get collectionresources -l ...` reaches a collection this way), and the
// kinds of the `any` collection, chosen by the request as Clusterpedia's `any` takes them
// (internalstorage/collectionresource_storage.go: `groups=apps,batch/v1`,
// `resources=apps/deployments,/pods`), also as `<resource>[.<group>]` (`deployments.apps`,
// `pods`), and as label keys so kubectl -l reaches them:
// `search.panoptes.io/resources in (deployments.apps,pods)`, `search.panoptes.io/groups=batch`
// (`core` is the core group). Resolved against what the view serves; an unknown group or
// resource is a 400 naming it.
import { formatLabelSelector, parseLabelSelector } from '../../kube/labels.ts';
import { badRequest } from '../../kube/status.ts';
import type { CollectionKind } from '../../storage/types.ts';
import type { ViewCatalog } from '../discovery/catalog.ts';
import { findResource } from '../external/resolve.ts';
import { parseResourceName } from '../external/rules.ts';
import { searchLabelPrefix } from '../read/params.ts';
import { anyCollection, kindName, maxKinds } from './definitions.ts';

const terms = ['groups', 'resources', 'collection'] as const;
type Term = (typeof terms)[number];

export interface KindTerms {
  groups: string[];
  resources: string[];
  /** The collection, on the list path (so that kubectl -l reaches a collection's objects). */
  collection: string[];
}

/**
 * Takes `groups=`, `resources=`, `collection=` and their `search.panoptes.io/` label keys out of
 * a query, so that the rest is parsed as any list's. Returns what was given (empty lists when
 * nothing was); `given`: groups or resources were.
 */
export function takeKindTerms(qs: URLSearchParams): { qs: URLSearchParams; terms: KindTerms; given: boolean } {
  const rest = new URLSearchParams(qs);
  const out: KindTerms = { groups: [], resources: [], collection: [] };
  let given = false;
  for (const term of terms) {
    const raw = rest.getAll(term);
    rest.delete(term);
    if (raw.length === 0) continue;
    if (term !== 'collection') given = true;
    const values = raw.flatMap((v) => v.split(',')).map((v) => v.trim());
    if (values.some((v) => v === '')) throw badRequest(`${term}: empty value`);
    out[term].push(...values);
  }
  const selector = rest.get('labelSelector');
  if (selector) {
    const parsed = parseLabelSelector(selector);
    const keep = parsed.filter((r) => !terms.some((t) => r.key === searchLabelPrefix + t));
    for (const r of parsed) {
      const term = terms.find((t) => r.key === searchLabelPrefix + t);
      if (!term) continue;
      if (r.operator !== 'in') throw badRequest(`search key ${r.key} supports only =, == and in (...)`);
      if (term !== 'collection') given = true;
      out[term].push(...r.values);
    }
    if (keep.length !== parsed.length) {
      if (keep.length) rest.set('labelSelector', formatLabelSelector(keep));
      else rest.delete('labelSelector');
    }
  }
  return { qs: rest, terms: out, given };
}

function unknown(term: Term, value: string, why: string): Error {
  return badRequest(`${term}: ${JSON.stringify(value)} ${why} (kubectl api-resources lists what is served)`);
}

/** A `resources=` value as (group, version?, resource): `deployments.apps`, `pods`, `apps/deployments`, `apps/v1/deployments`, `/pods`. */
function parseResource(value: string): { group: string; version?: string; resource: string } | undefined {
  if (!value.includes('/')) return parseResourceName(value);
  const parts = value.split('/');
  if (parts.length === 2 && parts[1] !== '') return { group: parts[0] === 'core' ? '' : parts[0], resource: parts[1] };
  if (parts.length === 3 && parts[2] !== '') return { group: parts[0] === 'core' ? '' : parts[0], version: parts[1] || undefined, resource: parts[2] };
  return undefined;
}

/** The kinds `groups=` and `resources=` name in a view, once each, in the order given. */
export function resolveKindTerms(view: ViewCatalog | undefined, t: KindTerms): CollectionKind[] {
  if (t.groups.length === 0 && t.resources.length === 0) {
    throw badRequest(`the ${anyCollection} collection reads the kinds named by groups= or resources= (or search.panoptes.io/groups, search.panoptes.io/resources), e.g. resources=deployments.apps,pods`);
  }
  const kinds: CollectionKind[] = [];
  const add = (group: string, resource: string) => {
    if (!kinds.some((k) => k.group === group && k.resource === resource)) kinds.push({ group, resource });
  };
  for (const value of t.groups) {
    if (value === '*') {
      for (const g of view?.groups ?? []) for (const v of g.versions) for (const r of v.resources) add(r.group, r.resource);
      continue;
    }
    const [name, version, extra] = value.split('/');
    if (extra !== undefined) throw unknown('groups', value, 'is not <group> or <group>/<version>');
    const group = name === 'core' || name === '' ? '' : name;
    const entry = view?.group(group);
    const versions = entry?.versions.filter((v) => version === undefined || version === '' || v.version === version) ?? [];
    if (versions.length === 0) throw unknown('groups', value, 'is not a group (and version) any member cluster syncs');
    for (const v of versions) for (const r of v.resources) add(r.group, r.resource);
  }
  for (const value of t.resources) {
    const want = parseResource(value);
    if (!want) throw unknown('resources', value, 'is not <resource>[.<group>], <group>/<resource> or <group>/<version>/<resource>');
    const info = want.version ? view?.find(want.group, want.version, want.resource) : findResource(view, want.group, want.resource);
    if (!info) throw unknown('resources', value, 'is not a resource any member cluster syncs');
    add(info.group, info.resource);
  }
  if (kinds.length > maxKinds) throw badRequest(`the ${anyCollection} collection reads at most ${maxKinds} kinds at once; groups= and resources= name ${kinds.length}: ${kinds.map(kindName).slice(0, 8).join(', ')}, ...`);
  return kinds;
}
