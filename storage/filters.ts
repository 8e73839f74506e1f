// A ListQuery's filters, twice: as SQL over `objects` (label and field requirements through
// the label index table, fields through the JSON `fields` column) and as a JS predicate over one object (for snapshot rows rebuilt from
// the change log). Both must select the same objects.
import type { Knex } from 'knex';
import { kindFieldValues } from '../kube/fields.ts';
import { matchesLabels, type Requirement } from '../kube/labels.ts';
import { createdMatches, whereCreated } from './created-range.ts';
import type { Dialect } from './dialect.ts';
import { kindOf, kindQuery } from './collection.ts';
import { labelNumber } from './label-number.ts';
import { nameContainsMatches, whereNameContains } from './name-contains.ts';
import { jsonFieldsMatch, whereJsonFields } from './json-fields.ts';
import { ownedBy, whereOwnedBy, type ResolvedOwners } from './owners.ts';
import { ownerUid } from './rows.ts';
import { isSqlSafe, labelIndexKey, labelIndexValue, sqlText } from './sql-values.ts';
import type { KubeObject, ListQuery, ObjectKey } from './types.ts';

function labelSubquery(knex: Knex, r: Requirement): Knex.QueryBuilder {
  // As the index holds them (storage/sql-values.ts): the same as given for every valid key and value.
  const q = knex('object_labels').select('obj_id').where('key', labelIndexKey(r.key));
  if (r.operator === 'in' || r.operator === 'notin') q.whereIn('value', r.values.map(labelIndexValue));
  if (r.operator === 'gt' || r.operator === 'lt') {
    // num is the value's int64 (null when it is not one), by the matcher's own parseInt64.
    const bound = labelNumber(r.values[0]);
    if (bound === null) q.whereRaw('1 = 0');
    else q.whereRaw(`num ${r.operator === 'gt' ? '>' : '<'} CAST(? AS BIGINT)`, [bound]);
  }
  return q;
}

function requireLabel(qb: Knex.QueryBuilder, knex: Knex, r: Requirement): void {
  const negated = r.operator === 'notin' || r.operator === '!';
  const sub = labelSubquery(knex, r);
  if (negated) qb.whereNotIn('o.id', sub);
  else qb.whereIn('o.id', sub);
}

/** Adds the query's filters (everything but snapshot and paging) to a query over `objects o`. */
export function whereMatches(qb: Knex.QueryBuilder, knex: Knex, dialect: Dialect, q: ListQuery): Knex.QueryBuilder {
  if (q.kinds) {
    // A collection: any of its kinds, each with its own filters (list-scan.ts reads one scan per kind).
    qb.where((any) => {
      for (const kind of q.kinds!) any.orWhere((one) => whereMatches(one, knex, dialect, kindQuery(q, kind)));
    });
    return qb;
  }
  qb.where('o.grp', q.group).andWhere('o.resource', q.resource);
  if (q.withoutOwner) qb.whereNull('o.owner_uid');
  // Bound as given: a value SQL cannot bind is a 400 (storage/bound-values.ts).
  if (q.clusters) qb.whereIn('o.cluster', q.clusters);
  if (q.namespaces) qb.whereIn('o.namespace', q.namespaces);
  if (q.names) qb.whereIn('o.name', q.names);
  if (q.ownerUIDs) qb.whereIn('o.owner_uid', q.ownerUIDs.map(sqlText));
  whereNameContains(qb, dialect, q);
  whereCreated(qb, dialect, q);
  if (q.owners) whereOwnedBy(qb, q.owners, q);
  for (const r of q.labelSelector ?? []) requireLabel(qb, knex, r);
  for (const f of q.fieldSelector ?? []) {
    if (f.field === 'metadata.name' || f.field === 'metadata.namespace') {
      const column = f.field === 'metadata.name' ? 'o.name' : 'o.namespace';
      // kube's field selector compares any value: one no key can hold (NUL, a lone surrogate) equals no name, and is never bound.
      if (isSqlSafe(f.value)) qb.where(column, f.operator === '=' ? '=' : '<>', f.value);
      else if (f.operator === '=') qb.whereRaw('1 = 0');
    } else {
      // Every selectable field of the kind is stored, '' when unset, through sqlText.
      const [sql, bindings] = dialect.jsonText('o.fields', f.field);
      qb.whereRaw(`COALESCE(${sql}, '') ${f.operator === '=' ? '=' : '<>'} ?`, [...bindings, sqlText(f.value)]);
    }
  }
  whereJsonFields(qb, dialect, q);
  return qb;
}

/** Field requirements as SQL compares them: names exactly, other fields through sqlText on both sides. */
function fieldsMatch(q: ListQuery, key: ObjectKey, obj: KubeObject): boolean {
  const values = kindFieldValues(q.group, q.resource, obj);
  return q.fieldSelector!.every((f) => {
    const actual = f.field === 'metadata.name' ? key.name : f.field === 'metadata.namespace' ? key.namespace : sqlText(values[f.field] ?? '');
    const wanted = f.field === 'metadata.name' || f.field === 'metadata.namespace' ? f.value : sqlText(f.value);
    return (actual === wanted) === (f.operator === '=');
  });
}

/** Whether `q` filters on more than the key lists (clusters, namespaces, names): a watch then evaluates objectMatches on each change. */
export function filtersBeyondKeys(q: ListQuery): boolean {
  return q.ownerUIDs !== undefined || (q.labelSelector?.length ?? 0) > 0 || (q.fieldSelector?.length ?? 0) > 0 || (q.jsonFields?.length ?? 0) > 0 || q.nameContains !== undefined || q.createdSince !== undefined || q.createdBefore !== undefined;
}

/** The same filters, for one object outside SQL; an owner query needs its owners resolved in the same snapshot. */
export function objectMatches(q: ListQuery, key: ObjectKey, obj: KubeObject, owners?: ResolvedOwners): boolean {
  if (q.kinds) {
    const kind = kindOf(q, key.group, key.resource);
    return kind !== undefined && objectMatches(kindQuery(q, kind), key, obj, owners);
  }
  if (key.group !== q.group || key.resource !== q.resource) return false;
  if (q.withoutOwner && ownerUid(obj) !== null) return false;
  if (q.clusters && !q.clusters.includes(key.cluster)) return false;
  if (q.namespaces && !q.namespaces.includes(key.namespace)) return false;
  if (q.names && !q.names.includes(key.name)) return false;
  if (q.ownerUIDs) {
    const owner = ownerUid(obj);
    if (owner === null || !q.ownerUIDs.map(sqlText).includes(sqlText(owner))) return false;
  }
  if (q.nameContains && !nameContainsMatches(q, key.name)) return false;
  if (!createdMatches(q, obj)) return false;
  if (q.owners) {
    if (!owners) throw new Error('an owner query is matched outside SQL only with its owners resolved');
    if (!ownedBy(owners, key, obj)) return false;
  }
  if (q.labelSelector && !matchesLabels(q.labelSelector, obj.metadata?.labels)) return false;
  if (q.fieldSelector && !fieldsMatch(q, key, obj)) return false;
  if (q.jsonFields && !jsonFieldsMatch(q.jsonFields, obj)) return false;
  return true;
}
