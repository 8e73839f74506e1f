// hack/bench/fleet.ts: a fleet on one machine: pages of each view, watch delivery, and each process's memory.
import type { FleetFigures } from '../figures.ts';
import { barChart } from '../kinds/bars.ts';
import { percentile } from '../stats.ts';
import { num } from '../style.ts';
import type { ChartSpec, Context } from './types.ts';

export function fleetCharts(f: FleetFigures, ctx: Context): ChartSpec[] {
  const subtitle = `${num(f.clusters)} clusters, ${num(f.objects)} objects, PostgreSQL, ${f.synchros} synchro members and ${f.apiservers} apiservers; every cluster Ready in ${Math.round(f.readySeconds)} s`;
  const views = f.pages.map((p) => p.what.replace(/ \(.*\)/, ''));
  const panel = (q: 50 | 99) => ({
    title: `p${q}`,
    unit: 'ms',
    categories: [...views, 'watch'],
    series: [
      { name: 'first page', values: [...f.pages.map((p) => percentile(p.firstMs, q)), null] },
      { name: 'continue page', values: [...f.pages.map((p) => (p.continueMs.length ? percentile(p.continueMs, q) : null)), null] },
      { name: `watch delivery, ${num(f.watch.watchers)} watchers`, values: [...f.pages.map(() => null), percentile(f.watch.ms, q)] },
    ],
    ...(q === 50 ? { targets: [{ label: `first page target ${f.targets.firstPageP50Ms} ms`, value: f.targets.firstPageP50Ms }] } : {}),
  });
  return [
    {
      name: 'latency',
      option: barChart({ title: 'A fleet on one machine: pages (limit=500) and watch delivery', subtitle, footer: ctx.footer, panels: [panel(50), panel(99)] }),
    },
    {
      name: 'memory',
      option: barChart({
        title: 'A fleet on one machine: memory of each process',
        subtitle,
        footer: ctx.footer,
        panels: [
          {
            unit: 'MiB',
            categories: [...f.synchroRssMiB.map((_r, i) => `synchro ${i + 1}`), ...f.apiserverRssMiB.map((_r, i) => `apiserver ${i + 1}`)],
            series: [
              { name: 'RSS', values: [...f.synchroRssMiB, ...f.apiserverRssMiB] },
              { name: 'synchro with no cluster', values: [...f.synchroRssMiB.map(() => f.synchroBaselineMiB), ...f.apiserverRssMiB.map(() => null)] },
            ],
          },
        ],
      }),
    },
  ];
}
