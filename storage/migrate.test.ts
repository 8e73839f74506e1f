import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { Store } from './store.ts';
import { backends, emptyStorageUrl, podEvent, stopTestPostgres } from './testing.ts';

t.teardown(stopTestPostgres);

const bin = fileURLToPath(new URL('../bin/panoptes.mjs', import.meta.url));

function migrateProcess(url: string): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, 'migrate', '--storage', url], { timeout: 60_000 }, (err, _stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stderr });
    });
  });
}

for (const backend of backends) {
  t.test(`${backend}: several processes migrating one fresh database at once`, async (t) => {
    const { url, cleanup } = await emptyStorageUrl(backend);
    t.teardown(cleanup);
    const results = await Promise.all([1, 2, 3, 4].map(() => migrateProcess(url)));
    for (const r of results) t.equal(r.code, 0, r.stderr);
    const store = await Store.open(url);
    t.teardown(() => store.close());
    t.equal(await store.watermark(), 1, 'one counter row');
    await store.applyBatch('c', [podEvent('ADDED', 'n', 'a', '1')]);
    t.equal(await store.watermark(), 2);
    const again = await migrateProcess(url);
    t.equal(again.code, 0, 'migrations are idempotent');
    t.equal(await store.watermark(), 2, 'and leave data alone');
  });
}
