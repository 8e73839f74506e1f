// Discovery of a one-cluster view as the proxy widens it, so kubectl finds what it may do
// there: every synced resource with kube's verbs and subresources (kube-apiserver v1.28's
// discovery, apiserver/reference/builtin-verbs.json: deployments/scale as autoscaling/v1
// Scale, pods/log, pods/exec, pods/eviction as policy/v1 Eviction...; a custom resource: every
// verb, no subresource known), and what is proxied without being synced: authorization.k8s.io
// SelfSubjectAccessReview and SelfSubjectRulesReview (kubectl auth can-i) and metrics.k8s.io
// PodMetrics and NodeMetrics (kubectl top). The all-clusters view serves get, list and watch
// of what is synced, and metrics.k8s.io from every member (fleet-metrics.ts: kubectl top pods -A).
import { readFileSync } from 'node:fs';
import type { GroupEntry, ResourceInfo } from '../discovery/catalog.ts';
import { panoptesGroupName } from '../discovery/panoptes-group.ts';

type Verbs = Record<string, Record<string, { verbs: string[]; subresources: NonNullable<ResourceInfo['subresources']> }>>;
const builtin = JSON.parse(readFileSync(new URL('../reference/builtin-verbs.json', import.meta.url), 'utf8')) as Verbs;

/** kube's verbs of a custom resource. */
const allVerbs = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

const gv = (group: string, version: string) => (group ? `${group}/${version}` : version);

const base = (group: string, version: string, resource: string, kind: string, singularName: string, namespaced: boolean, verbs: string[]): ResourceInfo => ({
  group, version, resource, kind, singularName, namespaced, clusters: [], verbs,
});

/** Groups served through the proxy without being synced (discovery as kube-apiserver and metrics-server answer it). */
export const proxiedOnlyGroups: GroupEntry[] = [
  {
    name: 'authorization.k8s.io',
    versions: [{ version: 'v1', resources: [base('authorization.k8s.io', 'v1', 'selfsubjectaccessreviews', 'SelfSubjectAccessReview', 'selfsubjectaccessreview', false, ['create']), base('authorization.k8s.io', 'v1', 'selfsubjectrulesreviews', 'SelfSubjectRulesReview', 'selfsubjectrulesreview', false, ['create'])] }],
  },
  {
    name: 'metrics.k8s.io',
    versions: [{ version: 'v1beta1', resources: [base('metrics.k8s.io', 'v1beta1', 'nodes', 'NodeMetrics', '', false, ['get', 'list']), base('metrics.k8s.io', 'v1beta1', 'pods', 'PodMetrics', '', true, ['get', 'list'])] }],
  },
];

/** Adds the extra groups a view serves without syncing them (a group already served gains the missing resources). */
function withGroups(groups: GroupEntry[], extras: GroupEntry[]): GroupEntry[] {
  const out = [...groups];
  for (const extra of extras) {
    const i = out.findIndex((x) => x.name === extra.name);
    if (i < 0) {
      out.push(extra);
      continue;
    }
    const g = { ...out[i], versions: [...out[i].versions] };
    out[i] = g;
    for (const ev of extra.versions) {
      const j = g.versions.findIndex((x) => x.version === ev.version);
      if (j < 0) g.versions.push(ev);
      else g.versions[j] = { ...g.versions[j], resources: [...g.versions[j].resources, ...ev.resources.filter((r) => !g.versions[j].resources.some((x) => x.resource === r.resource))] };
    }
  }
  return out;
}

/** The groups of the all-clusters view: what is synced, and metrics.k8s.io gathered from the members. */
export function fleetGroups(groups: GroupEntry[]): GroupEntry[] {
  return withGroups(groups, proxiedOnlyGroups.filter((g) => g.name === 'metrics.k8s.io'));
}

function widened(r: ResourceInfo): ResourceInfo {
  const known = builtin[gv(r.group, r.version)]?.[r.resource];
  if (known) return { ...r, verbs: known.verbs, subresources: known.subresources };
  return { ...r, verbs: allVerbs };
}

/** The groups of a one-cluster view as the proxy serves them (Panoptes' own group as it is: read-only in a view). */
export function proxiedGroups(groups: GroupEntry[]): GroupEntry[] {
  const widenedGroups = groups.map((g) => (g.name === panoptesGroupName ? g : { ...g, versions: g.versions.map((v) => ({ ...v, resources: v.resources.map(widened) })) }));
  return withGroups(widenedGroups, proxiedOnlyGroups);
}
