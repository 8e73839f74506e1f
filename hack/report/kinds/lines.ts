// Series of (x, y) points as lines with markers: a quantity over time, or one against another
// (committed events/s against the rate asked, lag against the rate). Targets are dashed lines.
import type { EChartsOption, LineSeriesOption } from 'echarts';
import { axisLabel, axisLine, base, colorsFor, maxWithTargets, plotArea, splitLine, targetMarks, xAxisName, yAxisName, type Heading, type Target } from '../style.ts';

export interface LineChart extends Heading {
  /** The x axis: what and in what unit, e.g. "time (s)". */
  x: string;
  /** The y axis, e.g. "RSS (MiB)". */
  y: string;
  yLog?: boolean;
  /** Start the y axis at 0 (default: true unless log). */
  yFromZero?: boolean;
  series: Array<{ name: string; points: Array<[number, number | null]>; dashed?: boolean; markers?: boolean }>;
  targets?: Target[];
}

export function lineChart(c: LineChart): EChartsOption {
  const colors = colorsFor(c.series.map((s) => s.name));
  const series: LineSeriesOption[] = c.series.map((s, i) => ({
    type: 'line',
    name: s.name,
    data: s.points,
    color: colors.get(s.name),
    showSymbol: s.markers ?? true,
    symbolSize: 6,
    lineStyle: { width: 2, type: s.dashed ? 'dashed' : 'solid', color: colors.get(s.name) },
    itemStyle: { color: colors.get(s.name) },
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
