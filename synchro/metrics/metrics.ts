// Prometheus metrics of synchro, and the small HTTP server that exposes them.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { registerProcessMetrics } from '../../lib/process-metrics.ts';

export class SynchroMetrics {
  readonly registry: Registry;
  readonly eventsReceived: Counter<'cluster' | 'resource'>;
  readonly eventsApplied: Counter<'cluster' | 'resource' | 'type'>;
  readonly lag: Histogram<'cluster'>;
  readonly batchSize: Histogram<'cluster'>;
  readonly batchDuration: Histogram<'cluster'>;
  readonly clusterObjectRounds: Histogram;
  readonly clusterStatusRounds: Histogram;
  readonly initialSyncs: Gauge<'state'>;
  readonly errors: Counter<'cluster' | 'kind'>;
  readonly reconnects: Counter<'cluster' | 'resource'>;
  readonly relists: Counter<'cluster' | 'resource' | 'reason'>;
  readonly objects: Gauge<'cluster' | 'resource'>;
  readonly clusterReady: Gauge<'cluster'>;
  readonly queued: Gauge<'cluster'>;
  readonly leasesHeld: Gauge<'kind'>;
  readonly leaseAcquisitions: Counter<'kind' | 'reason'>;
  readonly leaseHandovers: Counter<'kind' | 'reason'>;
  readonly leaseRenewDuration: Histogram;
  readonly fencedBatches: Counter<'cluster'>;
  readonly members: Gauge;
  readonly ready: Gauge;
  readonly configError: Gauge;
  readonly membership: Gauge<'phase'>;
  readonly membersOut: Gauge;
  readonly membersConfigErrors: Gauge;
  readonly rvLockWait: Histogram<'cluster'>;
  readonly rvLockHeld: Histogram;
  readonly openapiFetches: Counter<'cluster' | 'format' | 'result'>;
  readonly discoveryAnswers: Counter<'cluster' | 'answer'>;
  readonly quarantinedEvents: Counter<'cluster' | 'resource'>;
  readonly quarantinedObjects: Gauge<'cluster'>;
  readonly duplicateClusters: Gauge<'cluster'>;
  readonly mcsDispatchLatency: Histogram<'cluster'>;
  readonly mcsWrites: Counter<'cluster' | 'kind' | 'verb'>;
  readonly mcsErrors: Counter<'cluster' | 'reason'>;
  readonly mcsConflicts: Counter<'cluster' | 'kind'>;
  readonly mcsPasses: Counter<'trigger'>;

  constructor(registry = new Registry()) {
    this.registry = registry;
    registerProcessMetrics(registry);
    const r = [registry];
    this.eventsReceived = new Counter({ name: 'panoptes_synchro_events_received_total', help: 'Objects received from member clusters (list items and watch events)', labelNames: ['cluster', 'resource'], registers: r });
    this.eventsApplied = new Counter({ name: 'panoptes_synchro_events_applied_total', help: 'Changes committed to storage (replays that wrote nothing are not counted)', labelNames: ['cluster', 'resource', 'type'], registers: r });
    this.lag = new Histogram({ name: 'panoptes_synchro_event_lag_seconds', help: 'Time from receiving an upstream event to its commit in storage', labelNames: ['cluster'], buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10], registers: r });
    this.batchSize = new Histogram({ name: 'panoptes_synchro_batch_size', help: 'Events per storage batch', labelNames: ['cluster'], buckets: [1, 2, 5, 10, 25, 50, 100, 250, 500], registers: r });
    this.batchDuration = new Histogram({ name: 'panoptes_synchro_batch_duration_seconds', help: 'Time to commit one storage batch', labelNames: ['cluster'], buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1], registers: r });
    this.initialSyncs = new Gauge({ name: 'panoptes_synchro_initial_syncs', help: 'Initial syncs of this process: running (holding a slot) and waiting for a slot (--initial-sync-concurrency)', labelNames: ['state'], registers: r });
    this.clusterObjectRounds = new Histogram({ name: 'panoptes_synchro_cluster_object_round_size', help: 'Cluster objects (status) written per transaction: every cluster of this process whose status changed meanwhile, under one rv lock', buckets: [1, 2, 5, 10, 25, 50, 100, 250, 500], registers: r });
    this.clusterStatusRounds = new Histogram({ name: 'panoptes_synchro_cluster_status_round_size', help: "Clusters whose row of the clusters table (their status) is written per transaction: every cluster of this process that wrote its status meanwhile", buckets: [1, 2, 5, 10, 25, 50, 100, 200], registers: r });
    this.errors = new Counter({ name: 'panoptes_synchro_errors_total', help: 'Errors by kind: config, connect, probe, discovery, openapi, list, watch, storage', labelNames: ['cluster', 'kind'], registers: r });
    this.reconnects = new Counter({ name: 'panoptes_synchro_reconnects_total', help: 'Watches re-established after a drop or an error', labelNames: ['cluster', 'resource'], registers: r });
    this.discoveryAnswers = new Counter({ name: 'panoptes_synchro_discovery_answers_total', help: "How members answered discovery: document (a new aggregated document), not-modified (304: the copy held stands), legacy (a pass of the legacy documents)", labelNames: ['cluster', 'answer'], registers: r });
    this.relists = new Counter({ name: 'panoptes_synchro_relists_total', help: 'Full lists (initial, expired history, removed resource)', labelNames: ['cluster', 'resource', 'reason'], registers: r });
    this.objects = new Gauge({ name: 'panoptes_synchro_objects', help: 'Objects in sync per cluster and resource', labelNames: ['cluster', 'resource'], registers: r });
    this.clusterReady = new Gauge({ name: 'panoptes_synchro_cluster_ready', help: '1 when the cluster answered its last readiness probe', labelNames: ['cluster'], registers: r });
    this.queued = new Gauge({ name: 'panoptes_synchro_queued_events', help: 'Events received and not yet committed', labelNames: ['cluster'], registers: r });
    this.leasesHeld = new Gauge({ name: 'panoptes_synchro_leases_held', help: 'Leases this synchro process holds: cluster (one per member cluster it writes for) or compactor', labelNames: ['kind'], registers: r });
    this.leaseAcquisitions = new Counter({ name: 'panoptes_synchro_lease_acquisitions_total', help: 'Leases acquired, by what they were before: free, expired, released, dead-holder, own', labelNames: ['kind', 'reason'], registers: r });
    this.leaseHandovers = new Counter({ name: 'panoptes_synchro_lease_handovers_total', help: 'Leases given up or lost: rebalance, shutdown, removed, renew-failed, renew-timeout, fenced', labelNames: ['kind', 'reason'], registers: r });
    this.leaseRenewDuration = new Histogram({ name: 'panoptes_synchro_lease_renew_duration_seconds', help: 'Time to renew every held lease and the member heartbeat', buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5], registers: r });
    this.fencedBatches = new Counter({ name: 'panoptes_synchro_fenced_batches_total', help: 'Batches refused by storage because this process no longer held the cluster lease (nothing written)', labelNames: ['cluster'], registers: r });
    this.members = new Gauge({ name: 'panoptes_synchro_members', help: 'Live synchro processes seen in storage', registers: r });
    this.ready = new Gauge({ name: 'panoptes_synchro_ready', help: '1 while this synchro process can do its work (its /readyz): configuration loaded, storage answering, a member', registers: r });
    this.configError = new Gauge({ name: 'panoptes_synchro_config_error', help: '1 while the clusters file (or kubeconfig) does not load; the last good configuration, if any, stays in effect', registers: r });
    this.membersOut = new Gauge({ name: 'panoptes_synchro_members_out', help: 'Other synchro processes that report themselves out of the membership (they run, but cannot work: their clusters file never loaded), as last read', registers: r });
    this.membersConfigErrors = new Gauge({ name: 'panoptes_synchro_members_config_errors', help: 'Synchro processes, live or out, whose member row reports a configuration error (this one included), as last read', registers: r });
    this.membership = new Gauge({ name: 'panoptes_synchro_membership', help: "This process's phase among the synchro members, 1 for the current one: out (cannot work: not joined, storage unreachable, identity held elsewhere), member, stopped", labelNames: ['phase'], registers: r });
    this.rvLockHeld = new Histogram({
      name: 'panoptes_synchro_rv_lock_held_seconds',
      help: "The part of each round's write that no other writer of the fleet overlaps. Serial protocol (SQLite, or PostgreSQL before `migrate --parallel-writes`): from taking the rv lock to the end of the commit. Parallel: the rv allocation's lock plus the publish, from the end of its wait for earlier writers to its commit, on the database's clock",
      buckets: [0.00025, 0.0005, 0.001, 0.0015, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1],
      registers: r,
    });
    this.rvLockWait = new Histogram({ name: 'panoptes_synchro_rv_lock_wait_seconds', help: "Time a batch waited for the change log's rv counter (held by other writers until they commit)", labelNames: ['cluster'], buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1], registers: r });
    this.quarantinedEvents = new Counter({
      name: 'panoptes_synchro_quarantined_events_total',
      help: 'Events storage refused on their own, for their content (found by splitting the failed batch); their object is quarantined and everything else is written',
      labelNames: ['cluster', 'resource'],
      registers: r,
    });
    this.quarantinedObjects = new Gauge({ name: 'panoptes_synchro_quarantined_objects', help: 'Objects kept out of storage until a newer version of them arrives (their cluster status names them)', labelNames: ['cluster'], registers: r });
    this.duplicateClusters = new Gauge({
      name: 'panoptes_synchro_duplicate_clusters',
      help: '1 for a registration whose member cluster (the uid of its kube-system namespace) is also registered under another name; only the one registered first is synced',
      labelNames: ['cluster'],
      registers: r,
    });
    this.mcsDispatchLatency = new Histogram({
      name: 'panoptes_synchro_mcs_dispatch_latency_seconds',
      help: "Multi-cluster Services: from the commit of a provider's change (its change-log row) to the consumer's write done",
      labelNames: ['cluster'],
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: r,
    });
    this.mcsWrites = new Counter({ name: 'panoptes_synchro_mcs_writes_total', help: 'Multi-cluster Services: writes to a consumer cluster, by kind (Service, EndpointSlice, ServiceImport) and verb (create, update, delete)', labelNames: ['cluster', 'kind', 'verb'], registers: r });
    this.mcsErrors = new Counter({ name: 'panoptes_synchro_mcs_errors_total', help: 'Multi-cluster Services: failed writes to a consumer cluster, by reason (Forbidden, Conflict, Invalid, NamespaceNotFound, Unreachable, ...)', labelNames: ['cluster', 'reason'], registers: r });
    this.mcsConflicts = new Counter({ name: 'panoptes_synchro_mcs_conflicts_total', help: "Multi-cluster Services: objects of a consumer's own in the way of a dispatch (left alone, reported)", labelNames: ['cluster', 'kind'], registers: r });
    this.mcsPasses = new Counter({ name: 'panoptes_synchro_mcs_passes_total', help: 'Multi-cluster Services: dispatch passes, by trigger (change, resync, retry)', labelNames: ['trigger'], registers: r });
    this.openapiFetches = new Counter({
      name: 'panoptes_synchro_openapi_fetches_total',
      help: 'OpenAPI documents by outcome: fetched, unchanged (same hash, not fetched), shared (stored by another cluster, not fetched), failed',
      labelNames: ['cluster', 'format', 'result'],
      registers: r,
    });
  }

  /** Drops every series of a removed cluster. */
  async forget(cluster: string): Promise<void> {
    const all = [this.eventsReceived, this.eventsApplied, this.lag, this.batchSize, this.batchDuration, this.errors, this.reconnects, this.relists, this.objects, this.clusterReady, this.queued, this.openapiFetches, this.discoveryAnswers, this.fencedBatches, this.rvLockWait, this.quarantinedEvents, this.quarantinedObjects, this.duplicateClusters, this.mcsDispatchLatency, this.mcsWrites, this.mcsErrors, this.mcsConflicts];
    for (const m of all) {
      const seen = new Set<string>();
      for (const v of (await m.get()).values) {
        const labels: Record<string, string | number> = { ...v.labels };
        if (labels.cluster !== cluster) continue;
        delete labels.le;
        const key = JSON.stringify(labels);
        if (seen.has(key)) continue;
        seen.add(key);
        (m as unknown as { remove(l: Record<string, string | number>): void }).remove(labels);
      }
    }
  }
}

/** Serves GET /metrics, /healthz and /livez (the process runs) and, given `readyz`, /readyz on host:port; resolves once listening. */
export async function serveMetrics(registry: Registry, listen: string, readyz?: (verbose: boolean) => Promise<{ status: number; body: string }>): Promise<{ url: string; close(): Promise<void> }> {
  const m = /^(.*):(\d+)$/.exec(listen);
  if (!m) throw new Error(`--metrics-listen must be HOST:PORT, got ${JSON.stringify(listen)}`);
  const host = m[1].replace(/^\[|\]$/g, '') || '0.0.0.0';
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && path === '/metrics') {
      registry.metrics().then(
        (text) => res.writeHead(200, { 'Content-Type': registry.contentType }).end(text),
        (err: Error) => res.writeHead(500, { 'Content-Type': 'text/plain' }).end(err.message),
      );
    } else if (req.method === 'GET' && path === '/readyz' && readyz) {
      const verbose = new URLSearchParams((req.url ?? '').split('?')[1] ?? '').has('verbose');
      readyz(verbose).then(
        (a) => res.writeHead(a.status, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-cache, private', 'X-Content-Type-Options': 'nosniff' }).end(a.body),
        (err: Error) => res.writeHead(500, { 'Content-Type': 'text/plain' }).end(err.message),
      );
    } else if (req.method === 'GET' && (path === '/healthz' || path === '/livez')) {
      res.writeHead(200, { 'Content-Type': 'text/plain' }).end('ok');
    } else {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end(`not found: try /metrics${readyz ? ', /readyz' : ''}, /healthz`);
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(Number(m[2]), host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  const shown = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return {
    url: `http://${shown}:${addr.port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
