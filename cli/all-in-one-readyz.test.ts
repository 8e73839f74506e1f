// all-in-one's one listener: /readyz fails, naming the synchro half's check, while that half
// cannot work (its clusters file does not parse at start), and passes once it can; /livez stays ok.
import { writeFileSync } from 'node:fs';
import { freePort } from '../storage/testing/postgres.ts';
import t from 'tap';
import { spawnPanoptes, tempDir, waitUntil, writeClusters, type PanoptesProcess } from '../synchro/testutil.ts';

const get = async (url: string) => {
  const res = await fetch(url);
  return { status: res.status, body: await res.text() };
};

t.test('all-in-one /readyz includes the synchro half', async (t) => {
  const { dir, cleanup } = tempDir();
  const file = `${dir}/clusters.yaml`;
  writeFileSync(file, 'clusters: [ {name: x\n');
  const port = await freePort();
  const p: PanoptesProcess = spawnPanoptes('all-in-one', ['all-in-one', '--storage', `sqlite:${dir}/panoptes.db`, '--clusters', file, '--insecure-listen', `127.0.0.1:${port}`]);
  t.teardown(async () => {
    if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGTERM');
    await p.exited;
    cleanup();
  });
  const base = `http://127.0.0.1:${port}`;
  const first = (await waitUntil('serving', () => get(`${base}/readyz`).catch(() => undefined), 90_000, 200).catch((err: Error) => {
    throw new Error(`${err.message}; log: ${p.log.slice(-10).join('\n')}`);
  }))!;
  t.equal(first.status, 500, 'not ready');
  t.match(first.body, /^\[-\]synchro-config failed: .*clusters\.yaml/m, 'names the broken file');
  t.match(first.body, /^\[-\]synchro-membership failed: not in the membership/m);
  t.match(first.body, /^\[\+\]storage ok$/m);
  t.equal((await get(`${base}/livez`)).status, 200, 'alive');

  writeClusters(file, []);
  await waitUntil('ready once the file parses', async () => (await get(`${base}/readyz`)).status === 200, 60_000, 200);
  t.match((await get(`${base}/readyz?verbose`)).body, /^\[\+\]synchro-config ok\n\[\+\]synchro-membership ok\nreadyz check passed$/m);
});
