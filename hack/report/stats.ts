// Percentiles of raw samples and of histograms, as the benchmarks compute them (nearest rank).
import type { Histogram } from './figures.ts';

/** Samples in bins of `binMs` (rounded): [ms, count] pairs, empty bins left out. */
export function histogramOf(samples: number[], binMs = 1): Histogram {
  const bins = new Map<number, number>();
  for (const s of samples) {
    const b = Math.round(s / binMs) * binMs;
    bins.set(b, (bins.get(b) ?? 0) + 1);
  }
  return [...bins.entries()].sort((a, b) => a[0] - b[0]);
}

/** The sorted values of a distribution, given either raw samples or a histogram, with its quantile function. */
export interface Distribution {
  count: number;
  /** The q-quantile (0-1), nearest rank: the value at index floor(q * count). */
  quantile(q: number): number;
  max: number;
  min: number;
}

export function fromSamples(samples: number[]): Distribution {
  const sorted = [...samples].sort((a, b) => a - b);
  return {
    count: sorted.length,
    quantile: (q) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] : NaN),
    max: sorted.length ? sorted[sorted.length - 1] : NaN,
    min: sorted.length ? sorted[0] : NaN,
  };
}

export function fromHistogram(h: Histogram): Distribution {
  const bins = [...h].sort((a, b) => a[0] - b[0]);
  const cum: number[] = [];
  let total = 0;
  for (const [, c] of bins) cum.push((total += c));
  return {
    count: total,
    quantile(q) {
      if (total === 0) return NaN;
      const rank = Math.min(total - 1, Math.floor(q * total));
      // the first bin whose cumulative count exceeds the rank
      let lo = 0;
      let hi = bins.length - 1;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (cum[mid] > rank) hi = mid;
        else lo = mid + 1;
      }
      return bins[lo][0];
    },
    max: bins.length ? bins[bins.length - 1][0] : NaN,
    min: bins.length ? bins[0][0] : NaN,
  };
}

/** p-th percentile (0-100) of raw samples, nearest rank (as hack/fixtures.ts). */
export function percentile(samples: number[], p: number): number {
  return fromSamples(samples).quantile(p / 100);
}
