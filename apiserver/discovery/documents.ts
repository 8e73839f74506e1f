// Discovery documents of one view (every cluster, or one): /api, /api/v1, /apis, /apis/G,
// /apis/G/V, the aggregated APIGroupDiscoveryList (v2 and v2beta1), and /version. Built
// from the in-memory catalog only, so they answer while storage is unreachable.
import { readFileSync } from 'node:fs';
import { servedVerbs, type GroupEntry, type ResourceInfo, type ViewCatalog } from './catalog.ts';

/**
 * The Kubernetes API level Panoptes reports. kubectl dispatchers pick their client by this
 * minor version (apiserver/README.md, "kubectl"); the resources served are those of the member clusters.
 */
export const kubeMajor = '1';
export const kubeMinor = '32';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
export const panoptesVersion = pkg.version;
const startedAt = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');

export function versionInfo(): Record<string, string> {
  return {
    major: kubeMajor,
    minor: kubeMinor,
    gitVersion: `v${kubeMajor}.${kubeMinor}.0+panoptes.${panoptesVersion}`,
    gitCommit: '',
    gitTreeState: 'clean',
    buildDate: startedAt,
    goVersion: `node${process.versions.node}`,
    compiler: 'panoptes',
    platform: `${process.platform}/${process.arch === 'x64' ? 'amd64' : process.arch}`,
  };
}

const gv = (group: string, version: string) => (group ? `${group}/${version}` : version);

export function apiVersions(serverAddress: string): Record<string, unknown> {
  return { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }] };
}

/** All groups of a view, with Panoptes's own groups appended. */
export function viewGroups(view: ViewCatalog | undefined, extra: GroupEntry[]): GroupEntry[] {
  const groups = [...(view?.groups ?? [])].filter((g) => !extra.some((e) => e.name === g.name));
  return [...groups, ...extra];
}

function apiGroup(g: GroupEntry): Record<string, unknown> {
  const versions = g.versions.map((v) => ({ groupVersion: gv(g.name, v.version), version: v.version }));
  return { name: g.name, versions, preferredVersion: versions[0] };
}

export function apiGroupList(groups: GroupEntry[]): Record<string, unknown> {
  return { kind: 'APIGroupList', apiVersion: 'v1', groups: groups.filter((g) => g.name !== '').map(apiGroup) };
}

export function apiGroupDoc(g: GroupEntry): Record<string, unknown> {
  return { kind: 'APIGroup', apiVersion: 'v1', ...apiGroup(g) };
}

function resourceEntry(r: ResourceInfo): Record<string, unknown> {
  const out: Record<string, unknown> = { name: r.resource, singularName: r.singularName, namespaced: r.namespaced, kind: r.kind, verbs: r.verbs ?? servedVerbs };
  if (r.shortNames?.length) out.shortNames = r.shortNames;
  if (r.categories?.length) out.categories = r.categories;
  return out;
}

/** A subresource as kube-apiserver lists it: `clusters/status`, its kind, no singular name. */
function subresourceEntries(r: ResourceInfo): Array<Record<string, unknown>> {
  return (r.subresources ?? []).map((s) => ({ name: `${r.resource}/${s.name}`, singularName: '', namespaced: r.namespaced, ...(s.group !== undefined ? { group: s.group, version: s.version } : {}), kind: s.kind ?? r.kind, verbs: s.verbs }));
}

/** GET /api/v1 or /apis/G/V. The core group answers (possibly empty) even when nothing is synced. */
export function apiResourceList(groups: GroupEntry[], group: string, version: string): Record<string, unknown> | undefined {
  const v = groups.find((g) => g.name === group)?.versions.find((x) => x.version === version);
  if (!v && !(group === '' && version === 'v1')) return undefined;
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: gv(group, version), resources: (v?.resources ?? []).flatMap((r) => [resourceEntry(r), ...subresourceEntries(r)]) };
}

function discoveryResource(r: ResourceInfo): Record<string, unknown> {
  const out: Record<string, unknown> = {
    resource: r.resource,
    responseKind: { group: '', version: '', kind: r.kind },
    scope: r.namespaced ? 'Namespaced' : 'Cluster',
    singularResource: r.singularName,
    verbs: r.verbs ?? servedVerbs,
  };
  if (r.shortNames?.length) out.shortNames = r.shortNames;
  if (r.categories?.length) out.categories = r.categories;
  if (r.subresources?.length) out.subresources = r.subresources.map((s) => ({ subresource: s.name, responseKind: { group: s.group ?? '', version: s.version ?? '', kind: s.kind ?? r.kind }, verbs: s.verbs }));
  return out;
}

/** Aggregated discovery of /api (core) or /apis (every other group). */
export function aggregatedDiscovery(groups: GroupEntry[], root: 'api' | 'apis', version: 'v2' | 'v2beta1'): Record<string, unknown> {
  let selected = groups.filter((g) => (root === 'api' ? g.name === '' : g.name !== ''));
  if (root === 'api' && selected.length === 0) selected = [{ name: '', versions: [{ version: 'v1', resources: [] }] }];
  const items = selected.map((g) => ({
    metadata: root === 'api' ? { creationTimestamp: null } : { name: g.name, creationTimestamp: null },
    versions: g.versions.map((v) => ({ version: v.version, resources: v.resources.map(discoveryResource), freshness: 'Current' })),
  }));
  return { kind: 'APIGroupDiscoveryList', apiVersion: `apidiscovery.k8s.io/${version}`, metadata: {}, items };
}
