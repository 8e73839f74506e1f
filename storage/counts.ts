// object_counts (objects per cluster, resource and namespace; remainingItemCount of lists and
// the clusters that still hold objects are read from it) is kept by every write (write.ts
// addCounts). A writer that does not keep it — a synchro of an earlier release still running
// during a rolling upgrade — makes it drift, negative counts included; repairCounts recounts
// it from the objects. It runs under the rv lock, so no batch commits between the count and
// the repair, and under the compactor's lease (synchro/commit/compactor.ts runs it at the start of
// each term and on a schedule).
import type { Knex } from 'knex';
import type { Dialect } from './dialect.ts';
import { fenceOf, writeTransaction } from './fenced.ts';
import { insertRows } from './insert.ts';
import { compactorLease, type Fence } from './leases.ts';

export interface CountRepair {
  /** (cluster, resource, namespace) counts compared. */
  checked: number;
  /** Counts that were wrong (or missing, or left over) and were set right. */
  repaired: number;
}

interface CountRow {
  grp: string;
  resource: string;
  cluster: string;
  namespace: string;
  n: number | string;
}

const keyOf = (r: CountRow) => `${r.grp}\u0000${r.resource}\u0000${r.cluster}\u0000${r.namespace}`;

/** Makes object_counts equal to the objects, counted; writes only the counts that differ. */
export async function repairCounts(knex: Knex, dialect: Dialect, fence: Fence): Promise<CountRepair> {
  return writeTransaction(knex, dialect, [fenceOf(fence, compactorLease)], 'rv', async (trx) => {
    const actual = (await trx('objects').groupBy('grp', 'resource', 'cluster', 'namespace').select('grp', 'resource', 'cluster', 'namespace').count({ n: '*' })) as CountRow[];
    const stored = (await trx('object_counts').select('grp', 'resource', 'cluster', 'namespace', 'n')) as CountRow[];
    const want = new Map(actual.map((r) => [keyOf(r), r]));
    const have = new Map(stored.map((r) => [keyOf(r), Number(r.n)]));
    const fixes: Array<{ grp: string; resource: string; cluster: string; namespace: string; n: number }> = [];
    for (const [key, r] of want) if (have.get(key) !== Number(r.n)) fixes.push({ grp: r.grp, resource: r.resource, cluster: r.cluster, namespace: r.namespace, n: Number(r.n) });
    for (const r of stored) if (!want.has(keyOf(r)) && Number(r.n) !== 0) fixes.push({ grp: r.grp, resource: r.resource, cluster: r.cluster, namespace: r.namespace, n: 0 });
    await insertRows(trx, dialect, 'object_counts', fixes, { conflict: ['grp', 'resource', 'cluster', 'namespace'], update: ['n'] });
    return { checked: new Set([...want.keys(), ...have.keys()]).size, repaired: fixes.length };
  });
}
