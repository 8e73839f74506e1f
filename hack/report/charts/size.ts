// hack/bench/size.ts: bytes per object on disk, per backend and phase, split into the object
// rows, their indexes, the label rows, the change log and its indexes, against the JSON as served.
import type { SizeFigures, SizePhaseFigures } from '../figures.ts';
import { barChart } from '../kinds/bars.ts';
import { num } from '../style.ts';
import type { ChartSpec, Context } from './types.ts';

const label = (b: string) => (b === 'postgres' ? 'PostgreSQL' : 'SQLite');
const phaseLabel: Record<SizePhaseFigures['phase'], string> = { created: 'after the creates', modified: 'after updates', retained: 'default retention', compacted: 'log emptied' };

/** The parts of a phase's bytes per object, in stacking order. */
const parts: Array<{ name: string; of: (r: SizePhaseFigures['relations'][number]) => boolean }> = [
  { name: 'objects (rows)', of: (r) => r.table === 'objects' && r.kind !== 'index' },
  { name: 'objects (indexes)', of: (r) => r.table === 'objects' && r.kind === 'index' },
  { name: 'label rows and indexes', of: (r) => r.table === 'object_labels' },
  { name: 'change log (rows)', of: (r) => r.table === 'changes' && r.kind !== 'index' },
  { name: 'change log (indexes)', of: (r) => r.table === 'changes' && r.kind === 'index' },
  { name: 'other tables', of: (r) => !['objects', 'object_labels', 'changes'].includes(r.table) },
];

export function sizeCharts(f: SizeFigures, ctx: Context): ChartSpec[] {
  const served = f.backends[0]?.phases[0]?.columns.object ?? 0;
  return [
    {
      name: 'bytes',
      option: barChart({
        title: 'Storage size: bytes on disk per object',
        subtitle: `${num(f.configMaps)} ConfigMaps (~${num(f.memberJsonBytes.configMap)} B) and ${num(f.pods)} pods (~${num(f.memberJsonBytes.pod)} B) in ${f.clusters} clusters; ${num(f.modified)} updated once; retention ${num(f.retentionCount)} changes`,
        footer: ctx.footer,
        panels: f.backends.map((b) => ({
          title: label(b.backend),
          unit: 'bytes per object',
          stacked: true,
          categories: b.phases.map((p) => phaseLabel[p.phase]),
          series: parts.map((part) => ({ name: part.name, values: b.phases.map((p) => Math.round(p.relations.filter(part.of).reduce((a, r) => a + r.bytes, 0) / Math.max(1, p.objects))) })),
          targets: [{ value: Math.round(served), label: `JSON as served: ${num(served)} B` }],
        })),
      }),
    },
  ];
}
