// Prometheus metrics of the apiserver: request count and latency by verb, group, resource
// and code; external metric queries (apiserver/external/) by metric, and the metrics file's
// rules. The registry may be shared with synchro in all-in-one.
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { registerProcessMetrics } from '../../lib/process-metrics.ts';
import type { ReadDatabaseStatus, ReadPool } from '../../storage/read-pool.ts';
import { memberState } from '../../storage/members.ts';
import type { Store } from '../../storage/store.ts';

export type MetricVerb = 'list' | 'get' | 'watch' | 'create' | 'update' | 'patch' | 'delete' | 'discovery' | 'openapi' | 'health' | 'metrics' | 'proxy' | 'other';

export class ApiserverMetrics {
  readonly registry: Registry;
  readonly requests: Counter<'verb' | 'group' | 'resource' | 'code'>;
  readonly latency: Histogram<'verb' | 'group' | 'resource' | 'code'>;
  /** Requests being served, by kind as kube-apiserver counts them (readOnly, mutating; watches are long-running and left out). */
  readonly inflight: Gauge<'request_kind'>;
  /** External metric queries served, by metric ('' when the name resolved to nothing) and HTTP code. */
  readonly externalQueries: Counter<'metric' | 'code'>;
  readonly externalLatency: Histogram<'metric'>;
  /** Failed external metric queries by metric and Status reason. */
  readonly externalErrors: Counter<'metric' | 'reason'>;
  /** Rules of the external metrics file in effect, valid and invalid. */
  readonly externalRules: Gauge<'state'>;
  /** Loads of the external metrics file by result (ok, error). */
  readonly externalRuleLoads: Counter<'result'>;
  /** How long proxied writes waited for their sync (read-your-writes), by outcome: synced, timeout, error (storage did not answer). */
  readonly proxyWriteWaits: Histogram<'outcome'>;

  constructor(registry = new Registry()) {
    this.registry = registry;
    registerProcessMetrics(registry);
    const registers = [registry];
    const labelNames = ['verb', 'group', 'resource', 'code'] as const;
    this.requests = new Counter({ name: 'panoptes_apiserver_requests_total', help: 'Requests served, by verb, API group, resource and HTTP code', labelNames, registers });
    this.latency = new Histogram({
      name: 'panoptes_apiserver_request_duration_seconds',
      help: 'Time to serve a request (watches: until their stream starts), by verb, API group, resource and HTTP code',
      labelNames,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    });
    this.inflight = new Gauge({
      name: 'panoptes_apiserver_current_inflight_requests',
      help: 'Requests being served now, by kind: readOnly (GET, HEAD, OPTIONS) and mutating (the other methods); watches are long-running and left out, as kube-apiserver does (panoptes_watch_watchers counts them)',
      labelNames: ['request_kind'],
      registers,
    });
    for (const kind of ['readOnly', 'mutating']) this.inflight.set({ request_kind: kind }, 0);
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
    this.proxyWriteWaits = new Histogram({
      name: 'panoptes_proxy_write_wait_seconds',
      help: 'Time a write proxied to a member waited for synchro to store it, by outcome (synced; timeout: answered with the member object and a Warning; error: storage did not answer)',
      labelNames: ['outcome'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.externalRuleLoads = new Counter({ name: 'panoptes_external_metric_rule_loads_total', help: 'Loads of the external metrics file, by result (ok, error: the last good rules stay)', labelNames: ['result'], registers });
  }

  /**
   * The databases reads use (--storage-read), read at each scrape: which one reads go to, whether
   * each answers, and how far each standby is behind the primary in rv and in seconds.
   */
  followReads(pool: ReadPool): void {
    const registers = [this.registry];
    const labelNames = ['database', 'role'] as const;
    const each = (g: Gauge<'database' | 'role'>, value: (s: ReadDatabaseStatus) => number) => {
      g.reset();
      for (const s of pool.status()) g.set({ database: s.database, role: s.role }, value(s));
    };
    new Gauge({ name: 'panoptes_storage_read_selected', help: 'The database lists, gets and watches read now (1), by database and role (primary, standby, promoted)', labelNames, registers, collect() { each(this, (s) => (s.selected ? 1 : 0)); } });
    new Gauge({ name: 'panoptes_storage_read_up', help: 'Whether the database answered its last check, by database and role', labelNames, registers, collect() { each(this, (s) => (s.up ? 1 : 0)); } });
    new Gauge({ name: 'panoptes_storage_read_lag_resource_versions', help: 'Changes the primary has that the standby has not replayed', labelNames, registers, collect() { each(this, (s) => s.lagRv); } });
    new Gauge({ name: 'panoptes_storage_read_lag_seconds', help: 'How long the primary has had a change the standby has not replayed', labelNames, registers, collect() { each(this, (s) => s.lagSeconds); } });
    new Gauge({ name: 'panoptes_storage_read_primary_fallbacks', help: 'Most-recent reads the standby did not catch up for within the wait, served by the primary (since start)', registers, collect() { this.set(pool.fallbacks); } });
  }

  private followingMembers = false;

  /**
   * The synchro members as storage has them (synchro_members), read at each scrape: how many
   * are live, how many report themselves out (a row written expired, within the last minute:
   * the process runs but cannot work), and which rows report a configuration error.
   */
  followMembers(store: Pick<Store, 'members'>): void {
    if (this.followingMembers) return;
    this.followingMembers = true;
    const registers = [this.registry];
    // Storage down: no series (and /metrics still answers; /readyz says why).
    const read = async () => {
      const { now, members } = await store.members().catch(() => ({ now: 0, members: [] }));
      return members.map((m) => ({ id: m.id, state: memberState(m, now), configError: m.configError !== null }));
    };
    new Gauge({
      name: 'panoptes_fleet_synchro_members',
      help: 'Synchro processes in storage by state: live (counted in the membership), out (running, reporting that they cannot work), expired (no heartbeat since their TTL)',
      labelNames: ['state'],
      registers,
      async collect() {
        const all = await read();
        this.reset();
        for (const state of ['live', 'out', 'expired']) this.set({ state }, all.filter((m) => m.state === state).length);
      },
    });
    new Gauge({
      name: 'panoptes_fleet_synchro_member_config_error',
      help: "1 for a synchro process (live or out) whose member row reports a configuration error (its clusters file does not load)",
      labelNames: ['member'],
      registers,
      async collect() {
        this.reset();
        for (const m of await read()) if (m.state !== 'expired' && m.configError) this.set({ member: m.id }, 1);
      },
    });
  }

  observe(verb: MetricVerb, group: string, resource: string, code: number, seconds: number): void {
    const labels = { verb, group, resource, code: String(code) };
    this.requests.inc(labels);
    this.latency.observe(labels, seconds);
  }
}

const parseBoolTrue = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);

/**
 * A request's kind for the in-flight gauge, from what is known before routing: its method; a
 * watch (its parameter as strconv.ParseBool reads it, or the legacy path) is long-running and not
 * counted, as kube-apiserver leaves long-running requests out (panoptes_watch_watchers counts them).
 */
export function inflightKind(method: string, path: string, query: string): 'readOnly' | 'mutating' | undefined {
  if (method !== 'GET' && method !== 'HEAD' && method !== 'OPTIONS') return 'mutating';
  const watch = new URLSearchParams(query).get('watch');
  if ((watch !== null && parseBoolTrue.has(watch)) || /\/v\d+(?:(?:alpha|beta)\d+)?\/watch\//.test(path)) return undefined;
  return 'readOnly';
}
