// Stage marks: off without PANOPTES_TRACE_FILE; with it, a process's marks reach the file by
// exit, and readMarks keeps each rv's first time per stage.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { readMarks, tracing } from './trace.ts';

const script = `import { traceMark, tracing } from ${JSON.stringify(new URL('./trace.ts', import.meta.url).pathname)};
console.log(tracing);
traceMark('committed', 5, 7, 1000.25);
traceMark('dispatched', 6, 6, 1001.5);`;

function run(env: Record<string, string>): string {
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 30_000 });
  if (r.status !== 0) throw new Error(r.stderr);
  return r.stdout.trim();
}

t.test('off unless a file is named', async (t) => {
  t.equal(tracing, process.env.PANOPTES_TRACE_FILE !== undefined && process.env.PANOPTES_TRACE_FILE !== '');
  const dir = mkdtempSync(join(tmpdir(), 'panoptes-trace-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  t.equal(run({ PANOPTES_TRACE_FILE: '' }), 'false');
  t.notOk(existsSync(join(dir, 'none.jsonl')));
});

t.test("a process's marks are in the file at exit, each rv of a range at its time", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'panoptes-trace-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'trace.jsonl');
  t.equal(run({ PANOPTES_TRACE_FILE: file }), 'true');
  t.equal(run({ PANOPTES_TRACE_FILE: file }), 'true', 'a second process appends');
  const text = readFileSync(file, 'utf8');
  t.equal(text.trim().split('\n').length, 4);
  const marks = readMarks(text + 'not json\n{"s":"committed","a":5,"b":5,"t":999}\n');
  t.same([...marks.get('committed')!], [[5, 999], [6, 1000.25], [7, 1000.25]], 'the first time of each rv');
  t.same([...marks.get('dispatched')!], [[6, 1001.5]]);
});
