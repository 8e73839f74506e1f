// `npm run build`: compiles the TypeScript sources to JavaScript in dist/ (tsconfig.build.json),
// with the data files the code reads beside it, and stamps the build with the list of its
// sources. bin/panoptes.mjs runs dist/ when none of them is newer: a process then loads plain JavaScript
// instead of compiling TypeScript through tsx at start, which costs time and memory (the
// compiler, and the sources and source maps it keeps).
import { execFileSync } from 'node:child_process';
import { cpSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { relative } from 'node:path';

const root = new URL('../', import.meta.url);
const dist = new URL('dist/', root);
rmSync(dist, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const listed = execFileSync(process.execPath, [tsc, '-p', new URL('tsconfig.build.json', root).pathname, '--listFiles'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
// The sources compiled (relative paths): bin/panoptes.mjs runs dist/ while none is newer than the stamp.
const sources = listed
  .split('\n')
  .map((f) => relative(root.pathname, f.trim()))
  .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts') && !f.startsWith('..') && !f.startsWith('node_modules/'));
// Read at run time relative to the modules (new URL('./reference/...', import.meta.url)).
for (const dir of ['apiserver/reference', 'kube/reference', 'hack/sim/reference']) cpSync(new URL(dir, root), new URL(dir, dist), { recursive: true });
cpSync(new URL('package.json', root), new URL('package.json', dist));
writeFileSync(new URL('.built', dist), `${JSON.stringify({ built: new Date().toISOString(), sources }, null, 1)}\n`);
console.log(`built ${dist.pathname} from ${sources.length} source files`);
