// A collection: one list of several kinds (group, resource), read as the union of one
// single-kind query per kind, merged in the list order with the kind as the last key
// (namespace, name, cluster, group, resource), so that one snapshot rv and one continue key
// page exactly across kinds. A kind may be restricted to its bare objects: those without an
// owner (no metadata.ownerReferences), e.g. the ReplicaSets and Pods nobody controls.
import type { CollectionKind, ListQuery } from './types.ts';

/** The kinds a query reads: its collection's, or its own group and resource. */
export function kindsOf(q: ListQuery): CollectionKind[] {
  return q.kinds ?? [{ group: q.group, resource: q.resource, ...(q.withoutOwner ? { bare: true } : {}) }];
}

/** The single-kind query of one kind of a collection. */
export function kindQuery(q: ListQuery, kind: CollectionKind): ListQuery {
  const one: ListQuery = { ...q, group: kind.group, resource: kind.resource };
  delete one.kinds;
  if (kind.bare) one.withoutOwner = true;
  return one;
}

/** The collection's kind of (group, resource), if it has one. */
export function kindOf(q: ListQuery, group: string, resource: string): CollectionKind | undefined {
  return kindsOf(q).find((k) => k.group === group && k.resource === resource);
}

