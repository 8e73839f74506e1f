// hack/bench/synchro.ts (one backend per file): initial sync and churn rates, the churn's
// upstream-event-to-commit lag distribution, and synchro's RSS over the churn.
import type { SynchroFigures } from '../figures.ts';
import { barChart, type BarPanel } from '../kinds/bars.ts';
import { lineChart } from '../kinds/lines.ts';
import { percentileChart } from '../kinds/percentiles.ts';
import { num } from '../style.ts';
import type { ChartSpec, Context } from './types.ts';

export function synchroCharts(f: SynchroFigures, ctx: Context): ChartSpec[] {
  const backend = f.backend === 'postgres' ? 'PostgreSQL' : 'SQLite';
  const charts: ChartSpec[] = [];
  const panels: BarPanel[] = [];
  const { initial, churn } = f;
  if (initial) {
    panels.push({
      title: `initial sync of ${num(initial.objects)}`,
      unit: 'seconds',
      categories: [backend],
      series: [{ name: 'initial sync', values: [initial.seconds] }],
      targets: [{ value: f.targets.initialSyncSeconds, label: `target ≤ ${num(f.targets.initialSyncSeconds)} s` }],
    });
    panels.push({ title: 'initial sync rate', unit: 'objects/s', categories: [backend], series: [{ name: 'initial sync', values: [initial.stored / initial.seconds] }] });
  }
  if (churn) {
    panels.push({
      title: `churn, ${churn.clusters} clusters`,
      unit: 'events/s',
      categories: [backend],
      series: [
        { name: 'upstream writes', values: [churn.upstreamWrites / churn.seconds] },
        { name: 'committed and matched', values: [churn.matched / churn.seconds] },
      ],
    });
  }
  if (panels.length) {
    charts.push({
      name: 'rates',
      option: barChart({
        title: `Synchro on ${backend}: initial sync and churn`,
        subtitle: [initial ? `initial sync: ${num(initial.objects)} configmaps from one simulated cluster` : '', churn ? `churn: creates/updates/deletes for ${num(churn.seconds)} s` : ''].filter(Boolean).join('; '),
        footer: ctx.footer,
        panels,
      }),
    });
  }
  if (churn) {
    charts.push({
      name: 'lag',
      option: percentileChart({
        title: `Synchro on ${backend}: upstream event to commit in storage`,
        subtitle: `${churn.clusters} simulated clusters, ${num(churn.upstreamWrites / churn.seconds)} writes/s for ${num(churn.seconds)} s; ${num(churn.matched)} events matched to their commit (1 ms bins)`,
        footer: ctx.footer,
        measure: 'lag',
        series: [{ name: `lag, ${backend}`, histogram: churn.lag }],
        targets: [{ value: f.targets.lagP99Ms, label: `target p99 ≤ ${num(f.targets.lagP99Ms)} ms` }],
      }),
    });
    const judged = churn.anonMiB ?? churn.rssMiB;
    const warm = judged[Math.min(judged.length - 1, Math.round(30 / churn.rssEverySeconds) - 1)];
    const at = (xs: number[]) => xs.map((r, i): [number, number] => [(i + 1) * churn.rssEverySeconds, r]);
    charts.push({
      name: 'rss',
      option: lineChart({
        title: `Synchro on ${backend}: memory during the churn`,
        subtitle: `RSS of the synchro process every ${churn.rssEverySeconds} s${churn.anonMiB ? ', and its anonymous and file-backed parts' : ''}; target: ${churn.anonMiB ? 'anonymous memory ' : ''}flat (at the end within ${num((f.targets.rssFlatWithin - 1) * 100)}% of the value after 30 s)`,
        footer: ctx.footer,
        x: 'time since the churn started (s)',
        y: 'RSS (MiB)',
        series: [
          { name: 'RSS', points: at(churn.rssMiB) },
          ...(churn.anonMiB ? [{ name: 'anonymous', points: at(churn.anonMiB) }] : []),
          ...(churn.fileMiB ? [{ name: 'file-backed', points: at(churn.fileMiB) }] : []),
        ],
        targets: warm === undefined ? [] : [{ value: warm * f.targets.rssFlatWithin, label: `flat: ≤ ${num(warm * f.targets.rssFlatWithin)} MiB at the end` }],
      }),
    });
  }
  return charts;
}
