// Which metric a name is: a rule of the metrics file, or the count of a synced resource
// (`pods`, `jobs.batch`, `widgets.example.com`). A declared rule wins over a count of the same
// name. Names that are neither: 404; a rule that is declared but invalid, or reads a resource
// no cluster syncs: 503 naming the problem.
import { notFound, StatusError } from '../../kube/status.ts';
import type { Catalog, ResourceInfo, ViewCatalog } from '../discovery/catalog.ts';
import { externalMetricsGroupName } from './group.ts';
import type { RulesSource } from './rules-source.ts';
import { parseResourceName, resourceMetricName, type MetricRule } from './rules.ts';

export interface MetricTarget {
  name: string;
  /** The resource as the all-clusters view serves it (scope, clusters). */
  info: ResourceInfo;
  /** The declared rule; undefined for a plain count. */
  rule?: MetricRule;
}

/** The resource as a view serves it, at whichever version. */
export function findResource(view: ViewCatalog | undefined, group: string, resource: string): ResourceInfo | undefined {
  for (const v of view?.group(group)?.versions ?? []) {
    const r = v.resources.find((x) => x.resource === resource);
    if (r) return r;
  }
  return undefined;
}

/** Resolves a metric name; refreshes the catalog once before saying a resource is missing. */
export async function resolveMetric(name: string, catalog: Catalog, rules: RulesSource): Promise<MetricTarget> {
  const set = rules.current();
  const rule = set.rules.get(name);
  const lookup = async (group: string, resource: string) => {
    let info = findResource(catalog.view(), group, resource);
    if (!info) {
      await catalog.refreshOnMiss();
      info = findResource(catalog.view(), group, resource);
    }
    return info;
  };
  if (rule) {
    const info = await lookup(rule.group, rule.resource);
    if (!info) {
      throw new StatusError('ServiceUnavailable', `external metric ${JSON.stringify(name)} reads ${resourceMetricName(rule.group, rule.resource)}, which no member cluster syncs (yet)`, {
        name,
        group: externalMetricsGroupName,
        retryAfterSeconds: 10,
      });
    }
    return { name, info, rule };
  }
  const broken = set.invalid.get(name);
  if (broken) throw new StatusError('ServiceUnavailable', `external metric ${JSON.stringify(name)} is declared in ${rules.file} but its rule is invalid: ${broken}`, { name, group: externalMetricsGroupName });
  const target = parseResourceName(name);
  const info = target ? await lookup(target.group, target.resource) : undefined;
  if (info) return { name, info };
  const fileNote = rules.fileError() ? `; note: ${rules.fileError()}` : '';
  throw notFound(
    `external metric ${JSON.stringify(name)} not found: it is neither declared in the metrics file${rules.file ? '' : ' (none given: --external-metrics-file)'} nor <resource>[.<group>] of a resource the member clusters sync (e.g. pods, jobs.batch)${fileNote}`,
    { name, group: externalMetricsGroupName, kind: 'externalmetrics' },
  );
}
