// Query parameters of list, get and watch → ListParams, validated as kube-apiserver does
// (ValidateListOptions and the storage layer's rv checks), plus the Panoptes search
// parameters. Unknown or malformed parameters are a 400 Status, never ignored.
import { parseLabelSelector, type LabelSelector } from '../../kube/labels.ts';
import { queryBool } from '../../kube/query.ts';
import { StatusError, badRequest } from '../../kube/status.ts';
import type { ResourceInfo } from '../discovery/catalog.ts';
import { parseCreatedBound } from './created-range.ts';
import { parseGoDuration } from './duration.ts';
import { parseFuzzyName } from './name-contains.ts';
import { effectiveOrder, parseOrderBy, parseOrderByLabel } from './order-by.ts';
import { extractFieldKeys, parseFieldSelectorWithPaths } from './field-paths.ts';
import { invalidOwnerValue, ownerSearchKeys, ownerTerms } from './owners.ts';
import type { ListParams, SearchParams, Verb } from '../endpoints/request.ts';

/** Label keys that reach the Panoptes search parameters (kubectl -l). */
export const searchLabelPrefix = 'search.panoptes.io/';

type ValuesKey = 'clusters' | 'namespaces' | 'names' | 'ownerUIDs' | 'ownerNames' | 'ownerGR' | 'ownerSeniority';

const searchKeys: Record<string, ValuesKey> = {
  clusters: 'clusters',
  namespaces: 'namespaces',
  names: 'names',
  ownerUID: 'ownerUIDs',
  ...ownerSearchKeys,
};

const knownParams = new Set([
  'labelSelector',
  'fieldSelector',
  'limit',
  'continue',
  'resourceVersion',
  'resourceVersionMatch',
  'watch',
  'allowWatchBookmarks',
  'timeoutSeconds',
  'sendInitialEvents',
  'includeObject',
  'pretty',
  'timeout',
  ...Object.keys(searchKeys),
]);

/**
 * Search terms beyond value lists, each parsed by its module: from a query parameter (every
 * value given) or a label key (one value). Given both ways, both hold.
 */
const searchTerms: Record<string, (search: SearchParams, values: string[], source: string, fromLabel: boolean) => void> = {
  fuzzyName: (s, values, source) => {
    s.fuzzyNames = [...(s.fuzzyNames ?? []), ...values.map((v) => parseFuzzyName(v, source))];
  },
  createdSince: (s, values, source) => {
    for (const v of values) s.createdSince = [s.createdSince ?? '', parseCreatedBound(v, source, Date.now())].sort().at(-1);
  },
  createdBefore: (s, values, source) => {
    for (const v of values) s.createdBefore = [s.createdBefore ?? '~', parseCreatedBound(v, source, Date.now())].sort()[0];
  },
  orderBy: (s, values, source, fromLabel) => {
    const keys = fromLabel ? parseOrderByLabel(values[0], source) : parseOrderBy(values, source);
    if (s.orderBy && JSON.stringify(s.orderBy) !== JSON.stringify(keys)) throw badRequest(`${source}: orderBy is given twice, differently`);
    s.orderBy = keys;
  },
};
for (const k of Object.keys(searchTerms)) knownParams.add(k);

/** kube ListOptions validation failures: 422 Invalid on ListOptions.meta.k8s.io. */
export function invalidListOptions(causes: Array<{ field: string; type: string; message: string }>): StatusError {
  const text = causes.map((c) => `${c.field}: ${c.type === 'FieldValueForbidden' ? 'Forbidden' : c.type === 'FieldValueNotSupported' ? 'Unsupported value' : 'Invalid value'}: ${c.message}`);
  return new StatusError('Invalid', `ListOptions.meta.k8s.io "" is invalid: ${text.length === 1 ? text[0] : `[${text.join(', ')}]`}`, {
    group: 'meta.k8s.io',
    kind: 'ListOptions',
    causes: causes.map((c) => ({ reason: c.type, message: c.message, field: c.field })),
  });
}

const dnsLabel = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export function checkSearchValues(key: ValuesKey, values: string[], source: string): string[] {
  if (values.length === 0 || values.length > 1000) throw badRequest(`${source}: give between 1 and 1000 values`);
  for (const v of values) {
    if (key === 'ownerNames' || key === 'ownerGR' || key === 'ownerSeniority') {
      const why = invalidOwnerValue(key, v);
      if (why) throw badRequest(`${source}: ${JSON.stringify(v)} ${why}`);
      continue;
    }
    const ok =
      key === 'clusters' || key === 'namespaces' ? v.length <= 63 && dnsLabel.test(v) : key === 'names' ? v.length > 0 && v.length <= 253 && !v.includes('/') : v.length > 0 && v.length <= 128 && /^[A-Za-z0-9._-]+$/.test(v);
    if (!ok) throw badRequest(`${source}: ${JSON.stringify(v)} is not a valid ${key === 'ownerUIDs' ? 'uid' : key.slice(0, -1) + ' name'}`);
  }
  return [...new Set(values)];
}

function mergeSearch(search: SearchParams, key: ValuesKey, values: string[]): void {
  const cur = search[key];
  search[key] = cur === undefined ? values : cur.filter((v) => values.includes(v));
}

/** Splits search.panoptes.io/* requirements out of a label selector. */
export function extractSearch(selector: LabelSelector, search: SearchParams): LabelSelector {
  const rest: LabelSelector = [];
  for (const r of selector) {
    if (!r.key.startsWith(searchLabelPrefix)) {
      rest.push(r);
      continue;
    }
    const name = r.key.slice(searchLabelPrefix.length);
    const term = Object.hasOwn(searchTerms, name) ? searchTerms[name] : undefined;
    if (term) {
      if (r.operator !== 'in' || r.values.length !== 1) throw badRequest(`search key ${r.key} takes one value, with = or ==`);
      term(search, r.values, r.key, true);
      continue;
    }
    const key = Object.hasOwn(searchKeys, name) ? searchKeys[name] : undefined;
    if (!key) throw badRequest(`unknown search key ${JSON.stringify(r.key)}: use ${[...Object.keys(searchKeys), ...Object.keys(searchTerms)].map((k) => searchLabelPrefix + k).join(', ')}`);
    if (r.operator !== 'in') throw badRequest(`search key ${r.key} supports only =, == and in (...)`);
    mergeSearch(search, key, checkSearchValues(key, r.values, r.key));
  }
  return rest;
}

export interface ParamOptions {
  /** Limits above it are served as pages of this size (default 10000). */
  maxLimit: number;
}

/** Parses and validates the query of a list, get or watch of `info`. */
export function parseListParams(qs: URLSearchParams, verb: Verb, info: ResourceInfo, opts: ParamOptions): ListParams {
  for (const k of qs.keys()) {
    if (!knownParams.has(k)) throw badRequest(`unknown query parameter ${JSON.stringify(k)}`);
  }
  const one = (k: string): string | undefined => qs.get(k) ?? undefined;

  const search: SearchParams = {};
  let labelSelector = parseLabelSelector(one('labelSelector') ?? '');
  labelSelector = extractSearch(labelSelector, search);
  const fromLabels = extractFieldKeys(labelSelector);
  labelSelector = fromLabels.rest;
  const { fieldSelector, jsonFields } = parseFieldSelectorWithPaths(one('fieldSelector') ?? '', info.group, info.resource);
  for (const [param, key] of Object.entries(searchKeys)) {
    const raw = qs.getAll(param);
    if (raw.length === 0) continue;
    const values = raw.flatMap((v) => v.split(',')).map((v) => v.trim());
    if (values.some((v) => v === '')) throw badRequest(`${param}: empty value`);
    mergeSearch(search, key, checkSearchValues(key, values, param));
  }
  for (const [param, term] of Object.entries(searchTerms)) {
    const raw = qs.getAll(param);
    if (raw.length) term(search, raw, param, false);
  }
  search.orderBy = effectiveOrder(search.orderBy);
  if (search.orderBy === undefined) delete search.orderBy;
  if (search.orderBy && verb !== 'list') throw badRequest(`orderBy applies to lists only: a ${verb === 'watch' ? 'watch sends events in resourceVersion order' : 'get reads one object'}`);

  if (ownerTerms(search).owners && verb === 'watch') {
    throw badRequest('ownerName and ownerSeniority cannot be combined with watch: the owner chain is read from the stored owners at each list; watch with ownerUID (seniority 0) instead');
  }
  const params: ListParams = { labelSelector, fieldSelector, jsonFields: [...jsonFields, ...fromLabels.jsonFields], search, resourceVersion: one('resourceVersion') ?? '', allowWatchBookmarks: false };

  const limit = one('limit');
  if (limit !== undefined && limit !== '') {
    if (!/^-?\d{1,19}$/.test(limit) || Number(limit) < 0) throw badRequest(`invalid limit ${JSON.stringify(limit)}: must be a non-negative integer`);
    const n = Number(limit);
    if (n > 0) params.limit = Math.min(n, opts.maxLimit);
  }
  const cont = one('continue');
  if (cont) params.continue = cont;

  const rv = params.resourceVersion;
  if (rv !== '' && !/^\d{1,19}$/.test(rv)) throw badRequest(`invalid resource version ${JSON.stringify(rv)}: must be a non-negative integer`);
  if (rv !== '' && !Number.isSafeInteger(Number(rv))) throw badRequest(`invalid resource version ${JSON.stringify(rv)}: too large`);

  const timeout = one('timeout');
  if (timeout !== undefined) params.timeoutMs = parseGoDuration('timeout', timeout);
  const ts = one('timeoutSeconds');
  if (ts !== undefined) {
    if (!/^\d{1,9}$/.test(ts)) throw badRequest(`invalid timeoutSeconds ${JSON.stringify(ts)}: must be a non-negative integer`);
    params.timeoutSeconds = Number(ts);
  }
  const bookmarks = one('allowWatchBookmarks');
  if (bookmarks !== undefined) params.allowWatchBookmarks = queryBool(bookmarks);
  const sie = one('sendInitialEvents');
  if (sie !== undefined) params.sendInitialEvents = queryBool(sie);

  const match = one('resourceVersionMatch');
  const causes: Array<{ field: string; type: string; message: string }> = [];
  if (match !== undefined && match !== '') {
    if (match !== 'Exact' && match !== 'NotOlderThan') {
      causes.push({ field: 'resourceVersionMatch', type: 'FieldValueNotSupported', message: `Unsupported value: ${JSON.stringify(match)}: supported values: "Exact", "NotOlderThan", ""` });
    } else params.resourceVersionMatch = match;
  }
  if (verb !== 'watch') {
    if (match) {
      if (rv === '') causes.push({ field: 'resourceVersionMatch', type: 'FieldValueForbidden', message: 'resourceVersionMatch is forbidden unless resourceVersion is provided' });
      if (params.continue) causes.push({ field: 'resourceVersionMatch', type: 'FieldValueForbidden', message: 'resourceVersionMatch is forbidden when continue is provided' });
      if (match === 'Exact' && rv === '0') causes.push({ field: 'resourceVersionMatch', type: 'FieldValueForbidden', message: 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"' });
    }
    if (params.sendInitialEvents !== undefined) causes.push({ field: 'sendInitialEvents', type: 'FieldValueForbidden', message: 'sendInitialEvents is forbidden for list' });
  }
  if (causes.length) throw invalidListOptions(causes);
  if (verb === 'list' && params.continue && rv !== '' && rv !== '0') throw badRequest('specifying resource version is not allowed when using continue');
  return params;
}
