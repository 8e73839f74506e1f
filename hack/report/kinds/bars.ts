// Grouped bars, in one panel or several side by side (small multiples with their own units):
// categories on x, one bar per series in each, value labels on the bars, targets as dashed
// lines (the same for every category) or as a dash over each category (one per category).
import type { BarSeriesOption, EChartsOption, ScatterSeriesOption } from 'echarts';
import { axisLabel, axisLine, base, colorsFor, ink, maxWithTargets, num, plotArea, splitLine, targetColor, targetMarks, width, yAxisName, type Heading, type Target } from '../style.ts';

export interface BarPanel {
  /** What the panel shows, e.g. "ingest": with the unit, the y axis' name ("ingest (events/s)"). */
  title?: string;
  /** The y axis' unit, e.g. "events/s". */
  unit: string;
  categories: string[];
  series: Array<{ name: string; values: Array<number | null> }>;
  /** Stack the series (parts of one whole) instead of grouping them. */
  stacked?: boolean;
  /** A log axis (values far apart: 1 watcher and 10,000); values at or below 0 are not drawn on it. */
  log?: boolean;
  targets?: Target[];
  /** A target per category (null: none), drawn as a dash over the category. */
  categoryTargets?: { name: string; values: Array<number | null> };
}

export interface BarChart extends Heading {
  panels: BarPanel[];
}

export function barChart(c: BarChart): EChartsOption {
  const names = c.panels.flatMap((p) => p.series.map((s) => s.name));
  const targetNames = c.panels.flatMap((p) => (p.categoryTargets ? [p.categoryTargets.name] : []));
  const colors = colorsFor(names);
  const n = c.panels.length;
  const area = plotArea();
  const gap = 9; // % between panels
  const left = (area.left / width) * 100;
  const right = 3;
  const w = (100 - left - right - gap * (n - 1)) / n;
  const grids = c.panels.map((_p, i) => ({ top: area.top, bottom: area.bottom, left: `${round(left + i * (w + gap))}%`, right: `${round(100 - (left + i * (w + gap) + w))}%` }));
  const series: Array<BarSeriesOption | ScatterSeriesOption> = [];
  c.panels.forEach((p, i) => {
    p.series.forEach((s, k) => {
      series.push({
        type: 'bar',
        name: s.name,
        xAxisIndex: i,
        yAxisIndex: i,
        data: p.log ? s.values.map((v) => (v !== null && v > 0 ? v : null)) : s.values,
        color: colors.get(s.name),
        itemStyle: { color: colors.get(s.name) },
        barMaxWidth: 56,
        ...(p.stacked ? { stack: `panel-${i}` } : {}),
        label: { show: true, position: p.stacked ? 'inside' : 'top', fontSize: 10, color: p.stacked ? '#ffffff' : ink, formatter: (v: { value: unknown }) => (typeof v.value === 'number' ? num(v.value) : '') },
        ...(k === 0 && p.targets?.length ? { markLine: targetMarks(p.targets) } : {}),
      });
    });
    if (p.categoryTargets) {
      series.push({
        type: 'scatter',
        name: p.categoryTargets.name,
        xAxisIndex: i,
        yAxisIndex: i,
        data: p.categoryTargets.values,
        symbol: 'rect',
        symbolSize: [Math.max(24, 300 / (n * p.categories.length)), 2],
        color: targetColor,
        itemStyle: { color: targetColor },
        z: 5,
        label: { show: true, position: 'top', fontSize: 10, color: targetColor, formatter: (v: { value: unknown }) => (typeof v.value === 'number' ? num(v.value) : '') },
      });
    }
  });
  return {
    ...base(c, [...colors.keys(), ...new Set(targetNames)]),
    grid: grids,
    xAxis: c.panels.map((p, i) => ({ type: 'category', gridIndex: i, data: p.categories, axisLine, axisTick: { alignWithLabel: true }, axisLabel: { color: ink, fontSize: 11, interval: 0, verticalAlign: 'top', lineHeight: 14, width: Math.max(60, 560 / (n * p.categories.length)), overflow: 'break' } })),
    yAxis: c.panels.map((p, i) => ({ ...(p.log ? { type: 'log' as const, logBase: 10 } : { type: 'value' as const, min: 0 }), gridIndex: i, max: maxWithTargets([...(p.targets ?? []).map((t) => t.value), ...(p.categoryTargets?.values ?? []).filter((v): v is number => v !== null)], p.log), ...yAxisName(p.title ? `${p.title} (${p.unit})` : p.unit), axisLine, splitLine, axisLabel })),
    series,
  };
}

const round = (v: number) => Math.round(v * 100) / 100;
