// hack/bench/synchro-ha.ts: committed events/s and lag p99 against the rate asked, for 1 and
// 3 synchro members on PostgreSQL, and the time to a new owner's first write after a failure.
import type { SynchroHaFigures } from '../figures.ts';
import { barChart } from '../kinds/bars.ts';
import { lineChart } from '../kinds/lines.ts';
import { num } from '../style.ts';
import type { ChartSpec, Context } from './types.ts';

export function synchroHaCharts(f: SynchroHaFigures, ctx: Context): ChartSpec[] {
  const charts: ChartSpec[] = [];
  const runs = f.throughput ?? [];
  const members = [...new Set(runs.map((r) => r.members))].sort((a, b) => a - b);
  const name = (m: number) => `${m} member${m > 1 ? 's' : ''}`;
  if (runs.length) {
    const s = f.sustainedPerSec;
    charts.push({
      name: 'throughput',
      option: lineChart({
        title: 'Synchro members on PostgreSQL: events committed per second',
        subtitle: `${f.clusters} simulated clusters shared by the members${s ? `; sustained with lag p99 ≤ ${num(f.targets.lagP99Ms)} ms: 1 member ${num(s.one)}/s, 3 members ${num(s.three)}/s (target: 3 members ≥ ${num(f.targets.threeOverOne)}x)` : ''}`,
        footer: ctx.footer,
        x: 'upstream rate asked (events/s)',
        y: 'committed (events/s)',
        series: [
          ...members.map((m) => ({ name: name(m), points: runs.filter((r) => r.members === m).map((r): [number, number] => [r.askedPerSec, r.committedPerSec]) })),
          { name: 'committed = asked', points: [...new Set(runs.map((r) => r.askedPerSec))].sort((a, b) => a - b).map((v): [number, number] => [v, v]), reference: true },
        ],
      }),
    });
    charts.push({
      name: 'lag',
      option: lineChart({
        title: 'Synchro members on PostgreSQL: upstream event to commit, p99',
        subtitle: `${f.clusters} simulated clusters; p99 of the lag at each rate asked (p50 dashed)`,
        footer: ctx.footer,
        x: 'upstream rate asked (events/s)',
        y: 'lag (ms, log scale)',
        yLog: true,
        series: members.flatMap((m) => [
          { name: `${name(m)}, p99`, points: runs.filter((r) => r.members === m).map((r): [number, number] => [r.askedPerSec, Math.max(0.1, r.p99Ms)]) },
          { name: `${name(m)}, p50`, points: runs.filter((r) => r.members === m).map((r): [number, number] => [r.askedPerSec, Math.max(0.1, r.p50Ms)]), dashed: true },
        ]),
        targets: [{ value: f.targets.lagP99Ms, label: `target p99 ≤ ${num(f.targets.lagP99Ms)} ms` }],
      }),
    });
  }
  if (f.failover) {
    const fo = f.failover;
    const times = fo.scenarios.map((sc) => sc.firstWriteSeconds.filter((v): v is number => v !== null).sort((x, y) => x - y));
    const never = (i: number) => fo.scenarios[i].firstWriteSeconds.length - times[i].length;
    const pick = (which: (xs: number[]) => number) => times.map((xs) => (xs.length ? which(xs) : null));
    charts.push({
      name: 'failover',
      option: barChart({
        title: 'Synchro failover: time to the new owner’s first write',
        subtitle: `3 members, ${f.clusters} clusters under churn, lease TTL ${num(fo.leaseTtlSeconds)} s; over the clusters the failed member held; storage equal to the members afterwards: ${fo.differences === 0 ? 'yes' : `no, ${fo.differences} differences`}`,
        footer: ctx.footer,
        panels: [
          {
            unit: 'seconds after the failure',
            categories: fo.scenarios.map((sc, i) => `${sc.how} of ${sc.member}: ${sc.firstWriteSeconds.length} clusters${never(i) ? `, ${never(i)} never taken over` : ''}`),
            series: [
              { name: 'first cluster', values: pick((xs) => xs[0]) },
              { name: 'median cluster', values: pick((xs) => xs[Math.floor(xs.length / 2)]) },
              { name: 'last cluster', values: pick((xs) => xs[xs.length - 1]) },
            ],
            targets: [{ value: f.targets.failoverSeconds, label: `target ≤ TTL + 5 s = ${num(f.targets.failoverSeconds)} s` }],
          },
        ],
      }),
    });
  }
  return charts;
}
