// hack/bench/memory.ts: the RSS of each real process, idle after syncing and after a burst of
// creates, per backend and setup, against its target; and where it goes (V8 heap used and
// allocated, external memory).
import type { MemoryFigures, MemoryProcessFigures, MemorySetupFigures } from '../figures.ts';
import { barChart } from '../kinds/bars.ts';
import { num } from '../style.ts';
import type { ChartSpec, Context } from './types.ts';

const backendNames: Record<MemorySetupFigures['backend'], string> = { postgres: 'PostgreSQL', sqlite: 'SQLite' };

export function memoryCharts(f: MemoryFigures, ctx: Context): ChartSpec[] {
  if (f.runs.length === 0) return [];
  // One series per setup: its name, with its NODE_OPTIONS when two setups share the name
  // (--node-options); the NODE_OPTIONS in the subtitle when every setup has the same.
  const options = new Set(f.runs.map((r) => r.nodeOptions));
  const shared = (r: MemorySetupFigures) => new Set(f.runs.filter((x) => x.setup === r.setup).map((x) => x.nodeOptions)).size > 1;
  const setupOf = (r: MemorySetupFigures) => (shared(r) ? `${r.setup}, NODE_OPTIONS=${JSON.stringify(r.nodeOptions)}` : r.setup);
  const setups = [...new Set(f.runs.map(setupOf))];
  // One category per backend and process, in the order they ran.
  const keyOf = (r: MemorySetupFigures, p: MemoryProcessFigures) => `${backendNames[r.backend]}: ${p.process}`;
  const categories = [...new Set(f.runs.flatMap((r) => r.processes.map((p) => keyOf(r, p))))];
  const processOf = new Map(f.runs.flatMap((r) => r.processes.map((p) => [keyOf(r, p), p.process] as const)));
  const find = (setup: string, category: string) => {
    for (const r of f.runs) if (setupOf(r) === setup) for (const p of r.processes) if (keyOf(r, p) === category) return p;
    return undefined;
  };
  /** all-in-one's target is for after the burst only. */
  const targetMB = (process: MemoryProcessFigures['process'] | undefined, postBurst = false): number | undefined =>
    process === 'apiserver' || process === 'synchro' || (process === 'all-in-one' && postBurst) ? f.targets.rssMB[process] : undefined;
  const miB = (mb: number) => (mb * 1e6) / 2 ** 20;
  const nodeOptions =
    options.size === 1
      ? `NODE_OPTIONS=${JSON.stringify([...options][0])}`
      : `NODE_OPTIONS: ${[...new Set(f.runs.map((r) => `${setupOf(r)} ${JSON.stringify(r.nodeOptions)}`))].join(', ')}`;
  const clusters = `${f.clusters} cluster${f.clusters === 1 ? '' : 's'}`;
  const burst = f.burst && f.runs.some((r) => r.processes.some((p) => p.postBurst)) ? f.burst : 0;
  const workload = `${clusters} × ${num(f.configMaps)} ConfigMaps of ~${num(f.bytes)} bytes + the demo workload; idle ${num(f.idleSeconds)} s after the sync and a user's reads${burst ? `, and again after ${num(burst)} more created at once` : ''}; ${f.built ? 'compiled as in the image' : 'not built (TypeScript through tsx)'}; ${nodeOptions}`;
  const rssPanel = (title: string, value: (p: MemoryProcessFigures) => number | undefined, postBurst: boolean) => ({
    title,
    unit: 'MiB',
    categories: categories.map((c) => { const t = targetMB(processOf.get(c), postBurst); return t === undefined ? c : `${c} (target ≤ ${num(t)} MB)`; }),
    series: setups.map((s) => ({ name: s, values: categories.map((c) => { const p = find(s, c); return (p && value(p)) ?? null; }) })),
    categoryTargets: { name: 'target (at most)', values: categories.map((c) => { const t = targetMB(processOf.get(c), postBurst); return t === undefined ? null : miB(t); }) },
  });
  const charts: ChartSpec[] = [
    {
      name: 'rss',
      option: barChart({
        title: burst ? 'Memory of the processes, idle after syncing and after a burst: RSS' : 'Memory of the processes, idle after syncing: RSS',
        subtitle: workload,
        footer: ctx.footer,
        panels: [
          rssPanel('RSS, idle after the sync', (p) => p.rssMiB, false),
          ...(burst ? [rssPanel(`RSS, idle after ${num(burst)} creates`, (p) => p.postBurst?.rssMiB, true)] : []),
        ],
      }),
    },
  ];
  // Where the memory is, per setup: what each process's /metrics say of its heap and of the memory outside it.
  const panels = setups.flatMap((s) => {
    const measured = categories.flatMap((c) => {
      const p = find(s, c);
      return p && p.heapTotalMiB !== undefined ? [{ category: c, p }] : [];
    });
    if (measured.length === 0) return [];
    return [
      {
        ...(setups.length > 1 ? { title: s } : {}),
        unit: 'MiB',
        categories: measured.map((m) => m.category),
        series: [
          { name: 'heap allocated', values: measured.map((m) => m.p.heapTotalMiB ?? null) },
          { name: 'heap used', values: measured.map((m) => m.p.heapUsedMiB ?? null) },
          { name: 'external (Buffers, native)', values: measured.map((m) => m.p.externalMiB ?? null) },
        ],
      },
    ];
  });
  if (panels.length) {
    charts.push({
      name: 'heap',
      option: barChart({
        title: 'Memory of the processes, idle after syncing: V8 heap (their /metrics)',
        subtitle: workload,
        footer: ctx.footer,
        panels,
      }),
    });
  }
  return charts;
}
