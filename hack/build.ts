// `npm run build`: compiles the TypeScript sources to JavaScript in dist/ (tsconfig.build.json),
// with the data files the code reads beside it, and stamps the build. bin/panoptes.mjs runs
// dist/ when no source file is newer than the stamp: a process then loads plain JavaScript
// instead of compiling TypeScript through tsx at start, which costs time and memory (the
// compiler, and the sources and source maps it keeps).
import { execFileSync } from 'node:child_process';
import { cpSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const root = new URL('../', import.meta.url);
const dist = new URL('dist/', root);
rmSync(dist, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', new URL('tsconfig.build.json', root).pathname], { stdio: 'inherit' });
// Read at run time relative to the modules (new URL('./reference/...', import.meta.url)).
for (const dir of ['apiserver/reference', 'kube/reference', 'hack/sim/reference']) cpSync(new URL(dir, root), new URL(dir, dist), { recursive: true });
cpSync(new URL('package.json', root), new URL('package.json', dist));
writeFileSync(new URL('.built', dist), `${new Date().toISOString()}\n`);
console.log(`built ${dist.pathname}`);
