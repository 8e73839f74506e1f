// npm run bench:report: every docs/bench/*.json to its SVG charts, without running a benchmark.
import { relative } from 'node:path';
import { benchDir } from './figures.ts';
import { report } from './report.ts';

const { written, removed } = report(benchDir);
const dir = relative(process.cwd(), benchDir) || '.';
console.log(`${dir}: ${written.length} charts written${written.length ? `: ${written.join(', ')}` : ''}`);
if (removed.length) console.log(`removed, no figures make them any more: ${removed.join(', ')}`);
