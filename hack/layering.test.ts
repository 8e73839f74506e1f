// The layering rules of the source tree, checked on every import of every non-test module:
// the apiserver and synchro meet only in storage (what both need lives in api/, member/,
// kube/ or lib/), SQL stays in storage/, and the shared modules depend on neither process.
// Inside apiserver/ (its layout: apiserver/README.md "Layout"): no import circles, no import
// that runs back up to a folder above the importer, and each own kind one folder that only
// the composition root imports. Inside synchro/ (synchro/README.md "Layout"): the same first
// two rules.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import t from 'tap';

const root = normalize(join(dirname(new URL(import.meta.url).pathname), '..'));

function sources(dir: string, withTestSupport = false): string[] {
  if (dir.endsWith('.ts')) return [dir]; // one file
  const out: string[] = [];
  for (const name of readdirSync(join(root, dir))) {
    const rel = join(dir, name);
    if (statSync(join(root, rel)).isDirectory()) out.push(...sources(rel, withTestSupport));
    // Tests and their helpers (testing.ts, testutil.ts) may reach across: they drive both sides.
    else if (name.endsWith('.ts') && !name.endsWith('.test.ts') && (withTestSupport || (name !== 'testing.ts' && name !== 'testutil.ts'))) out.push(rel);
  }
  return out;
}

/** The modules of the tree a file imports (relative imports, type-only and side-effect ones too), as paths from the root. */
function modulesOf(file: string): string[] {
  const text = readFileSync(join(root, file), 'utf8');
  const out = new Set<string>();
  for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)[^'"]*?from\s+'([^']+)'|import\(\s*'([^']+)'\s*\)|(?:^|\n)import\s+'([^']+)'/g)) {
    const spec = m[1] ?? m[2] ?? m[3];
    if (spec.startsWith('.')) out.add(relative(root, join(root, dirname(file), spec)));
  }
  return [...out];
}

/** The import circles among some modules: every strongly connected set of more than one module, or a module importing itself (Tarjan). */
function circles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const set: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        set.push(w);
      } while (w !== v);
      if (set.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(set.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

/** The imports of `graph` that run back up: to a module of a folder the importer sits in (`../x.ts`, `../../x.ts`). */
function upward(graph: Map<string, string[]>, allowed: (file: string, imported: string) => boolean = () => false): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const [file, imported] of graph) {
    const up = imported.filter((m) => {
      const folder = dirname(m);
      return folder !== dirname(file) && dirname(file).startsWith(folder + '/') && !allowed(file, m);
    });
    out.set(file, up);
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

// apiserver/'s own layout (apiserver/README.md "Layout").
/** The composition roots: the only modules at apiserver/'s top, which wire the folders together; nothing else imports them. */
const compositionRoots = ['apiserver/server.ts', 'apiserver/kinds.ts'];
/** Panoptes's own kinds, one folder each below apiserver/registry/ (generic/ is the machinery they register with). */
const ownKinds = ['cluster', 'clustersource', 'multiclusterservice', 'synchromembers'];
const apiserverGraph = (): Map<string, string[]> => new Map(sources('apiserver').map((f) => [f, modulesOf(f).filter((m) => m.startsWith('apiserver/'))]));

t.test('apiserver/ has no import circles', async (t) => {
  const graph = apiserverGraph();
  t.ok(graph.size > 50, 'every module of apiserver/ is in the graph');
  t.same(circles(graph), [], 'no module of apiserver/ imports, directly or not, a module that imports it');
  // A guard against a circle finder that finds nothing.
  t.same(circles(new Map([['a', ['b']], ['b', ['c']], ['c', ['a']], ['d', ['a']]])), [['a', 'b', 'c']]);
});

t.test('apiserver/: no import runs back up, and only the composition roots sit at the top', async (t) => {
  // A module imports modules of its own folder and of folders below or beside it; never one of
  // a folder it sits in (`../x.ts`, `../../x.ts`: its parent's, its grandparent's): what two
  // folders share lives in a folder of its own, and what wires them is a composition root.
  for (const [file, up] of upward(apiserverGraph())) t.same(up, [], `${file} imports no module of a folder above it`);
  const top = sources('apiserver').filter((f) => dirname(f) === 'apiserver');
  t.same(top.sort(), [...compositionRoots].sort(), 'apiserver/ holds only its composition roots; every other module is in a folder of its concept');
});

t.test('each own kind is one folder, which only the composition root imports', async (t) => {
  const kindFolders = readdirSync(join(root, 'apiserver/registry')).filter((n) => statSync(join(root, 'apiserver/registry', n)).isDirectory());
  t.same(kindFolders.sort(), [...ownKinds, 'generic'].sort(), 'apiserver/registry/ holds the generic machinery and one folder per own kind');
  for (const kind of ownKinds) {
    const folder = `apiserver/registry/${kind}/`;
    for (const part of ['table.ts', 'schema.ts']) t.ok(statSync(join(root, folder + part)).isFile(), `${folder}${part}: the kind's Table and OpenAPI schema are in its folder`);
  }
  for (const kind of ['cluster', 'clustersource', 'multiclusterservice']) t.ok(statSync(join(root, `apiserver/registry/${kind}/strategy.ts`)).isFile(), `apiserver/registry/${kind}/strategy.ts: a writable kind's strategy is in its folder`);
  const kindOf = (f: string): string | undefined => ownKinds.find((k) => f.startsWith(`apiserver/registry/${k}/`));
  for (const [file, imported] of apiserverGraph()) {
    if (compositionRoots.includes(file)) continue;
    const own = kindOf(file);
    const bad = imported.filter((m) => kindOf(m) !== undefined && kindOf(m) !== own);
    t.same(bad, [], `${file} imports no own kind's module${own ? ' of another kind' : ''}: kinds register with the generic machinery (apiserver/kinds.ts)`);
  }
});

t.test('storage/ imports nothing of hack/, its test support included', async (t) => {
  for (const file of sources('storage', true)) {
    const bad = importsOf(file).folders.filter((f) => f === 'hack');
    t.same(bad, [], `${file} imports nothing of hack/: the tools depend on storage, not the reverse`);
  }
  t.ok(sources('storage', true).includes('storage/testing.ts'), 'storage/testing.ts is checked');
});

// synchro/'s own layout (synchro/README.md "Layout").
/** synchro/'s composition root: the only module at its top (startSynchro); nothing else imports it. */
const synchroRoot = 'synchro/synchro.ts';
/**
 * The one allowed import up: each source kind of import/sources/ implements the contract of
 * import/ (candidate.ts: what a source yields; kubeconfig.ts: the kubeconfig reader two kinds
 * share), as the plugins of a folder implement its interface.
 */
const synchroSharedUp = (file: string, imported: string): boolean =>
  file.startsWith('synchro/import/sources/') && ['synchro/import/candidate.ts', 'synchro/import/kubeconfig.ts'].includes(imported);
const synchroGraph = (): Map<string, string[]> => new Map(sources('synchro').map((f) => [f, modulesOf(f).filter((m) => m.startsWith('synchro/'))]));

t.test('synchro/ has no import circles', async (t) => {
  const graph = synchroGraph();
  t.ok(graph.size > 40, 'every module of synchro/ is in the graph');
  t.same(circles(graph), [], 'no module of synchro/ imports, directly or not, a module that imports it');
});

t.test('synchro/: no import runs back up, and only the composition root sits at the top', async (t) => {
  const graph = synchroGraph();
  for (const [file, up] of upward(graph, synchroSharedUp)) t.same(up, [], `${file} imports no module of a folder above it`);
  const top = sources('synchro').filter((f) => dirname(f) === 'synchro');
  t.same(top, [synchroRoot], 'synchro/ holds only its composition root; every other module is in a folder of its concept');
  // Guards against a checker that finds nothing: the folders are seen, and so is the one allowance.
  for (const folder of ['cluster', 'commit', 'config', 'membership', 'metrics', 'mcs', 'import']) t.ok([...graph.keys()].some((f) => f.startsWith(`synchro/${folder}/`)), `synchro/${folder}/ is checked`);
  t.ok(graph.get('synchro/import/sources/argocd.ts')?.includes('synchro/import/candidate.ts'), 'the sources import their contract');
  t.same(upward(new Map([['synchro/a/b.ts', ['synchro/x.ts', 'synchro/a/c.ts', 'synchro/d/e.ts']]])).get('synchro/a/b.ts'), ['synchro/x.ts']);
});
