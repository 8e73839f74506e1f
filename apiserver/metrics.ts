// Prometheus metrics of the apiserver: request count and latency by verb, group, resource
// and code; external metric queries (apiserver/external/) by metric, and the metrics file's
// rules. The registry may be shared with synchro in all-in-one.
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { registerProcessMetrics } from '../lib/process-metrics.ts';

export type MetricVerb = 'list' | 'get' | 'watch' | 'create' | 'update' | 'patch' | 'delete' | 'discovery' | 'openapi' | 'health' | 'metrics' | 'proxy' | 'other';

export class ApiserverMetrics {
  readonly registry: Registry;
  readonly requests: Counter<'verb' | 'group' | 'resource' | 'code'>;
  readonly latency: Histogram<'verb' | 'group' | 'resource' | 'code'>;
  readonly inflight: Counter<'verb'>;
  /** External metric queries served, by metric ('' when the name resolved to nothing) and HTTP code. */
  readonly externalQueries: Counter<'metric' | 'code'>;
  readonly externalLatency: Histogram<'metric'>;
  /** Failed external metric queries by metric and Status reason. */
  readonly externalErrors: Counter<'metric' | 'reason'>;
  /** Rules of the external metrics file in effect, valid and invalid. */
  readonly externalRules: Gauge<'state'>;
  /** Loads of the external metrics file by result (ok, error). */
  readonly externalRuleLoads: Counter<'result'>;

  constructor(registry = new Registry()) {
    this.registry = registry;
    registerProcessMetrics(registry);
    const registers = [registry];
    const labelNames = ['verb', 'group', 'resource', 'code'] as const;
    this.requests = new Counter({ name: 'panoptes_apiserver_requests_total', help: 'Requests served, by verb, API group, resource and HTTP code', labelNames, registers });
    this.latency = new Histogram({
      name: 'panoptes_apiserver_request_duration_seconds',
      help: 'Time to serve a request (watches: until the stream ends), by verb, API group, resource and HTTP code',
      labelNames,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    });
    this.inflight = new Counter({ name: 'panoptes_apiserver_requests_started_total', help: 'Requests started, by verb', labelNames: ['verb'], registers });
    this.externalQueries = new Counter({ name: 'panoptes_external_metric_queries_total', help: 'external.metrics.k8s.io queries served, by metric and HTTP code', labelNames: ['metric', 'code'], registers });
    this.externalLatency = new Histogram({
      name: 'panoptes_external_metric_query_duration_seconds',
      help: 'Time to answer an external.metrics.k8s.io query, by metric',
      labelNames: ['metric'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    });
    this.externalErrors = new Counter({ name: 'panoptes_external_metric_errors_total', help: 'external.metrics.k8s.io queries that failed, by metric and Status reason', labelNames: ['metric', 'reason'], registers });
    this.externalRules = new Gauge({ name: 'panoptes_external_metric_rules', help: 'Rules of the external metrics file in effect, by state (valid, invalid)', labelNames: ['state'], registers });
    this.externalRuleLoads = new Counter({ name: 'panoptes_external_metric_rule_loads_total', help: 'Loads of the external metrics file, by result (ok, error: the last good rules stay)', labelNames: ['result'], registers });
  }

  observe(verb: MetricVerb, group: string, resource: string, code: number, seconds: number): void {
    const labels = { verb, group, resource, code: String(code) };
    this.requests.inc(labels);
    this.latency.observe(labels, seconds);
  }
}
