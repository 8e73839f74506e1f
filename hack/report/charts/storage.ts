// hack/bench/storage.ts: ingest, change-log poll and paging rates per backend (one panel
// each, with their targets), and the filtered first page's latency distribution.
import type { StorageFigures } from '../figures.ts';
import { barChart } from '../kinds/bars.ts';
import { percentileChart } from '../kinds/percentiles.ts';
import { num } from '../style.ts';
import type { ChartSpec, Context } from './types.ts';

export function storageCharts(f: StorageFigures, ctx: Context): ChartSpec[] {
  const labels = f.backends.map((b) => b.label);
  const workload = `${num(f.objects)} pods of ~1 KB across ${f.clusters} clusters`;
  const ingestTarget = (b: StorageFigures['backends'][number]) => (b.backend === 'postgres' ? f.targets.ingestEventsPerSec.postgres : f.targets.ingestEventsPerSec.sqlite);
  return [
    {
      name: 'rates',
      option: barChart({
        title: 'Storage: ingest, change-log poll and paging, per backend',
        subtitle: `${workload}; batches of 500 (ingest), 1,000 (poll), pages of 500`,
        footer: ctx.footer,
        panels: [
          {
            title: 'ingest',
            unit: 'events/s',
            categories: labels,
            series: [{ name: 'measured', values: f.backends.map((b) => b.ingestEventsPerSec) }],
            categoryTargets: { name: 'target (at least)', values: f.backends.map(ingestTarget) },
          },
          {
            title: 'change-log poll',
            unit: 'rows/s',
            categories: labels,
            series: [{ name: 'measured', values: f.backends.map((b) => b.pollRowsPerSec) }],
            targets: [{ value: f.targets.pollRowsPerSec, label: `target ≥ ${num(f.targets.pollRowsPerSec)}/s` }],
          },
          {
            title: 'paging all objects',
            unit: 'objects/s',
            categories: labels,
            series: [{ name: 'measured', values: f.backends.map((b) => b.pagingObjectsPerSec) }],
            targets: [{ value: f.targets.pagingObjectsPerSec, label: `target ≥ ${num(f.targets.pagingObjectsPerSec)}/s` }],
          },
        ],
      }),
    },
    {
      name: 'first-page',
      option: percentileChart({
        title: 'Storage: first filtered page (limit 500), latency',
        subtitle: `${workload}; label selector matching 1%; ${f.backends[0]?.firstPageMs.length ?? 0} sequential queries per backend`,
        footer: ctx.footer,
        measure: 'query time',
        series: f.backends.map((b) => ({ name: b.label, samples: b.firstPageMs })),
        targets: [{ value: f.targets.firstPageP50MsSqlite, label: `target p50 ≤ ${num(f.targets.firstPageP50MsSqlite)} ms (SQLite)` }],
      }),
    },
  ];
}
