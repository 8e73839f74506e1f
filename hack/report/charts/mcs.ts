// hack/bench/mcs.ts: an endpoint change in a provider to every consumer holding it, as a
// latency distribution against the p50 and p99 targets; and the member writes: of the initial
// dispatch by verb, and per endpoint change (one per consumer, none to the provider) and of a
// resync (none) against their targets.
import type { McsFigures } from '../figures.ts';
import { barChart } from '../kinds/bars.ts';
import { percentileChart } from '../kinds/percentiles.ts';
import { num } from '../style.ts';
import type { ChartSpec, Context } from './types.ts';

export function mcsCharts(f: McsFigures, ctx: Context): ChartSpec[] {
  const consumers = f.clusters - 1;
  const fleet = `${f.clusters} simulated clusters, each a provider and a consumer of ${f.services} Services (${f.backend === 'postgres' ? 'PostgreSQL' : 'SQLite'})`;
  const c = f.changes;
  const w = c.writesPerChange;
  const median = (() => {
    const all = [...Array(w.exact).fill(consumers), ...Array(w.fewer).fill(w.min), ...Array(w.more).fill(w.max)];
    return all.length ? all[Math.floor(all.length / 2)] : null;
  })();
  return [
    {
      name: 'latency',
      option: percentileChart({
        title: 'Multi-cluster Services: an endpoint change in a provider to every consumer',
        subtitle: `${fleet}; ${num(c.count)} changes at ${num(c.ratePerSec)}/s, from the provider's write to the consumers holding it${c.incomplete ? `; ${c.incomplete} never complete` : ''}`,
        footer: ctx.footer,
        measure: 'provider write to consumers updated',
        series: [
          { name: `all ${consumers} consumers updated`, samples: c.allConsumersMs },
          { name: 'each consumer', histogram: c.perConsumer, dashed: true },
        ],
        targets: [
          { value: f.targets.p50Ms, label: `target p50 ≤ ${num(f.targets.p50Ms)} ms` },
          { value: f.targets.p99Ms, label: `target p99 ≤ ${num(f.targets.p99Ms)} ms` },
        ],
      }),
    },
    {
      name: 'writes',
      option: barChart({
        title: 'Multi-cluster Services: writes to the member clusters',
        subtitle: `${fleet}; initial dispatch ${num(f.initial.slices)} slices in ${num(f.initial.seconds)} s; per change: ${w.exact} of ${c.count} exactly one write per consumer, ${c.providerWrites} to the providers`,
        footer: ctx.footer,
        panels: [
          {
            title: 'initial dispatch',
            unit: 'writes',
            categories: ['create', 'update', 'delete'],
            series: [{ name: 'initial dispatch', values: [f.initial.writes.create, f.initial.writes.update, f.initial.writes.delete] }],
          },
          {
            title: 'steady state',
            unit: 'writes',
            categories: ['per endpoint change (median)', 'per change to its provider', 'per resync of the unchanged fleet'],
            series: [{ name: 'measured', values: [median, c.providerWrites / Math.max(1, c.count), f.resync.writes / Math.max(1, f.resync.passes)] }],
            categoryTargets: { name: 'target', values: [consumers, 0, f.targets.resyncWrites] },
          },
        ],
      }),
    },
  ];
}
