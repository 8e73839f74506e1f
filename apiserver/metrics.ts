// Prometheus metrics of the apiserver: request count and latency by verb, group, resource
// and code. The registry may be shared with synchro in all-in-one.
import { Counter, Histogram, Registry } from 'prom-client';

export type MetricVerb = 'list' | 'get' | 'watch' | 'discovery' | 'openapi' | 'health' | 'metrics' | 'other';

export class ApiserverMetrics {
  readonly registry: Registry;
  readonly requests: Counter<'verb' | 'group' | 'resource' | 'code'>;
  readonly latency: Histogram<'verb' | 'group' | 'resource' | 'code'>;
  readonly inflight: Counter<'verb'>;

  constructor(registry = new Registry()) {
    this.registry = registry;
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
  }

  observe(verb: MetricVerb, group: string, resource: string, code: number, seconds: number): void {
    const labels = { verb, group, resource, code: String(code) };
    this.requests.inc(labels);
    this.latency.observe(labels, seconds);
  }
}
