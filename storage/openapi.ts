// The OpenAPI documents of the member clusters: `openapi_documents` holds each distinct
// document once, by the sha256 of its JSON text (identical clusters share one row);
// `cluster_openapi` says which document a cluster serves for each group version ('' for a
// cluster that only has a whole v2 document), with what the member called it (the ?hash= of
// its v3 root) so unchanged documents are not fetched again. Documents no cluster refers to
// are deleted in the same transaction that drops the last reference. A cluster's references
// are written by the synchro holding its lease (storage/fenced.ts).
import type { Knex } from 'knex';
import type { Dialect } from './dialect.ts';
import { fenceOf, writeTransaction } from './fenced.ts';
import { clusterLease, type Fence } from './leases.ts';

export type OpenAPIFormat = 'v2' | 'v3';

export interface ClusterOpenAPIRow {
  cluster: string;
  /** 'api/v1', 'apis/apps/v1', or '' for a whole v2 document. */
  groupVersion: string;
  format: OpenAPIFormat;
  hash: string;
  upstreamHash: string;
  fetchedAt: string;
  /** Whether the document row exists (a reference whose document is gone is fetched again). */
  present: boolean;
}

export interface OpenAPIEntry {
  groupVersion: string;
  format: OpenAPIFormat;
  hash: string;
  upstreamHash: string;
  /** The document's JSON text, when it may not be stored yet. */
  body?: string;
}

interface Row {
  cluster: string;
  group_version: string;
  format: string;
  hash: string;
  upstream_hash: string;
  fetched_at: string;
  present: string | null;
}

/** The references of one cluster, or of every cluster. */
export async function clusterOpenAPI(knex: Knex, cluster?: string): Promise<ClusterOpenAPIRow[]> {
  const q = knex('cluster_openapi as c')
    .leftJoin('openapi_documents as d', 'd.hash', 'c.hash')
    .select('c.cluster', 'c.group_version', 'c.format', 'c.hash', 'c.upstream_hash', 'c.fetched_at', 'd.hash as present')
    .orderBy(['c.cluster', 'c.group_version']);
  if (cluster !== undefined) q.where('c.cluster', cluster);
  const rows = (await q) as Row[];
  return rows.map((r) => ({
    cluster: r.cluster,
    groupVersion: r.group_version,
    format: r.format as OpenAPIFormat,
    hash: r.hash,
    upstreamHash: r.upstream_hash,
    fetchedAt: r.fetched_at,
    present: r.present !== null,
  }));
}

/** A stored document another cluster got under the same upstream hash (so it need not be fetched). */
export async function documentByUpstream(knex: Knex, format: OpenAPIFormat, upstreamHash: string): Promise<string | undefined> {
  const row = (await knex('cluster_openapi as c')
    .join('openapi_documents as d', 'd.hash', 'c.hash')
    .where({ 'c.format': format, 'c.upstream_hash': upstreamHash })
    .first('c.hash')) as { hash: string } | undefined;
  return row?.hash;
}

async function collectGarbage(trx: Knex.Transaction): Promise<number> {
  return trx('openapi_documents').whereNotIn('hash', trx('cluster_openapi').distinct('hash')).delete();
}

/**
 * Makes `entries` the cluster's complete set of references, in one transaction: documents
 * with a body are stored unless present, references not in `entries` are dropped, and
 * documents nothing refers to any more are deleted.
 */
export async function replaceClusterOpenAPI(knex: Knex, dialect: Dialect, cluster: string, entries: OpenAPIEntry[], fence: Fence): Promise<void> {
  await writeTransaction(knex, dialect, [fenceOf(fence, clusterLease(cluster))], 'leases', async (trx, locks) => {
    const now = new Date(locks.now).toISOString();
    for (const e of entries) {
      if (e.body === undefined) continue;
      await trx('openapi_documents')
        .insert({ hash: e.hash, format: e.format, body: e.body, bytes: Buffer.byteLength(e.body), created_at: now })
        .onConflict('hash')
        .ignore();
    }
    const keep = entries.map((e) => e.groupVersion);
    const stale = trx('cluster_openapi').where({ cluster });
    if (keep.length) stale.whereNotIn('group_version', keep);
    await stale.delete();
    const current = new Map((await trx('cluster_openapi').where({ cluster }).select('group_version', 'hash', 'upstream_hash')).map((r: { group_version: string; hash: string; upstream_hash: string }) => [r.group_version, r]));
    for (const e of entries) {
      const had = current.get(e.groupVersion);
      if (had && had.hash === e.hash && had.upstream_hash === e.upstreamHash && e.body === undefined) continue;
      await trx('cluster_openapi')
        .insert({ cluster, group_version: e.groupVersion, format: e.format, hash: e.hash, upstream_hash: e.upstreamHash, fetched_at: now })
        .onConflict(['cluster', 'group_version'])
        .merge(['format', 'hash', 'upstream_hash', 'fetched_at']);
    }
    await collectGarbage(trx);
  });
}

/** Drops every reference of a removed cluster (and the documents only it used). */
export async function deleteClusterOpenAPI(knex: Knex, dialect: Dialect, cluster: string, fence: Fence): Promise<void> {
  await writeTransaction(knex, dialect, [fenceOf(fence, clusterLease(cluster))], 'leases', async (trx) => {
    await trx('cluster_openapi').where({ cluster }).delete();
    await collectGarbage(trx);
  });
}

/** The documents of the given hashes (those still stored). */
export async function openAPIDocuments(knex: Knex, hashes: string[]): Promise<Map<string, { format: OpenAPIFormat; body: string }>> {
  const out = new Map<string, { format: OpenAPIFormat; body: string }>();
  for (let i = 0; i < hashes.length; i += 200) {
    const rows = (await knex('openapi_documents').whereIn('hash', hashes.slice(i, i + 200)).select('hash', 'format', 'body')) as Array<{ hash: string; format: string; body: string }>;
    for (const r of rows) out.set(r.hash, { format: r.format as OpenAPIFormat, body: r.body });
  }
  return out;
}
