// manifests/grafana/panoptes-dashboard.json: importable (schema version, a Prometheus data
// source variable every panel uses), and every metric its PromQL queries is one Panoptes
// exports: the names come from the real metric classes registered in fresh registries.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { Registry } from 'prom-client';
import { ApiserverMetrics } from '../../apiserver/endpoints/metrics.ts';
import { watchMetrics } from '../../apiserver/watch/metrics.ts';
import { SynchroMetrics } from '../../synchro/metrics/metrics.ts';

interface Target {
  refId: string;
  expr: string;
  datasource?: { type?: string; uid?: string };
}
interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: { type?: string; uid?: string };
  gridPos: { h: number; w: number; x: number; y: number };
  targets?: Target[];
  panels?: Panel[];
}
interface Variable {
  name: string;
  type: string;
  query: string | { query: string };
  datasource?: { type?: string; uid?: string };
}
interface Dashboard {
  title: string;
  uid: string;
  schemaVersion: number;
  templating: { list: Variable[] };
  panels: Panel[];
}

const dashboard = JSON.parse(readFileSync(new URL('./panoptes-dashboard.json', import.meta.url), 'utf8')) as Dashboard;
const panels = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
const queried = panels.filter((p) => p.type !== 'row');

/** Every name a Panoptes process exposes on /metrics: histograms as _bucket, _sum and _count. */
async function exported(): Promise<Set<string>> {
  const watch = new Registry();
  watchMetrics(watch);
  const names = new Set<string>();
  for (const registry of [new ApiserverMetrics(new Registry()).registry, new SynchroMetrics(new Registry()).registry, watch]) {
    for (const m of await registry.getMetricsAsJSON()) {
      const type = String(m.type);
      if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(m.name + s);
      else if (type === 'summary') for (const s of ['', '_sum', '_count']) names.add(m.name + s);
      else names.add(m.name);
    }
  }
  return names;
}

const keywords = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'and', 'or', 'unless', 'offset', 'inf', 'nan']);

/** The metric names a PromQL expression selects: identifiers that are not functions, keywords, labels, strings, durations or Grafana variables. */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""') // strings (label values, regexes)
    .replace(/\{[^}]*\}/g, '') // label matchers
    .replace(/\[[^\]]*\]/g, '') // ranges and subqueries
    .replace(/\boffset\s+-?[0-9a-z]+/gi, '') // offset durations
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '') // label lists
    .replace(/\$\{?\w+\}?/g, '') // Grafana variables
    .replace(/(^|[^\w:])\d+(\.\d+)?(e[+-]?\d+)?/gi, '$1'); // numbers
  const names: string[] = [];
  for (const m of bare.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const rest = bare.slice(m.index! + m[0].length);
    if (/^\s*\(/.test(rest) || keywords.has(m[0].toLowerCase())) continue; // a function or a keyword
    names.push(m[0]);
  }
  return names;
}

t.test('metricNames finds the selected metrics and nothing else', async (t) => {
  t.same(metricNames('histogram_quantile(0.99, sum by (cluster, le) (rate(panoptes_synchro_event_lag_seconds_bucket{cluster=~"$cluster"}[$__rate_interval])))'), ['panoptes_synchro_event_lag_seconds_bucket']);
  t.same(metricNames('sum(rate(a_total{code=~"5..", verb!="watch"}[5m])) / sum(rate(b_total[1h:5m])) by (verb)'), ['a_total', 'b_total']);
  t.same(metricNames('topk(10, sum by (group, resource) (rate(x_total{verb=~"list|get"}[${__rate_interval}])))'), ['x_total']);
  t.same(metricNames('max by (instance) (g) * on (instance) group_left (pod) h offset 5m > bool 1e3'), ['g', 'h']);
  t.same(metricNames('label_values(panoptes_synchro_objects, cluster)').slice(0, 1), ['panoptes_synchro_objects']);
});

t.test('every metric the dashboard queries is one Panoptes exports', async (t) => {
  const names = await exported();
  t.ok(names.has('panoptes_synchro_event_lag_seconds_bucket') && names.has('panoptes_watch_watchers') && names.has('panoptes_apiserver_requests_total'), 'the registries hold the metrics');
  let queries = 0;
  for (const p of queried) {
    t.ok(p.targets?.length, `${p.title}: has queries`);
    for (const target of p.targets ?? []) {
      const used = metricNames(target.expr);
      t.ok(used.length >= 1, `${p.title} ${target.refId}: selects a metric`);
      for (const n of used) {
        queries++;
        if (!names.has(n)) t.fail(`${p.title} ${target.refId}: ${n} is not a metric Panoptes exports (${target.expr})`);
      }
    }
  }
  for (const v of dashboard.templating.list.filter((v) => v.type === 'query')) {
    const q = typeof v.query === 'string' ? v.query : v.query.query;
    const m = /^label_values\(\s*([A-Za-z_:][\w:]*)\s*,\s*(\w+)\s*\)$/.exec(q);
    t.ok(m, `variable ${v.name}: label_values(metric, label)`);
    if (m) t.ok(names.has(m[1]), `variable ${v.name}: ${m[1]} is exported`);
  }
  t.ok(queries > 30, `${queries} metric selections checked`);
});

t.test('the check fails for a name Panoptes does not export', async (t) => {
  const names = await exported();
  for (const bad of ['rate(panoptes_synchro_event_lag_seconds[5m])', 'panoptes_watch_watcher', 'rate(panoptes_apiserver_requests[5m])']) {
    t.ok(metricNames(bad).some((n) => !names.has(n)), `${bad}: refused`);
  }
});

t.test('it shows what Panoptes operators look at', async (t) => {
  const exprs = queried.flatMap((p) => (p.targets ?? []).map((x) => x.expr)).join('\n');
  for (const family of [
    'panoptes_synchro_event_lag_seconds_bucket', // sync lag
    'panoptes_synchro_events_applied_total', // events per cluster
    'panoptes_synchro_fenced_batches_total',
    'panoptes_synchro_leases_held',
    'panoptes_watch_watchers',
    'panoptes_watch_poller_lag',
    'panoptes_watch_poll_queries_total',
    'panoptes_apiserver_request_duration_seconds_bucket', // list latency
    'panoptes_apiserver_requests_total', // rates and errors
    'panoptes_external_metric_queries_total',
    'panoptes_external_metric_query_duration_seconds_bucket',
    'panoptes_synchro_mcs_dispatch_latency_seconds_bucket', // multi-cluster Services
    'panoptes_synchro_mcs_writes_total',
    'panoptes_synchro_mcs_errors_total',
    'panoptes_synchro_mcs_conflicts_total',
  ]) {
    t.ok(exprs.includes(family), family);
  }
  t.match(exprs, /verb="list"/, 'list latency');
});

t.test("a row for the multi-cluster Services dispatcher: latency quantiles, writes per consumer, errors by reason, conflicts", async (t) => {
  const at = dashboard.panels.findIndex((p) => p.type === 'row' && /multi-cluster services/i.test(p.title));
  t.ok(at >= 0, 'the row');
  const next = dashboard.panels.findIndex((p, i) => i > at && p.type === 'row');
  const row = dashboard.panels.slice(at + 1, next < 0 ? undefined : next);
  const exprs = (re: RegExp) => row.flatMap((p) => (p.targets ?? []).map((x) => x.expr)).filter((e) => re.test(e));
  t.same(exprs(/panoptes_synchro_mcs_dispatch_latency_seconds_bucket/).map((e) => /^histogram_quantile\((0\.\d+),/.exec(e)?.[1]), ['0.99', '0.5'], 'dispatch latency: p99 and p50');
  t.match(exprs(/panoptes_synchro_mcs_dispatch_latency_seconds_bucket/)[0], /sum by \(cluster, le\)/, '...p99 by consumer cluster');
  t.match(exprs(/panoptes_synchro_mcs_writes_total/), [/sum by \(cluster, kind, verb\)/], 'writes per consumer, by kind and verb');
  t.match(exprs(/panoptes_synchro_mcs_errors_total/), [/sum by \(cluster, reason\)/], 'errors by reason');
  t.match(exprs(/panoptes_synchro_mcs_conflicts_total/), [/sum by \(cluster, kind\)/], 'conflicts');
  t.ok(row.every((p) => (p.targets ?? []).every((x) => !/\$cluster/.test(x.expr) || /cluster=~"\$cluster"/.test(x.expr))), 'filtered by the cluster variable');
});

t.test('importable: schema version, a Prometheus data source variable, every panel on it, a layout', async (t) => {
  t.ok(Number.isInteger(dashboard.schemaVersion) && dashboard.schemaVersion >= 36, `schemaVersion ${dashboard.schemaVersion}`);
  t.ok(dashboard.title && dashboard.uid, 'title and uid');
  const ds = dashboard.templating.list.find((v) => v.name === 'datasource');
  t.same(ds && { type: ds.type, query: ds.query }, { type: 'datasource', query: 'prometheus' }, 'a ${datasource} variable of Prometheus data sources');
  const ids = new Set<number>();
  for (const p of panels) {
    t.notOk(ids.has(p.id), `panel id ${p.id} is unique`);
    ids.add(p.id);
    t.ok(p.gridPos.x >= 0 && p.gridPos.w >= 1 && p.gridPos.x + p.gridPos.w <= 24 && p.gridPos.h >= 1, `${p.title}: within the 24-column grid`);
  }
  for (const p of queried) {
    t.same(p.datasource, { type: 'prometheus', uid: '${datasource}' }, `${p.title}: on \${datasource}`);
    const refs = (p.targets ?? []).map((x) => x.refId);
    t.equal(new Set(refs).size, refs.length, `${p.title}: distinct refIds`);
    for (const x of p.targets ?? []) t.same(x.datasource, { type: 'prometheus', uid: '${datasource}' }, `${p.title} ${x.refId}: on \${datasource}`);
  }
  for (const v of dashboard.templating.list.filter((v) => v.type === 'query')) t.same(v.datasource, { type: 'prometheus', uid: '${datasource}' }, `variable ${v.name} on \${datasource}`);
  // panels do not overlap
  const cells = new Set<string>();
  for (const p of panels) {
    for (let y = p.gridPos.y; y < p.gridPos.y + p.gridPos.h; y++) {
      for (let x = p.gridPos.x; x < p.gridPos.x + p.gridPos.w; x++) {
        const k = `${x},${y}`;
        if (cells.has(k)) t.fail(`${p.title} overlaps another panel at ${k}`);
        cells.add(k);
      }
    }
  }
});
