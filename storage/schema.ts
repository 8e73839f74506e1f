// The schema, as numbered migrations applied at start. Safe when several processes start
// at once: the dialect's migration lock serializes them and each step runs once.
import type { Knex } from 'knex';
import { logger } from '../lib/log.ts';
import { labelNumber } from './label-number.ts';
import type { Dialect } from './dialect.ts';
import { fieldIndexName, indexedFields } from './json-fields.ts';
import { epochSequence } from './leases.ts';
import { clusterIdOf } from './clusters.ts';
import { writeProtocolKey } from './meta.ts';
import { allocationTimingSchema, orderedCommitsSchema } from './ordered-commits.ts';
import { sqlDocument, sqlText } from './sql-values.ts';

type Migration = { version: number; up(trx: Knex.Transaction, dialect: Dialect): Promise<void> };

/** The rv of an empty store. The first change gets rv 2, so "0" never names a real state. */
export const initialRv = 1;

const migrations: Migration[] = [
  {
    version: 1,
    async up(trx, d) {
      await trx.schema.createTable('meta', (t) => {
        t.string('key').primary();
        t.bigInteger('value').notNullable();
      });
      await trx('meta').insert([
        { key: 'rv', value: initialRv },
        { key: 'compacted_rv', value: 0 },
      ]);

      await trx.schema.createTable('objects', (t) => {
        t.bigIncrements('id').primary();
        t.specificType('cluster', d.keyType).notNullable();
        t.specificType('grp', d.keyType).notNullable();
        t.string('version').notNullable();
        t.specificType('resource', d.keyType).notNullable();
        t.specificType('namespace', d.keyType).notNullable();
        t.specificType('name', d.keyType).notNullable();
        t.string('uid').notNullable();
        t.bigInteger('rv').notNullable();
        t.string('upstream_rv').notNullable();
        t.string('created_at').notNullable();
        t.string('owner_uid').nullable();
        // The kind's selectable fields (kube/fields.ts) as a JSON object, for field selectors.
        t.text('fields').nullable();
        t.text('object').notNullable();
        // List order within a resource: namespace, name, cluster (kube-apiserver's key order, then cluster).
        t.unique(['grp', 'resource', 'namespace', 'name', 'cluster'], { indexName: 'objects_list_order' });
        // No second index led by cluster: one-cluster views and reconcile filter this one by
        // cluster (a few clusters per resource), and during a sync the planner's statistics are
        // too stale to choose well between two (it probed a cluster-led prefix per key).
        t.index(['owner_uid'], 'objects_by_owner');
      });

      // Labels, one row per (object, key), so label selectors are served by an index.
      await trx.schema.createTable('object_labels', (t) => {
        t.bigInteger('obj_id').notNullable();
        t.specificType('key', d.keyType).notNullable();
        t.specificType('value', d.keyType).notNullable();
        t.primary(['obj_id', 'key']);
        t.index(['key', 'value', 'obj_id'], 'object_labels_by_value');
      });

      await trx.schema.createTable('changes', (t) => {
        t.bigInteger('rv').primary();
        t.string('type', 16).notNullable();
        t.specificType('cluster', d.keyType).notNullable();
        t.specificType('grp', d.keyType).notNullable();
        t.string('version').notNullable();
        t.specificType('resource', d.keyType).notNullable();
        t.specificType('namespace', d.keyType).notNullable();
        t.specificType('name', d.keyType).notNullable();
        t.string('uid').notNullable();
        t.text('object').notNullable();
        t.text('prev_object').nullable();
        t.bigInteger('ts').notNullable();
        t.index(['grp', 'resource', 'rv'], 'changes_by_resource');
      });

      await trx.schema.createTable('clusters', (t) => {
        t.string('name').primary();
        t.text('spec').notNullable();
        t.text('status').notNullable();
        t.string('created_at').notNullable();
        t.string('updated_at').notNullable();
      });
    },
  },
  {
    // Label values as int64 where they parse as one (strconv.ParseInt), for `a>N` / `a<N`:
    // the selector compares this column, computed by the same function the in-memory matcher
    // uses, so SQL and watches agree on every value.
    version: 2,
    async up(trx) {
      await trx.schema.alterTable('object_labels', (t) => {
        t.bigInteger('num').nullable();
      });
      // Existing rows: only values that begin like a number can parse.
      const begins = (lo: string, hi: string) => (q: Knex.QueryBuilder) => q.where('value', '>=', lo).andWhere('value', '<', hi);
      const values: Array<{ value: string }> = await trx('object_labels')
        .distinct('value')
        .where(begins('0', ':'))
        .orWhere(begins('+', ','))
        .orWhere(begins('-', '.'));
      for (const { value } of values) {
        const num = labelNumber(value);
        if (num !== null) await trx('object_labels').where({ value }).update({ num });
      }
    },
  },
  {
    // OpenAPI documents of the member clusters (storage/openapi.ts): each distinct document
    // once, by content hash, and which document each cluster serves per group version.
    version: 3,
    async up(trx, d) {
      await trx.schema.createTable('openapi_documents', (t) => {
        t.string('hash').primary();
        t.string('format', 8).notNullable();
        t.text('body').notNullable();
        t.bigInteger('bytes').notNullable();
        t.string('created_at').notNullable();
      });
      await trx.schema.createTable('cluster_openapi', (t) => {
        t.specificType('cluster', d.keyType).notNullable();
        // 'api/v1', 'apis/apps/v1' (a v3 document), or '' (the cluster's whole v2 document).
        t.specificType('group_version', d.keyType).notNullable();
        t.string('format', 8).notNullable();
        t.string('hash').notNullable();
        // What the member said identifies the document (the ?hash= of its v3 root), to skip unchanged ones.
        t.string('upstream_hash').notNullable();
        t.string('fetched_at').notNullable();
        t.primary(['cluster', 'group_version']);
        t.index(['hash'], 'cluster_openapi_by_hash');
        t.index(['upstream_hash'], 'cluster_openapi_by_upstream');
      });
    },
  },
  {
    // Several synchro processes: members (heartbeats), leases (which member writes for which
    // cluster, with a fencing epoch that only grows; also the compactor's), and the epoch each
    // change was written under.
    version: 5,
    async up(trx, d) {
      await trx.schema.createTable('synchro_members', (t) => {
        t.string('id').primary();
        t.string('host').notNullable();
        t.bigInteger('pid').notNullable();
        t.bigInteger('started_at').notNullable();
        t.bigInteger('heartbeat_at').notNullable();
        t.bigInteger('expires_at').notNullable();
      });
      await trx.schema.createTable('leases', (t) => {
        t.specificType('name', d.keyType).primary();
        t.string('holder').nullable();
        t.bigInteger('epoch').notNullable();
        t.bigInteger('acquired_at').notNullable();
        t.bigInteger('renewed_at').notNullable();
        t.bigInteger('expires_at').notNullable();
      });
      await trx.schema.alterTable('changes', (t) => {
        t.bigInteger('epoch').nullable();
      });
    },
  },
  {
    // Clusters registered through the API (storage/cluster-objects.ts): their objects live in
    // `objects` and `changes` like every served object; their inline credentials here, where
    // only synchro reads them (never served, never in the change log), with a digest the
    // apiserver compares instead.
    version: 6,
    async up(trx, d) {
      await trx.schema.createTable('cluster_credentials', (t) => {
        t.specificType('name', d.keyType).primary();
        t.string('uid').notNullable();
        t.text('data').notNullable();
        t.string('digest').notNullable();
        t.string('updated_at').notNullable();
      });
    },
  },
  {
    // Objects per cluster, resource and namespace, kept by every batch: remainingItemCount of
    // a list without selectors is a sum of a few rows instead of a count over every object.
    version: 7,
    async up(trx, d) {
      await trx.schema.createTable('object_counts', (t) => {
        t.specificType('grp', d.keyType).notNullable();
        t.specificType('resource', d.keyType).notNullable();
        t.specificType('cluster', d.keyType).notNullable();
        t.specificType('namespace', d.keyType).notNullable();
        t.bigInteger('n').notNullable();
        t.primary(['grp', 'resource', 'cluster', 'namespace']);
      });
      await trx.raw('INSERT INTO object_counts (grp, resource, cluster, namespace, n) SELECT grp, resource, cluster, namespace, COUNT(*) FROM objects GROUP BY grp, resource, cluster, namespace');
    },
  },
  {
    // Member values that Kubernetes does not bound get no bound here either (storage/sql-values.ts):
    // an ownerReference uid may be any non-empty string (kube validates nothing more), a
    // non-validating aggregated API server may send any uid, rv or version. knex's string()
    // is varchar(255) on PostgreSQL: a 300-character owner uid failed the whole batch. The
    // owner index over unbounded text is a hash index there (a btree row holds 2,704 bytes at
    // most), and so is the index of the member-given OpenAPI hash. json_doc holds the document
    // SQL's JSON functions read where the object's own text is not readable by both engines
    // (NUL, lone surrogates, nesting past SQLite's limit); existing such rows get theirs here.
    version: 8,
    async up(trx, d) {
      await d.unboundText(trx, 'objects', ['version', 'uid', 'upstream_rv', 'created_at', 'owner_uid']);
      await d.unboundText(trx, 'changes', ['version', 'uid']);
      await d.unboundText(trx, 'cluster_openapi', ['upstream_hash']);
      await d.equalityIndex(trx, 'objects', 'owner_uid', 'objects_by_owner');
      await d.equalityIndex(trx, 'cluster_openapi', 'upstream_hash', 'cluster_openapi_by_upstream');
      await trx.schema.alterTable('objects', (t) => {
        t.text('json_doc').nullable();
      });
      await backfillSqlDocuments(trx, d);
    },
  },
  {
    // Lease epochs from one sequence for the whole database (storage/leases.ts), so that a lease
    // deleted with its cluster and created again never repeats an epoch: it starts above every
    // epoch still on record, in the leases and in the change log.
    version: 9,
    async up(trx) {
      const used = async (table: string) => Number(((await trx(table).max({ e: 'epoch' }).first()) as { e: number | string | null } | undefined)?.e ?? 0);
      await trx('meta').insert({ key: epochSequence, value: Math.max(await used('leases'), await used('changes')) });
    },
  },
  {
    // Who writes a member row: a random token per process start (a second process with the
    // same identity is refused instead of sharing it), and the machine it runs on, the
    // kernel's boot id and the process's pid namespace (a dead pid proves a member gone only
    // on the same machine and namespace: host names repeat across machines and containers).
    // Null in rows of an older release.
    version: 10,
    async up(trx) {
      await trx.schema.alterTable('synchro_members', (t) => {
        t.string('instance').nullable();
        t.string('boot_id').nullable();
        t.string('pid_namespace').nullable();
      });
    },
  },
  {
    // Search terms (storage/order-by.ts, created-range.ts, name-contains.ts): orderBy on
    // creationTimestamp and time ranges read objects_by_created, orderBy name objects_by_name,
    // both forwards or backwards; substring search of names a trigram index (the dialect's).
    // No index led by cluster, for the reason given at objects_list_order: orderBy cluster sorts.
    version: 11,
    async up(trx, d) {
      await trx.raw(`CREATE INDEX IF NOT EXISTS objects_by_created ON objects (grp, resource, ${d.byteOrder('created_at')}, namespace, name, cluster)`);
      await trx.raw('CREATE INDEX IF NOT EXISTS objects_by_name ON objects (grp, resource, name, namespace, cluster)');
      if (!(await d.nameSubstringIndex(trx))) {
        logger('storage').warn('pg_trgm cannot be installed by this role: fuzzyName reads without its index (docs/search.md says how to add it)');
      }
    },
  },
  {
    // JSON path field selectors on the indexed selectable fields (storage/json-fields.ts
    // indexedFields) read one expression index over the small `fields` column per field, then
    // the list order (namespace, name, cluster), so an equality reads its first page in order:
    // 500 index entries, not every match sorted. Not partial: PostgreSQL's planner keeps no
    // statistics of a partial index's expression (it then guessed a value held by 98% of pods
    // rare, and read them all through the index); version 13 keeps them apart instead.
    version: 12,
    async up(trx, d) {
      for (const field of indexedFields) {
        await trx.raw(`CREATE INDEX IF NOT EXISTS ${fieldIndexName(field)} ON objects (grp, resource, (${d.fieldsValue(field, '')}), namespace, name, cluster)`);
      }
    },
  },
  {
    // The field indexes of version 12 held an entry for every object, of kinds without the field
    // too (a ConfigMap's `fields` is NULL): two index writes per object that no term reads. Now
    // partial, over the objects that have the field (a term `= v` or `IN (...)` implies it), and
    // the planner's statistics of the expression kept apart (Dialect.expressionStatistics).
    version: 13,
    async up(trx, d) {
      for (const field of indexedFields) {
        const expr = d.fieldsValue(field, '');
        await trx.raw(`DROP INDEX IF EXISTS ${fieldIndexName(field)}`);
        await trx.raw(`CREATE INDEX ${fieldIndexName(field)} ON objects (grp, resource, (${expr}), namespace, name, cluster) WHERE (${expr}) IS NOT NULL`);
        await d.expressionStatistics(trx, `${fieldIndexName(field)}_stats`, expr);
      }
    },
  },
  {
    // Owner chains from owners named by uid (ownerUID with ownerSeniority, storage/owners.ts)
    // start at the objects with those uids: without an index of objects.uid that start read
    // every object (2.2 s a page at 500,000 objects, against 0.15 s through the owner index).
    // A hash index on PostgreSQL, as objects_by_owner: a member's uid is unbounded text.
    version: 14,
    async up(trx, d) {
      await d.equalityIndex(trx, 'objects', 'uid', 'objects_by_uid');
    },
  },
  {
    // What a synchro member reports of its configuration: the clusters file's current
    // problem. A member that cannot work (the file never loaded) writes its row expired,
    // so it is seen, with its reason, without counting among the live members.
    version: 15,
    async up(trx) {
      await trx.schema.alterTable('synchro_members', (t) => {
        t.text('config_error').nullable();
      });
    },
  },
  {
    // Parallel writes on PostgreSQL (storage/ordered-commits.ts): the allocator sequence and
    // the protocol's functions. A database created by this version writes in parallel; one
    // that already holds changes stays serial until `panoptes migrate --parallel-writes` (its
    // running processes may be of a version that knows only the serial protocol).
    version: 16,
    async up(trx, d) {
      if (d.name !== 'postgres') return;
      const rv = Number(((await trx('meta').where({ key: 'rv' }).first('value')) as { value: number | string }).value);
      const fresh = rv === initialRv && (await trx('changes').first('rv')) === undefined;
      for (const sql of orderedCommitsSchema(rv)) await trx.raw(sql);
      await trx('meta').insert({ key: writeProtocolKey, value: fresh ? 1 : 0 });
    },
  },
  {
    // The allocation says how long it held ALLOC (storage/ordered-commits.ts), so the
    // serialized section is measured by the database, not by a writer's event loop.
    version: 17,
    async up(trx, d) {
      if (d.name !== 'postgres') return;
      for (const sql of allocationTimingSchema()) await trx.raw(sql);
    },
  },
  {
    // The member cluster id a cluster's status records, in a column of its own: every
    // synchro's reconcile pass reads every cluster's (clusterIdentities), and reading it out of
    // the status made PostgreSQL parse every status as jsonb each second in each member, and
    // fail the whole read on one status holding a NUL character. Backfilled here, in JS.
    version: 18,
    async up(trx) {
      await trx.schema.alterTable('clusters', (t) => {
        t.text('cluster_id').nullable();
      });
      const rows: Array<{ name: string; status: string }> = await trx('clusters').select('name', 'status');
      for (const r of rows) {
        const id = clusterIdOf(JSON.parse(r.status) as Record<string, unknown>);
        if (id !== null) await trx('clusters').where({ name: r.name }).update({ cluster_id: id });
      }
    },
  },
  {
    // The objects without an owner, in list order: a collection's bare kinds (the `workloads`
    // Pods and ReplicaSets no controller owns, storage/collection.ts) read their page from it.
    // Through objects_list_order a bare page read every Pod of the fleet to find the few
    // without an owner, on every first page of the collection.
    version: 19,
    async up(trx) {
      await trx.raw('CREATE INDEX objects_unowned_list_order ON objects (grp, resource, namespace, name, cluster) WHERE owner_uid IS NULL');
    },
  },
];

/** Sets json_doc (and maps the selectable fields) of rows stored before version 8 whose text SQL cannot read as it is. */
async function backfillSqlDocuments(trx: Knex.Transaction, d: Dialect): Promise<void> {
  let after = 0;
  for (;;) {
    const rows: Array<{ id: number | string; object: string; fields: string | null }> = await trx('objects')
      .select('id', 'object', 'fields')
      .where('id', '>', after)
      .andWhere((q) => {
        q.whereRaw(`object LIKE ? ESCAPE '!'`, ['%\\u0000%']).orWhereRaw(`object LIKE ? ESCAPE '!'`, ['%\\ud%']);
        const [deep, bindings] = d.jsonUnreadable('object');
        if (deep) q.orWhereRaw(deep, bindings as Knex.RawBinding[]);
      })
      .orderBy('id')
      .limit(500);
    if (rows.length === 0) return;
    for (const r of rows) {
      const update: { json_doc: string | null; fields?: string } = { json_doc: sqlDocument(JSON.parse(r.object), r.object) };
      if (r.fields !== null) {
        const fields = JSON.parse(r.fields) as Record<string, string>;
        for (const k of Object.keys(fields)) fields[k] = sqlText(fields[k]);
        update.fields = JSON.stringify(fields);
      }
      await trx('objects').where('id', r.id).update(update);
    }
    after = Number(rows[rows.length - 1].id);
  }
}

/** Applies every migration not yet applied (up to `upTo`, for tests), each in the same locked transaction. */
export async function migrate(knex: Knex, dialect: Dialect, upTo = Infinity): Promise<number[]> {
  await dialect.prepareMigrations(knex);
  return knex.transaction(async (trx) => {
    await dialect.lockMigrations(trx);
    const done = new Set((await trx('schema_migrations').select('version')).map((r: { version: number }) => Number(r.version)));
    const applied: number[] = [];
    for (const m of migrations) {
      if (done.has(m.version) || m.version > upTo) continue;
      await m.up(trx, dialect);
      await trx('schema_migrations').insert({ version: m.version, applied_at: new Date().toISOString() });
      applied.push(m.version);
    }
    return applied;
  });
}
