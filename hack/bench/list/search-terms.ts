// Search-term figures of `npm run bench:list`, also runnable alone:
//   node --import tsx hack/bench/list/search-terms.ts [--objects 100000] [--samples 30] [--storage sqlite|postgres|both]
// Writes --objects pods (10 clusters, 20 namespaces, one creation second each) straight into a
// fresh store per backend, then measures p50 of the first page (limit 500, storage.list: the
// apiserver's read without HTTP) of: fuzzy name at 0.1% and 10% selectivity, orderBy
// creationTimestamp desc, a 2% creation range, each beside the same page without search terms
// (target: within 3x) and beside the same query as plain unindexed SQL over the JSON object
// (what Clusterpedia does), in the same run.
import { parseArgs } from 'node:util';
import type { Knex } from 'knex';
import { setLogLevel } from '../../../lib/log.ts';
import { Store } from '../../../storage/store.ts';
import { emptyStorageUrl, podEvent, stopTestPostgres, type Backend } from '../../../storage/testing.ts';
import type { ListQuery, UpstreamEvent } from '../../../storage/types.ts';
import { percentile } from '../../fixtures.ts';

const start = Date.UTC(2026, 0, 1);
const time = (s: number) => new Date(start + s * 1000).toISOString().replace('.000Z', 'Z');

/** Pod i: 1 in 1,000 names holds "rare", 1 in 10 "tenth"; created at second i. */
function pod(i: number): UpstreamEvent {
  const tag = i % 1000 === 7 ? 'rare-' : i % 10 === 3 ? 'tenth-' : '';
  const e = podEvent('ADDED', `bench-${i % 20}`, `app-${i % 40}-${tag}${i}`, '1', { labels: { app: `app-${i % 40}` }, nodeName: `node-${i % 30}` });
  e.object.metadata!.creationTimestamp = time(i);
  return e;
}

interface Case {
  name: string;
  query: Partial<ListQuery>;
  /** The same query as plain SQL over the JSON object, no index: Clusterpedia's way. */
  baseline(qb: Knex.QueryBuilder, json: (path: string[]) => string): Knex.QueryBuilder;
}

async function p50(samples: number, fn: () => Promise<unknown>): Promise<number> {
  const ms: number[] = [];
  for (let i = 0; i < samples; i++) {
    const t0 = performance.now();
    await fn();
    ms.push(performance.now() - t0);
  }
  return percentile(ms, 50);
}

export async function benchSearchTerms(opts: { objects: number; samples: number; backends: Backend[] }): Promise<void> {
  const n = opts.objects;
  const cases: Case[] = [
    { name: 'fuzzy name, 0.1%', query: { nameContains: ['RARE'] }, baseline: (k, j) => k.whereRaw(`lower(${j(['metadata', 'name'])}) LIKE ?`, ['%rare%']).orderBy(['o.namespace', 'o.name', 'o.cluster']) },
    { name: 'fuzzy name, 10%', query: { nameContains: ['tenth'] }, baseline: (k, j) => k.whereRaw(`lower(${j(['metadata', 'name'])}) LIKE ?`, ['%tenth%']).orderBy(['o.namespace', 'o.name', 'o.cluster']) },
    { name: 'orderBy creationTimestamp desc', query: { orderBy: [{ key: 'creationTimestamp', desc: true }] }, baseline: (k, j) => k.orderByRaw(`${j(['metadata', 'creationTimestamp'])} DESC`) },
    {
      name: 'createdSince/Before, 2%',
      query: { createdSince: time(n * 0.5), createdBefore: time(n * 0.52) },
      baseline: (k, j) => k.whereRaw(`${j(['metadata', 'creationTimestamp'])} >= ? AND ${j(['metadata', 'creationTimestamp'])} < ?`, [time(n * 0.5), time(n * 0.52)]).orderBy(['o.namespace', 'o.name', 'o.cluster']),
    },
  ];
  for (const backend of opts.backends) {
    const { url, cleanup } = await emptyStorageUrl(backend);
    const store = await Store.open(url);
    try {
      const t0 = performance.now();
      const perCluster = Math.ceil(n / 10);
      for (let c = 0; c < 10; c++) {
        for (let from = c * perCluster; from < Math.min(n, (c + 1) * perCluster); from += 1000) {
          const events: UpstreamEvent[] = [];
          for (let i = from; i < Math.min(n, from + 1000, (c + 1) * perCluster); i++) events.push(pod(i));
          await store.applyBatch(`c${c}`, events);
        }
      }
      await store.analyze();
      console.log(`search terms, ${backend}: ${n} pods written in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
      // What the terms' indexes take beside the objects table.
      const { relations } = await store.conn.dialect.relationSizes(store.conn.knex);
      const mib = (re: RegExp) => (relations.filter((r) => re.test(r.name)).reduce((a, r) => a + r.bytes, 0) / 2 ** 20).toFixed(1);
      console.log(`  sizes: objects ${mib(/^objects$/)} MiB; objects_by_created ${mib(/^objects_by_created$/)} MiB, objects_by_name ${mib(/^objects_by_name$/)} MiB, trigram index ${mib(/^objects_name(s_.*|_trgm)$/)} MiB`);
      const pods = (q: Partial<ListQuery>): ListQuery => ({ group: '', resource: 'pods', limit: 500, ...q });
      const plain = await p50(opts.samples, () => store.list(pods({})));
      console.log(`  first page without search terms: p50 ${plain.toFixed(1)} ms`);
      const { knex, dialect } = store.conn;
      const json = (path: string[]) => {
        const [sql, bindings] = dialect.jsonScalarTextAt(dialect.jsonDocument.ref, path);
        return knex.raw(sql, bindings as Knex.RawBinding[]).toQuery();
      };
      async function measure(prefix: string, only: (c: Case) => boolean = () => true, reference = plain) {
        for (const c of cases.filter(only)) {
          const got = (await store.list(pods(c.query))).items.length;
          const ms = await p50(opts.samples, () => store.list(pods(c.query)));
          const baseQuery = () => {
            const qb = knex('objects as o').select('o.object').where('o.grp', '').andWhere('o.resource', 'pods').limit(500);
            if (dialect.jsonDocument.join) qb.joinRaw(dialect.jsonDocument.join);
            return c.baseline(qb, json);
          };
          const baseRows = ((await baseQuery()) as unknown[]).length;
          const base = await p50(Math.min(opts.samples, 10), () => baseQuery());
          const target = c.name.startsWith('createdSince') ? '' : ` (target 30 ms: ${ms <= 30 ? 'MET' : 'MISSED'})`;
          console.log(`  ${prefix}${c.name}: ${got} items, p50 ${ms.toFixed(1)} ms${target}, ${(ms / reference).toFixed(2)}x the page without terms (target 3x: ${ms <= 3 * reference ? 'MET' : 'MISSED'}); unindexed SQL over JSON: ${baseRows} rows, p50 ${base.toFixed(1)} ms`);
        }
      }
      await measure('');
      if (backend === 'postgres') {
        // What autovacuum does soon after a load (autovacuum_vacuum_insert_threshold): the
        // visibility map then vouches for the pages, and a substring term's keys are read from
        // the list index alone (Dialect.keysFirst). Right after the load they are not yet.
        await knex.raw('VACUUM ANALYZE objects');
        const after = await p50(opts.samples, () => store.list(pods({})));
        console.log(`  after VACUUM (as autovacuum leaves it): first page without search terms: p50 ${after.toFixed(1)} ms`);
        await measure('after VACUUM: ', (c) => c.name.startsWith('fuzzy'), after);
      }
    } finally {
      await store.close();
      await cleanup();
    }
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { objects: { type: 'string' }, samples: { type: 'string' }, storage: { type: 'string' } } });
  setLogLevel('warn');
  const backends: Backend[] = values.storage === 'sqlite' || values.storage === 'postgres' ? [values.storage] : ['sqlite', 'postgres'];
  benchSearchTerms({ objects: Number(values.objects ?? 100_000), samples: Number(values.samples ?? 30), backends })
    .then(() => stopTestPostgres())
    .catch((err) => {
      console.error(err);
      process.exit(1);
    });
}
