// The member's resourceVersion of one of an object's versions, by Panoptes resourceVersion.
// Every change row is one version of one object, at its rv (the log's primary key), with the
// object as it was then, stamped with its member rv (panoptes.io/upstream-resource-version):
// one index lookup. The proxy of writes (apiserver/proxy/write-consistency.ts) asks it to
// translate a Panoptes rv a client holds (of the current version, or an older one) into the
// member's rv of that same version, so that the member judges the write; an rv that is no
// version of the object here (compacted, another object's, or a member rv that a client got
// in a write's answer before Panoptes had synced it: both are integers) has none.
import type { Knex } from 'knex';
import type { ObjectKey } from './types.ts';
import { upstreamRvAnnotation } from './write.ts';

/** The member rv of `key`'s version at Panoptes rv `rv`; undefined when the change at `rv` is not one of its versions (or was compacted). */
export async function memberRvAt(knex: Knex, key: ObjectKey, rv: number): Promise<string | undefined> {
  if (!Number.isSafeInteger(rv) || rv < 1) return undefined;
  const row = (await knex('changes')
    .where({ rv, cluster: key.cluster, grp: key.group, resource: key.resource, namespace: key.namespace, name: key.name })
    .first('object')) as { object: string } | undefined;
  if (row === undefined) return undefined;
  // The stored text is always JSON written by storage/write.ts, with the stamp; '' if it were not.
  const annotations = (JSON.parse(row.object) as { metadata?: { annotations?: Record<string, unknown> } }).metadata?.annotations;
  const upstream = annotations?.[upstreamRvAnnotation];
  return typeof upstream === 'string' ? upstream : '';
}
