#!/usr/bin/env node
// Entry point of the `panoptes` command. Runs the JavaScript `npm run build` compiles into
// dist/ (what the image runs) when it is there and none of the TypeScript sources it was
// built from is newer; otherwise the sources themselves through tsx's loader (a checkout:
// tests, the demo), which costs start-up time and tens of MB of memory per process.
import { existsSync, readFileSync, statSync } from 'node:fs';

const root = new URL('../', import.meta.url);
const stamp = new URL('dist/.built', root);

function builtIsCurrent() {
  if (!existsSync(stamp)) return false;
  let sources;
  try {
    ({ sources } = JSON.parse(readFileSync(stamp, 'utf8')));
  } catch {
    return false;
  }
  const built = statSync(stamp).mtimeMs;
  // A source that is gone (the image ships dist/ alone) does not make the build stale.
  return sources.every((f) => {
    const source = new URL(f, root);
    return !existsSync(source) || statSync(source).mtimeMs <= built;
  });
}

let main;
if (builtIsCurrent()) {
  ({ main } = await import(new URL('dist/cli/main.js', root).href));
} else {
  const { register } = await import('tsx/esm/api');
  register();
  ({ main } = await import('../cli/main.ts'));
}
process.exitCode = await main(process.argv.slice(2));
