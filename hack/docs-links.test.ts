// The Markdown of the repository holds together: every relative link and image of README.md,
// docs/ and every other .md file (node_modules aside) names a file that exists, every #anchor
// into a Markdown file names one of its headings (as GitHub makes their anchors), and the
// README stays a front door of at most 300 lines.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import t from 'tap';

const root = normalize(join(dirname(new URL(import.meta.url).pathname), '..'));
/** Not the repository's own Markdown: installed packages, build output, local data. */
const skipped = new Set(['node_modules', 'dist', 'data']);

function markdownFiles(dir = ''): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(root, dir))) {
    if (skipped.has(name) || name.startsWith('.')) continue;
    const rel = join(dir, name);
    if (statSync(join(root, rel)).isDirectory()) out.push(...markdownFiles(rel));
    else if (name.endsWith('.md')) out.push(rel);
  }
  return out.sort();
}

/** The text outside fenced code blocks (``` or ~~~, indented in lists too), inline code removed. */
export function prose(text: string): string {
  const out: string[] = [];
  let fence: string | undefined;
  for (const line of text.split('\n')) {
    const m = /^\s*(`{3,}|~{3,})/.exec(line);
    if (fence) {
      if (m && m[1][0] === fence[0] && m[1].length >= fence.length && line.trim() === m[1]) fence = undefined;
      out.push('');
    } else if (m) {
      fence = m[1];
      out.push('');
    } else out.push(line);
  }
  return out.join('\n').replace(/(`+)[\s\S]*?\1/g, (code) => code.replace(/[^\n]/g, ' '));
}

/** GitHub's anchor of a heading: its text lowercased, punctuation but `-` and `_` dropped, spaces to `-`. */
export function slug(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link: its text
    .replace(/<[^>]+>/g, '') // HTML tags
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors of a Markdown file's headings (duplicates get -1, -2, ...) and explicit ids. */
export function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fence: string | undefined;
  for (const line of text.split('\n')) {
    const f = /^\s*(`{3,}|~{3,})/.exec(line);
    if (fence) {
      if (f && f[1][0] === fence[0] && f[1].length >= fence.length && line.trim() === f[1]) fence = undefined;
      continue;
    }
    if (f) {
      fence = f[1];
      continue;
    }
    const h = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (h) {
      const base = slug(h[1].replace(/`/g, ''));
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      anchors.add(n === 0 ? base : `${base}-${n}`);
    }
    for (const m of line.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) anchors.add(m[1]);
  }
  return anchors;
}

/** Every link and image target of a Markdown text: inline, reference definitions, <img src>. */
export function targetsOf(text: string): string[] {
  const p = prose(text);
  const out: string[] = [];
  for (const m of p.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) out.push(m[1]);
  for (const m of p.matchAll(/^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)) out.push(m[1]);
  for (const m of p.matchAll(/<img\s[^>]*src="([^"]+)"/g)) out.push(m[1]);
  return out;
}

t.test('slugs as GitHub makes them', async (t) => {
  t.equal(slug('Watch: npm run bench:watch and npm run bench:watch-fanout'), 'watch-npm-run-benchwatch-and-npm-run-benchwatch-fanout');
  t.equal(slug('The panoptes command'), 'the-panoptes-command');
  t.equal(slug('External metrics for the HorizontalPodAutoscaler'), 'external-metrics-for-the-horizontalpodautoscaler');
  t.equal(slug('One rv order, written in parallel'), 'one-rv-order-written-in-parallel');
  t.same([...anchorsOf('# A\n## A\n```\n# not a heading\n```\n### A')], ['a', 'a-1', 'a-2']);
  t.same(targetsOf('[x](a.md) `[y](code.md)` ![c](img.svg)\n```\n[z](fenced.md)\n```\n[w](b.md#h "title")'), ['a.md', 'img.svg', 'b.md#h']);
});

const files = markdownFiles();
const anchorCache = new Map<string, Set<string>>();
const anchors = (file: string) => {
  let a = anchorCache.get(file);
  if (!a) anchorCache.set(file, (a = anchorsOf(readFileSync(join(root, file), 'utf8'))));
  return a;
};

t.test('the Markdown files are found', async (t) => {
  for (const f of ['README.md', 'docs/install.md', 'docs/benchmarks.md', 'apiserver/README.md']) t.ok(files.includes(f), f);
});

for (const file of files) {
  t.test(`${file}: relative links and images resolve`, async (t) => {
    const broken: string[] = [];
    for (const target of targetsOf(readFileSync(join(root, file), 'utf8'))) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:, ...
      const [rawPath, anchor] = target.split('#', 2);
      const path = decodeURIComponent(rawPath.split('?')[0]);
      const to = path === '' ? file : relative(root, join(root, dirname(file), path));
      if (to.startsWith('..') || !existsSync(join(root, to))) {
        broken.push(`${target}: no file ${to}`);
        continue;
      }
      if (anchor !== undefined && to.endsWith('.md') && !anchors(to).has(anchor)) broken.push(`${target}: no heading #${anchor} in ${to}`);
    }
    t.same(broken, [], 'every target exists');
  });
}

t.test('the README is a front door: at most 300 lines', async (t) => {
  const lines = readFileSync(join(root, 'README.md'), 'utf8').replace(/\n$/, '').split('\n').length;
  t.ok(lines <= 300, `README.md has ${lines} lines`);
});
