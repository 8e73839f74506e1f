// The layering rules of the source tree, checked on every import of every non-test module:
// the apiserver and synchro meet only in storage (what both need lives in api/, member/,
// kube/ or lib/), SQL stays in storage/, and the shared modules depend on neither process.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import t from 'tap';

const root = normalize(join(dirname(new URL(import.meta.url).pathname), '..'));

function sources(dir: string): string[] {
  if (dir.endsWith('.ts')) return [dir]; // one file
  const out: string[] = [];
  for (const name of readdirSync(join(root, dir))) {
    const rel = join(dir, name);
    if (statSync(join(root, rel)).isDirectory()) out.push(...sources(rel));
    // Tests and their helpers (testing.ts, testutil.ts) may reach across: they drive both sides.
    else if (name.endsWith('.ts') && !name.endsWith('.test.ts') && name !== 'testing.ts' && name !== 'testutil.ts') out.push(rel);
  }
  return out;
}

/** The top-level folder of every relative module a file imports, and the packages it imports. */
function importsOf(file: string): { folders: string[]; packages: string[] } {
  const text = readFileSync(join(root, file), 'utf8');
  const folders: string[] = [];
  const packages: string[] = [];
  for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)[^'"]*?from\s+'([^']+)'|import\(\s*'([^']+)'\s*\)/g)) {
    const spec = m[1] ?? m[2];
    if (spec.startsWith('.')) folders.push(relative(root, join(root, dirname(file), spec)).split('/')[0]);
    else packages.push(spec);
  }
  return { folders, packages };
}

/** The cli's wiring of the apiserver process (`panoptes apiserver`): held to the apiserver's rule. */
const apiserverWiring = ['cli/commands/apiserver.ts', 'cli/commands/proxy-credentials.ts'];

const rules: Array<{ dirs: string[]; forbidden: string[]; why: string }> = [
  { dirs: ['apiserver'], forbidden: ['synchro'], why: 'the apiserver and synchro meet only in storage' },
  { dirs: apiserverWiring, forbidden: ['synchro'], why: "the apiserver's member credentials come from member/, not synchro" },
  { dirs: ['synchro'], forbidden: ['apiserver'], why: 'the apiserver and synchro meet only in storage' },
  { dirs: ['api', 'member', 'kube', 'lib'], forbidden: ['apiserver', 'synchro', 'cli', 'hack'], why: 'shared modules depend on neither process' },
  { dirs: ['api', 'member', 'kube', 'lib'], forbidden: ['storage'], why: 'shared modules hold no SQL and need no database' },
  { dirs: ['storage'], forbidden: ['apiserver', 'synchro', 'cli', 'hack', 'member'], why: 'storage is the bottom layer' },
];

t.test('no module imports across a layer boundary', async (t) => {
  for (const rule of rules) {
    for (const dir of rule.dirs) {
      for (const file of sources(dir)) {
        const bad = importsOf(file).folders.filter((f) => rule.forbidden.includes(f));
        t.same(bad, [], `${file} imports nothing from ${rule.forbidden.join(', ')}: ${rule.why}`);
      }
    }
  }
});

t.test('SQL only in storage/: nothing else imports knex or a database driver', async (t) => {
  const drivers = ['knex', 'pg', 'better-sqlite3', 'sqlite3'];
  for (const dir of ['api', 'apiserver', 'cli', 'kube', 'lib', 'member', 'synchro']) {
    for (const file of sources(dir)) {
      const bad = importsOf(file).packages.filter((p) => drivers.includes(p));
      t.same(bad, [], `${file} imports no database package`);
    }
  }
});

t.test('the checker sees imports', async (t) => {
  // A guard against a checker that passes because it finds nothing.
  t.ok(importsOf('apiserver/registry/cluster/strategy.ts').folders.includes('api'));
  t.ok(importsOf('storage/store.ts').packages.length + importsOf('storage/connect.ts').packages.length > 0);
  for (const file of apiserverWiring) t.same(sources(file), [file], `${file} is checked`);
  t.ok(importsOf('cli/commands/proxy-credentials.ts').folders.includes('member'), "the proxy's credentials come from member/");
});
