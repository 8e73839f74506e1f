// hack/bench/metrics.ts: the HPA's external metric queries over HTTP, count and sum, as
// latency distributions per backend with each backend's p50 target.
import type { MetricsFigures } from '../figures.ts';
import { percentileChart } from '../kinds/percentiles.ts';
import { num } from '../style.ts';
import type { ChartSpec, Context } from './types.ts';

const label = (b: string) => (b === 'postgres' ? 'PostgreSQL' : 'SQLite');

export function metricsCharts(f: MetricsFigures, ctx: Context): ChartSpec[] {
  const workload = `${num(f.objects)} pods (~1.5 KB) in ${f.clusters} clusters; sequential requests over HTTP`;
  const first = f.backends[0];
  return [
    {
      name: 'count',
      option: percentileChart({
        title: 'External metrics: count of pods matching a selector',
        subtitle: `${workload}; selector matching ${num(first?.count.matching ?? 0)} pods (1%), ${first?.count.samplesMs.length ?? 0} requests per backend`,
        footer: ctx.footer,
        measure: 'response time',
        series: f.backends.map((b) => ({ name: label(b.backend), samples: b.count.samplesMs })),
        targets: f.backends.map((b) => ({ value: b.targets.countP50Ms, label: `${label(b.backend)} target p50 ≤ ${num(b.targets.countP50Ms)} ms` })),
      }),
    },
    {
      name: 'sum',
      option: percentileChart({
        title: 'External metrics: sum of .spec.priority over matching pods',
        subtitle: `${workload}; ${num(first?.sum.matching ?? 0)} pods matching (10%), ${first?.sum.samplesMs.length ?? 0} requests per backend`,
        footer: ctx.footer,
        measure: 'response time',
        series: f.backends.map((b) => ({ name: label(b.backend), samples: b.sum.samplesMs })),
        targets: [...new Set(f.backends.map((b) => b.targets.sumP50Ms))].map((v) => ({ value: v, label: `target p50 ≤ ${num(v)} ms` })),
      }),
    },
  ];
}
