// hack/bench/list.ts: the first page's latency per backend and format, the time to page
// through everything, PostgreSQL / SQLite ratios, and `kubectl get pods -A` through Panoptes
// against the clusters one after the other.
import type { ListFigures } from '../figures.ts';
import { barChart } from '../kinds/bars.ts';
import { percentileChart } from '../kinds/percentiles.ts';
import { percentile } from '../stats.ts';
import { num } from '../style.ts';
import type { ChartSpec, Context } from './types.ts';

const label = (b: string) => (b === 'postgres' ? 'PostgreSQL' : 'SQLite');

export function listCharts(f: ListFigures, ctx: Context): ChartSpec[] {
  const workload = `${num(f.pods)} pods in ${f.clusters} simulated clusters, read over HTTP`;
  const charts: ChartSpec[] = [
    {
      name: 'first-page',
      option: percentileChart({
        title: 'Apiserver list: first page (limit=500) over HTTP',
        subtitle: `${workload}; ${f.backends[0]?.firstPageMs.json.length ?? 0} sequential requests each, JSON (client-go) and Table (kubectl)`,
        footer: ctx.footer,
        measure: 'response time',
        series: f.backends.flatMap((b) => [
          { name: `${label(b.backend)}, JSON`, samples: b.firstPageMs.json, group: b.backend },
          { name: `${label(b.backend)}, Table`, samples: b.firstPageMs.table, dashed: true, group: b.backend },
        ]),
        targets: [{ value: f.targets.firstPageJsonP50Ms, label: `target p50 ≤ ${num(f.targets.firstPageJsonP50Ms)} ms (JSON)` }],
      }),
    },
    {
      name: 'all-pages',
      option: barChart({
        title: 'Apiserver list: every page of the collection (limit=500)',
        subtitle: `${workload}; ${f.backends[0]?.allPages.json.pages ?? 0} pages requested one after the other`,
        footer: ctx.footer,
        panels: [
          {
            unit: 'all pages (s)',
            categories: ['JSON', 'Table'],
            series: f.backends.map((b) => ({ name: label(b.backend), values: [b.allPages.json.seconds, b.allPages.table.seconds] })),
          },
        ],
      }),
    },
  ];
  const sq = f.backends.find((b) => b.backend === 'sqlite');
  const pg = f.backends.find((b) => b.backend === 'postgres');
  if (sq && pg) {
    const ratio = (a: number[], b: number[]) => percentile(a, 50) / percentile(b, 50);
    charts.push({
      name: 'postgres-sqlite',
      option: barChart({
        title: 'Apiserver list: PostgreSQL / SQLite, same data, same run',
        subtitle: `${workload}; ratio of the p50 first page and of the time for all pages (1 = as fast)`,
        footer: ctx.footer,
        panels: [
          {
            unit: 'PostgreSQL / SQLite (x)',
            categories: ['first page, JSON (p50)', 'first page, Table (p50)', 'all pages, JSON', 'all pages, Table'],
            series: [
              {
                name: 'PostgreSQL / SQLite',
                values: [ratio(pg.firstPageMs.json, sq.firstPageMs.json), ratio(pg.firstPageMs.table, sq.firstPageMs.table), pg.allPages.json.seconds / sq.allPages.json.seconds, pg.allPages.table.seconds / sq.allPages.table.seconds],
              },
            ],
            targets: [{ value: f.targets.postgresOverSqlite, label: `target ≤ ${num(f.targets.postgresOverSqlite)}x` }],
          },
        ],
      }),
    });
  }
  if (f.kubectl) {
    const k = f.kubectl;
    charts.push({
      name: 'kubectl',
      option: barChart({
        title: 'kubectl get pods -A: through Panoptes vs each cluster in turn',
        subtitle: `${num(k.pods)} pods in ${k.clusters} clusters: one command through Panoptes, against ${k.clusters} commands one after the other (target: faster)`,
        footer: ctx.footer,
        panels: [
          {
            unit: 'wall time (s)',
            categories: ['default pages (500)', `--chunk-size=${k.chunked.chunkSize}`],
            series: [
              { name: 'through Panoptes (one command)', values: [k.panoptesSeconds, k.chunked.panoptesSeconds] },
              { name: `${k.clusters} clusters one after the other`, values: [k.directSeconds, k.chunked.directSeconds] },
            ],
          },
        ],
      }),
    });
  }
  return charts;
}
