// Latency distributions as percentile curves: x is the percentile on a tail scale (0%, 50%,
// 90%, 99%, 99.9% evenly apart from 90% on), y the latency (log scale when it spans more
// than 20x). A target "p99 <= 150 ms" is a horizontal line the curve must stay under at 99%.
import type { EChartsOption, LineSeriesOption } from 'echarts';
import type { Histogram } from '../figures.ts';
import { fromHistogram, fromSamples, type Distribution } from '../stats.ts';
import { axisLabel, axisLine, base, colorsFor, maxWithTargets, num, plotArea, splitLine, targetMarks, xAxisName, yAxisName, type Heading, type Target } from '../style.ts';

export interface PercentileSeries {
  name: string;
  samples?: number[];
  histogram?: Histogram;
  /** Drawn dashed (a baseline, e.g. the direct watch; a variant of another series). */
  dashed?: boolean;
  /** Series of the same group share a colour (default: the name). */
  group?: string;
}

export interface PercentileChart extends Heading {
  /** What the latency is of, for the y axis: e.g. "write to event at the client". */
  measure: string;
  series: PercentileSeries[];
  targets?: Target[];
}

/** Tail scale: t = -log10(1 - q), so 90% is 1, 99% is 2, 99.9% is 3. */
const tail = (q: number) => -Math.log10(1 - q);
const ticks: Array<[number, string]> = [
  [0, '0%'],
  [0.5, '50%'],
  [0.9, '90%'],
  [0.99, '99%'],
  [0.999, '99.9%'],
  [0.9999, '99.99%'],
];
/** Latencies below this are drawn at it on a log axis. */
const floorMs = 0.1;

function distribution(s: PercentileSeries): Distribution {
  if (s.histogram) return fromHistogram(s.histogram);
  return fromSamples(s.samples ?? []);
}

/** Points [tail(q), ms] every 1/200 of the way to the highest rank, then the maximum. */
function curve(d: Distribution, clamp: number): Array<[number, number]> {
  if (d.count === 0) return [];
  const top = d.count > 1 ? tail((d.count - 1) / d.count) : 0;
  const pts: Array<[number, number]> = [];
  const steps = 200;
  for (let i = 0; i <= steps; i++) {
    const t = (top * i) / steps;
    const q = 1 - 10 ** -t;
    pts.push([round(t), Math.max(clamp, d.quantile(q))]);
  }
  return pts;
}

const round = (v: number) => Math.round(v * 1e4) / 1e4;

export function percentileChart(c: PercentileChart): EChartsOption {
  const dists = c.series.map(distribution);
  const top = Math.max(0, ...dists.map((d) => (d.count > 1 ? tail((d.count - 1) / d.count) : 0)));
  const positive = dists.flatMap((d) => (d.count ? [Math.max(floorMs, d.min), d.max] : []));
  const lo = Math.min(...positive, ...(c.targets ?? []).map((t) => t.value));
  const hi = Math.max(...positive, ...(c.targets ?? []).map((t) => t.value));
  const log = hi / Math.max(lo, floorMs) > 20;
  const colors = colorsFor(c.series.map((s) => s.group ?? s.name));
  const series: LineSeriesOption[] = c.series.map((s, i) => ({
    type: 'line',
    name: s.name,
    data: curve(dists[i], log ? floorMs : 0),
    showSymbol: false,
    color: colors.get(s.group ?? s.name),
    lineStyle: { width: 2, type: s.dashed ? 'dashed' : 'solid', color: colors.get(s.group ?? s.name) },
    ...(i === 0 && c.targets?.length ? { markLine: targetMarks(c.targets) } : {}),
  }));
  const shown = ticks.filter(([q]) => tail(q) <= top + 1e-9);
  return {
    ...base(c, c.series.map((s) => s.name)),
    grid: plotArea(),
    xAxis: {
      type: 'value',
      min: 0,
      max: round(top),
      ...xAxisName('percentile (share of samples at or below the latency)'),
      axisLine,
      splitLine: { show: false },
      axisTick: { customValues: shown.map(([q]) => round(tail(q))) },
      axisLabel: { ...axisLabel, customValues: shown.map(([q]) => round(tail(q))), formatter: (v: number) => shown.find(([q]) => Math.abs(round(tail(q)) - v) < 1e-6)?.[1] ?? '' },
    },
    yAxis: {
      type: log ? 'log' : 'value',
      ...yAxisName(`${c.measure} (ms${log ? ', log scale' : ''})`),
      axisLine,
      splitLine,
      axisLabel: { ...axisLabel, formatter: (v: number) => num(v) },
      ...(log ? { logBase: 10 } : { min: 0 }),
      // the targets stay in view
      max: maxWithTargets((c.targets ?? []).map((t) => t.value), log),
    },
    series,
  };
}
