// hack/bench/watch.ts: per setup, the latency from a write in a member cluster to the event
// at a watch client, through Panoptes beside a watch on the member itself; where the time
// goes (write -> commit -> client); and poll queries per replica as watchers grow.
import type { WatchFigures } from '../figures.ts';
import { barChart } from '../kinds/bars.ts';
import { percentileChart } from '../kinds/percentiles.ts';
import { percentile } from '../stats.ts';
import { num } from '../style.ts';
import type { ChartSpec, Context } from './types.ts';

const short = (s: string) => (s === 'postgres' ? 'PostgreSQL' : 'SQLite');

export function watchCharts(f: WatchFigures, ctx: Context): ChartSpec[] {
  const charts: ChartSpec[] = f.latency.map((l) => ({
    name: `latency-${l.setup}`,
    option: percentileChart({
      title: `Watch latency, ${l.title}`,
      subtitle: `${num(l.writes)} pod updates at ${num(l.ratePerSec)}/s in one simulated cluster, each to a watch over HTTP${l.missing.panoptes + l.missing.direct ? `; missing: ${l.missing.panoptes} through Panoptes, ${l.missing.direct} direct` : ''}`,
      footer: ctx.footer,
      measure: 'write to event at the client',
      series: [
        { name: 'through Panoptes', samples: l.panoptesMs },
        { name: 'watch on the member cluster itself', samples: l.directMs, dashed: true },
      ],
      targets: [{ value: f.targets.p99Ms, label: `target p99 ≤ ${num(f.targets.p99Ms)} ms` }],
    }),
  }));
  if (f.latency.length) {
    charts.push({
      name: 'breakdown',
      option: barChart({
        title: 'Watch latency through Panoptes: where the time goes',
        subtitle: 'write in the member cluster → committed in storage (synchro) → at the watch client (apiserver), p50 and p99 of each part',
        footer: ctx.footer,
        panels: ['p50', 'p99'].map((p) => ({
          title: p,
          unit: 'ms',
          stacked: true,
          categories: f.latency.map((l) => short(l.setup)),
          series: [
            { name: 'write → committed in storage', values: f.latency.map((l) => percentile(l.toCommitMs, p === 'p50' ? 50 : 99)) },
            { name: 'committed → at the client', values: f.latency.map((l) => percentile(l.toClientMs, p === 'p50' ? 50 : 99)) },
          ],
        })),
      }),
    });
  }
  const visible = f.latency.filter((l) => l.visibleMs?.length);
  if (visible.length) {
    charts.push({
      name: 'visible',
      option: percentileChart({
        title: 'Write → visible in a list through Panoptes',
        subtitle: 'one pod update at a time in the member cluster, then the list of that pod over HTTP repeated until it shows the write',
        footer: ctx.footer,
        measure: 'write to the first list that shows it',
        series: visible.map((l) => ({ name: short(l.setup), samples: l.visibleMs! })),
        targets: [{ value: 8, label: 'target p50 ≤ 8 ms on PostgreSQL (12 ms on SQLite)' }],
      }),
    });
  }
  if (f.scale?.length) {
    const scale = f.scale;
    const replicas = [...new Set(scale.map((s) => s.replicas))].sort((a, b) => a - b);
    const watchers = [...new Set(scale.map((s) => s.watchers))].sort((a, b) => a - b);
    const at = (r: number, w: number) => scale.find((s) => s.replicas === r && s.watchers === w);
    charts.push({
      name: 'scale',
      option: barChart({
        title: 'Watch on PostgreSQL: poll queries grow with replicas, not watchers',
        subtitle: 'panoptes apiserver replicas (processes) polling the change log while synchro writes; from each replica’s /metrics',
        footer: ctx.footer,
        panels: [
          {
            title: 'per replica',
            unit: 'poll queries/s',
            categories: replicas.map((r) => `${r} replica${r > 1 ? 's' : ''}`),
            series: watchers.map((w) => ({
              name: `${num(w)} watcher${w > 1 ? 's' : ''}`,
              values: replicas.map((r) => {
                const s = at(r, w);
                return s ? s.pollQueriesPerSecPerReplica.reduce((a, b) => a + b, 0) / s.pollQueriesPerSecPerReplica.length : null;
              }),
            })),
          },
          {
            title: 'all replicas',
            unit: 'poll queries/s',
            categories: replicas.map((r) => `${r} replica${r > 1 ? 's' : ''}`),
            series: watchers.map((w) => ({ name: `${num(w)} watcher${w > 1 ? 's' : ''}`, values: replicas.map((r) => at(r, w)?.pollQueriesPerSecPerReplica.reduce((a, b) => a + b, 0) ?? null) })),
          },
        ],
      }),
    });
  }
  return charts;
}
