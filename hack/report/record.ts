// What a benchmark calls when it has finished: its figures to docs/bench/<file>.json (with the
// machine, the time and its arguments), then its charts regenerated from that file. The
// charting library is loaded only then, so that it weighs nothing in what a benchmark measures
// (several measure their own memory).
import { availableParallelism, cpus, totalmem } from 'node:os';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { BenchName, BenchRun, FiguresOf, Machine } from './figures.ts';
import { benchDir } from './figures.ts';

export function machine(): Machine {
  return {
    cores: availableParallelism(),
    cpu: (cpus()[0]?.model ?? 'unknown').replace(/\s+/g, ' ').trim(),
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    platform: `${process.platform}/${process.arch}`,
  };
}

/** Integers as they are; others to 2 decimals (4 significant digits below 1): samples, not noise. */
export function roundFigure(v: number): number {
  if (Number.isInteger(v) || !Number.isFinite(v)) return v;
  if (Math.abs(v) >= 1) return Math.round(v * 100) / 100;
  return Number(v.toPrecision(4));
}

const flat = (v: unknown): boolean => v === null || typeof v !== 'object' || (Array.isArray(v) && v.every((x) => x === null || typeof x !== 'object'));

/** JSON with two-space indentation, arrays of numbers (and of [ms, count] pairs) on one line, numbers rounded. */
export function formatFigures(value: unknown, indent = ''): string {
  const inner = `${indent}  `;
  if (typeof value === 'number') return JSON.stringify(roundFigure(value));
  if (Array.isArray(value)) {
    if (value.every(flat)) return JSON.stringify(value, (_k, v: unknown) => (typeof v === 'number' ? roundFigure(v) : v));
    return `[\n${value.map((v) => inner + formatFigures(v, inner)).join(',\n')}\n${indent}]`;
  }
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    if (entries.length === 0) return '{}';
    return `{\n${entries.map(([k, v]) => `${inner}${JSON.stringify(k)}: ${formatFigures(v, inner)}`).join(',\n')}\n${indent}}`;
  }
  return JSON.stringify(value);
}

/**
 * Writes docs/bench/<file>.json and its charts; `file` is the benchmark's name, with the
 * setup when one benchmark can run several (`synchro-postgres`). Call only after a run that
 * completed: a failed run leaves the committed figures as they were.
 */
export async function recordRun<B extends BenchName>(file: string, bench: B, args: Record<string, string | number | boolean | undefined>, figures: FiguresOf<B>, dir = benchDir): Promise<void> {
  const run = {
    bench,
    schema: 1,
    at: `${new Date().toISOString().slice(0, 19)}Z`,
    machine: machine(),
    args: Object.fromEntries(Object.entries(args).filter(([, v]) => v !== undefined)),
    figures,
  } as BenchRun;
  mkdirSync(dir, { recursive: true });
  const json = join(dir, `${file}.json`);
  writeFileSync(json, `${formatFigures(run)}\n`);
  const { renderFile } = await import('./report.ts');
  const svgs = renderFile(file, dir);
  const rel = (p: string) => relative(process.cwd(), p);
  process.stderr.write(`figures: ${rel(json)}; charts: ${svgs.map(rel).join(', ')}\n`);
}
