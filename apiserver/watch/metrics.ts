// The watch engine's Prometheus metrics. One set per registry: several hubs in one process
// (tests, benchmarks) either share a registry (and add up) or pass registries of their own.
import { Counter, Gauge, Histogram, register as defaultRegistry, type Registry } from 'prom-client';

export interface WatchMetrics {
  /** Watchers open now. */
  watchers: Gauge;
  /** Events written to watchers (object events, bookmarks and errors). */
  eventsSent: Counter;
  /** Watchers closed because their buffer overflowed. */
  watchersClosedSlow: Counter;
  /** Newest committed rv known to this process minus newest rv delivered to the hub. */
  pollerLag: Gauge;
  /** Queries of the change log by the poller (rate = poll query rate). */
  pollQueries: Counter;
  /** Poll failures (each followed by a back-off). */
  pollErrors: Counter;
  /** Changes delivered as a commit notification carried them, without a poll query. */
  notifiedChanges: Counter;
  /** Seconds from a change's commit to its dispatch by this process. */
  dispatchDelay: Histogram;
  /** Changes and approximate bytes held by the window. */
  windowEvents: Gauge;
  windowBytes: Gauge;
  /** Watches started from the change log rather than the window. */
  storageReplays: Counter;
}

const cache = new WeakMap<Registry, WatchMetrics>();

export function watchMetrics(registry: Registry = defaultRegistry): WatchMetrics {
  const found = cache.get(registry);
  if (found) return found;
  const registers = [registry];
  const existing = <M>(name: string): M | undefined => registry.getSingleMetric(name) as M | undefined;
  const counter = (name: string, help: string) => existing<Counter>(name) ?? new Counter({ name, help, registers });
  const gauge = (name: string, help: string) => existing<Gauge>(name) ?? new Gauge({ name, help, registers });
  const m: WatchMetrics = {
    watchers: gauge('panoptes_watch_watchers', 'Watchers open.'),
    eventsSent: counter('panoptes_watch_events_sent_total', 'Watch events written to watchers.'),
    watchersClosedSlow: counter('panoptes_watch_watchers_closed_slow_total', 'Watchers closed because they could not keep up.'),
    pollerLag: gauge('panoptes_watch_poller_lag', 'Newest committed rv known to this process minus newest rv delivered.'),
    pollQueries: counter('panoptes_watch_poll_queries_total', 'Change-log queries by the poller.'),
    pollErrors: counter('panoptes_watch_poll_errors_total', 'Failed change-log polls.'),
    notifiedChanges: counter('panoptes_watch_notified_changes_total', 'Changes delivered as their commit notification carried them, without a change-log query.'),
    dispatchDelay:
      existing<Histogram>('panoptes_watch_dispatch_delay_seconds') ??
      new Histogram({
        name: 'panoptes_watch_dispatch_delay_seconds',
        help: 'Time from a change being written to its dispatch to watchers.',
        buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
        registers,
      }),
    windowEvents: gauge('panoptes_watch_window_events', 'Changes held by the in-memory window.'),
    windowBytes: gauge('panoptes_watch_window_bytes', 'Approximate bytes held by the in-memory window.'),
    storageReplays: counter('panoptes_watch_storage_replays_total', 'Watches that replayed from the change log.'),
  };
  cache.set(registry, m);
  return m;
}
