// The look every benchmark chart shares: size, fonts, colours, title and footer, axes,
// number formats and the target line.
import type { EChartsOption } from 'echarts';

export const width = 760;
export const height = 440;

const font = 'Helvetica, Arial, sans-serif';
export const ink = '#1f2328';
const muted = '#59636e';
/** Reference lines that are not measurements (y = x). */
export const reference = '#8c959f';
const grid = '#d8dee4';
/** The target: one colour everywhere, dashed. */
export const targetColor = '#cf222e';
/** Series colours, in order (colour-blind safe, Okabe-Ito without yellow). */
export const palette = ['#0072b2', '#e69f00', '#009e73', '#cc79a7', '#56b4e9', '#d55e00', '#000000'];

/** A colour for each name, stable across the panels of a chart: the palette in order of first use. */
export function colorsFor(names: string[]): Map<string, string> {
  const m = new Map<string, string>();
  for (const n of names) if (!m.has(n)) m.set(n, palette[m.size % palette.length]);
  return m;
}

/** 12345.6 -> "12,346"; 12.34 -> "12.3"; 0.1234 -> "0.12". */
export function num(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  const a = Math.abs(v);
  const digits = a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 1 : 2;
  const [int, frac] = a.toFixed(digits).split('.');
  const grouped = int.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const s = frac && !/^0+$/.test(frac) ? `${grouped}.${frac.replace(/0+$/, '')}` : grouped;
  return v < 0 ? `-${s}` : s;
}

/** The smallest of 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 times a power of ten that is >= v (log scale: 1, 2, 5). */
export function niceCeil(v: number, log = false): number {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  if (log) {
    for (const m of [1, 2, 5, 10]) if (m * p >= v * (1 - 1e-9)) return m * p;
    return 10 * p;
  }
  for (const m of [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * p >= v * (1 - 1e-9)) return m * p;
  return 10 * p;
}

/** An axis maximum that keeps the targets in view (with room for their labels). */
export function maxWithTargets(targets: number[], log = false): ((v: { max: number }) => number) | undefined {
  if (targets.length === 0) return undefined;
  return (v) => {
    const top = Math.max(...targets) * 1.12;
    return niceCeil(Math.max(v.max, top), log);
  };
}

export interface Heading {
  title: string;
  /** What was measured, under the title. */
  subtitle: string;
  /** The machine and date, at the bottom right. */
  footer: string;
}

/** What every chart starts from: white background (readable on dark pages too), no animation, title, footer, legend. */
export function base(h: Heading, legend: string[]): EChartsOption {
  return {
    animation: false,
    backgroundColor: '#ffffff',
    textStyle: { fontFamily: font, color: ink },
    title: [
      {
        text: h.title,
        subtext: h.subtitle,
        left: 16,
        top: 10,
        itemGap: 6,
        textStyle: { fontSize: 16, fontWeight: 'bold', color: ink },
        subtextStyle: { fontSize: 12, lineHeight: 16, color: muted, width: width - 40, overflow: 'break' },
      },
      { subtext: h.footer, left: 16, bottom: 4, subtextStyle: { fontSize: 10, color: muted } },
    ],
    legend: { data: legend, top: 76, left: 16, right: 16, itemGap: 18, textStyle: { fontSize: 12, color: ink } },
  };
}

/** The plot area below title, legend and the y axis' name; above the x axis' name and the footer. */
export function plotArea(): { top: number; bottom: number; left: number; right: number } {
  return { top: 132, bottom: 66, left: 72, right: 28 };
}

/** The y axis' name: above the axis, from its left. */
export function yAxisName(name: string): { name: string; nameLocation: 'end'; nameGap: number; nameTextStyle: Record<string, unknown> } {
  return { name, nameLocation: 'end', nameGap: 12, nameTextStyle: { fontSize: 12, fontWeight: 'bold', color: ink, align: 'left', padding: [0, 0, 0, -40] } };
}

/** The x axis' name: under the axis labels, centred. */
export function xAxisName(name: string): { name: string; nameLocation: 'middle'; nameGap: number; nameTextStyle: Record<string, unknown> } {
  return { name, nameLocation: 'middle', nameGap: 30, nameTextStyle: { fontSize: 12, color: ink } };
}

export const axisLine = { lineStyle: { color: muted } };
export const splitLine = { lineStyle: { color: grid } };
export const axisLabel = { color: muted, fontSize: 11, formatter: (v: number) => num(v) };

export interface Target {
  value: number;
  label: string;
}

/** Target lines with their labels, as a series' markLine: horizontal (`yAxis`) or vertical (`xAxis`). */
export function targetMarks(targets: Target[], axis: 'xAxis' | 'yAxis' = 'yAxis'): { silent: boolean; symbol: 'none'; data: Array<Record<string, unknown>> } {
  return {
    silent: true,
    symbol: 'none',
    data: targets.map((t) => ({
      [axis]: t.value,
      name: t.label,
      lineStyle: { color: targetColor, type: 'dashed', width: 1.5 },
      label: { formatter: t.label, position: 'insideEndTop', color: targetColor, fontSize: 11, textBorderColor: '#ffffff', textBorderWidth: 3 },
    })),
  };
}
