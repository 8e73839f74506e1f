// hack/bench/standby.ts: a replica reading the primary against one reading a streaming
// standby: most-recent list and write→watch latency, and the primary's CPU per 1,000 lists.
import type { StandbyFigures } from '../figures.ts';
import { barChart } from '../kinds/bars.ts';
import { num } from '../style.ts';
import type { ChartSpec, Context } from './types.ts';

export function standbyCharts(f: StandbyFigures, ctx: Context): ChartSpec[] {
  const rows = [
    { name: 'list, idle', v: f.listIdleMs },
    { name: `list, ${num(Math.round(f.listUnderWritesMs.eventsPerSec))} ev/s`, v: f.listUnderWritesMs },
    { name: 'write→watch', v: f.writeToWatchMs },
  ];
  const latency = (p: 'p50' | 'p99') => ({
    title: p,
    unit: 'ms',
    categories: rows.map((r) => r.name),
    series: (['primary', 'standby'] as const).map((w) => ({ name: `replica on the ${w}`, values: rows.map((r) => r.v[w][p]) })),
  });
  return [
    {
      name: 'latency',
      option: barChart({
        title: 'Reads on a PostgreSQL standby: most-recent list (limit=500) and write→watch',
        subtitle: `${num(f.objects)} pods; one apiserver process on the primary, one with --storage-read on a streaming standby`,
        footer: ctx.footer,
        panels: [latency('p50'), latency('p99')],
      }),
    },
    {
      name: 'primary-cpu',
      option: barChart({
        title: 'Primary PostgreSQL CPU per 1,000 most-recent lists',
        subtitle: 'every process of the primary PostgreSQL instance; with reads on the standby the primary answers only the watermark query',
        footer: ctx.footer,
        panels: [
          {
            unit: 'CPU seconds',
            categories: ['reads on the primary', 'reads on the standby'],
            series: [{ name: 'primary CPU', values: [f.primaryCpuSecondsPer1000Lists.readsOnPrimary, f.primaryCpuSecondsPer1000Lists.readsOnStandby] }],
          },
        ],
      }),
    },
  ];
}
