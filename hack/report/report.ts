// docs/bench/<file>.json -> docs/bench/<file>-<chart>.svg, for every benchmark's figures.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { BenchRun } from './figures.ts';
import { benchDir, parseRun } from './figures.ts';
import { renderSvg, type Chart } from './render.ts';
import { height, width } from './style.ts';
import type { ChartSpec, Context } from './charts/types.ts';
import { storageCharts } from './charts/storage.ts';
import { listCharts } from './charts/list.ts';
import { synchroCharts } from './charts/synchro.ts';
import { synchroHaCharts } from './charts/synchro-ha.ts';
import { watchCharts } from './charts/watch.ts';
import { watchFanoutCharts } from './charts/watch-fanout.ts';
import { watchConnectionsCharts } from './charts/watch-connections.ts';
import { metricsCharts } from './charts/metrics.ts';
import { memoryCharts } from './charts/memory.ts';
import { mcsCharts } from './charts/mcs.ts';
import { sizeCharts } from './charts/size.ts';
import { compressionCharts } from './charts/compression.ts';
import { standbyCharts } from './charts/standby.ts';
import { fleetCharts } from './charts/fleet.ts';

/** "2 cores (CPU model), 8 GiB, Node v20.20.2, linux/x64 · 2026-01-31" */
export function footerOf(run: BenchRun): string {
  const m = run.machine;
  return `${m.cores} cores (${m.cpu}), ${m.memoryGiB} GiB, Node ${m.node}, ${m.platform} · run ${run.at.slice(0, 10)}`;
}

function specsOf(run: BenchRun, ctx: Context): ChartSpec[] {
  switch (run.bench) {
    case 'storage':
      return storageCharts(run.figures, ctx);
    case 'list':
      return listCharts(run.figures, ctx);
    case 'synchro':
      return synchroCharts(run.figures, ctx);
    case 'synchro-ha':
      return synchroHaCharts(run.figures, ctx);
    case 'watch':
      return watchCharts(run.figures, ctx);
    case 'watch-fanout':
      return watchFanoutCharts(run.figures, ctx);
    case 'watch-connections':
      return watchConnectionsCharts(run.figures, ctx);
    case 'metrics':
      return metricsCharts(run.figures, ctx);
    case 'memory':
      return memoryCharts(run.figures, ctx);
    case 'mcs':
      return mcsCharts(run.figures, ctx);
    case 'size':
      return sizeCharts(run.figures, ctx);
    case 'compression':
      return compressionCharts(run.figures, ctx);
    case 'standby':
      return standbyCharts(run.figures, ctx);
    case 'fleet':
      return fleetCharts(run.figures, ctx);
  }
}

/** The charts of one figures file, named `<file>-<chart>`. */
export function chartsOf(run: BenchRun, file: string): Chart[] {
  return specsOf(run, { footer: footerOf(run) }).map((s) => ({ name: `${file}-${s.name}`, option: s.option, width: s.width ?? width, height: s.height ?? height }));
}

/** Renders the charts of docs/bench/<file>.json (or `dir`'s) and returns the SVG files written. */
export function renderFile(file: string, dir = benchDir): string[] {
  const path = join(dir, `${file}.json`);
  const run = parseRun(readFileSync(path, 'utf8'), path);
  const written: string[] = [];
  for (const chart of chartsOf(run, file)) {
    const out = join(dir, `${chart.name}.svg`);
    writeFileSync(out, renderSvg(chart));
    written.push(out);
  }
  return written;
}

/** Every SVG that the figures files in `dir` make, by file name: the SVG's content. */
export function renderAll(dir = benchDir): Map<string, string> {
  const out = new Map<string, string>();
  const from = new Map<string, string>();
  for (const json of readdirSync(dir).filter((f) => f.endsWith('.json')).sort()) {
    const file = basename(json, '.json');
    const path = join(dir, json);
    for (const chart of chartsOf(parseRun(readFileSync(path, 'utf8'), path), file)) {
      const name = `${chart.name}.svg`;
      if (from.has(name)) throw new Error(`${name} would be made by both ${from.get(name)} and ${json}: rename one of them`);
      from.set(name, json);
      out.set(name, renderSvg(chart));
    }
  }
  return out;
}

/** Writes every chart of `dir`'s figures files and removes the SVGs no figures file makes any more. */
export function report(dir = benchDir): { written: string[]; removed: string[] } {
  if (!existsSync(dir)) mkdirSync(dir, { recursive: true });
  const svgs = renderAll(dir);
  const written: string[] = [];
  for (const [name, svg] of svgs) {
    writeFileSync(join(dir, name), svg);
    written.push(name);
  }
  const removed = readdirSync(dir).filter((f) => f.endsWith('.svg') && !svgs.has(f));
  for (const f of removed) rmSync(join(dir, f));
  return { written, removed };
}
