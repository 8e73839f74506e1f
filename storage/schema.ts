// The schema, as numbered migrations applied at start. Safe when several processes start
// at once: the dialect's migration lock serializes them and each step runs once.
import type { Knex } from 'knex';
import type { Dialect } from './dialect.ts';

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
];

/** Applies every migration not yet applied, each in the same locked transaction. */
export async function migrate(knex: Knex, dialect: Dialect): Promise<number[]> {
  await dialect.prepareMigrations(knex);
  return knex.transaction(async (trx) => {
    await dialect.lockMigrations(trx);
    const done = new Set((await trx('schema_migrations').select('version')).map((r: { version: number }) => Number(r.version)));
    const applied: number[] = [];
    for (const m of migrations) {
      if (done.has(m.version)) continue;
      await m.up(trx, dialect);
      await trx('schema_migrations').insert({ version: m.version, applied_at: new Date().toISOString() });
      applied.push(m.version);
    }
    return applied;
  });
}
