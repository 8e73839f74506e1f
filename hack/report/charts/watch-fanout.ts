// hack/bench/watch-fanout.ts: one watcher against many in one process: delivery latency,
// poll queries and memory, with the targets.
import type { WatchFanoutFigures } from '../figures.ts';
import { barChart } from '../kinds/bars.ts';
import { num } from '../style.ts';
import type { ChartSpec, Context } from './types.ts';

export function watchFanoutCharts(f: WatchFanoutFigures, ctx: Context): ChartSpec[] {
  const backend = f.backend === 'postgres' ? 'PostgreSQL' : 'SQLite';
  const categories = f.phases.map((p) => `${num(p.watchers)} watcher${p.watchers > 1 ? 's' : ''}`);
  const written = f.phases[0]?.writtenPerSec ?? 0;
  const miB = (f.targets.rssMB * 1e6) / 2 ** 20;
  return [
    {
      name: 'watchers',
      option: barChart({
        title: `Watch fan-out on ${backend}: latency, poll queries and memory as watchers grow`,
        subtitle: `${num(written)} events/s over ${num(f.namespaces)} namespaces (${num(f.pods)} pods), ${f.replicas} replica${f.replicas > 1 ? 's' : ''}; many watchers: one per namespace, some on everything; ${num(f.visitsPerChange)} watchers visited per change`,
        footer: ctx.footer,
        panels: [
          {
            title: 'delivery latency',
            unit: 'ms',
            categories,
            series: [
              { name: 'p50', values: f.phases.map((p) => p.p50Ms) },
              { name: 'p99', values: f.phases.map((p) => p.p99Ms) },
            ],
            targets: [{ value: f.targets.p99Ms, label: `target p99 ≤ ${num(f.targets.p99Ms)} ms` }],
          },
          {
            title: 'poll queries',
            unit: 'queries/s',
            categories,
            series: [{ name: 'change-log polls', values: f.phases.map((p) => p.pollQueriesPerSec) }],
          },
          {
            title: 'memory',
            unit: 'MiB',
            categories,
            series: [
              { name: 'RSS max', values: f.phases.map((p) => p.rssMaxMiB) },
              { name: 'heap max', values: f.phases.map((p) => p.heapMaxMiB) },
            ],
            targets: [{ value: miB, label: `RSS ≤ ${num(f.targets.rssMB)} MB` }],
          },
        ],
      }),
    },
  ];
}
