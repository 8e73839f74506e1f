// The benchmark charts: every chart of every benchmark renders from small figures to a
// well-formed SVG with its title and its series, the same bytes each time; the committed
// docs/bench/*.svg are exactly what `npm run bench:report` makes of the committed JSON.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { benchDir, benchNames, parseRun } from './figures.ts';
import { formatFigures, recordRun, roundFigure } from './record.ts';
import { renderSvg, stableIds } from './render.ts';
import { chartsOf, renderAll, report } from './report.ts';
import { fromHistogram, fromSamples, histogramOf } from './stats.ts';
import { sampleRuns } from './testdata.ts';
import { barChart } from './kinds/bars.ts';
import { memoryCharts } from './charts/memory.ts';
import { watchConnectionsCharts } from './charts/watch-connections.ts';

/** Throws unless `xml` is one well-formed element: tags balanced and properly nested, attributes quoted, no stray `<` or `&`. */
function checkWellFormed(xml: string): string {
  const stack: string[] = [];
  let root = '';
  let i = 0;
  const escaped = (s: string) => {
    if (/&(?!(amp|lt|gt|quot|apos|#\d+|#x[0-9a-fA-F]+);)/.test(s)) throw new Error(`unescaped & in ${JSON.stringify(s.slice(0, 80))}`);
  };
  const text = (s: string) => {
    escaped(s);
    if (s.trim() && stack.length === 0) throw new Error(`text outside the root element: ${JSON.stringify(s.slice(0, 80))}`);
  };
  while (i < xml.length) {
    const lt = xml.indexOf('<', i);
    if (lt < 0) {
      text(xml.slice(i));
      break;
    }
    text(xml.slice(i, lt));
    if (xml.startsWith('<![CDATA[', lt)) {
      const end = xml.indexOf(']]>', lt);
      if (end < 0) throw new Error('unterminated CDATA');
      i = end + 3;
      continue;
    }
    if (xml.startsWith('<!--', lt)) {
      const end = xml.indexOf('-->', lt);
      if (end < 0) throw new Error('unterminated comment');
      i = end + 3;
      continue;
    }
    if (xml.startsWith('<?', lt)) {
      i = xml.indexOf('?>', lt) + 2;
      continue;
    }
    const m = /^<(\/?)([A-Za-z_][\w:.-]*)((?:\s+[A-Za-z_][\w:.-]*\s*=\s*(?:"[^"<]*"|'[^'<]*'))*)\s*(\/?)>/.exec(xml.slice(lt));
    if (!m) throw new Error(`malformed tag at ${lt}: ${JSON.stringify(xml.slice(lt, lt + 80))}`);
    const [whole, closing, name, attrs, selfClosing] = m;
    const seen = new Set<string>();
    for (const a of attrs.matchAll(/([A-Za-z_][\w:.-]*)\s*=\s*(?:"([^"]*)"|'([^']*)')/g)) {
      if (seen.has(a[1])) throw new Error(`attribute ${a[1]} twice in <${name}>`);
      seen.add(a[1]);
      escaped(a[2] ?? a[3] ?? '');
    }
    if (closing) {
      const open = stack.pop();
      if (open !== name) throw new Error(`</${name}> closes <${open}>`);
    } else if (!selfClosing) {
      if (stack.length === 0 && root) throw new Error(`second root element <${name}>`);
      if (stack.length === 0) root = name;
      stack.push(name);
    } else if (stack.length === 0) throw new Error(`self-closed root <${name}>`);
    i = lt + whole.length;
  }
  if (stack.length) throw new Error(`unclosed: ${stack.join(' > ')}`);
  return root;
}

const xmlText = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

t.test('the well-formedness check itself', async (t) => {
  t.equal(checkWellFormed('<svg a="1"><g><path d="M0 0"/></g><style><![CDATA[a<b]]></style></svg>'), 'svg');
  t.throws(() => checkWellFormed('<svg><g></svg></g>'), /closes/);
  t.throws(() => checkWellFormed('<svg><g>'), /unclosed/);
  t.throws(() => checkWellFormed('<svg a=1></svg>'), /malformed/);
  t.throws(() => checkWellFormed('<svg>a & b</svg>'), /unescaped &/);
  t.throws(() => checkWellFormed('<svg></svg><svg></svg>'), /second root/);
});

t.test('every benchmark has sample figures here', async (t) => {
  t.same([...new Set(sampleRuns.map((s) => s.run.bench))].sort(), [...benchNames].sort());
});

t.test('every chart of every benchmark: well-formed SVG with a title and its series, the same bytes each time', async (t) => {
  const kinds = new Set<string>();
  for (const { file, run } of sampleRuns) {
    const charts = chartsOf(run, file);
    t.ok(charts.length >= 1, `${file} makes charts`);
    for (const chart of charts) {
      const svg = renderSvg(chart);
      t.equal(checkWellFormed(svg), 'svg', `${chart.name}: one <svg> element, well-formed`);
      t.match(svg, /^<svg [^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg"/, `${chart.name}: an SVG document`);
      const titles = ([] as Array<{ text?: string }>).concat(chart.option.title as { text?: string });
      const title = titles[0]?.text ?? '';
      t.ok(title.length > 0, `${chart.name}: has a title`);
      t.ok(svg.includes(`>${xmlText(title)}</text>`), `${chart.name}: the title is in the SVG`);
      const series = ([] as Array<{ type?: string; name?: string }>).concat(chart.option.series as Array<{ type?: string; name?: string }>);
      t.ok(series.length >= 1, `${chart.name}: at least one series`);
      for (const s of series) kinds.add(`${s.type}`);
      t.match(svg, /ecmeta_series_index="0"/, `${chart.name}: the first series is drawn`);
      const legend = (chart.option.legend as { data?: string[] }).data ?? [];
      t.ok(legend.length >= 1, `${chart.name}: a legend`);
      t.notMatch(svg, /\bzr\d+-/, `${chart.name}: no per-process ids left`);
      t.equal(renderSvg(chart), svg, `${chart.name}: rendered twice, the same bytes`);
    }
  }
  t.same([...kinds].sort(), ['bar', 'line', 'scatter'], 'bars, lines (percentile curves too) and target dashes all drawn');
});

type Drawn = { type?: string; name?: string; data?: unknown[]; xAxisIndex?: number };
const seriesOf = (option: unknown) => (option as { series: Drawn[] }).series;
const axesOf = (option: unknown, axis: 'xAxis' | 'yAxis') => (option as Record<string, Array<{ type?: string; data?: string[] }>>)[axis];

t.test('bars on a log axis: a log y axis, values at or below 0 left out', async (t) => {
  const option = barChart({
    title: 't',
    subtitle: 's',
    footer: 'f',
    panels: [
      { unit: 'a', categories: ['x', 'y', 'z'], series: [{ name: 'v', values: [0, 5, null] }] },
      { unit: 'b', log: true, categories: ['x', 'y', 'z'], series: [{ name: 'w', values: [0, 5, -1] }] },
    ],
  });
  t.same(axesOf(option, 'yAxis').map((a) => a.type), ['value', 'log']);
  t.same(seriesOf(option).map((s) => s.data), [[0, 5, null], [null, 5, null]]);
});

t.test('watch-connections: each mode 1 watcher against many; latency per mode and phase', async (t) => {
  const run = sampleRuns.find((s) => s.run.bench === 'watch-connections')!.run;
  if (run.bench !== 'watch-connections') throw new Error('sample');
  const charts = watchConnectionsCharts(run.figures, { footer: 'f' });
  t.same(charts.map((c) => c.name), ['memory', 'latency', 'poll']);
  const memory = charts[0].option;
  t.same(axesOf(memory, 'xAxis')[0].data, ['HTTP/1.1', 'HTTP/2, TLS', 'HTTP/1.1, TLS']);
  const rss = seriesOf(memory).filter((s) => s.xAxisIndex === 0);
  t.same(rss.map((s) => [s.name, s.data]), [['1 watcher', [97, 101, 102]], ['1,000 watchers', [124, 135, 166]]], 'RSS max of each phase');
  t.same(seriesOf(memory).find((s) => s.xAxisIndex === 1)!.data, [25.6, 31.8, 60.6], 'per added watch');
  const latency = charts[1].option;
  t.equal(axesOf(latency, 'xAxis')[0].data!.length, 6, 'a category per mode and phase');
  t.same(seriesOf(latency).find((s) => s.name === 'p99')!.data, [21, 40, 24, 55, 25, 80]);
  t.equal(axesOf(latency, 'yAxis')[0].type, 'log');
  t.same(watchConnectionsCharts({ ...run.figures, modes: [] }, { footer: 'f' }), [], 'no mode ran, no charts');
});

t.test('memory: RSS per process and setup, a target only over the processes that have one', async (t) => {
  const run = sampleRuns.find((s) => s.run.bench === 'memory')!.run;
  if (run.bench !== 'memory') throw new Error('sample');
  const [rss, heap] = memoryCharts(run.figures, { footer: 'f' });
  t.same(axesOf(rss.option, 'xAxis')[0].data, ['PostgreSQL: synchro (target ≤ 130 MB)', 'PostgreSQL: apiserver (target ≤ 120 MB)', 'SQLite: all-in-one']);
  const series = seriesOf(rss.option);
  t.same(series.filter((s) => s.type === 'bar').map((s) => [s.name, s.data]), [['baseline panoptes-before', [150, 135, 210]], ['this checkout', [110, 98, 170]]]);
  const target = series.find((s) => s.type === 'scatter')!.data as Array<number | null>;
  t.same(target.map((v) => (v === null ? null : Math.round(v * 1000) / 1000)), [123.978, 114.441, null], 'MB targets drawn in MiB');
  t.equal(heap.name, 'heap');
  t.same(axesOf(heap.option, 'yAxis').length, 2, 'a heap panel per setup');
  // --node-options: the same checkout twice, told apart by its NODE_OPTIONS
  const twice = { ...run.figures, runs: run.figures.runs.filter((r) => r.setup === 'this checkout').flatMap((r) => [r, { ...r, nodeOptions: '' }]) };
  const names = seriesOf(memoryCharts(twice, { footer: 'f' })[0].option).filter((s) => s.type === 'bar').map((s) => s.name);
  t.same(names, ['this checkout, NODE_OPTIONS="--max-semi-space-size=8"', 'this checkout, NODE_OPTIONS=""']);
  // After a burst: a second panel, where all-in-one has its target too
  const postBurst = { rssMiB: 150, anonMiB: 100, fileMiB: 50, maxRssMiB: 180 };
  const burst = { ...run.figures, burst: 50000, targets: { rssMB: { ...run.figures.targets.rssMB, 'all-in-one': 210 } }, runs: run.figures.runs.map((r) => ({ ...r, processes: r.processes.map((p) => ({ ...p, postBurst })) })) };
  const [withBurst] = memoryCharts(burst, { footer: 'f' });
  const xAxes = axesOf(withBurst.option, 'xAxis');
  t.equal(xAxes.length, 2, 'idle and post-burst panels');
  t.same(xAxes[0].data, ['PostgreSQL: synchro (target ≤ 130 MB)', 'PostgreSQL: apiserver (target ≤ 120 MB)', 'SQLite: all-in-one'], 'all-in-one has no idle target');
  t.same(xAxes[1].data, ['PostgreSQL: synchro (target ≤ 130 MB)', 'PostgreSQL: apiserver (target ≤ 120 MB)', 'SQLite: all-in-one (target ≤ 210 MB)']);
  t.same(seriesOf(withBurst.option).filter((s) => s.type === 'bar' && s.xAxisIndex === 1).map((s) => s.data), [[150, 150, 150], [150, 150, 150]]);
});

t.test('ids are named after the chart, by first appearance', async (t) => {
  const a = stableIds('<g clip-path="url(#zr7-c0)" class="zr7-cls-12"></g><clipPath id="zr7-c0"></clipPath><g class="zr7-cls-3 zr7-cls-12"></g>', 'x');
  t.equal(a, '<g clip-path="url(#x-c0)" class="x-cls-0"></g><clipPath id="x-c0"></clipPath><g class="x-cls-1 x-cls-0"></g>\n');
  t.equal(stableIds('<g class="zr1-cls-40"></g>', 'x'), stableIds('<g class="zr9-cls-2"></g>', 'x'));
});

t.test('percentiles from a histogram are those of the samples it bins', async (t) => {
  const samples = Array.from({ length: 1000 }, (_, i) => (i * 7919) % 250);
  const h = histogramOf(samples);
  const a = fromSamples(samples);
  const b = fromHistogram(h);
  for (const q of [0, 0.1, 0.5, 0.9, 0.99, 0.999]) t.equal(b.quantile(q), a.quantile(q), `q=${q}`);
  t.equal(b.count, 1000);
  t.equal(b.max, a.max);
});

t.test('recordRun writes the figures and the charts; parseRun reads them back', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'panoptes-report-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const sample = sampleRuns.find((s) => s.run.bench === 'metrics')!.run;
  if (sample.bench !== 'metrics') throw new Error('sample');
  await recordRun('metrics-test', 'metrics', { objects: 1000, skip: undefined }, sample.figures, dir);
  const run = parseRun(readFileSync(join(dir, 'metrics-test.json'), 'utf8'), 'metrics-test.json');
  t.equal(run.bench, 'metrics');
  t.same(run.args, { objects: 1000 }, 'unset arguments left out');
  t.match(run.at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  t.ok(run.machine.cores >= 1 && run.machine.node === process.version);
  t.same(run.figures, JSON.parse(formatFigures(sample.figures)), 'the figures as written (rounded)');
  t.same(readdirSync(dir).sort(), ['metrics-test-count.svg', 'metrics-test-sum.svg', 'metrics-test.json']);
  // report() rewrites them all and removes charts no figures make
  writeFileSync(join(dir, 'stale-chart.svg'), '<svg/>');
  const r = report(dir);
  t.same(r.written.sort(), ['metrics-test-count.svg', 'metrics-test-sum.svg']);
  t.same(r.removed, ['stale-chart.svg']);
});

t.test('figures files: numbers rounded, arrays of numbers on one line', async (t) => {
  t.equal(roundFigure(12.3456), 12.35);
  t.equal(roundFigure(0.000123456), 0.0001235);
  t.equal(roundFigure(10539), 10539);
  t.equal(formatFigures({ a: [1.234, 2], b: [[1, 2], [3, 4]], c: { d: 'x' } }), '{\n  "a": [1.23,2],\n  "b": [[1,2],[3,4]],\n  "c": {\n    "d": "x"\n  }\n}');
});

t.test('a figures file that is not one is refused, naming the file', async (t) => {
  t.throws(() => parseRun('{', 'a.json'), /a\.json: not JSON/);
  t.throws(() => parseRun('{"bench":"nope","schema":1}', 'b.json'), /b\.json: unknown bench "nope"/);
  t.throws(() => parseRun('{"bench":"list","schema":2}', 'c.json'), /c\.json: schema 2/);
  t.throws(() => parseRun('{"bench":"list","schema":1}', 'd.json'), /d\.json: needs at, machine, args and figures/);
});
t.test('the committed charts are what npm run bench:report makes of the committed figures', async (t) => {
  t.ok(existsSync(benchDir), 'docs/bench/ exists');
  const jsons = readdirSync(benchDir).filter((f) => f.endsWith('.json'));
  t.ok(jsons.length >= 1, 'figures are committed');
  const made = renderAll(benchDir);
  const committed = readdirSync(benchDir).filter((f) => f.endsWith('.svg'));
  t.same(committed.sort(), [...made.keys()].sort(), 'one SVG per chart, none without figures');
  for (const [name, svg] of made) t.ok(readFileSync(join(benchDir, name), 'utf8') === svg, `${name} is up to date (npm run bench:report)`);
});
