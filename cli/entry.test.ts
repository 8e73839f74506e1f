// bin/panoptes.mjs runs the build in dist/ while it is current and the TypeScript sources
// through tsx otherwise: a fake checkout whose two `main`s say which one ran.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { tempDir } from '../synchro/testutil.ts';

const repo = new URL('..', import.meta.url).pathname;

t.test('bin/panoptes.mjs: dist/ when no source it was built from is newer, else the sources', async (t) => {
  const { dir, cleanup } = tempDir();
  t.teardown(cleanup);
  mkdirSync(join(dir, 'bin'));
  cpSync(join(repo, 'bin/panoptes.mjs'), join(dir, 'bin/panoptes.mjs'));
  symlinkSync(join(repo, 'node_modules'), join(dir, 'node_modules'));
  writeFileSync(join(dir, 'package.json'), '{"type":"module"}');
  mkdirSync(join(dir, 'cli'));
  mkdirSync(join(dir, 'dist/cli'), { recursive: true });
  writeFileSync(join(dir, 'cli/main.ts'), `export async function main(argv: string[]): Promise<number> { console.log('sources ' + argv.join(' ')); return 3; }\n`);
  writeFileSync(join(dir, 'dist/cli/main.js'), `export async function main(argv) { console.log('dist ' + argv.join(' ')); return 3; }\n`);
  const run = () => {
    try {
      execFileSync(process.execPath, [join(dir, 'bin/panoptes.mjs'), 'a', 'b'], { encoding: 'utf8' });
      return 'exit 0';
    } catch (err) {
      const e = err as { status: number; stdout: string };
      return `${e.stdout.trim()} (exit ${e.status})`;
    }
  };
  t.equal(run(), 'sources a b (exit 3)', 'no build: the sources');

  const stamp = join(dir, 'dist/.built');
  writeFileSync(stamp, JSON.stringify({ built: 'now', sources: ['cli/main.ts', 'cli/gone.ts'] }));
  const old = new Date(Date.now() - 60_000);
  utimesSync(join(dir, 'cli/main.ts'), old, old);
  t.equal(run(), 'dist a b (exit 3)', 'a current build: dist/, with the arguments and exit code');

  utimesSync(join(dir, 'cli/main.ts'), new Date(Date.now() + 60_000), new Date(Date.now() + 60_000));
  t.equal(run(), 'sources a b (exit 3)', 'a source newer than the build: the sources');

  cpSync(join(dir, 'cli/main.ts'), join(dir, 'main.ts.saved'));
  rmSync(join(dir, 'cli/main.ts'));
  t.equal(run(), 'dist a b (exit 3)', 'sources absent (an image ships dist/ alone): dist/');

  cpSync(join(dir, 'main.ts.saved'), join(dir, 'cli/main.ts'));
  utimesSync(join(dir, 'cli/main.ts'), old, old);
  writeFileSync(stamp, 'not json');
  t.equal(run(), 'sources a b (exit 3)', 'an unreadable stamp: the sources');
});
