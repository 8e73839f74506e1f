#!/usr/bin/env node
// Entry point of the `panoptes` command. Runs the JavaScript `npm run build` compiles into
// dist/ (what the image runs) when it is there and no TypeScript source is newer than it;
// otherwise the sources themselves through tsx's loader (a checkout: tests, the demo), which
// costs start-up time and tens of MB of memory per process.
import { existsSync, readdirSync, statSync } from 'node:fs';

const root = new URL('../', import.meta.url);
const stamp = new URL('dist/.built', root);

/** Whether any .ts file under these folders changed after `since` (ms). */
function newerSource(dirs, since) {
  const pending = dirs.map((d) => new URL(`${d}/`, root));
  while (pending.length > 0) {
    const dir = pending.pop();
    if (!existsSync(dir)) continue;
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.isDirectory()) pending.push(new URL(`${e.name}/`, dir));
      else if (e.name.endsWith('.ts') && statSync(new URL(e.name, dir)).mtimeMs > since) return true;
    }
  }
  return false;
}

const compiled = existsSync(stamp) && !newerSource(['cli', 'apiserver', 'storage', 'synchro', 'kube', 'lib', 'hack'], statSync(stamp).mtimeMs);
let main;
if (compiled) {
  ({ main } = await import(new URL('dist/cli/main.js', root).href));
} else {
  const { register } = await import('tsx/esm/api');
  register();
  ({ main } = await import('../cli/main.ts'));
}
process.exitCode = await main(process.argv.slice(2));
