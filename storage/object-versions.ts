// Which object a Panoptes resourceVersion was a version of. Every change row is one version
// of one object, at its rv (the log's primary key), so this is one index lookup. The proxy
// of writes (apiserver/proxy/write-consistency.ts) asks it to tell an older version of an
// object (a stale resourceVersion, 409) from a member's own resourceVersion that a client
// got in a write's answer before Panoptes had synced it: both are integers.
import type { Knex } from 'knex';
import type { ObjectKey } from './types.ts';

/** Whether the change at `rv` is one of `key`'s versions (false also when it was compacted). */
export async function isVersionOf(knex: Knex, key: ObjectKey, rv: number): Promise<boolean> {
  if (!Number.isSafeInteger(rv) || rv < 1) return false;
  const row = await knex('changes')
    .where({ rv, cluster: key.cluster, grp: key.group, resource: key.resource, namespace: key.namespace, name: key.name })
    .first('rv');
  return row !== undefined;
}
