// hack/bench/watch-connections.ts: the apiserver as a process with one watcher, then many
// over real sockets, per mode (HTTP/1.1, HTTP/2 over TLS, HTTP/1.1 over TLS): its memory and
// what each connection costs, delivery latency, and poll queries against the deliveries.
import type { WatchConnectionsFigures, WatchConnectionsModeFigures } from '../figures.ts';
import { barChart } from '../kinds/bars.ts';
import { num } from '../style.ts';
import type { ChartSpec, Context } from './types.ts';

const modeNames: Record<WatchConnectionsModeFigures['mode'], string> = {
  http: 'HTTP/1.1',
  h2: 'HTTP/2, TLS',
  https: 'HTTP/1.1, TLS',
};

/** HTTP/1.1 has a connection per watch; HTTP/2 streams over a few: how many. How many watches opened, when not all. */
function connectionsOf(f: WatchConnectionsFigures): string {
  const parts: string[] = [];
  for (const m of f.modes) if (m.mode === 'h2') parts.push(`HTTP/2: ${num(m.connections)} streams over ${num(m.tlsConnections ?? 0)} TLS connection${m.tlsConnections === 1 ? '' : 's'}`);
  for (const m of f.modes) if (m.connections !== f.watchers) parts.push(`${modeNames[m.mode]}: ${num(m.connections)} opened`);
  return parts.join('; ');
}

export function watchConnectionsCharts(f: WatchConnectionsFigures, ctx: Context): ChartSpec[] {
  if (f.modes.length === 0) return [];
  const one = (m: WatchConnectionsModeFigures) => m.phases[0];
  const many = (m: WatchConnectionsModeFigures) => m.phases[m.phases.length - 1];
  const categories = f.modes.map((m) => modeNames[m.mode]);
  const manyName = `${num(f.watchers)} watchers`;
  const workload = `${num(f.ratePerSec)} pod changes/s in ${num(f.namespaces)} namespaces; ${num(f.watchers)} watchers (${num(f.all)} on all pods)`;
  const miB = (f.targets.rssMB * 1e6) / 2 ** 20;
  return [
    {
      name: 'memory',
      option: barChart({
        title: 'Watches over real connections: apiserver memory, 1 watcher and many',
        subtitle: `on PostgreSQL, NODE_OPTIONS=${JSON.stringify(f.nodeOptions)}; ${[workload, connectionsOf(f)].filter(Boolean).join('; ')}`,
        footer: ctx.footer,
        panels: [
          {
            title: 'apiserver RSS max',
            unit: 'MiB',
            categories,
            series: [
              { name: '1 watcher', values: f.modes.map((m) => one(m).rssMaxMiB) },
              { name: manyName, values: f.modes.map((m) => many(m).rssMaxMiB) },
            ],
            targets: [{ value: miB, label: `RSS ≤ ${num(f.targets.rssMB)} MB` }],
          },
          {
            title: 'per watch added',
            unit: 'KiB of RSS',
            categories,
            series: [{ name: 'RSS per added watch', values: f.modes.map((m) => m.perConnectionKiB) }],
          },
        ],
      }),
    },
    {
      name: 'latency',
      option: barChart({
        title: 'Watches over real connections: delivery latency, 1 watcher and many',
        subtitle: `write call to the event read by the client; ${[workload, connectionsOf(f)].filter(Boolean).join('; ')}`,
        footer: ctx.footer,
        panels: [
          {
            title: 'delivery latency',
            unit: 'ms, log scale',
            log: true,
            categories: f.modes.flatMap((m) => [`${modeNames[m.mode]}\n1 watcher`, `${modeNames[m.mode]}\n${num(many(m).watchers)} watchers`]),
            series: [
              { name: 'p50', values: f.modes.flatMap((m) => [one(m).p50Ms, many(m).p50Ms]) },
              { name: 'p99', values: f.modes.flatMap((m) => [one(m).p99Ms, many(m).p99Ms]) },
            ],
            targets: [{ value: f.targets.p99Ms, label: `target p99 ≤ ${num(f.targets.p99Ms)} ms` }],
          },
        ],
      }),
    },
    {
      name: 'poll',
      option: barChart({
        title: 'Watches over real connections: poll queries follow commits, not watchers',
        subtitle: `the apiserver's change-log polls (its /metrics), events delivered to all watchers; ${workload}; target: poll queries/s with ${num(f.watchers)} watchers within ±${num(f.targets.pollWithin * 100)}% of 1 watcher's`,
        footer: ctx.footer,
        panels: [
          {
            title: 'poll queries',
            unit: 'queries/s',
            categories,
            series: [
              { name: '1 watcher', values: f.modes.map((m) => one(m).pollQueriesPerSec) },
              { name: manyName, values: f.modes.map((m) => many(m).pollQueriesPerSec) },
            ],
          },
          {
            title: 'deliveries',
            unit: 'events/s, log scale',
            log: true,
            categories,
            series: [
              { name: '1 watcher', values: f.modes.map((m) => one(m).deliveredPerSec) },
              { name: manyName, values: f.modes.map((m) => many(m).deliveredPerSec) },
            ],
          },
        ],
      }),
    },
  ];
}
