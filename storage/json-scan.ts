// A benchmark baseline, not a read path: the first page of a collection as plain SQL over the
// JSON documents, the way a store without Panoptes' list order and paging answers it
// (Clusterpedia's internalstorage filters the kinds by their columns and reads the rest from
// the object's JSON): every object of the kinds is read, its namespace and name taken from
// the JSON, owners tested in the JSON, and the whole selection sorted for its first `limit`.
import type { Knex } from 'knex';
import type { Dialect } from './dialect.ts';
import type { CollectionKind } from './types.ts';

/** The objects (JSON text) of the first page of `kinds`, ordered by the namespace and name in their JSON. */
export async function jsonScanFirstPage(knex: Knex, dialect: Dialect, kinds: CollectionKind[], limit: number): Promise<string[]> {
  const doc = dialect.jsonDocument;
  const [ns, nsB] = dialect.jsonScalarTextAt(doc.ref, ['metadata', 'namespace']);
  const [name, nameB] = dialect.jsonScalarTextAt(doc.ref, ['metadata', 'name']);
  const [owned, ownedB] = dialect.jsonPresentAt(doc.ref, ['metadata', 'ownerReferences']);
  const kindSql = kinds.map((k) => `(o.grp = ? AND o.resource = ?${k.bare ? ` AND NOT ${owned}` : ''})`).join(' OR ');
  const kindB = kinds.flatMap((k) => (k.bare ? [k.group, k.resource, ...ownedB] : [k.group, k.resource]));
  const sql = `SELECT o.object FROM objects o ${doc.join ?? ''} WHERE ${kindSql} ORDER BY ${ns}, ${name}, o.cluster LIMIT ?`;
  const rows = (await knex.raw(sql, [...kindB, ...nsB, ...nameB, limit] as Knex.RawBinding[])) as unknown;
  const list = Array.isArray(rows) ? rows : (rows as { rows: unknown[] }).rows;
  return (list as Array<{ object: string }>).map((r) => r.object);
}
