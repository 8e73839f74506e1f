// A database that is not there, at start: real `panoptes` processes against a closed
// loopback port. One log line per attempt, naming the URL without its password and the
// reason, no stack trace; retried with backoff for --storage-wait, then exit 1; a stop
// meanwhile exits 0; a failure that waiting cannot cure (a file that cannot be made) exits 1 at once.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as wait } from 'node:timers/promises';
import { freePort } from '../storage/testing/postgres.ts';
import t, { type Test } from 'tap';
import { spawnPanoptes, tempDir, waitUntil, type PanoptesProcess } from '../synchro/testutil.ts';

const procs: PanoptesProcess[] = [];
t.teardown(async () => {
  for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
  await Promise.all(procs.map((p) => p.exited));
});

function start(name: string, args: string[]): PanoptesProcess {
  const p = spawnPanoptes(name, args);
  procs.push(p);
  return p;
}

/** Within 90 s (a start through tsx on a loaded machine is slow), or undefined. */
async function exitOf(p: PanoptesProcess): Promise<number | null | undefined> {
  const giveUp = new AbortController();
  try {
    return await Promise.race([p.exited, wait(90_000, undefined, { signal: giveUp.signal }).catch(() => undefined)]);
  } finally {
    giveUp.abort();
  }
}

function checkLines(t: Test, p: PanoptesProcess, port: number) {
  const out = p.log.join('\n');
  t.notOk(p.log.some((l) => /^\s+at /.test(l)), 'no stack trace');
  t.notOk(out.includes('hunter2'), 'no password');
  for (const l of p.log.filter((x) => x.trim() !== '')) t.doesNotThrow(() => JSON.parse(l), `one JSON line: ${l.slice(0, 120)}`);
  const attempts = p.log.filter((l) => l.includes('retrying in'));
  for (const l of attempts) t.match(JSON.parse(l).msg, new RegExp(`^storage postgres://\\(redacted\\)@127\\.0\\.0\\.1:${port}/panoptes unreachable: connect ECONNREFUSED 127\\.0\\.0\\.1:${port}; retrying in \\d+\\.\\d s$`));
  return attempts;
}

t.test('synchro: retries with backoff for --storage-wait, then exits 1', async (t) => {
  const port = await freePort();
  const p = start('synchro', ['synchro', '--storage', `postgres://admin:hunter2@127.0.0.1:${port}/panoptes`, '--storage-wait', '3s', '--metrics-listen', 'off']);
  t.equal(await exitOf(p), 1, 'exit 1');
  const attempts = checkLines(t, p, port);
  t.ok(attempts.length >= 2, `retried: ${attempts.length} attempts logged`);
  const delays = attempts.map((l) => JSON.parse(l).retryInMs as number);
  t.ok(delays[1] > delays[0], `the delay grows: ${delays.join(', ')} ms`);
  const last = JSON.parse(p.log.filter((l) => l.trim() !== '').at(-1)!);
  t.match(last, { level: 'error', msg: new RegExp(`^storage postgres://\\(redacted\\)@127\\.0\\.0\\.1:${port}/panoptes unreachable: connect ECONNREFUSED .*; gave up after \\d+ attempts in \\d+\\.\\d s \\(--storage-wait 3\\.0 s\\)$`) });
});

t.test('all-in-one: keeps retrying until stopped, then exits 0', async (t) => {
  const port = await freePort();
  const p = start('all-in-one', ['all-in-one', '--storage', `postgres://admin:hunter2@127.0.0.1:${port}/panoptes`, '--insecure-listen', '127.0.0.1:0']);
  await waitUntil('two attempts logged', () => p.log.filter((l) => l.includes('retrying in')).length >= 2, 90_000, 100);
  p.child.kill('SIGTERM');
  t.equal(await exitOf(p), 0, 'exit 0 on SIGTERM');
  checkLines(t, p, port);
  t.ok(p.log.some((l) => l.includes('stopping while waiting for storage')), 'says it stops');
});

t.test('apiserver --storage-wait 0s: one attempt, exit 1', async (t) => {
  const port = await freePort();
  const p = start('apiserver', ['apiserver', '--storage', `postgres://admin:hunter2@127.0.0.1:${port}/panoptes`, '--storage-wait', '0s', '--insecure-listen', '127.0.0.1:0']);
  t.equal(await exitOf(p), 1);
  checkLines(t, p, port);
  t.ok(p.log.some((l) => l.includes('gave up after 1 attempt in')), 'gave up at once');
});

t.test('a file that cannot be made is not waited for', async (t) => {
  const { dir, cleanup } = tempDir();
  t.teardown(cleanup);
  writeFileSync(join(dir, 'file'), '');
  const p = start('migrate', ['migrate', '--storage', `sqlite:${dir}/file/panoptes.db`]);
  t.equal(await exitOf(p), 1);
  t.notOk(p.log.some((l) => /^\s+at /.test(l)), 'no stack trace');
  t.notOk(p.log.some((l) => l.includes('retrying')), 'no retry');
  t.ok(p.log.some((l) => l.includes(`storage sqlite:${dir}/file/panoptes.db failed: EEXIST: file already exists`)), p.log.join('\n'));
});
