// The external.metrics.k8s.io/v1beta1 group as discovery shows it: one resource per metric
// (declared metrics first, then the count of every synced resource), namespaced, verb get,
// kind ExternalMetricValueList — as metrics adapters (custom-metrics-apiserver) list them.
// Built from memory (the rules and the catalog), so the APIService's availability check does
// not depend on storage.
import type { GroupEntry, ResourceInfo, ViewCatalog } from '../discovery/catalog.ts';
import { panoptesGroupName } from '../discovery/panoptes-group.ts';
import { resourceMetricName, type RuleSet } from './rules.ts';

export const externalMetricsGroupName = 'external.metrics.k8s.io';
export const externalMetricsVersion = 'v1beta1';
export const externalMetricsApiVersion = `${externalMetricsGroupName}/${externalMetricsVersion}`;

function metricInfo(name: string): ResourceInfo {
  return { group: externalMetricsGroupName, version: externalMetricsVersion, resource: name, kind: 'ExternalMetricValueList', singularName: '', namespaced: true, clusters: [], verbs: ['get'] };
}

/** The metric names served: declared ones, then `<resource>[.<group>]` of every resource the all-clusters view serves. */
export function metricNames(rules: RuleSet, view: ViewCatalog | undefined): string[] {
  const declared = [...rules.rules.keys()].sort();
  const counts = new Set<string>();
  for (const g of view?.groups ?? []) {
    if (g.name === panoptesGroupName) continue;
    for (const v of g.versions) for (const r of v.resources) counts.add(resourceMetricName(g.name, r.resource));
  }
  return [...declared, ...[...counts].filter((n) => !rules.rules.has(n)).sort()];
}

export function externalMetricsGroup(rules: RuleSet, view: ViewCatalog | undefined): GroupEntry {
  return { name: externalMetricsGroupName, versions: [{ version: externalMetricsVersion, resources: metricNames(rules, view).map(metricInfo) }] };
}
