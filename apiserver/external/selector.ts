// The label selector of an external metric request (the HPA's `metric.selector`) says which
// objects a metric counts or aggregates. Its requirements are of three kinds:
//   - object labels, as in any list (`app=worker`, `tier in (a,b)`, `!canary`, `n>3`);
//   - search.panoptes.io/<key>: the Panoptes search (clusters, namespaces, names, ownerUID),
//     here also with `notin` / `!=` for clusters, namespaces and names, and
//     search.panoptes.io/all-namespaces (`=true`, or the bare key) to widen the scope from
//     the request's namespace to every namespace;
//   - field.panoptes.io/<field>: a field selector term (`field.panoptes.io/status.phase=Pending`),
//     for the fields kube-apiserver selects the resource by (kube/fields.ts). Those keys are valid
//     label keys (prefix a DNS subdomain, name of letters, digits and dots), so they pass an
//     HPA's validation.
import type { FieldRequirement, FieldSelector } from '../../kube/fields.ts';
import { parseFieldSelector } from '../../kube/fields.ts';
import { parseLabelSelector, type LabelSelector } from '../../kube/labels.ts';
import { badRequest } from '../../kube/status.ts';
import { checkSearchValues, searchLabelPrefix } from '../read/params.ts';

export const fieldLabelPrefix = 'field.panoptes.io/';
export const allNamespacesKey = `${searchLabelPrefix}all-namespaces`;

/** An include list (undefined: no restriction) and an exclude list. */
export interface Choice {
  in?: string[];
  notIn: string[];
}

/** What a selector asks for, split by kind of requirement. */
export interface Selection {
  labels: LabelSelector;
  fields: FieldSelector;
  clusters: Choice;
  /** `in`: the namespaces to read instead of the request's; `notIn`: never these. */
  namespaces: Choice;
  allNamespaces: boolean;
  names: Choice;
  ownerUIDs?: string[];
}

export const emptySelection = (): Selection => ({ labels: [], fields: [], clusters: { notIn: [] }, namespaces: { notIn: [] }, allNamespaces: false, names: { notIn: [] } });

const intersect = (a: string[] | undefined, b: string[] | undefined): string[] | undefined => (a === undefined ? b : b === undefined ? a : a.filter((x) => b.includes(x)));
const union = (a: string[], b: string[]): string[] => [...new Set([...a, ...b])];

function choose(c: Choice, op: 'in' | 'notin', values: string[]): void {
  if (op === 'in') c.in = intersect(c.in, values);
  else c.notIn = union(c.notIn, values);
}

const searchNames = ['clusters', 'namespaces', 'names', 'ownerUID', 'all-namespaces'];

/**
 * Parses a selector string (`source` names it in errors: "labelSelector", or a rule's field).
 * Malformed selectors, unknown search keys and unsupported operators are 400 BadRequest.
 */
export function parseSelection(input: string, source = 'labelSelector'): Selection {
  const sel = emptySelection();
  for (const r of parseLabelSelector(input)) {
    if (r.key.startsWith(searchLabelPrefix)) {
      const name = r.key.slice(searchLabelPrefix.length);
      if (name === 'all-namespaces') {
        if (r.operator === 'exists' || (r.operator === 'in' && r.values.length === 1 && r.values[0] === 'true')) sel.allNamespaces = true;
        else throw badRequest(`${source}: ${allNamespacesKey} takes no value or "=true"`);
        continue;
      }
      if (name === 'clusters' || name === 'namespaces' || name === 'names') {
        if (r.operator !== 'in' && r.operator !== 'notin') throw badRequest(`${source}: search key ${r.key} supports =, ==, in, != and notin`);
        choose(sel[name], r.operator, checkSearchValues(name, r.values, r.key));
        continue;
      }
      if (name === 'ownerUID') {
        if (r.operator !== 'in') throw badRequest(`${source}: search key ${r.key} supports =, == and in (...)`);
        sel.ownerUIDs = intersect(sel.ownerUIDs, checkSearchValues('ownerUIDs', r.values, r.key));
        continue;
      }
      throw badRequest(`${source}: unknown search key ${JSON.stringify(r.key)}: use ${searchNames.map((k) => searchLabelPrefix + k).join(', ')}`);
    }
    if (r.key.startsWith(fieldLabelPrefix)) {
      const field = r.key.slice(fieldLabelPrefix.length);
      if (r.operator === 'in' && r.values.length === 1) sel.fields.push({ field, operator: '=', value: r.values[0] });
      else if (r.operator === 'notin') for (const value of r.values) sel.fields.push({ field, operator: '!=', value });
      else if (r.operator === 'in') throw badRequest(`${source}: ${r.key} in (...) names several values; a field selector term matches one (use =, != or notin)`);
      else throw badRequest(`${source}: ${r.key} is a field selector term: it supports =, ==, != and notin`);
      continue;
    }
    sel.labels.push(r);
  }
  if (sel.allNamespaces && sel.namespaces.in) throw badRequest(`${source}: give either ${allNamespacesKey} or ${searchLabelPrefix}namespaces, not both`);
  return sel;
}

/** Adds the terms of a `fieldSelector` string. */
export function withFieldSelector(sel: Selection, fieldSelector: string): Selection {
  const terms: FieldRequirement[] = parseFieldSelector(fieldSelector);
  return { ...sel, fields: [...sel.fields, ...terms] };
}

/**
 * Both selections at once (AND): labels and fields add up, includes intersect, excludes add up.
 * The namespace scope (in, all) is the request's when it names one, else the base's.
 */
export function combine(base: Selection, request: Selection): Selection {
  const requestScopes = request.allNamespaces || request.namespaces.in !== undefined;
  return {
    labels: [...base.labels, ...request.labels],
    fields: [...base.fields, ...request.fields],
    clusters: { in: intersect(base.clusters.in, request.clusters.in), notIn: union(base.clusters.notIn, request.clusters.notIn) },
    namespaces: { in: requestScopes ? request.namespaces.in : base.namespaces.in, notIn: union(base.namespaces.notIn, request.namespaces.notIn) },
    allNamespaces: requestScopes ? request.allNamespaces : base.allNamespaces,
    names: { in: intersect(base.names.in, request.names.in), notIn: union(base.names.notIn, request.names.notIn) },
    ownerUIDs: intersect(base.ownerUIDs, request.ownerUIDs),
  };
}
