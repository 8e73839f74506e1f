// GET /apis/external.metrics.k8s.io/v1beta1/namespaces/<namespace>/<metric>?labelSelector=…
// → ExternalMetricValueList, as the HorizontalPodAutoscaler's external metrics client asks
// (it sums the values of all items; for an AverageValue target it divides by its replicas).
//
// Scope: the objects of the request's namespace in every cluster; the selector (selector.ts)
// narrows it (labels, fields, clusters, names) or replaces the namespaces
// (search.panoptes.io/namespaces, search.panoptes.io/all-namespaces). A declared rule adds its
// own selection and may set the default namespaces. Every namespace read other than the
// request's (which the request itself was authorized for) is authorized again, whether the
// selector or the rule named it: list on the metric in that namespace, or at the cluster
// scope for all, so a right to read metrics in one namespace does not read another's objects.
// An unknown cluster is a 400 naming what was asked only: the caller may not list clusters.
//
// Values come from one storage snapshot per query, as fresh as synchro's last commit. While a
// selected cluster is not Ready the metric is served from its last synced state with a Warning
// (ServeLastKnown), or not at all (Fail: 503, so the HPA keeps its replicas), per rule.
import type { Context } from 'koa';
import type { FieldSelector } from '../../kube/fields.ts';
import { checkFieldSelector } from '../../kube/fields.ts';
import { formatQuantity } from '../../kube/quantity.ts';
import { badRequest, StatusError } from '../../kube/status.ts';
import type { AggregateQuery } from '../../storage/aggregate.ts';
import type { ResourceAttributes } from '../auth/attributes.ts';
import type { AuthState } from '../auth/middleware.ts';
import type { Deps, Reply } from '../endpoints/deps.ts';
import { pathNotFound } from '../endpoints/errors.ts';
import { notAcceptable, parseAccept } from '../endpoints/negotiate.ts';
import { readFresh } from '../read/rv.ts';
import { staleWarnings } from '../endpoints/warnings.ts';
import { externalMetricsApiVersion, externalMetricsGroupName, externalMetricsVersion } from './group.ts';
import { findResource, resolveMetric, type MetricTarget } from './resolve.ts';
import type { ExternalMetricsDeps } from './deps.ts';
import { combine, parseSelection, withFieldSelector, type Selection } from './selector.ts';

/** What the external metrics handler needs beyond the usual Deps. */

const knownParams = new Set(['labelSelector', 'fieldSelector', 'pretty', 'timeout']);
const dnsLabel = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

interface ExternalMetricValue {
  metricName: string;
  metricLabels: Record<string, string>;
  timestamp: string;
  value: string;
}

/** JSON only (protobuf-first Accept headers fall back to it, as with every other path). */
function negotiateJson(accept: string): void {
  if (!accept.trim()) return;
  for (const m of parseAccept(accept)) {
    const json = (m.type === 'application' && (m.subtype === 'json' || m.subtype === '*')) || (m.type === '*' && m.subtype === '*');
    if (json && m.params.as === undefined) return;
  }
  throw notAcceptable('application/json');
}

/** The storage selection, the clusters read and the namespaces to authorize again. */
function plan(deps: Deps, target: MetricTarget, namespace: string, request: Selection) {
  const { info, rule } = target;
  const sel = rule ? combine(rule.selection, request) : request;
  const fields: FieldSelector = [...sel.fields];
  checkFieldSelector(info.group, info.resource, fields);

  const known = deps.catalog.clusterNames();
  const unknown = (sel.clusters.in ?? []).filter((c) => !known.includes(c));
  // Not "known clusters: ...": a right to read a metric is not a right to list clusters.
  if (unknown.length) throw badRequest(`unknown cluster${unknown.length > 1 ? 's' : ''} ${unknown.map((c) => JSON.stringify(c)).join(', ')} in search.panoptes.io/clusters`);
  const chosen = (sel.clusters.in ?? known).filter((c) => !sel.clusters.notIn.includes(c));
  const select: AggregateQuery['select'] = { group: info.group, resource: info.resource };
  if (sel.clusters.in || sel.clusters.notIn.length) select.clusters = chosen;
  // Clusters that sync the resource, at any version (info.clusters names those of the version served).
  const read = chosen.filter((c) => findResource(deps.catalog.view(c), info.group, info.resource) !== undefined);

  // The namespaces read beyond the request's own, from the selector or the rule: authorized again.
  let recheck: Array<string | undefined> = [];
  const requestScopes = request.allNamespaces || request.namespaces.in !== undefined;
  if (info.namespaced) {
    if (!sel.allNamespaces) select.namespaces = sel.namespaces.in ?? [namespace];
    for (const ns of sel.namespaces.notIn) fields.push({ field: 'metadata.namespace', operator: '!=', value: ns });
    recheck = sel.allNamespaces ? [undefined] : select.namespaces!.filter((ns) => ns !== namespace);
  } else if (requestScopes || request.namespaces.notIn.length) {
    throw badRequest(`${info.resource}${info.group ? `.${info.group}` : ''} is cluster-scoped: the namespace search keys do not apply`);
  }
  if (sel.names.in) select.names = sel.names.in;
  for (const n of sel.names.notIn) fields.push({ field: 'metadata.name', operator: '!=', value: n });
  if (sel.ownerUIDs) select.ownerUIDs = sel.ownerUIDs;
  if (sel.labels.length) select.labelSelector = sel.labels;
  if (fields.length) select.fieldSelector = fields;
  return { select, read, recheck };
}

async function authorizeScope(ctx: Context, ext: ExternalMetricsDeps, metric: string, namespaces: Array<string | undefined>): Promise<void> {
  const user = (ctx.state as AuthState).user;
  if (!ext.authorizer || !user) return;
  for (const ns of namespaces) {
    const attrs: ResourceAttributes = { verb: 'list', group: externalMetricsGroupName, version: externalMetricsVersion, resource: metric };
    if (ns !== undefined) attrs.namespace = ns;
    await ext.authorizer.authorize(user, { kind: 'resource', attrs });
  }
}

async function answer(ctx: Context, deps: Deps, ext: ExternalMetricsDeps, namespace: string, name: string, found: (t: MetricTarget) => void): Promise<Reply> {
  const qs = new URLSearchParams(ctx.querystring);
  for (const k of qs.keys()) if (!knownParams.has(k)) throw badRequest(`unknown query parameter ${JSON.stringify(k)} (external metrics take labelSelector and fieldSelector)`);
  negotiateJson(ctx.get('Accept'));
  if (namespace.length > 63 || !dnsLabel.test(namespace)) throw badRequest(`invalid namespace ${JSON.stringify(namespace)}: not a DNS label`);

  const target = await resolveMetric(name, deps.catalog, ext.rules);
  found(target);
  let request = parseSelection(qs.get('labelSelector') ?? '');
  const fs = qs.get('fieldSelector');
  if (fs) request = withFieldSelector(request, fs);
  const { select, read, recheck } = plan(deps, target, namespace, request);
  await authorizeScope(ctx, ext, name, recheck);

  const rule = target.rule;
  const policy = rule?.whenClusterNotReady ?? ext.rules.current().defaults.whenClusterNotReady;
  const notReady = read.filter((c) => deps.catalog.cluster(c)?.status.ready !== true);
  if (policy === 'Fail' && notReady.length) {
    throw new StatusError('ServiceUnavailable', `external metric ${JSON.stringify(name)} is not served while a cluster it reads is not Ready (whenClusterNotReady: Fail): ${notReady.join(', ')}`, {
      name,
      group: externalMetricsGroupName,
      retryAfterSeconds: 10,
    });
  }

  // A metric has no resourceVersion parameter: it is a most-recent read (apiserver/read/rv.ts).
  const aq: AggregateQuery = { select, match: rule?.match, fn: rule?.aggregate ?? 'count', path: rule?.path, byCluster: rule?.perCluster ?? false };
  const { value: result, warnings: readWarnings } = await readFresh(deps, { resourceVersion: '' }, (store, minRv) => store.aggregate(minRv === undefined ? aq : { ...aq, minRv }));
  const timestamp = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
  const item = (value: number | null, metricLabels: Record<string, string>): ExternalMetricValue => ({ metricName: name, metricLabels, timestamp, value: formatQuantity(value ?? 0) });
  let items: ExternalMetricValue[];
  if (rule?.perCluster) {
    const byCluster = new Map(result.rows.map((r) => [r.cluster, r.value]));
    const clusters = [...new Set([...read, ...byCluster.keys()])].sort();
    items = clusters.map((c) => item(byCluster.get(c) ?? null, { cluster: c }));
  } else items = [item(result.rows[0]?.value ?? null, {})];

  const body = { kind: 'ExternalMetricValueList', apiVersion: externalMetricsApiVersion, metadata: { resourceVersion: String(result.resourceVersion) }, items };
  const warnings = [...readWarnings, ...staleWarnings(deps.catalog, notReady)];
  deps.log.debug('external metric', { metric: name, namespace, labelSelector: qs.get('labelSelector') ?? '', items: items.length, rv: result.resourceVersion });
  return { type: 'application/json', body: JSON.stringify(body), headers: warnings.length ? { Warning: warnings } : undefined };
}

/** Serves one request below /apis/external.metrics.k8s.io/v1beta1 (`rest`: the segments after it). */
export async function serveExternalMetric(ctx: Context, deps: Deps, rest: string[]): Promise<Reply> {
  const ext = deps.externalMetrics;
  const state = ctx.state as { metric?: { verb: 'list'; group: string; resource: string } };
  state.metric = { verb: 'list', group: externalMetricsGroupName, resource: '' };
  if (rest.length !== 3 || rest[0] !== 'namespaces') throw pathNotFound();
  const started = process.hrtime.bigint();
  let metric = '';
  let code = 200;
  try {
    return await answer(ctx, deps, ext, rest[1], rest[2], (t) => {
      metric = t.name;
      state.metric = { verb: 'list', group: externalMetricsGroupName, resource: t.name };
    });
  } catch (err) {
    const reason = err instanceof StatusError ? err.reason : 'InternalError';
    code = err instanceof StatusError ? err.code : 500;
    ext.metrics.externalErrors.inc({ metric, reason });
    if (code >= 500) deps.log.warn('external metric query failed', { metric, url: ctx.url, reason, error: (err as Error).message });
    throw err;
  } finally {
    ext.metrics.externalQueries.inc({ metric, code: String(code) });
    ext.metrics.externalLatency.observe({ metric }, Number(process.hrtime.bigint() - started) / 1e9);
  }
}
