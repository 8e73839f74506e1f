// Series of (x, y) points as lines with markers: a quantity over time, or one against another
// (committed events/s against the rate asked, lag against the rate). Targets are dashed lines.
import type { EChartsOption, LineSeriesOption } from 'echarts';
import { axisLabel, axisLine, base, colorsFor, maxWithTargets, plotArea, reference, splitLine, targetMarks, xAxisName, yAxisName, type Heading, type Target } from '../style.ts';

export interface LineChart extends Heading {
  /** The x axis: what and in what unit, e.g. "time (s)". */
  x: string;
  /** The y axis, e.g. "RSS (MiB)". */
  y: string;
  yLog?: boolean;
  /** Start the y axis at 0 (default: true unless log). */
  yFromZero?: boolean;
  series: Array<{ name: string; points: Array<[number, number | null]>; dashed?: boolean; markers?: boolean; /** A reference, not a measurement: grey, dashed, no markers. */ reference?: boolean }>;
  targets?: Target[];
}

export function lineChart(c: LineChart): EChartsOption {
  const colors = colorsFor(c.series.filter((s) => !s.reference).map((s) => s.name));
  const color = (s: LineChart['series'][number]) => (s.reference ? reference : colors.get(s.name));
  const series: LineSeriesOption[] = c.series.map((s, i) => ({
    type: 'line',
    name: s.name,
    data: s.points,
    color: color(s),
    showSymbol: s.reference ? false : (s.markers ?? true),
    symbolSize: 6,
    lineStyle: { width: s.reference ? 1.5 : 2, type: s.dashed || s.reference ? 'dashed' : 'solid', color: color(s) },
    itemStyle: { color: color(s) },
    ...(i === 0 && c.targets?.length ? { markLine: targetMarks(c.targets) } : {}),
  }));
  return {
    ...base(c, c.series.map((s) => s.name)),
    grid: plotArea(),
    xAxis: { type: 'value', scale: true, ...xAxisName(c.x), axisLine, splitLine, axisLabel },
    yAxis: {
      type: c.yLog ? 'log' : 'value',
      ...(c.yLog ? {} : c.yFromZero === false ? { scale: true } : { min: 0 }),
      max: maxWithTargets((c.targets ?? []).map((t) => t.value), c.yLog),
      ...yAxisName(c.y),
      axisLine,
      splitLine,
      axisLabel,
    },
    series,
  };
}
