// One chart to an SVG document with ECharts' server-side renderer (no DOM, no canvas), the
// same bytes for the same chart: ECharts numbers its clip paths, gradients and CSS classes
// from counters global to the process (`zr<instance>-c0`, `zr<instance>-cls-<n>`); they are
// renamed after the chart, in order of first appearance.
import * as echarts from 'echarts';
import type { EChartsOption } from 'echarts';

// Text is measured without a canvas: ECharts' own estimate is Arial's widths, too narrow for
// bold text and for the wider sans-serif fonts a viewer may fall back to, and legends and
// labels then overlap. Widths per character class, with a margin, for all of them.
const narrow = new Set(" .,:;'|!iIjlft()[]/-");
const wide = new Set('mwMW@%');
echarts.setPlatformAPI({
  measureText(text: string, font?: string) {
    const size = Number(/(\d+(?:\.\d+)?)px/.exec(font ?? '')?.[1] ?? 12);
    const bold = /bold|[6-9]00/.test(font ?? '');
    let em = 0;
    for (const ch of text) {
      if (narrow.has(ch)) em += 0.32;
      else if (wide.has(ch)) em += 0.9;
      else if (ch >= 'A' && ch <= 'Z') em += 0.7;
      else if (ch >= '0' && ch <= '9') em += 0.58;
      else em += 0.57;
    }
    return { width: em * size * (bold ? 1.1 : 1) } as TextMetrics;
  },
});

export interface Chart {
  /** File name without `.svg`, also the prefix of the SVG's ids. */
  name: string;
  option: EChartsOption;
  width: number;
  height: number;
}

export function renderSvg(chart: Chart): string {
  return withStillClock(() => {
    const instance = echarts.init(null, null, { renderer: 'svg', ssr: true, width: chart.width, height: chart.height });
    try {
      instance.setOption(chart.option);
      return stableIds(instance.renderToSVGString(), chart.name);
    } finally {
      instance.dispose();
    }
  });
}

/**
 * Runs `render` with `Date` standing still. zrender times the first measurement of each font's
 * ASCII characters (zrender/lib/contain/text.js): past 16 ms, or past 2 ms five times in a
 * process (a busy machine descheduling it), it measures every ASCII character as wide as "a"
 * from then on, and long texts wrap elsewhere: other bytes for the same chart. Rendering is
 * synchronous, so nothing else runs while the clock stands still.
 */
function withStillClock<T>(render: () => T): T {
  const RealDate = Date;
  const t0 = RealDate.now();
  class StillDate extends RealDate {
    constructor(...args: [] | [string | number | Date]) {
      super(...((args.length ? args : [t0]) as [number]));
    }
    static override now(): number {
      return t0;
    }
  }
  globalThis.Date = StillDate as DateConstructor;
  try {
    return render();
  } finally {
    globalThis.Date = RealDate;
  }
}

/** Renames ECharts' per-process ids (`zr3-c0`, `zr3-g1`, `zr3-cls-12`, ...) to `<prefix>-c0`, ... numbered by first appearance. */
export function stableIds(svg: string, prefix: string): string {
  const safe = prefix.replace(/[^A-Za-z0-9_-]/g, '-');
  const seen = new Map<string, string>();
  const counters = new Map<string, number>();
  const out = svg.replace(/\bzr\d+-(cls-|ani-|[a-z]+)(\d+)\b/g, (whole: string, kind: string) => {
    let id = seen.get(whole);
    if (id === undefined) {
      const n = counters.get(kind) ?? 0;
      counters.set(kind, n + 1);
      id = `${safe}-${kind}${n}`;
      seen.set(whole, id);
    }
    return id;
  });
  return out.endsWith('\n') ? out : `${out}\n`;
}
