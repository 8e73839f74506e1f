// JSON path walk benchmark: how long one list with a field term on a JSON path holds the
// database's thread. On SQLite that thread is the event loop (better-sqlite3 is synchronous):
// every watch, health check and other request waits while it runs.
//
//   npm run bench:json-walk [-- --storage sqlite,postgres --env 5000,10000,20000,50000 --dense true --pods 10000 --runs 5]
//
// 1. One pod whose only container has n env entries (a 1.4 MiB pod at n = 50,000), listed
//    with `.spec.containers[*].env[*].name=nope`: the time of the list grows with n (linear),
//    or with n² when each element is looked up in the document again by its key. Then one pod
//    of 1.5 MiB whose env holds 500,000 empty objects: the most elements a document can hold
//    (`--dense false` leaves it out: a walk that is n² in it does not end).
// 2. `--pods` realistic pods (hack/fixtures.ts realisticPod, about 1.5 KB each), listed with
//    a plain path, one [*] and two [*] levels, none matching (every document read): the time per
//    MiB of documents, which sets the byte budget of such lists (storage/json-fields.ts);
//    `--pods 0` leaves it out.
// Each figure is the median of `--runs` lists, after one untimed. PostgreSQL comes from
// PANOPTES_TEST_POSTGRES_URL, or a throwaway server.
import { parseArgs } from 'node:util';
import { openTestStore, stopTestPostgres, type Backend } from '../../storage/testing.ts';
import type { JsonFieldRequirement } from '../../storage/json-fields.ts';
import type { ListQuery, UpstreamEvent } from '../../storage/types.ts';
import { realisticPod } from '../fixtures.ts';

type StoreOf = Awaited<ReturnType<typeof openTestStore>>['store'];

const { values } = parseArgs({
  options: {
    storage: { type: 'string', default: 'sqlite,postgres' },
    env: { type: 'string', default: '5000,10000,20000,50000' },
    dense: { type: 'string', default: 'true' },
    pods: { type: 'string', default: '10000' },
    runs: { type: 'string', default: '5' },
  },
});
const backendsToRun = values.storage.split(',') as Backend[];
const envSizes = values.env.split(',').map(Number);
const nPods = Number(values.pods);
const runs = Math.max(1, Number(values.runs));
// Every object may be read; the walks keep SQLite's deadline (storage/dialect.ts walkMs), as lists do.
const budget = { rows: Infinity, bytes: 64 * 1024 * 1024, ms: 60_000 };

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function timeList(store: StoreOf, q: ListQuery): Promise<number> {
  await store.list(q);
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await store.list(q);
    ms.push(performance.now() - t0);
  }
  return median(ms);
}

const term = (path: Array<string | null>): JsonFieldRequirement => ({ path, operator: 'in', values: ['nope'] });
const pods = (jsonFields: JsonFieldRequirement[]): ListQuery => ({ group: '', resource: 'pods', limit: 500, budget, jsonFields });

async function hugeArrays(backend: Backend): Promise<string[]> {
  const lines: string[] = [];
  for (const n of envSizes) {
    const { store, close } = await openTestStore(backend);
    try {
      const env = Array.from({ length: n }, (_, i) => ({ name: `VAR_${i}`, value: 'v' }));
      const object = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'big', namespace: 'ns', uid: 'big', resourceVersion: '1' }, spec: { containers: [{ name: 'app', image: 'i', env }] } };
      await store.applyBatch('c', [{ type: 'ADDED', group: '', version: 'v1', resource: 'pods', object }]);
      const ms = await timeList(store, pods([term(['spec', 'containers', null, 'env', null, 'name'])]));
      lines.push(`| ${backend} | ${n.toLocaleString('en')} | ${(JSON.stringify(object).length / (1024 * 1024)).toFixed(2)} MiB | ${ms.toFixed(1)} ms |`);
    } finally {
      await close();
    }
  }
  if (values.dense === 'false') return lines;
  const { store, close } = await openTestStore(backend);
  try {
    const object = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'dense', namespace: 'ns', uid: 'dense', resourceVersion: '1' }, spec: { containers: [{ env: Array.from({ length: 500_000 }, () => ({})) }] } };
    await store.applyBatch('c', [{ type: 'ADDED', group: '', version: 'v1', resource: 'pods', object }]);
    const ms = await timeList(store, pods([term(['spec', 'containers', null, 'env', null, 'name'])]));
    lines.push(`| ${backend} | 500,000 (\`{}\`) | ${(JSON.stringify(object).length / (1024 * 1024)).toFixed(2)} MiB | ${ms.toFixed(1)} ms |`);
  } finally {
    await close();
  }
  return lines;
}

async function perMiB(backend: Backend): Promise<string[]> {
  if (nPods === 0) return [];
  const { store, close } = await openTestStore(backend);
  try {
    let bytes = 0;
    for (let from = 0; from < nPods; from += 1000) {
      const batch: UpstreamEvent[] = [];
      for (let i = from; i < Math.min(nPods, from + 1000); i++) {
        const object = realisticPod({ name: `p-${i}`, namespace: `ns-${i % 20}`, uid: `pod-${i}`, upstreamRv: '1', labels: { app: `a${i % 10}` }, ownerName: `rs-${i % 50}`, ownerUid: `rs-${i % 50}`, nodeName: `n${i % 7}`, podIP: '10.0.0.1' });
        bytes += JSON.stringify(object).length;
        batch.push({ type: 'ADDED', group: '', version: 'v1', resource: 'pods', object });
      }
      await store.applyBatch('c', batch);
    }
    const mib = bytes / (1024 * 1024);
    const lines: string[] = [];
    const shapes: Array<[string, Array<string | null>]> = [
      ['.metadata.annotations.x', ['metadata', 'annotations', 'x']],
      ['.spec.containers[*].image', ['spec', 'containers', null, 'image']],
      ['.spec.containers[*].env[*].name', ['spec', 'containers', null, 'env', null, 'name']],
    ];
    for (const [what, path] of shapes) {
      const ms = await timeList(store, pods([term(path)]));
      lines.push(`| ${backend} | \`${what}\` | ${nPods.toLocaleString('en')} pods, ${mib.toFixed(1)} MiB | ${ms.toFixed(1)} ms | ${(ms / mib).toFixed(1)} ms |`);
    }
    return lines;
  } finally {
    await close();
  }
}

const huge: string[] = [];
const rates: string[] = [];
for (const backend of backendsToRun) {
  huge.push(...(await hugeArrays(backend)));
  rates.push(...(await perMiB(backend)));
}
await stopTestPostgres();
console.log('| storage | env entries | pod | list p50 |\n|---|---:|---:|---:|');
console.log(huge.join('\n'));
console.log('\n| storage | term (no match: every document read) | documents | list p50 | per MiB |\n|---|---|---:|---:|---:|');
console.log(rates.join('\n'));
