// hack/bench/compression.ts: per list size, the response time of each arm (direct and
// through the aggregator-like proxy, with and without gzip) as percentile curves; and the
// bytes on the wire of each arm, to the client and over the hop from Panoptes.
import type { CompressionFigures } from '../figures.ts';
import { barChart } from '../kinds/bars.ts';
import { percentileChart } from '../kinds/percentiles.ts';
import { num } from '../style.ts';
import type { ChartSpec, Context } from './types.ts';

const kB = (b: number) => Math.round(b / 100) / 10;

export function compressionCharts(f: CompressionFigures, ctx: Context): ChartSpec[] {
  const workload = `ConfigMaps of ~${num(f.objectBytes)} B of JSON; gzip level ${f.gzipLevel} above ${num(f.thresholdBytes / 1024)} KiB; loopback, TLS to Panoptes`;
  const times: ChartSpec[] = f.sizes.map((s) => ({
    name: `time-${s.objects}`,
    option: percentileChart({
      title: `List of ${num(s.objects)} objects (${num(kB(s.jsonBytes))} kB of JSON): with and without gzip`,
      subtitle: `${workload}; ${s.arms[0]?.samplesMs.length ?? 0} requests per arm, interleaved`,
      footer: ctx.footer,
      measure: 'request to the last decoded byte',
      series: s.arms.map((a) => ({ name: a.label, samples: a.samplesMs, dashed: a.path === 'aggregator', group: a.client === 'gzip' || a.hop === 'gzip' ? `gzip-${a.path}` : `identity-${a.path}` })),
    }),
  }));
  const labels = f.sizes[0]?.arms.map((a) => a.label) ?? [];
  return [
    ...times,
    {
      name: 'bytes',
      option: barChart({
        title: 'List bytes on the wire, with and without gzip',
        subtitle: `${workload}; to the client and over the hop from Panoptes (through the proxy)`,
        footer: ctx.footer,
        panels: f.sizes.map((s) => ({
          title: `${num(s.objects)} objects`,
          unit: 'kB',
          categories: ['to the client', 'Panoptes to proxy'],
          series: labels.map((l) => {
            const a = s.arms.find((x) => x.label === l);
            return { name: l, values: [a ? kB(a.clientBytes) : null, a?.hopBytes !== undefined ? kB(a.hopBytes) : null] };
          }),
        })),
      }),
    },
  ];
}
