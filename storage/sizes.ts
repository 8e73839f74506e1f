// What stored objects cost: the bytes of every table, TOAST table and index, and the average
// bytes of the columns that hold copies of an object, for hack/bench/size.ts.
import type { Connection } from './connect.ts';
import type { RelationSize } from './dialect.ts';
import { rowsOf } from './rows.ts';

export type { RelationSize } from './dialect.ts';

export interface StoredSizes {
  relations: RelationSize[];
  /** The database file (SQLite: every page, free ones included) or pg_database_size (catalogs included). */
  databaseBytes: number;
  objects: number;
  labelRows: number;
  changes: { added: number; modified: number; deleted: number };
  /** Average bytes per row of each column (UTF-8 text as stored; 0 where no row has one). */
  columns: {
    /** objects.object: the JSON as served. */
    object: number;
    /** The same JSON in the engine's binary form (jsonb): what a binary copy would add. */
    objectBinary: number;
    /** objects.fields (selectable fields) and objects.json_doc (set on the rare objects SQL cannot read as they are). */
    fields: number;
    jsonDoc: number;
    /** changes.object and changes.prev_object, over the change rows that have one. */
    changeObject: number;
    changePrevObject: number;
  };
}

const n = (v: unknown) => Number(v ?? 0);

/** Sizes of everything stored; `reclaim` first gives deleted rows' space back (VACUUM: benchmarks only). */
export async function storedSizes(conn: Connection, opts: { reclaim?: boolean } = {}): Promise<StoredSizes> {
  const { knex, dialect: d } = conn;
  if (opts.reclaim) await d.reclaimSpace(knex);
  const [o] = rowsOf<Record<string, unknown>>(
    await knex.raw(
      `SELECT COUNT(*) AS n, AVG(${d.byteLength('object')}) AS object, AVG(${d.binaryJsonBytes('object')}) AS bin, ` +
        `COALESCE(SUM(${d.byteLength('fields')}), 0) AS fields, COALESCE(SUM(${d.byteLength('json_doc')}), 0) AS json_doc FROM objects`,
    ),
  );
  const [l] = rowsOf<Record<string, unknown>>(await knex.raw('SELECT COUNT(*) AS n FROM object_labels'));
  const byType = rowsOf<Record<string, unknown>>(
    await knex.raw(`SELECT type, COUNT(*) AS n, SUM(${d.byteLength('object')}) AS object, COUNT(prev_object) AS prevs, SUM(${d.byteLength('prev_object')}) AS prev FROM changes GROUP BY type`),
  );
  const count = (t: string) => n(byType.find((r) => r.type === t)?.n);
  const sum = (k: string) => byType.reduce((a, r) => a + n(r[k]), 0);
  const changes = sum('n');
  const objects = n(o.n);
  const { relations, databaseBytes } = await d.relationSizes(knex);
  return {
    relations,
    databaseBytes,
    objects,
    labelRows: n(l.n),
    changes: { added: count('ADDED'), modified: count('MODIFIED'), deleted: count('DELETED') },
    columns: {
      object: n(o.object),
      objectBinary: n(o.bin),
      fields: objects ? n(o.fields) / objects : 0,
      jsonDoc: objects ? n(o.json_doc) / objects : 0,
      changeObject: changes ? sum('object') / changes : 0,
      changePrevObject: sum('prevs') ? sum('prev') / sum('prevs') : 0,
    },
  };
}
