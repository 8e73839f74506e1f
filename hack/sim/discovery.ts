// Discovery documents of a simulated cluster, built from its registry (itself built from the
// captured kube-apiserver v1.28 discovery): /api, /api/v1, /apis, /apis/G, /apis/G/V and the
// aggregated form (APIGroupDiscoveryList, v2 and v2beta1), plus /version.
import { readFileSync } from 'node:fs';
import { extraGroups } from './extra-apis.ts';
import type { Registry, ResourceInfo } from './resources.ts';
import type { JsonObject } from './types.ts';

/** What discovery shows of a resource. */
type Served = Pick<ResourceInfo, 'resource' | 'singularName' | 'namespaced' | 'kind' | 'verbs' | 'shortNames' | 'categories' | 'status'> & { scale?: unknown };
type ServedGroup = { name: string; versions: { version: string; resources: Served[] }[] };

/** The registry's groups and the extra APIs (extra-apis.ts). */
function servedGroups(registry: Registry): ServedGroup[] {
  const extra = extraGroups.map((g) => ({ name: g.name, versions: [{ version: g.version, resources: g.resources.map((r) => ({ ...r, status: false })) }] }));
  return [...registry.groupList(), ...extra.filter((e) => !registry.groupList().some((g) => g.name === e.name))];
}

const statusVerbs = ['get', 'patch', 'update'];

export function apiVersions(serverAddress: string): JsonObject {
  return { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }] };
}

function groupVersion(group: string, version: string): string {
  return group ? `${group}/${version}` : version;
}

function apiGroup(g: { name: string; versions: { version: string }[] }): JsonObject {
  const versions = g.versions.map((v) => ({ groupVersion: groupVersion(g.name, v.version), version: v.version }));
  return { name: g.name, versions, preferredVersion: versions[0] };
}

export function apiGroupList(registry: Registry): JsonObject {
  return { kind: 'APIGroupList', apiVersion: 'v1', groups: servedGroups(registry).filter((g) => g.name !== '').map(apiGroup) };
}

/** GET /apis/G: the APIGroup, or undefined when not served. */
export function apiGroupDoc(registry: Registry, name: string): JsonObject | undefined {
  const g = servedGroups(registry).find((x) => x.name === name && name !== '');
  return g && { kind: 'APIGroup', apiVersion: 'v1', ...apiGroup(g) };
}

function resourceEntries(r: Served): JsonObject[] {
  const main: JsonObject = { name: r.resource, singularName: r.singularName, namespaced: r.namespaced, kind: r.kind, verbs: r.verbs };
  if (r.shortNames?.length) main.shortNames = r.shortNames;
  if (r.categories?.length) main.categories = r.categories;
  const out = [main];
  if (r.scale) out.push({ name: `${r.resource}/scale`, singularName: '', namespaced: r.namespaced, group: 'autoscaling', version: 'v1', kind: 'Scale', verbs: statusVerbs });
  if (r.status) out.push({ name: `${r.resource}/status`, singularName: '', namespaced: r.namespaced, kind: r.kind, verbs: statusVerbs });
  return out;
}

/** GET /api/v1 or /apis/G/V: the APIResourceList, or undefined when not served. */
export function apiResourceList(registry: Registry, group: string, version: string): JsonObject | undefined {
  const g = servedGroups(registry).find((x) => x.name === group);
  const v = g?.versions.find((x) => x.version === version);
  if (!v) return undefined;
  const resources = v.resources.flatMap(resourceEntries).sort((a, b) => String(a.name).localeCompare(String(b.name)));
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: groupVersion(group, version), resources };
}

function discoveryResource(r: Served): JsonObject {
  const out: JsonObject = {
    resource: r.resource,
    responseKind: { group: '', version: '', kind: r.kind },
    scope: r.namespaced ? 'Namespaced' : 'Cluster',
    singularResource: r.singularName,
    verbs: r.verbs,
  };
  if (r.shortNames?.length) out.shortNames = r.shortNames;
  if (r.categories?.length) out.categories = r.categories;
  const subs: JsonObject[] = [];
  if (r.scale) subs.push({ subresource: 'scale', responseKind: { group: 'autoscaling', version: 'v1', kind: 'Scale' }, verbs: statusVerbs });
  if (r.status) subs.push({ subresource: 'status', responseKind: { group: '', version: '', kind: r.kind }, verbs: statusVerbs });
  if (subs.length) out.subresources = subs;
  return out;
}

/** Aggregated discovery for /api (core only) or /apis (every group), as `apidiscovery.k8s.io/<version>`. */
export function aggregatedDiscovery(registry: Registry, root: 'api' | 'apis', version: 'v2' | 'v2beta1'): JsonObject {
  const groups = servedGroups(registry).filter((g) => (root === 'api' ? g.name === '' : g.name !== ''));
  const items = groups.map((g) => ({
    metadata: root === 'api' ? { creationTimestamp: null } : { name: g.name, creationTimestamp: null },
    versions: g.versions.map((v) => ({
      version: v.version,
      resources: [...v.resources].sort((a, b) => a.resource.localeCompare(b.resource)).map(discoveryResource),
      freshness: 'Current',
    })),
  }));
  return { kind: 'APIGroupDiscoveryList', apiVersion: `apidiscovery.k8s.io/${version}`, metadata: {}, items };
}

const reference = JSON.parse(readFileSync(new URL('./reference/version.json', import.meta.url), 'utf8')) as JsonObject;

/** GET /version: kube-apiserver v1.28's answer, marked as the simulator's. */
export function versionInfo(): JsonObject {
  return { ...reference, gitVersion: `${String(reference.gitVersion)}+panoptes-sim`, gitTreeState: 'clean', buildDate: '2024-01-01T00:00:00Z' };
}
